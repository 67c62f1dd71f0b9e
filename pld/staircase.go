package pld

import (
	"fmt"
	"math"
)

// Staircase is the staircase mechanism as dpkit runs it (noise.Staircase): integer noise
// on a grid with P(n) ∝ h(|n|), h(m) = b^⌊m/M⌋·(1 if m mod M < r else b), b = e^(−ε),
// added to a query whose snapped sensitivity is at most M grid steps (M = Period, r = Step,
// 1 ≤ r ≤ M). Its privacy loss takes the values −ε, 0 and ε only (Geng–Viswanath; KOV
// §4.1), so its pair is a three-point one like k-ary randomized response, with
//
//	P(L = ε) = (r + m + M/(e^ε − 1))/Z,   P(L = −ε) = e^(−ε)·P(L = ε),
//	P(L = 0) = ((r − 1 − m) + e^(−ε)(M − r − m))/Z,
//	Z = 2r − 1 + 2M/(e^ε − 1),   m = min(r − 1, M − r).
//
// Derivation: h = b^s(m) where s counts the step boundaries r + kM (k ≥ 0) at or below m.
// For a shift t ∈ [1, M], L(n) = ε·(s(|n − t|) − s(|n|)) ∈ {−ε, 0, ε} (an interval of
// length ≤ M holds at most one boundary). L = ε needs a boundary in (|n|, |n − t|]: for
// n ≤ 0 that holds for min(t, r) points of weight 1 and t points of weight b^k for each
// k ≥ 1; for 0 < n < t it holds for the n < r with t − n ≥ r, max(0, min(r − 1, t − r))
// points of weight 1; for n ≥ t never. Every part grows with t, so t = M is the worst
// shift, and since the three-point curve δ(ε') = P(L = ε)(1 − e^(ε'−ε)) grows with
// P(L = ε), the pair at t = M dominates every shift. P(L = −ε) = e^(−ε)P(L = ε) because
// Q sums to 1; P(L = 0) is written without cancellation. The pair is symmetric.
type Staircase struct {
	Epsilon float64 // ε of the grid distribution, in (0, 2^20]
	Period  uint64  // M, grid steps per period, ≥ 1
	Step    uint64  // r, grid steps in the central step, in [1, M]
}

func (m Staircase) Validate() error {
	if err := positive("eps", m.Epsilon); err != nil {
		return err
	}
	if m.Epsilon > 0x1p20 {
		return paramErr("eps", m.Epsilon, "in (0, 2^20]")
	}
	if m.Period < 1 || m.Period > 1<<62 {
		return paramErr("period", m.Period, "an integer in [1, 2^62]")
	}
	if m.Step < 1 || m.Step > m.Period {
		return paramErr("step", m.Step, fmt.Sprintf("an integer in [1, period = %d]", m.Period))
	}
	return nil
}

func (m Staircase) String() string {
	return fmt.Sprintf("staircase-grid:eps=%g,period=%d,step=%d", m.Epsilon, m.Period, m.Step)
}

// Masses returns P(L = −ε), P(L = 0), P(L = ε) under P (Q has the outer two swapped),
// each within 8 units of roundoff of the value above.
func (m Staircase) Masses() (lo, mid, hi float64) {
	e := m.Epsilon
	mm, r := float64(m.Period), float64(m.Step)
	t := 1 / math.Expm1(e) // 0 once e^ε overflows: the tail terms below then vanish
	b := math.Exp(-e)
	k := math.Min(r-1, mm-r)
	z := 2*r - 1 + 2*mm*t
	hi = (r + k + mm*t) / z
	lo = (b*(r+k) + mm*b*t) / z
	mid = ((r - 1 - k) + b*(mm-r-k)) / z
	return lo, mid, hi
}

func (m Staircase) specs() []spec {
	lo, mid, hi := m.Masses()
	return threeLossSpecs(m.Epsilon, lo, mid, hi, 8*u)
}

// threeLossSpecs returns the symmetric pair whose loss takes the values −ε, 0, ε with
// P-masses lo, mid, hi (Q has the outer two swapped), each within relErr.
func threeLossSpecs(e, lo, mid, hi, relErr float64) []spec {
	sp := newAtomSpecPQ([]float64{-e, 0, e}, []float64{lo, mid, hi}, []float64{hi, mid, lo}, 0, 0, relErr)
	sp.unit = e
	return []spec{sp}
}
