package mechanism

import (
	"fmt"
	"testing"

	"github.com/dpkit/dpkit/noise"
)

// BenchmarkLaplace and BenchmarkGaussian time one secure release (validated value,
// snap, exact integer noise, back to float64) with the crypto/rand-backed source.
func BenchmarkLaplace(b *testing.B) {
	m, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	src := noise.Secure()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Release(42.5, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGaussian(b *testing.B) {
	m, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	src := noise.Secure()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Release(42.5, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSmoothMedian(b *testing.B) {
	m, _ := NewMedian(MedianOptions{Epsilon: 1, Lower: 0, Upper: 1})
	xs := make([]float64, 100000)
	src := noise.Seeded(1)
	for i := range xs {
		xs[i] = noise.Float64(src)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Release(xs, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExponentialSelect: one exact selection among 10 candidates (utilities near
// 1e3, the int64 range of the quantized grid) with the secure source.
func BenchmarkExponentialSelect(b *testing.B) {
	m, err := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	if err != nil {
		b.Fatal(err)
	}
	u := []float64{1000, 999, 998.5, 990, 1001, 1000.25, 950, 999.9, 1000.1, 0}
	src := noise.Secure()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Select(u, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGaussianVector: one release of a 100-coordinate vector.
func BenchmarkGaussianVector(b *testing.B) {
	m, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-6, Sensitivity: 1, Dimension: 100})
	if err != nil {
		b.Fatal(err)
	}
	v := make([]float64, 100)
	src := noise.Secure()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.ReleaseVector(v, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQuantile: one exact quantile release over n sorted values on an integer grid
// of 2^20 points (the O(n) pass over the runs plus O(1) exact rounds).
func BenchmarkQuantile(b *testing.B) {
	for _, n := range []int{10, 1000, 1000000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m, err := NewQuantile(QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 1 << 20, Step: 1})
			if err != nil {
				b.Fatal(err)
			}
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(i * (1 << 20) / n)
			}
			src := noise.Seeded(1)
			b.ResetTimer()
			for range b.N {
				if _, err := m.ReleaseSorted(vals, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
