package compose

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// MaxCount is the largest number of releases one Mech, and a whole workload, may stand
// for: the accounting core's one bound, pld.MaxCount (10^12).
const MaxCount = pld.MaxCount

// Mech stands for Count releases, each (Epsilon, Delta)-differentially private.
type Mech struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Count   int64   `json:"count"`
}

func (m Mech) String() string { return fmt.Sprintf("%d×(ε=%g, δ=%g)", m.Count, m.Epsilon, m.Delta) }

// Validate checks ε finite ≥ 0, δ ∈ [0, 1] and 1 ≤ Count ≤ MaxCount. name prefixes the
// parameter names in the error (e.g. "mech[2]").
func (m Mech) Validate(name string) error {
	if err := dpkit.CheckEpsilon(name+".epsilon", m.Epsilon); err != nil {
		return dpkit.InPackage("compose", err)
	}
	if err := dpkit.CheckDelta(name+".delta", m.Delta); err != nil {
		return dpkit.InPackage("compose", err)
	}
	return dpkit.InPackage("compose", dpkit.CheckCount(name+".count", m.Count, MaxCount))
}

// validate checks a workload: at least one mechanism, each valid, and a total count
// within MaxCount.
func validate(ms []Mech) error {
	if len(ms) == 0 {
		return &dpkit.ParamError{Pkg: "compose", Name: "mechanisms", Value: 0, Want: "at least one (ε, δ) mechanism"}
	}
	var total int64
	for i, m := range ms {
		if err := m.Validate(fmt.Sprintf("mech[%d]", i)); err != nil {
			return err
		}
		total += m.Count
		if total > MaxCount {
			return &dpkit.ParamError{Pkg: "compose", Name: "total_count", Value: total, Want: fmt.Sprintf("at most %d releases", int64(MaxCount))}
		}
	}
	return nil
}

// Group merges entries with identical (ε, δ), adding their counts and keeping
// first-seen order. Composition results do not depend on grouping.
func Group(ms []Mech) []Mech {
	idx := map[[2]float64]int{}
	var out []Mech
	for _, m := range ms {
		key := [2]float64{m.Epsilon, m.Delta}
		if i, ok := idx[key]; ok {
			out[i].Count += m.Count
			continue
		}
		idx[key] = len(out)
		out = append(out, m)
	}
	return out
}

// deltaEvents brackets floor = 1 − Π(1−δ_ℓ), the probability of some δ-event, and
// keep = Π(1−δ_ℓ). They are computed as −expm1(s) and exp(s), s = Σ c·log1p(−δ), never
// as 1 − product, which cancels (docs/errata.md item 3), and rounded outward: s is a
// sum of n terms of one sign, each within 2u, so it errs by at most E = (n + 3)u·|s|,
// and −expm1, exp are monotone in s and accurate to an ulp. (Reporting the floor to
// nearest once put 27 of 213 random answers at ε ≥ Σε_ℓ one or two ulps below the truth.)
type deltaEvents struct {
	floorUp, floorDown float64 // floorDown ≤ 1 − Π(1−δ_ℓ) ≤ floorUp
	keepUp, keepDown   float64 // keepDown ≤ Π(1−δ_ℓ) ≤ keepUp
}

func newDeltaEvents(ms []Mech) deltaEvents {
	s := 0.0
	for _, m := range ms {
		if m.Delta == 1 {
			return deltaEvents{floorUp: 1, floorDown: 1}
		}
		s += float64(m.Count) * math.Log1p(-m.Delta)
	}
	if s == 0 {
		return deltaEvents{keepUp: 1, keepDown: 1} // no δ-event: exact 0 and 1
	}
	e := float64(len(ms)+3) * u * math.Abs(s)
	return deltaEvents{
		floorUp:   math.Min(1, math.Nextafter(-math.Expm1(s-e)*(1+2*u), 2)),
		floorDown: math.Max(0, math.Nextafter(-math.Expm1(s+e)*(1-2*u), -1)),
		keepUp:    math.Min(1, math.Nextafter(math.Exp(s+e)*(1+2*u), 2)),
		keepDown:  math.Max(0, math.Nextafter(math.Exp(s-e)*(1-2*u), -1)),
	}
}

// u is the unit roundoff of float64.
const u = 0x1p-53

// Floor returns a value at or above 1 − Π(1 − δ_ℓ) (by at most a few ulps), the
// smallest total δ the composition of ms reaches at any ε (every δ-event of every
// release), computed without cancellation (see deltaEvents): a total δ at or above it
// is always feasible. The entries are not validated.
func Floor(ms []Mech) float64 {
	return newDeltaEvents(ms).floorUp
}

// sumEps returns Σ_ℓ ε_ℓ, the largest possible privacy loss of the composition,
// summed exactly (math/big) and rounded up to float64: the float sum may fall below the
// exact sum of the binary inputs (5 × 0.4 rounds to 2, but the exact sum is 2 + 1.1e-16),
// while an exact sum such as 8 × 0.125 = 1 must stay 1 so that pure-DP budgets are met
// exactly at ε = Σ ε_ℓ.
func sumEps(ms []Mech) float64 {
	return sumUp(ms, func(m Mech) float64 { return m.Epsilon })
}

// sumDelta returns Σ_ℓ δ_ℓ (basic composition's δ), summed exactly and rounded up, as
// sumEps.
func sumDelta(ms []Mech) float64 {
	return sumUp(ms, func(m Mech) float64 { return m.Delta })
}

// sumUp returns Σ Count·x(m) summed exactly (math/big) and rounded up to float64.
func sumUp(ms []Mech, x func(Mech) float64) float64 {
	sum := new(big.Float).SetPrec(4096)
	for _, m := range ms {
		t := new(big.Float).SetPrec(4096).SetFloat64(x(m))
		t.Mul(t, new(big.Float).SetInt64(m.Count))
		sum.Add(sum, t)
	}
	f, acc := sum.Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}
