package pld

import (
	"math"
	"sort"

	"github.com/dpkit/dpkit/internal/numeric"
)

// Discrete is a finite privacy-loss distribution: Mass[i] at loss Loss[i] (strictly
// increasing), plus InfMass at +∞. The masses need not sum to one: any non-negative
// measure is allowed, and Delta is linear in it.
type Discrete struct {
	Loss    []float64
	Mass    []float64
	InfMass float64
}

// NewDiscrete returns the distribution with the given atoms, sorting them by loss and
// merging equal losses. Masses must be finite and ≥ 0; losses must not be NaN.
// An atom at loss +Inf is added to InfMass; atoms at −Inf contribute nothing to any
// δ(ε) and are dropped.
func NewDiscrete(loss, mass []float64, infMass float64) (*Discrete, error) {
	if len(loss) != len(mass) {
		return nil, paramErr("mass", len(mass), "as many masses as losses")
	}
	if bad(infMass) {
		return nil, paramErr("inf_mass", infMass, "a finite number ≥ 0")
	}
	type atom struct{ l, m float64 }
	atoms := make([]atom, 0, len(loss))
	for i := range loss {
		if bad(mass[i]) {
			return nil, paramErr("mass", mass[i], "finite numbers ≥ 0")
		}
		switch l := loss[i]; {
		case math.IsNaN(l):
			return nil, paramErr("loss", l, "numbers, not NaN")
		case math.IsInf(l, 1):
			infMass += mass[i]
		case math.IsInf(l, -1) || mass[i] == 0:
		default:
			atoms = append(atoms, atom{l, mass[i]})
		}
	}
	sort.Slice(atoms, func(i, j int) bool { return atoms[i].l < atoms[j].l })
	d := &Discrete{InfMass: infMass}
	for _, a := range atoms {
		if n := len(d.Loss); n > 0 && d.Loss[n-1] == a.l {
			d.Mass[n-1] += a.m
			continue
		}
		d.Loss = append(d.Loss, a.l)
		d.Mass = append(d.Mass, a.m)
	}
	return d, nil
}

func bad(m float64) bool { return math.IsNaN(m) || math.IsInf(m, 0) || m < 0 }

// Delta returns the hockey-stick divergence of the distribution at eps:
//
//	δ(ε) = InfMass + Σ_{Loss[i] > ε} Mass[i] · (1 − e^(ε − Loss[i]))
//
// Every term is non-negative and evaluated with expm1, and the sum is compensated, so
// the relative error is at most 5u (u = 2⁻⁵³) of the exact value for the stored atoms.
// Special cases: Delta(+Inf) = InfMass; Delta(−Inf) = total mass.
func (d *Discrete) Delta(eps float64) float64 {
	var s numeric.Sum
	i := sort.SearchFloat64s(d.Loss, eps)
	for i < len(d.Loss) && d.Loss[i] <= eps {
		i++
	}
	for j := len(d.Loss) - 1; j >= i; j-- {
		s.Add(d.Mass[j] * -math.Expm1(eps-d.Loss[j]))
	}
	s.Add(d.InfMass)
	return s.Value()
}

// MaxLoss returns the largest finite loss with positive mass (−Inf if there is none).
func (d *Discrete) MaxLoss() float64 {
	if len(d.Loss) == 0 {
		return math.Inf(-1)
	}
	return d.Loss[len(d.Loss)-1]
}

// Epsilon returns the smallest ε ≥ 0 with Delta(ε) ≤ delta, or +Inf when even
// Delta(+Inf) = InfMass exceeds delta. Special cases: Epsilon(δ) = 0 when Delta(0) ≤ δ.
//
// δ(ε) is continuous, non-increasing and, as a function of e^ε, convex and piecewise
// linear with breakpoints at the atoms. Walking down from the largest atom it keeps, for
// the atoms l_i ≥ ε, A = Σ m_j and G = Σ m_j e^(l_i − l_j), and the curve value
// F(l_i) by the cancellation-free recursion
//
//	F(l_{i−1}) = (1 − r)·A + r·F(l_i),  r = e^(l_{i−1} − l_i)
//
// and solves (1 − x)·A + x·F(l_i) = δ − InfMass for x = e^(ε − l_i) on the segment that
// crosses δ, i.e. ε = l_i + ln((A − t)/G). The result is then moved up by a few ulps until
// Delta (the direct, compensated sum) confirms Delta(ε) ≤ δ, so the returned ε is never
// below the exact ε of the stored atoms by more than Delta's 5u rounding.
func (d *Discrete) Epsilon(delta float64) float64 {
	eps, ok := d.estimate(delta)
	if !ok {
		return math.Inf(1)
	}
	return d.raise(eps, delta)
}

// EpsilonBelow returns an ε ≥ 0 at or below the smallest ε with Delta(ε) ≤ delta: the
// estimate of Epsilon moved down until the direct sum, rounded down past its error,
// still exceeds delta (0 when it does not even at 0; +Inf as Epsilon). It is the
// inversion for a lower curve, whose ε must not come out above the truth: the walk's
// running sums err by up to a few u per atom, which over the 10^6 atoms of a 10^12-fold
// binomial once put the lower ε 1.6e-12 above the exact one.
func (d *Discrete) EpsilonBelow(delta float64) float64 {
	eps, ok := d.estimate(delta)
	if !ok {
		return math.Inf(1)
	}
	step := math.Max(math.Abs(eps)*4e-16, 1e-300)
	for eps > 0 && !(d.Delta(eps)*(1-8*u) > delta) {
		eps = math.Max(0, eps-step)
		step *= 2
	}
	return eps
}

// estimate returns the ε of Epsilon before its check, and false when no ε reaches delta.
func (d *Discrete) estimate(delta float64) (float64, bool) {
	if d.InfMass > delta {
		return 0, false
	}
	t := delta - d.InfMass
	// Walk down: at atom i we know F = F(Loss[i]), A = Σ_{j≥i} m_j, G = Σ_{j≥i} m_j e^(l_i−l_j).
	F, A, G := 0.0, 0.0, 0.0
	for i := len(d.Loss) - 1; i >= 0 && d.Loss[i] > 0; i-- {
		li := d.Loss[i]
		if i < len(d.Loss)-1 {
			G *= math.Exp(li - d.Loss[i+1])
		}
		A += d.Mass[i]
		G += d.Mass[i]
		lo := 0.0
		if i > 0 && d.Loss[i-1] > 0 {
			lo = d.Loss[i-1]
		}
		Flo := -math.Expm1(lo-li)*A + math.Exp(lo-li)*F
		if Flo > t {
			// The crossing is in [lo, l_i]: (1 − x)·A + x·F(l_i) = t, x = e^(ε − l_i).
			eps := li + math.Log((A-t)/G)
			return math.Min(math.Max(eps, lo), li), true
		}
		F = Flo
	}
	return 0, true
}

// raise moves eps upward until the directly summed Delta(eps) ≤ delta.
func (d *Discrete) raise(eps, delta float64) float64 {
	step := math.Max(math.Abs(eps)*4e-16, 1e-300)
	for d.Delta(eps) > delta {
		eps += step
		step *= 2
	}
	return eps
}
