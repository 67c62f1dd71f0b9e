package pld

import (
	"fmt"
	"math"
)

// StaircaseL1 is the two-dimensional ℓ1 staircase mechanism as dpkit runs it
// (noise.StaircaseL1, Kairouz's thesis eq. (2.8)): integer noise z ∈ ℤ² with
// P(z) ∝ h(‖z‖₁), h(n) = b^⌊n/M⌋·(1 if n mod M < r else b), b = e^(−ε), added to a query
// whose snapped ℓ1 sensitivity is at most M grid steps (M = Period, r = Step,
// 1 ≤ r ≤ M). As in one dimension (Staircase) its privacy loss takes the values −ε, 0
// and ε only, and its worst shift is t = (M, 0) (or any axis vector of ℓ1 norm M):
//
//	P(L = ε)  = (D₀ + α′u + 2M²)/Z,        P(L = −ε) = e^(−ε)·P(L = ε),
//	P(L = 0)  = (O₀u² + b·c₁u² + (M² − 1 + π)·b·u)/Z,
//	Z = C·u² + α·u + 4M²,   u = e^ε − 1,   π = 1 if M is even else 0,
//
// where, with the ℓ1 ball B(R) = {y ∈ ℤ² : ‖y‖₁ < R} of C(R) = 2R² − 2R + 1 points,
// C = C(r), α = 4Mr + 2M(M − 1) (as in noise.StaircaseL1's normalisation), n₀ =
// max(0, 2r − 1 − M), O₀ = (n₀² + [n₀ odd])/2, D₀ = C − O₀, α′ = (M(3M + 4r − 2) + 1 − π)/2
// and c₁ = (M² + (2r − 1)(2M − 2r + 1) − 2 + π)/2 when 2r − 1 ≤ M, else M² − 1 + π.
// (The form above is the one with u² multiplied through; for u > 1 the code divides by
// u² instead.)
//
// Derivation. Let the level boundaries be B_k = r + kM (k ≥ 0), so h(n) = b^k on the
// level [B_(k−1), B_k) (B_(−1) = 0). For a shift t with ‖t‖₁ ≤ M, ‖y − t‖₁ and ‖y‖₁ differ
// by at most M, so they are at most one level apart and L(y) = ε·(level(‖y − t‖₁) −
// level(‖y‖₁)) ∈ {−ε, 0, ε}. L(y) = ε exactly when y is in level k and y − t is not in
// B(B_k), so P(L = ε)·Z_P = Σ_k b^k·D(B_k, t) with D(R, t) = |B(R) \ (B(R) + t)| (a y in
// B(B_(k−1)) has ‖y − t‖₁ < B_k). In the coordinates u = y₁ + y₂, v = y₁ − y₂ the ball
// B(R) is the set of (u, v) of equal parity with |u|, |v| ≤ R − 1, and the shift moves it
// by (a, c) = (t₁ + t₂, t₁ − t₂), max(|a|, |c|) = ‖t‖₁. The overlap |B(R) ∩ (B(R) + t)|
// counts the equal-parity pairs of two integer intervals of n_a = max(0, 2R − 1 − |a|)
// and n_c points: (n_a·n_c + [n_a odd]·[n_c odd])/2 (an odd interval here starts and ends
// on the parity of R − 1 + a, and a ≡ c). It is smallest when |a| = |c| = M, i.e. for
// t = (±M, 0) or (0, ±M): any other t has |a|, |c| ≤ M, so n_a, n_c ≥ n_M, and if it drops
// the parity term (a, c odd while M is even) then n_a, n_c ≥ n_M + 1 and
// (n_M + 1)² ≥ n_M² + 1. So the axis shift maximises D(B_k, t) for every k at once, hence
// P(L = ε). For it, D(B_k) = (M(4B_k − 2 − M) + 1 − π)/2 for k ≥ 1 (linear in k: α′ and
// the 2M² above after summing the geometric series) and D(B_0) = D₀. P(L = 0) counts y
// whose y − t stays in y's level: |level k| − D(B_k) − D(B_(k−1)), which is O₀ for k = 0,
// c₁ for k = 1 and M² − 1 + π for every k ≥ 2.
//
// Why the axis shift's pair dominates every other shift's: with masses (p₊, p₀, p₋) of L =
// ε, 0, −ε under P, Q has (e^(−ε)p₊, p₀, e^ε p₋), and the two normalisations force
// p₋ = e^(−ε)p₊, so the pair is fixed by p₊. A pair with p₊ = a is the post-processing of
// one with p₊ = a′ > a that keeps the outcomes ±ε with probability a/a′ and turns them
// into the outcome 0 otherwise (P's masses become (a, ·, e^(−ε)a) and Q's (e^(−ε)a, ·, a)).
// TestStaircaseL1WorstShift checks all of this against the enumerated distribution.
type StaircaseL1 struct {
	Epsilon float64 // ε of the grid distribution, in (0, 2^20]
	Period  uint64  // M, grid steps per period, ≥ 1
	Step    uint64  // r, the central ball's radius bound in grid steps, in [1, M]
}

func (m StaircaseL1) Validate() error { return Staircase(m).Validate() }

func (m StaircaseL1) String() string {
	return fmt.Sprintf("staircase-l1-grid:eps=%g,period=%d,step=%d", m.Epsilon, m.Period, m.Step)
}

// Masses returns P(L = −ε), P(L = 0), P(L = ε) under P (Q has the outer two swapped),
// each within 16 units of roundoff of the value above (every term is non-negative).
func (m StaircaseL1) Masses() (lo, mid, hi float64) {
	e := m.Epsilon
	M, r := float64(m.Period), float64(m.Step)
	pi := float64(1 - m.Period%2)
	b := math.Exp(-e)
	C := 2*r*r - 2*r + 1
	alpha := 4*M*r + 2*M*(M-1)
	alphaP := (M*(3*M+4*r-2) + 1 - pi) / 2
	d0, o0, c1 := C, 0.0, M*M-1+pi
	if n0 := 2*r - 1 - M; n0 > 0 {
		o0 = (n0*n0 + pi) / 2 // n₀ is odd exactly when M is even
		d0 = (M*(2*(2*r-1)-M) + 1 - pi) / 2
	} else {
		c1 = (M*M + (2*r-1)*(2*M-2*r+1) - 2 + pi) / 2
	}
	// Z, p₊Z and p₀Z in powers of u = e^ε − 1 (small ε) or t = 1/u (large ε).
	var z, plus, zero float64
	if u := math.Expm1(e); u <= 1 {
		z = C*u*u + alpha*u + 4*M*M
		plus = d0*u*u + alphaP*u + 2*M*M
		zero = o0*u*u + b*c1*u*u + (M*M-1+pi)*b*u
	} else {
		t := 1 / u // 0 once e^ε overflows: the tail terms vanish
		z = C + alpha*t + 4*M*M*t*t
		plus = d0 + alphaP*t + 2*M*M*t*t
		zero = o0 + b*c1 + (M*M-1+pi)*b*t
	}
	hi = plus / z
	return b * hi, zero / z, hi
}

func (m StaircaseL1) specs() []spec {
	lo, mid, hi := m.Masses()
	return threeLossSpecs(m.Epsilon, lo, mid, hi, 16*u)
}
