package compose

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
)

// MaxCount is the largest number of releases one Mech may stand for.
const MaxCount = 1_000_000_000_000

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
		return err
	}
	if err := dpkit.CheckDelta(name+".delta", m.Delta); err != nil {
		return err
	}
	return dpkit.CheckCount(name+".count", m.Count, MaxCount)
}

// validate checks a workload: at least one mechanism, each valid, and a total count
// within MaxCount.
func validate(ms []Mech) error {
	if len(ms) == 0 {
		return &dpkit.ParamError{Name: "mechanisms", Value: 0, Want: "at least one (ε, δ) mechanism"}
	}
	var total int64
	for i, m := range ms {
		if err := m.Validate(fmt.Sprintf("mech[%d]", i)); err != nil {
			return err
		}
		total += m.Count
		if total > MaxCount {
			return &dpkit.ParamError{Name: "total count", Value: total, Want: fmt.Sprintf("at most %d releases", int64(MaxCount))}
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

// floorKeep returns floor = 1 − Π(1−δ_ℓ) and keep = Π(1−δ_ℓ), computed as
// −expm1(Σ c·log1p(−δ)) and exp(Σ c·log1p(−δ)): never as 1 − product, which cancels
// (docs/errata.md item 3).
func floorKeep(ms []Mech) (floor, keep float64) {
	s := 0.0
	for _, m := range ms {
		if m.Delta == 1 {
			return 1, 0
		}
		s += float64(m.Count) * math.Log1p(-m.Delta)
	}
	if s == 0 {
		return 0, 1 // not −expm1(0) = −0
	}
	return -math.Expm1(s), math.Exp(s)
}

// Floor returns 1 − Π(1 − δ_ℓ), the smallest total δ the composition of ms reaches at
// any ε (every δ-event of every release), computed without cancellation (see floorKeep).
// The entries are not validated.
func Floor(ms []Mech) float64 {
	f, _ := floorKeep(ms)
	return f
}

// sumEps returns Σ_ℓ ε_ℓ, the largest possible privacy loss of the composition,
// summed exactly (math/big) and rounded up to float64: the float sum may fall below the
// exact sum of the binary inputs (5 × 0.4 rounds to 2, but the exact sum is 2 + 1.1e-16),
// while an exact sum such as 8 × 0.125 = 1 must stay 1 so that pure-DP budgets are met
// exactly at ε = Σ ε_ℓ.
func sumEps(ms []Mech) float64 {
	sum := new(big.Float).SetPrec(4096)
	for _, m := range ms {
		t := new(big.Float).SetPrec(4096).SetFloat64(m.Epsilon)
		t.Mul(t, new(big.Float).SetInt64(m.Count))
		sum.Add(sum, t)
	}
	f, acc := sum.Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}
