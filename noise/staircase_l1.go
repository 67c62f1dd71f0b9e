package noise

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
)

// StaircaseL1 is the correlated two-dimensional staircase distribution of Kairouz's
// thesis, §2.3, eq. (2.8) with d = 2: for ε > 0, period Δ and γ ∈ [0, 1], a density that
// depends on x only through its ℓ1 norm,
//
//	f(x) = e^(−kε)·a        for ‖x‖₁ ∈ [kΔ, (k+γ)Δ),
//	f(x) = e^(−(k+1)ε)·a    for ‖x‖₁ ∈ [(k+γ)Δ, (k+1)Δ),    k = 0, 1, …
//
// Adding it to a query of ℓ1 sensitivity Δ is ε-DP (f(x) ≤ e^ε f(x + t) for ‖t‖₁ ≤ Δ),
// and for the ℓ1 cost it is optimal among all ε-DP noise (thesis Thm 2.3.1).
//
// It is sampled securely on a grid of power-of-two spacing g: each coordinate is snapped
// to ⌊x/g + ½⌋, which moves neighbouring queries apart by at most ⌈Δ/g⌉ + 1 grid steps
// in ℓ1 (⌈a⌉ + ⌈c⌉ ≤ ⌈a + c⌉ + 1), so the period is M = ⌈Δ/g⌉ + 1 steps, the step
// boundary r = max(1, ⌊γM + ½⌋), and the integer noise z ∈ ℤ² has
//
//	P(z) ∝ h(‖z‖₁),   h(n) = b^⌊n/M⌋ · (1 if n mod M < r else b),   b = e^(−ε),
//
// which is ε-DP for integer shifts of ℓ1 norm up to M (h is non-increasing and
// h(n + M) = b·h(n)). Every draw is exact: the norms split into the central ball ‖z‖₁ < r
// (2r² − 2r + 1 points of weight 1) and the blocks [r + jM, r + (j+1)M) of weight b^(j+1)
// per point, whose 4n points on each sphere ‖z‖₁ = n add up to b^(j+1)(α + βj) with
// α = 4Mr + 2M(M − 1) and β = 4M². With u = e^ε − 1,
//
//	P(central) = C/(C + α/u + β/u²),   C = 2r² − 2r + 1,
//	P(j) ∝ α·b^j + β·j·b^j   given the tail (a geometric or a shifted sum of two),
//
// each choice made by comparing random bits with the binary expansion of its
// probability (expansion.go); then a uniform point of the central ball (rejection from
// its bounding square), a norm n in the block with P ∝ n (rejection from the uniform,
// acceptance ≥ ½) and a uniform point of the sphere ‖z‖₁ = n.
type StaircaseL1 struct {
	eps, delta, gamma float64
	k                 int
	m, r              uint64
	geo               DiscreteLaplace // rate ε (rounded down to a multiple of 2^−63)
	central, single   *expansion      // P(central); P(geometric part | tail)
}

// NewStaircaseL1 returns the two-dimensional ℓ1 staircase distribution for ε, ℓ1
// sensitivity Δ > 0 and γ ∈ [0, 1]. dims must be 2 (the dimension of Thm 2.3.1).
func NewStaircaseL1(eps, delta, gamma float64, dims int) (*StaircaseL1, error) {
	if dims != 2 {
		return nil, &dpkit.ParamError{Name: "dims", Value: dims, Want: "2"}
	}
	k, geo, err := staircaseGrid(eps, delta, gamma)
	if err != nil {
		return nil, err
	}
	m := uint64(math.Ceil(math.Ldexp(delta, -k))) + 1
	r := max(1, uint64(math.Floor(gamma*float64(m)+0.5)))
	bm := new(big.Int).SetUint64(m)
	br := new(big.Int).SetUint64(r)
	// C = 2r² − 2r + 1, α = 4Mr + 2M(M − 1), β = 4M²
	c := new(big.Int).Mul(br, br)
	c.Sub(c, br).Lsh(c, 1).Add(c, big.NewInt(1))
	alpha := new(big.Int).Mul(bm, new(big.Int).Sub(bm, big.NewInt(1)))
	alpha.Lsh(alpha, 1).Add(alpha, new(big.Int).Lsh(new(big.Int).Mul(bm, br), 2))
	beta := new(big.Int).Lsh(new(big.Int).Mul(bm, bm), 2)
	central := tailOdds{num: geo.num, den: geo.den, a: c, c: []*big.Int{alpha, beta}}
	single := tailOdds{num: geo.num, den: geo.den, a: alpha, c: []*big.Int{beta}}
	return &StaircaseL1{eps: geo.rate, delta: delta, gamma: gamma, k: k, m: m, r: r, geo: *geo,
		central: newExpansion(central.bounds), single: newExpansion(single.bounds)}, nil
}

// Epsilon returns the privacy parameter of the noise: ε rounded down to a multiple of
// 2^−63, never above the ε asked for.
func (s *StaircaseL1) Epsilon() float64 { return s.eps }

// Dims returns the dimension, 2.
func (s *StaircaseL1) Dims() int { return 2 }

// Granularity returns the grid spacing g.
func (s *StaircaseL1) Granularity() float64 { return math.Ldexp(1, s.k) }

// Period returns the period M·g (≥ Δ + g).
func (s *StaircaseL1) Period() float64 { return math.Ldexp(float64(s.m), s.k) }

// Gamma returns the effective γ = r/M of the grid distribution.
func (s *StaircaseL1) Gamma() float64 { return float64(s.r) / float64(s.m) }

// GridPeriod returns M, the period in grid steps, and GridStep r, the central ball's
// radius bound in grid steps (‖z‖₁ < r).
func (s *StaircaseL1) GridPeriod() uint64 { return s.m }
func (s *StaircaseL1) GridStep() uint64   { return s.r }

// sample returns the integer noise vector (see StaircaseL1 for the construction).
func (s *StaircaseL1) sample(src Source) [2]int64 {
	r := bitReader{src: src}
	if r.bernoulliExpansion(s.central) {
		side := 2*s.r - 1 // the square |z_i| ≤ r − 1
		for {
			x := int64(r.uniform(side)) - int64(s.r-1)
			y := int64(r.uniform(side)) - int64(s.r-1)
			if uint64(max(x, -x)+max(y, -y)) < s.r {
				return [2]int64{x, y}
			}
		}
	}
	single := r.bernoulliExpansion(s.single)
	for {
		j, ok := s.geo.magnitude(&r)
		if !single && ok {
			j2, ok2 := s.geo.magnitude(&r)
			j, ok = j+j2+1, ok2 // P(j) ∝ j·b^j: one plus a sum of two geometrics
		}
		if !ok || j >= 1<<29 {
			continue // probability < exp(−2^17): see the package overview
		}
		lo := s.r + j*s.m // the block's norms [lo, lo + M)
		var n uint64
		for {
			n = lo + r.uniform(s.m)
			if r.uniform(lo+s.m) < n { // accept with probability n/(lo + M)
				break
			}
		}
		return sphere(&r, n)
	}
}

// sphere returns a uniform point of {z ∈ ℤ² : ‖z‖₁ = n}, n ≥ 1: the 4n points are
// (n − i, i) for i ∈ [0, n), turned by a uniform quarter turn.
func sphere(r *bitReader, n uint64) [2]int64 {
	i := int64(r.uniform(n))
	x, y := int64(n)-i, i
	for range r.uniform(4) {
		x, y = -y, x
	}
	return [2]int64{x, y}
}

// Add returns the release of v: each coordinate snapped to the grid plus the noise
// vector, in (g·ℤ)².
func (s *StaircaseL1) Add(src Source, v [2]float64) [2]float64 {
	z := s.sample(src)
	return [2]float64{unsnap(snap(v[0], s.k)+z[0], s.k), unsnap(snap(v[1], s.k)+z[1], s.k)}
}

// Noise returns a noise draw (for inspection and tests).
func (s *StaircaseL1) Noise(src Source) [2]float64 {
	z := s.sample(src)
	return [2]float64{unsnap(z[0], s.k), unsnap(z[1], s.k)}
}
