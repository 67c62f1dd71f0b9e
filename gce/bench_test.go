package gce

import (
	"fmt"
	"testing"

	"github.com/dpkit/dpkit/compose"
)

func BenchmarkAtMost(b *testing.B) {
	for _, c := range []struct {
		name string
		ms   []compose.Mech
		m    int64
	}{
		{"hospitals/k=1000/m=365", []compose.Mech{{Epsilon: 0.01, Count: 1000}}, 365},
		{"two-kinds-trading/k=1000/m=365", []compose.Mech{{Epsilon: 0.012, Count: 500}, {Epsilon: 0.01, Delta: 2e-9, Count: 500}}, 365},
		{"dominance/k=10^6/m=10^4", []compose.Mech{{Epsilon: 0.01, Delta: 1e-10, Count: 500000}, {Epsilon: 0.005, Count: 500000}}, 10000},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := AtMost(c.ms, c.m, Unbounded, 1e-6, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUniformPrior(b *testing.B) {
	for _, k := range []int64{10, 1000, 1000000} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			ms := []compose.Mech{{Epsilon: 0.01, Count: k}}
			for b.Loop() {
				if _, err := UniformPrior(ms, 1e-6, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHDP(b *testing.B) {
	// k = 12 steps; p1 uniform over the 12 vectors with one 1, p0 uniform over the
	// 12 with two adjacent 1s (general rule, 23 pairs at most).
	const k = 12
	ms := []compose.Mech{{Epsilon: 0.1, Delta: 1e-7, Count: k}}
	var p0, p1 Hypothesis
	for i := 0; i < k; i++ {
		a, c := make(Vector, k), make(Vector, k)
		a[i] = true
		c[i], c[(i+1)%k] = true, true
		p1 = append(p1, Tuple{B: a, W: rat(fmt.Sprintf("1/%d", k))})
		p0 = append(p0, Tuple{B: c, W: rat(fmt.Sprintf("1/%d", k))})
	}
	for b.Loop() {
		if _, err := HDP(ms, p0, p1, 1e-5, nil); err != nil {
			b.Fatal(err)
		}
	}
}
