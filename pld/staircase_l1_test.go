package pld

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit/internal/numeric"
)

// staircaseL1Grid enumerates the two-dimensional grid staircase P(z) ∝ h(‖z‖₁) (the
// definition, not the closed form of StaircaseL1) on ‖z‖₁ < radius and returns, for each
// integer shift t with ‖t‖₁ ≤ M, the hockey-stick divergences Σ_z (P(z) − e^ε'·P(z − t))₊
// at the given ε' and the masses of L = ln P(z)/P(z − t) at −ε, 0 and ε. The truncation
// drops mass below about b^(radius/M).
type shiftResult struct {
	t      [2]int
	deltas []float64
	masses [3]float64 // L = −ε, 0, ε
}

func staircaseL1Grid(eps float64, M, r, radius int, epsPrimes []float64) []shiftResult {
	b := math.Exp(-eps)
	off := radius + 2*M // h on the box |z_i| ≤ off, 0 outside the ball ‖z‖₁ < radius
	side := 2*off + 1
	h := make([]float64, side*side)
	var z numeric.Sum
	for y1 := -off; y1 <= off; y1++ {
		for y2 := -off; y2 <= off; y2++ {
			if n := abs(y1) + abs(y2); n < radius {
				w := math.Pow(b, float64(n/M))
				if n%M >= r {
					w *= b
				}
				h[(y1+off)*side+y2+off] = w
				z.Add(w)
			}
		}
	}
	e := make([]float64, len(epsPrimes))
	for i, ep := range epsPrimes {
		e[i] = math.Exp(ep)
	}
	var out []shiftResult
	// By the symmetries of ‖·‖₁ (sign changes, swapping the coordinates) the shifts
	// 0 ≤ t₂ ≤ t₁ represent all.
	for t1 := 0; t1 <= M; t1++ {
		for t2 := 0; t2 <= min(t1, M-t1); t2++ {
			res := shiftResult{t: [2]int{t1, t2}, deltas: make([]float64, len(epsPrimes))}
			deltas := make([]numeric.Sum, len(epsPrimes))
			var masses [3]numeric.Sum
			for y1 := -off + M; y1 <= off-M; y1++ {
				for y2 := -off + M; y2 <= off-M; y2++ {
					p, q := h[(y1+off)*side+y2+off], h[(y1-t1+off)*side+y2-t2+off]
					if p == 0 && q == 0 {
						continue
					}
					for i := range e {
						deltas[i].Add(math.Max(0, p-e[i]*q))
					}
					if p > 0 && q > 0 {
						switch l := math.Log(p / q); {
						case l > eps/2:
							masses[2].Add(p)
						case l < -eps/2:
							masses[0].Add(p)
						default:
							masses[1].Add(p)
						}
					}
				}
			}
			for i := range deltas {
				res.deltas[i] = deltas[i].Value() / z.Value()
			}
			for i := range masses {
				res.masses[i] = masses[i].Value() / z.Value()
			}
			out = append(out, res)
		}
	}
	return out
}

func abs(x int) int { return max(x, -x) }

// TestStaircaseL1WorstShift: for small grids with every r ∈ [1, M] (M even and odd, r on
// both sides of (M + 1)/2), the enumerated distribution's privacy loss takes the values
// −ε, 0, ε only, no shift with ‖t‖₁ ≤ M exceeds the closed form's hockey-stick divergence
// δ(ε') at any ε' tried (ε' < 0 included), the axis shift (M, 0) attains it, and its three
// masses equal Masses() (1e-12 relative: the truncation at 36/ε periods drops about
// e^(−36)·radius² of the mass; sums compensated). The shifts 0 ≤ t₂ ≤ t₁ represent all
// by the symmetries of ‖·‖₁.
func TestStaircaseL1WorstShift(t *testing.T) {
	cases := []struct {
		eps  float64
		maxM int
	}{{1, 6}, {2.5, 5}, {0.4, 3}}
	if testing.Short() {
		cases = cases[:2]
		cases[0].maxM = 4
	}
	for _, c := range cases {
		for M := 1; M <= c.maxM; M++ {
			for r := 1; r <= M; r++ {
				m := StaircaseL1{Epsilon: c.eps, Period: uint64(M), Step: uint64(r)}
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				lo, mid, hi := m.Masses()
				if s := lo + mid + hi; math.Abs(s-1) > 1e-14 {
					t.Errorf("ε=%g M=%d r=%d: masses sum to %.17g", c.eps, M, r, s)
				}
				eps := []float64{0, c.eps / 3, c.eps * 0.9, -c.eps / 2}
				radius := M * (int(36/c.eps) + 2)
				for _, res := range staircaseL1Grid(c.eps, M, r, radius, eps) {
					axis := res.t == [2]int{M, 0}
					for i, ep := range eps {
						want := curve3(lo, mid, hi, c.eps, ep)
						got := res.deltas[i]
						if got > want*(1+1e-12)+1e-300 {
							t.Errorf("ε=%g M=%d r=%d t=%v ε'=%g: enumerated δ %.17g above the closed form %.17g", c.eps, M, r, res.t, ep, got, want)
						}
						if axis && math.Abs(got-want) > 1e-12*want {
							t.Errorf("ε=%g M=%d r=%d axis t=%v ε'=%g: δ %.17g, closed form %.17g", c.eps, M, r, res.t, ep, got, want)
						}
					}
					if axis {
						for i, w := range [3]float64{lo, mid, hi} {
							if math.Abs(res.masses[i]-w) > 1e-12*math.Max(w, 1e-3) {
								t.Errorf("ε=%g M=%d r=%d t=%v: mass %d enumerated %.17g, closed form %.17g", c.eps, M, r, res.t, i, res.masses[i], w)
							}
						}
					}
				}
			}
		}
	}
}

// curve3 returns δ(ε') of the symmetric three-point pair with P-masses (lo, mid, hi) at
// −ε, 0, ε: Σ (p − e^ε'·q)₊ with q = (e^ε lo, mid, e^(−ε) hi).
func curve3(lo, mid, hi, eps, ep float64) float64 {
	d := 0.0
	for _, pq := range [][2]float64{{lo, hi}, {mid, mid}, {hi, lo}} {
		d += math.Max(0, pq[0]-math.Exp(ep)*pq[1])
	}
	return d
}

// TestStaircaseL1Dominance: a larger P(L = ε) gives a larger δ(ε') at every ε' (the
// ordering that makes the axis shift the worst), and the post-processing of the derivation
// (keep ±ε with probability a/a′) maps the pair with P(L = ε) = a′ onto the one with a.
func TestStaircaseL1Dominance(t *testing.T) {
	eps := 1.3
	pair := func(a float64) (lo, mid, hi float64) { return math.Exp(-eps) * a, 1 - a*(1+math.Exp(-eps)), a }
	for _, a := range []float64{0.3, 0.5, 0.7} {
		ap := a + 0.05
		l1, m1, h1 := pair(a)
		l2, m2, h2 := pair(ap)
		for ep := -3.0; ep <= 3; ep += 0.125 {
			if curve3(l1, m1, h1, eps, ep) > curve3(l2, m2, h2, eps, ep)+1e-15 {
				t.Errorf("a=%g ε'=%g: smaller P(L = ε) gives a larger δ", a, ep)
			}
		}
		// post-processing: P masses (lo, mid, hi) ↦ (lo·k, mid + (lo + hi)(1 − k), hi·k), k = a/a′
		k := a / ap
		pl, pm, ph := l2*k, m2+(l2+h2)*(1-k), h2*k
		ql, qm, qh := h2*k, m2+(l2+h2)*(1-k), l2*k // Q has the outer masses swapped
		if math.Abs(pl-l1) > 1e-15 || math.Abs(pm-m1) > 1e-15 || math.Abs(ph-h1) > 1e-15 ||
			math.Abs(ql-h1) > 1e-15 || math.Abs(qm-m1) > 1e-15 || math.Abs(qh-l1) > 1e-15 {
			t.Errorf("a=%g: post-processing gives P (%g %g %g), Q (%g %g %g)", a, pl, pm, ph, ql, qm, qh)
		}
	}
}

// TestStaircaseL1Grid: at dpkit's grid sizes (M ≈ 2^31–2^32) the masses sum to 1, the
// pair lies between one-dimensional staircase's and the canonical (ε, 0) pair it
// replaces, P(L = ε) tends to ½ as ε → 0 (half the plane is pushed one level out) and to
// D₀/C (the central ball's share outside its shifted copy, 1 for r ≤ (M + 1)/2) as ε grows
// (at ε = 40 the outer levels still hold 4e-10 of it for γ = 10^−4).
func TestStaircaseL1Grid(t *testing.T) {
	M := uint64(1<<31 + 1)
	for _, g := range []float64{0.0001, 0.3, 0.5, 0.6, 0.999} {
		r := max(1, uint64(g*float64(M)))
		for _, eps := range []float64{1e-9, 0x1p-12, 0.1, 1, 5, 40, 709, 710, 0x1p20} {
			m := StaircaseL1{Epsilon: eps, Period: M, Step: r}
			lo, mid, hi := m.Masses()
			canon := 1 / (1 + math.Exp(-eps))
			if s := lo + mid + hi; math.IsNaN(s) || math.Abs(s-1) > 1e-12 || lo < 0 || mid < 0 || hi > canon*(1+1e-12) {
				t.Errorf("γ=%g ε=%g: masses %g %g %g (canonical %g)", g, eps, lo, mid, hi, canon)
			}
			if eps == 1e-9 && math.Abs(hi-0.5) > 1e-6 {
				t.Errorf("γ=%g ε=1e-9: P(L = ε) = %g, want ½", g, hi)
			}
			if eps >= 709 && g < 0.5 && math.Abs(hi-1) > 1e-12 {
				t.Errorf("γ=%g ε=%g: P(L = ε) = %g, want 1", g, eps, hi)
			}
		}
	}
}

// FuzzStaircaseL1PLD: any (ε, M, r) either fails Validate or gives a valid three-point
// pair (checkThreePoint).
func FuzzStaircaseL1PLD(f *testing.F) {
	f.Add(1.0, uint64(1<<31+1), uint64(1<<29))
	f.Add(70.0, uint64(1<<32), uint64(1))
	f.Add(1e-9, uint64(5), uint64(5))
	f.Add(800.0, uint64(4), uint64(3))
	f.Add(0.5, uint64(1<<62), uint64(1<<61+3))
	f.Fuzz(func(t *testing.T, eps float64, period, step uint64) {
		m := StaircaseL1{Epsilon: eps, Period: period, Step: step}
		if m.Validate() != nil {
			return
		}
		checkThreePoint(t, m, eps)
	})
}
