package ledger

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
)

// Stats are the sufficient statistics of a budget: the number of releases charged to it
// and the exact sums, over the charged costs (ε_m, δ_m), of ε_m, δ_m and ε_m². Every
// float64 is a dyadic rational, so the sums are exact rationals (math/big.Rat) and no
// comparison against a budget is ever rounded. They are updated in the same transaction
// that records a release, and Ledger.Audit recomputes them from the release log.
type Stats struct {
	Count        int64
	SumEpsilon   *big.Rat
	SumDelta     *big.Rat
	SumEpsilonSq *big.Rat
}

// ZeroStats returns the statistics of a budget with no releases.
func ZeroStats() Stats {
	return Stats{SumEpsilon: new(big.Rat), SumDelta: new(big.Rat), SumEpsilonSq: new(big.Rat)}
}

// Add returns st plus one release charged at c (exact).
func (st Stats) Add(c dpkit.Budget) Stats {
	e := ratOf(c.Epsilon)
	return Stats{
		Count:        st.Count + 1,
		SumEpsilon:   new(big.Rat).Add(st.SumEpsilon, e),
		SumDelta:     new(big.Rat).Add(st.SumDelta, ratOf(c.Delta)),
		SumEpsilonSq: new(big.Rat).Add(st.SumEpsilonSq, new(big.Rat).Mul(e, e)),
	}
}

// Equal reports whether st and o are identical (exactly).
func (st Stats) Equal(o Stats) bool {
	return st.Count == o.Count && st.SumEpsilon.Cmp(o.SumEpsilon) == 0 &&
		st.SumDelta.Cmp(o.SumDelta) == 0 && st.SumEpsilonSq.Cmp(o.SumEpsilonSq) == 0
}

// EncodedStats is the storage form of Stats: the count and the three exact sums as
// rational strings ("n" or "n/d", math/big.Rat.RatString).
type EncodedStats struct {
	Count                              int64
	SumEpsilon, SumDelta, SumEpsilonSq string
}

// Encode returns the storage form of st.
func (st Stats) Encode() EncodedStats {
	return EncodedStats{st.Count, st.SumEpsilon.RatString(), st.SumDelta.RatString(), st.SumEpsilonSq.RatString()}
}

// Decode parses the storage form; a malformed value is an ErrNotLedger error (the
// database was altered outside dpkit).
func (e EncodedStats) Decode() (Stats, error) {
	st := Stats{Count: e.Count}
	var ok [3]bool
	st.SumEpsilon, ok[0] = new(big.Rat).SetString(e.SumEpsilon)
	st.SumDelta, ok[1] = new(big.Rat).SetString(e.SumDelta)
	st.SumEpsilonSq, ok[2] = new(big.Rat).SetString(e.SumEpsilonSq)
	if !ok[0] || !ok[1] || !ok[2] || e.Count < 0 || st.SumEpsilon.Sign() < 0 || st.SumDelta.Sign() < 0 || st.SumEpsilonSq.Sign() < 0 {
		return Stats{}, fmt.Errorf("%w: malformed budget statistics %+v", ErrNotLedger, e)
	}
	return st, nil
}

// ratOf returns the exact rational value of a finite float64.
func ratOf(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// ratUp returns the smallest float64 ≥ r.
func ratUp(r *big.Rat) float64 {
	f, exact := r.Float64()
	if !exact && ratOf(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// ratDown returns the largest float64 ≤ r.
func ratDown(r *big.Rat) float64 {
	f, exact := r.Float64()
	if !exact && ratOf(f).Cmp(r) > 0 {
		f = math.Nextafter(f, math.Inf(-1))
	}
	return f
}
