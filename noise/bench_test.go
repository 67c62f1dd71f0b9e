package noise

import "testing"

// Benchmarks of one secure release (snap, exact integer noise, back to float64) with the
// crypto/rand-backed Secure source, as documented in docs/benchmarks.md.

func BenchmarkLaplace(b *testing.B) {
	s, err := NewSecureLaplace(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	src := Secure()
	b.ReportAllocs()
	x := 0.0
	for b.Loop() {
		x = s.Add(src, 42.5)
	}
	_ = x
}

func BenchmarkGaussian(b *testing.B) {
	s, err := NewSecureGaussian(1, 2)
	if err != nil {
		b.Fatal(err)
	}
	src := Secure()
	b.ReportAllocs()
	x := 0.0
	for b.Loop() {
		x = s.Add(src, 42.5)
	}
	_ = x
}

func BenchmarkStaircase(b *testing.B) {
	s, _ := NewStaircase(1, 1, StaircaseGammaL2(1))
	src := Secure()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Add(src, 42.5)
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	d, _ := NewDiscreteLaplace(0.5)
	src := Secure()
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Sample(src)
	}
}

func BenchmarkSecureSource(b *testing.B) {
	src := Secure()
	for b.Loop() {
		_ = src.Uint64()
	}
}
