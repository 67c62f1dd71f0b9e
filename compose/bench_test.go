package compose

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
)

// BenchmarkEpsilonHomogeneous is the target: exact ε(δ = 1e-6) of a k-fold
// homogeneous composition.
func BenchmarkEpsilonHomogeneous(b *testing.B) {
	for _, c := range []struct {
		k   int64
		eps float64
	}{{1_000, 0.1}, {1_000_000, 0.01}, {1_000_000, 0.001}, {1_000_000_000, 1e-4}, {1_000_000_000_000, 1e-6}} {
		b.Run(fmt.Sprintf("k=%d/eps=%g", c.k, c.eps), func(b *testing.B) {
			ms := []Mech{{Epsilon: c.eps, Count: c.k}}
			for b.Loop() {
				if _, err := Epsilon(ms, 1e-6, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// distinctWorkload returns n releases with distinct ε drawn uniformly from [lo, hi]
// (seeded, so every run measures the same workload).
func distinctWorkload(n int, lo, hi float64) []Mech {
	r := rand.New(rand.NewPCG(1, 2))
	ms := make([]Mech, n)
	for i := range ms {
		ms[i] = Mech{Epsilon: lo + (hi-lo)*r.Float64(), Count: 1}
	}
	return ms
}

// BenchmarkEpsilonDistinct: n distinct ε values in [0.005, 0.02], certified bracket at
// δ = 1e-6 with requested relative width tol; reports the achieved width.
func BenchmarkEpsilonDistinct(b *testing.B) {
	for _, c := range []struct {
		n   int
		tol float64
	}{{20, 1e-6}, {100, 1e-3}, {1000, 1e-3}, {10_000, 1e-2}, {10_000, 1e-3}, {10_000, 1e-4}, {10_000, 0}, {100_000, 0}} {
		name := fmt.Sprintf("n=%d/tol=%g", c.n, c.tol)
		if c.tol == 0 {
			name = fmt.Sprintf("n=%d/default", c.n) // the adaptive default
		}
		b.Run(name, func(b *testing.B) {
			ms := distinctWorkload(c.n, 0.005, 0.02)
			var w float64
			for b.Loop() {
				r, err := Epsilon(ms, 1e-6, &Options{Tolerance: c.tol})
				if err != nil {
					b.Fatal(err)
				}
				w = (r.Epsilon - r.Lower) / r.Epsilon
			}
			b.ReportMetric(w, "width")
		})
	}
}

// BenchmarkMaxEpsilonPerQuery: the largest per-query ε for k releases within (1, 1e-6)
// (calibrate --k K): issue 24's k = 10^12 case took 43 s and answered over the budget.
func BenchmarkMaxEpsilonPerQuery(b *testing.B) {
	for _, k := range []int64{100, 1_000_000, 1_000_000_000_000} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			for b.Loop() {
				if _, err := MaxEpsilonPerQuery(k, 0, dpkit.Budget{Epsilon: 1, Delta: 1e-6}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
