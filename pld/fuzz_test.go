package pld

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
)

// Fuzz targets for every PLD builder (issue 24 item 6). Each asserts that Compose (at
// tolerance 1e-2) ends within fuzzDeadline and returns either a named parameter or
// infeasibility error, or
// a bracket that is finite, ordered, non-increasing in ε, consistent with its inverse,
// and — for one release, where the curve has a closed form written out here — holds it.

const fuzzDeadline = 60 * time.Second

// checkComposition composes items and checks the answer; exact, when not nil, is the
// closed-form curve to hold at ε ≥ 0 (where it returns a negative value, none is known).
func checkComposition(t *testing.T, items []Item, exact func(eps float64) float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
	defer cancel()
	c, err := ComposeContext(ctx, items, &Options{Tolerance: 1e-2})
	if err != nil {
		var pe *dpkit.ParamError
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("%v: no answer within %v", items, fuzzDeadline)
		case !errors.As(err, &pe) && !errors.Is(err, dpkit.ErrInfeasible):
			t.Fatalf("%v: %v is neither a parameter error nor infeasibility", items, err)
		}
		return
	}
	prev := math.Inf(1)
	for _, eps := range []float64{0, 0.25, 1, 3, 10, 40} {
		up, lo, err := c.Delta(eps)
		if err != nil || math.IsNaN(up) || math.IsNaN(lo) || lo < 0 || lo > up || up > 1 {
			t.Fatalf("%v: δ(%g) = [%g, %g], %v", items, eps, lo, up, err)
		}
		if up > prev {
			t.Fatalf("%v: upper δ(%g) = %g rises above %g", items, eps, up, prev)
		}
		prev = up
		if exact != nil {
			if want := exact(eps); want >= 0 && (up < want*(1-1e-9)-1e-300 || lo > want*(1+1e-9)+1e-300) {
				t.Fatalf("%v: δ(%g) = [%.17g, %.17g] misses the closed form %.17g", items, eps, lo, up, want)
			}
		}
	}
	for _, delta := range []float64{1e-3, 1e-9} {
		up, lo, err := c.Epsilon(delta)
		if err != nil {
			if !errors.Is(err, dpkit.ErrInfeasible) {
				t.Fatalf("%v: ε(%g): %v", items, delta, err)
			}
			continue
		}
		if math.IsNaN(up) || math.IsInf(up, 0) || lo > up || lo < 0 {
			t.Fatalf("%v: ε(%g) = [%g, %g]", items, delta, lo, up)
		}
		if d, _, _ := c.Delta(up); d > delta*(1+1e-9) {
			t.Fatalf("%v: δ(ε(%g) = %g) = %g", items, delta, up, d)
		}
	}
}

// count maps a fuzzed integer to a release count in [1, 200]: each input must take well
// under a second, or the fuzzing coordinator, stopping its workers at the end of
// -fuzztime, counts the one still running as a crash.
func count(n uint16) int64 { return 1 + int64(n)%200 }

func FuzzLaplacePLD(f *testing.F) {
	f.Add(1.0, 1.0, uint16(0))
	f.Add(0.0014, 1.0, uint16(0))
	f.Add(1e-200, 1.0, uint16(0))
	f.Add(100.0, 1.0, uint16(999))
	f.Fuzz(func(t *testing.T, scale, sens float64, n uint16) {
		m := Laplace{Scale: scale, Sensitivity: sens}
		var exact func(float64) float64
		if e0 := sens / scale; count(n) == 1 && !math.IsInf(e0, 0) {
			exact = func(e float64) float64 { // 1 − e^((ε − ε0)/2) below ε0
				if e >= e0 {
					return 0
				}
				return -math.Expm1((e - e0) / 2)
			}
		}
		checkComposition(t, []Item{{m, count(n)}}, exact)
	})
}

func FuzzGaussianPLD(f *testing.F) {
	f.Add(1.0, 1.0, uint16(0))
	f.Add(0.01, 1.0, uint16(5))
	f.Add(1e-300, 1.0, uint16(0))
	f.Fuzz(func(t *testing.T, sigma, sens float64, n uint16) {
		m := Gaussian{Sigma: sigma, Sensitivity: sens}
		var exact func(float64) float64
		if mu := sens / sigma * math.Sqrt(float64(count(n))); mu > 0.01 && mu < 30 {
			// Balle & Wang Thm 8 by math.Erfc, compared where it does not cancel.
			exact = func(e float64) float64 {
				if d := gaussHockey(mu, e); d > 1e-8 {
					return d
				}
				return -1
			}
		}
		checkComposition(t, []Item{{m, count(n)}}, exact)
	})
}

func FuzzRandomizedResponsePLD(f *testing.F) {
	f.Add(1.0, 2, uint16(0))
	f.Add(710.0, 2, uint16(1))
	f.Add(800.0, 2, uint16(2))
	f.Add(3.0, 1<<20, uint16(0))
	f.Fuzz(func(t *testing.T, eps float64, k int, n uint16) {
		m := RandomizedResponse{Epsilon: eps, K: k}
		var exact func(float64) float64
		if count(n) == 1 && m.Validate() == nil {
			exact = func(e float64) float64 { // the truth, e^ε/(e^ε + K − 1), at loss ε
				if e >= eps {
					return 0
				}
				hi := 1 / (1 + float64(k-1)*math.Exp(-eps))
				return hi * -math.Expm1(e-eps)
			}
		}
		checkComposition(t, []Item{{m, count(n)}}, exact)
	})
}

func FuzzEpsilonDeltaPLD(f *testing.F) {
	f.Add(1.0, 1e-6, uint16(0))
	f.Add(0.0, 0.5, uint16(3))
	f.Add(800.0, 0.0, uint16(2))
	f.Fuzz(func(t *testing.T, eps, delta float64, n uint16) {
		m := EpsilonDelta{Epsilon: eps, Delta: delta}
		var exact func(float64) float64
		if count(n) == 1 && m.Validate() == nil {
			exact = func(e float64) float64 { // KOV eq. (17)/(18): δ + (1−δ)(1 − e^(x−ε))/(1 + e^(−ε))
				if e >= eps {
					return delta
				}
				return delta + (1-delta)*-math.Expm1(e-eps)/(1+math.Exp(-eps))
			}
		}
		checkComposition(t, []Item{{m, count(n)}}, exact)
	})
}

func FuzzDiscreteLaplacePLD(f *testing.F) {
	f.Add(1.0, int64(1), uint16(0))
	f.Add(1e-300, int64(1), uint16(0))
	f.Add(100.0, int64(1000), uint16(9))
	f.Fuzz(func(t *testing.T, scale float64, d int64, n uint16) {
		m := DiscreteLaplace{Scale: scale, Sensitivity: d}
		var exact func(float64) float64
		if count(n) == 1 && m.Validate() == nil && d <= 1000 && scale > 1e-3 {
			exact = func(e float64) float64 { // P(x) = c r^|x|, loss (|x−d| − |x|)/t, enumerated
				r := math.Exp(-1 / scale)
				c := -math.Expm1(-1/scale) / (1 + r)
				s := 0.0
				tail := int64(50*scale) + 10 // r^tail < 2e-22
				for x := -tail; x <= d+tail; x++ {
					l := (math.Abs(float64(x-d)) - math.Abs(float64(x))) / scale
					if l > e {
						s += c * math.Pow(r, math.Abs(float64(x))) * -math.Expm1(e-l)
					}
				}
				return s
			}
		}
		checkComposition(t, []Item{{m, count(n)}}, exact)
	})
}

func FuzzSubsampledPLD(f *testing.F) {
	f.Add(0, 1.0, 0.01, uint16(99))
	f.Add(0, 0.035, 0.5, uint16(0))
	f.Add(1, 0.0014, 0.5, uint16(0))
	f.Add(2, 800.0, 0.5, uint16(2))
	f.Fuzz(func(t *testing.T, base int, x, q float64, n uint16) {
		var b Mechanism
		switch uint(base) % 4 {
		case 0:
			b = Gaussian{Sigma: x, Sensitivity: 1}
		case 1:
			b = Laplace{Scale: x, Sensitivity: 1}
		case 2:
			b = RandomizedResponse{Epsilon: x, K: 2}
		default:
			b = EpsilonDelta{Epsilon: x, Delta: math.Min(math.Abs(q), 1) / 10}
		}
		k := count(n)
		if math.Abs(x) > 50 || math.Abs(x) < 0.01 {
			k = 1 + k%3 // losses of hundreds or more: few releases, each input well under a second
		}
		checkComposition(t, []Item{{PoissonSubsampled{Base: b, Rate: q}, k}}, nil)
	})
}
