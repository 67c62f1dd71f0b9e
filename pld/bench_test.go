package pld

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// benchCompose composes items at δ = 1e-5 with tolerance 1e-3 (pld's default before the
// adaptive one; the rows of docs/benchmarks.md are measured so).
func benchCompose(b *testing.B, items []Item) { benchComposeTol(b, items, 1e-3) }

func benchComposeTol(b *testing.B, items []Item, tol float64) {
	b.Helper()
	var w float64
	for b.Loop() {
		c, err := Compose(items, &Options{Delta: 1e-5, Tolerance: tol})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Epsilon(1e-5); err != nil {
			b.Fatal(err)
		}
		w = c.Width(1e-5)
	}
	b.ReportMetric(w, "width")
}

// BenchmarkSelfCompose: 10^6-fold composition of one mechanism, bracketed at δ = 1e-5.
func BenchmarkSelfCompose(b *testing.B) {
	for _, c := range []struct {
		name string
		m    Mechanism
	}{
		{"laplace", Laplace{Scale: 100, Sensitivity: 1}},
		{"geometric", DiscreteLaplace{Scale: 100, Sensitivity: 1}},
		{"rr4", RandomizedResponse{Epsilon: 0.01, K: 4}},
		{"eps-delta", EpsilonDelta{Epsilon: 0.001, Delta: 1e-12}},
		{"gaussian", Gaussian{Sigma: 1000, Sensitivity: 1}},
		{"subsampled-gaussian", PoissonSubsampled{Base: Gaussian{Sigma: 1, Sensitivity: 1}, Rate: 0.001}},
		{"subsampled-laplace", PoissonSubsampled{Base: Laplace{Scale: 1, Sensitivity: 1}, Rate: 0.01}},
		{"subsampled-rr", PoissonSubsampled{Base: RandomizedResponse{Epsilon: 1, K: 2}, Rate: 0.05}},
	} {
		b.Run(c.name+"/k=1e6", func(b *testing.B) { benchCompose(b, []Item{{c.m, 1_000_000}}) })
	}
}

// BenchmarkDPSGD: Poisson-subsampled Gaussian (σ = 0.8–1, q = 0.001–0.01), the accounting
// of differentially private SGD, for 10^3 and 10^4 steps.
func BenchmarkDPSGD(b *testing.B) {
	for _, c := range []struct {
		sigma, q float64
		k        int64
	}{{1, 0.001, 10_000}, {0.8, 0.01, 1_000}, {0.8, 0.01, 10_000}} {
		m := PoissonSubsampled{Base: Gaussian{Sigma: c.sigma, Sensitivity: 1}, Rate: c.q}
		b.Run(fmt.Sprintf("sigma=%g/q=%g/k=%d", c.sigma, c.q, c.k), func(b *testing.B) { benchCompose(b, []Item{{m, c.k}}) })
	}
}

// BenchmarkHeterogeneous: releases of distinct parameters mixing Gaussian, Laplace and
// (ε, δ) mechanisms (a third each).
func BenchmarkHeterogeneous(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		var items []Item
		for i := range n {
			switch i % 3 {
			case 0:
				items = append(items, Item{Gaussian{Sigma: 50 + float64(i%97), Sensitivity: 1}, 1})
			case 1:
				items = append(items, Item{Laplace{Scale: 50 + float64(i%89), Sensitivity: 1}, 1})
			default:
				items = append(items, Item{EpsilonDelta{Epsilon: 0.01 + float64(i%83)*1e-4, Delta: 1e-9}, 1})
			}
		}
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) { benchCompose(b, items) })
	}
}

// BenchmarkExtreme: the workloads of issue 24 that once took minutes or gigabytes, at
// tolerance 1e-2 (10^12-fold Laplace and subsampled Gaussian) and the adaptive default
// (10^4 heterogeneous releases).
func BenchmarkExtreme(b *testing.B) {
	b.Run("laplace-scale1e6/k=1e12", func(b *testing.B) {
		benchComposeTol(b, []Item{{Laplace{Scale: 1e6, Sensitivity: 1}, 1_000_000_000_000}}, 1e-2)
	})
	b.Run("subsampled-gaussian-q1e-4/k=1e12", func(b *testing.B) {
		benchComposeTol(b, []Item{{PoissonSubsampled{Base: Gaussian{Sigma: 1, Sensitivity: 1}, Rate: 1e-4}, 1_000_000_000_000}}, 1e-2)
	})
}

// BenchmarkTailDelta: δ at Options.Epsilon far in the tail (`dpkit compose --eps`, the
// default adaptive tolerance), 1000 subsampled-Gaussian steps (σ = 4, q = 0.01): tilted
// lattices split by the number of large losses (jumps.go); δ ≈ 1e-34, 3e-116, 1e-230.
func BenchmarkTailDelta(b *testing.B) {
	it := Item{PoissonSubsampled{Base: Gaussian{Sigma: 4, Sensitivity: 1}, Rate: 0.01}, 1000}
	for _, eps := range []float64{1, 2, 4} {
		b.Run(fmt.Sprintf("eps=%g", eps), func(b *testing.B) {
			for range b.N {
				if _, err := Compose([]Item{it}, &Options{Epsilon: eps}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTailDeltaHeavy: δ at Options.Epsilon = 40 far in the tail for heavy counts
// (subsampled Gaussians σ = 5, 10, 8 of 10^6, 10^6 and 10^5 releases; δ ≈ 1.7e-55):
// tilted lattices that start fine for one release and coarsen (tiltcoarse.go).
func BenchmarkTailDeltaHeavy(b *testing.B) {
	sg := func(sigma, q float64, n int64) Item {
		return Item{PoissonSubsampled{Base: Gaussian{Sigma: sigma, Sensitivity: 1}, Rate: q}, n}
	}
	items := []Item{sg(5, 0.01, 1000000), sg(10, 0.01, 1000000), sg(8, 0.02, 100000)}
	for b.Loop() {
		if _, err := Compose(items, &Options{Epsilon: 40}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRealFFT: the real transform the convolutions use (fft.go) against gonum's
// fftpack transform it replaced, 16 384 points (the size of the subsampled Gaussian's
// early squarings).
func BenchmarkRealFFT(b *testing.B) {
	const n = 1 << 14
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Exp(-float64(i) / 1000)
	}
	b.Run("dpkit", func(b *testing.B) {
		withRealFFT(n, func(p *realFFT) {
			z, done := p.scratch()
			defer done()
			for b.Loop() {
				p.forward(x, 0, n, z)
			}
		})
	})
	b.Run("gonum-fftpack", func(b *testing.B) {
		f := fourier.NewFFT(n)
		dst := make([]complex128, n/2+1)
		for b.Loop() {
			f.Coefficients(dst, x)
		}
	})
}
