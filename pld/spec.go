package pld

import (
	"math"
	"sort"
)

// A spec describes one ordered dominating pair (P, Q) through its privacy loss
// L = ln(P(x)/Q(x)): how much P- and Q-probability the loss puts in each interval. It is
// what a lattice discretisation (discretize) needs, and nothing more.
type spec interface {
	// cell returns P[a < L ≤ b] and lq = ln Q[a < L ≤ b] (−Inf for a Q-mass of 0, or one
	// that is not known; see linearToLog) for finite losses; a = −Inf also counts the
	// outcomes with L = −∞ (Q-only outcomes), b = +Inf counts every finite loss above a.
	// relErr bounds the relative error of p and the absolute error of lq, but for the
	// rounding of lq's own magnitude (at most 4u·|lq|, which discretize adds).
	cell(a, b float64) (p, lq, relErr float64)
	// support returns finite losses lo < hi such that P and Q each give probability at
	// most eta to finite losses below lo and to finite losses above hi.
	support(eta float64) (lo, hi float64)
	// infMass returns P[L = +∞] (outcomes Q cannot produce: the δ of an (ε, δ) pair).
	infMass() float64
	// variance returns the variance of L under P (conditioned on L finite), used only to
	// choose lattice spacings.
	variance() float64
	// atomUnit returns a > 0 when every atom of the loss is an integer multiple of a (0 when
	// that is not so): a lattice whose spacing divides a holds the atoms exactly, which the
	// lower discretisation needs to stay tight.
	atomUnit() float64
	// maxLoss returns the largest finite loss (+Inf when unbounded).
	maxLoss() float64
}

// u is the unit roundoff of float64.
const u = 0x1p-53

// diffErr is the relative error bound of x − y computed from x and y that each carry a
// relative error of at most e: (|x| + |y|)·e / |x − y| + u.
func diffErr(x, y, e float64) float64 {
	d := math.Abs(x - y)
	if d == 0 {
		return 0
	}
	return (math.Abs(x)+math.Abs(y))*e/d + u
}

// cdfCell returns the mass of (a, b] from a CDF F and survival function S, taking the
// difference on the side where the values are smaller (so tails keep their relative
// accuracy), and its relative error for functions accurate to e relative.
func cdfCell(F, S func(float64) float64, a, b, e float64) (m, relErr float64) {
	if b <= a {
		return 0, 0
	}
	if sa := S(a); sa <= 0.5 {
		sb := S(b)
		return math.Max(sa-sb, 0), diffErr(sa, sb, e)
	}
	fa, fb := F(a), F(b)
	return math.Max(fb-fa, 0), diffErr(fb, fa, e)
}

// erfcErr is the relative accuracy assumed of math.Erfc, math.Exp and friends (their
// documented/observed error is below 1 ulp; 4u leaves room for argument rounding).
const erfcErr = 8 * u

// gaussianSpec: P = N(0, σ²), Q = N(Δ, σ²), μ = Δ/σ. The loss is
// L = (Δ² − 2xΔ)/(2σ²), so L ~ N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q.
type gaussianSpec struct{ mu float64 }

func normSF(z float64) float64  { return 0.5 * math.Erfc(z/math.Sqrt2) }
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func (g gaussianSpec) cell(a, b float64) (p, lq, relErr float64) {
	mu, m := g.mu, g.mu*g.mu/2
	// Standardised arguments: the relative error of z is a few u, which moves Φ by
	// |z|·φ(z)/Φ(z)·4u ≤ (z² + 1)·4u relative; fold it into the error bound.
	zp := func(l float64) float64 { return (l - m) / mu }
	zq := func(l float64) float64 { return (l + m) / mu }
	Fp := func(l float64) float64 { return normCDF(zp(l)) }
	Sp := func(l float64) float64 { return normSF(zp(l)) }
	lnFq := func(l float64) float64 { return logNormCDF(zq(l)) }
	lnSq := func(l float64) float64 { return logNormSF(zq(l)) }
	// Beyond |z| = 40 a tail is below 1e-349 (0 in float64: the upper bound's
	// underflowErr covers it) or within that of 1, and log Q-masses carry their own
	// magnitude term (spec.cell): the argument's rounding needs no more than z = 40.
	zmax := 0.0
	for _, z := range []float64{zp(a), zp(b), zq(a), zq(b)} {
		if !math.IsNaN(z) {
			zmax = math.Min(40, math.Max(zmax, math.Abs(z)))
		}
	}
	e := erfcErr + 4*u*(zmax*zmax+1)
	p, relErr = cdfCell(Fp, Sp, a, b, e)
	lq, eq := logCdfCell(lnFq, lnSq, a, b, e)
	return p, lq, math.Max(relErr, eq)
}

func (g gaussianSpec) support(eta float64) (lo, hi float64) {
	// Φ(−z) ≤ e^(−z²/2)/2 for z ≥ 0: z = √(2 ln(1/η)) bounds both tails of both laws.
	z := math.Sqrt(2 * math.Log(1/eta))
	m := g.mu * g.mu / 2
	return -m - z*g.mu, m + z*g.mu
}

func (g gaussianSpec) infMass() float64  { return 0 }
func (g gaussianSpec) atomUnit() float64 { return 0 }
func (g gaussianSpec) maxLoss() float64  { return math.Inf(1) }
func (g gaussianSpec) variance() float64 { return g.mu * g.mu }

// laplaceSpec: P = Lap(0, b), Q = Lap(Δ, b), ε0 = Δ/b. The loss is ε0 for x ≤ 0 (an atom:
// P ½, Q ½e^(−ε0)), −ε0 for x ≥ Δ (P ½e^(−ε0), Q ½) and ε0 − 2x/b in between, so for
// −ε0 ≤ l < ε0:
//
//	P[L ≤ l] = ½·e^(−(ε0−l)/2),  Q[L > l] = ½·e^(−(ε0+l)/2).
type laplaceSpec struct{ eps0 float64 }

func (s laplaceSpec) fp(l float64) float64 {
	switch {
	case l < -s.eps0:
		return 0
	case l >= s.eps0:
		return 1
	}
	return 0.5 * math.Exp(-(s.eps0-l)/2)
}

// lsq returns ln Q[L > l].
func (s laplaceSpec) lsq(l float64) float64 {
	switch {
	case l < -s.eps0:
		return 0
	case l >= s.eps0:
		return math.Inf(-1)
	}
	return -math.Ln2 - (s.eps0+l)/2
}

func (s laplaceSpec) cell(a, b float64) (p, lq, relErr float64) {
	const e = erfcErr
	if a >= -s.eps0 && a < b && b < s.eps0 {
		// Both ends in the density, neither atom in (a, b]: with d = −(b − a)/2,
		//   P = ½e^(−(ε0−b)/2)·(1 − e^d),  ln Q = ln ½ − (ε0 + a)/2 + ln(1 − e^d),
		// from b − a directly: differences of the CDFs would lose all relative accuracy in
		// a cell narrow against ε0 (a spacing of 2e-15 under ε0 = 1e-12 once gave
		// negative masses), and lsq(b) − lsq(a) would cancel when ε0 is large. The
		// exponent (ε0 − b)/2 is rounded by at most u·|ε0 − b|.
		d := -(b - a) / 2
		m := -math.Expm1(d)
		p = s.fp(b) * m
		lq = s.lsq(a) + math.Log(m)
		return p, lq, e + u*math.Abs(s.eps0-b)
	}
	p, relErr = cdfCell(s.fp, func(l float64) float64 { return 1 - s.fp(l) }, a, b, e)
	lq, f := logSub(s.lsq(a), s.lsq(b))
	return p, lq, math.Max(relErr, f*e+2*u)
}

func (s laplaceSpec) support(float64) (lo, hi float64) { return -s.eps0, s.eps0 }
func (s laplaceSpec) infMass() float64                 { return 0 }
func (s laplaceSpec) atomUnit() float64                { return s.eps0 }
func (s laplaceSpec) maxLoss() float64                 { return s.eps0 }

// variance of L under P: atoms ε0 (½), −ε0 (½e^(−ε0)) and a density on (−ε0, ε0).
// Only a guide for the lattice spacing, so a bound is used: ε0² (|L| ≤ ε0), and 4, since
// L = ε0 − 2B·min(Y, ε0) with B ~ Bernoulli(½), Y ~ Exp(1) has variance
// 2E[min(Y, ε0)²] − E[min(Y, ε0)]² ≤ 4 (it tends to 3 as ε0 grows).
func (s laplaceSpec) variance() float64 { return math.Min(s.eps0*s.eps0, 4) }

// atomSpec is a pair with finitely many outcomes, given by their losses, P-masses and
// log Q-masses (sorted by loss), plus P-only and Q-only mass.
type atomSpec struct {
	loss, p, lq    []float64
	q              []float64 // e^lq (0 where it underflows): what blocks multiply
	pInf, qNegInf  float64   // P[L = +∞], Q[L = −∞]
	relErr         float64   // relative error of each p, and absolute error of each lq
	lossLo, lossHi float64
	unit           float64 // see spec.atomUnit; set by the constructor's caller
}

func newAtomSpec(loss, p, lq []float64, pInf, qNegInf, relErr float64) *atomSpec {
	s := &atomSpec{loss: loss, p: p, lq: lq, pInf: pInf, qNegInf: qNegInf, relErr: relErr}
	s.lossLo, s.lossHi = loss[0], loss[len(loss)-1]
	s.q = make([]float64, len(lq))
	for i, l := range lq {
		s.q[i] = math.Exp(l)
	}
	return s
}

// newAtomSpecPQ is newAtomSpec for atoms given with linear Q-masses: each log Q-mass is
// ln q when q is normal, and else ln p − loss, exact for an outcome of loss ln(p/q) whose
// q underflowed (relErr must cover the relative errors of p and q, as for newAtomSpec).
func newAtomSpecPQ(loss, p, q []float64, pInf, qNegInf, relErr float64) *atomSpec {
	lq := make([]float64, len(q))
	for i := range q {
		switch {
		case q[i] >= 0x1p-1000:
			lq[i] = math.Log(q[i])
		case p[i] > 0:
			lq[i] = math.Log(p[i]) - loss[i]
		default:
			lq[i] = math.Inf(-1)
		}
	}
	return newAtomSpec(loss, p, lq, pInf, qNegInf, relErr)
}

func (s *atomSpec) cell(a, b float64) (p, lq, relErr float64) {
	i := sort.Search(len(s.loss), func(i int) bool { return s.loss[i] > a })
	n := 0
	lq = math.Inf(-1)
	for ; i < len(s.loss) && s.loss[i] <= b; i++ {
		p += s.p[i]
		lq = logAdd(lq, s.lq[i])
		n++
	}
	if math.IsInf(a, -1) && s.qNegInf > 0 {
		lq = logAdd(lq, math.Log(s.qNegInf))
		n++
	}
	return p, lq, s.relErr + float64(2*n)*u
}

func (s *atomSpec) support(float64) (lo, hi float64) {
	if s.lossLo == s.lossHi {
		return s.lossLo - 1, s.lossHi
	}
	return s.lossLo, s.lossHi
}

func (s *atomSpec) infMass() float64 { return s.pInf }

func (s *atomSpec) atomUnit() float64 { return s.unit }
func (s *atomSpec) maxLoss() float64  { return s.lossHi }

// variance of the atoms' losses under P, about their mean and scaled by the largest
// |loss| so that no square overflows (capped at MaxFloat64: it only guides spacings).
func (s *atomSpec) variance() float64 {
	sc := math.Max(math.Abs(s.lossLo), math.Abs(s.lossHi))
	if sc <= 1e100 {
		var m, m2, tot float64
		for i, l := range s.loss {
			m += s.p[i] * l
			m2 += s.p[i] * l * l
			tot += s.p[i]
		}
		if tot == 0 {
			return 0
		}
		m /= tot
		return math.Max(m2/tot-m*m, 0)
	}
	var m, tot float64
	for i, l := range s.loss {
		m += s.p[i] * (l / sc)
		tot += s.p[i]
	}
	if tot == 0 || sc == 0 {
		return 0
	}
	m /= tot
	w := 0.0
	for i, l := range s.loss {
		d := l/sc - m
		w += s.p[i] * d * d
	}
	if w == 0 {
		return 0
	}
	return math.Min(sc*sc*(w/tot), math.MaxFloat64)
}

// subsampledSpec is one direction of Poisson subsampling with rate q of a base pair
// (P, Q) under add/remove neighbours (Zhu, Dong & Wang 2022, Thm 11):
//
//	remove: (q·P + (1−q)·Q, Q),  loss L' = ln(1 − q + q·e^L)
//	add:    (Q, q·P + (1−q)·Q),  loss L' = −ln(1 − q + q·e^L)
//
// where L is the base loss. Both maps are monotone in L, so a loss cell of the
// subsampled pair is an interval of base losses.
type subsampledSpec struct {
	base spec
	rate float64
	add  bool
}

// baseLoss inverts l' = ln(1 − q + q e^l): l = ln((e^{l'} − (1−q))/q), −∞ when
// e^{l'} ≤ 1 − q.
func (s subsampledSpec) baseLoss(lp float64) float64 {
	if math.IsInf(lp, 0) {
		return lp
	}
	if lp > 700 {
		// e^{l'} − (1 − q) = e^{l'}·(1 − (1 − q)e^{−l'}), without overflow of e^{l'}
		return lp + math.Log1p(-(1-s.rate)*math.Exp(-lp)) - math.Log(s.rate)
	}
	// e^{l'} − (1 − q) = expm1(l') + q
	x := math.Expm1(lp) + s.rate
	if x <= 0 {
		return math.Inf(-1)
	}
	if r := x / s.rate; r <= math.MaxFloat64 {
		return math.Log(r)
	}
	return math.Log(x) - math.Log(s.rate) // x/q overflows for a tiny q
}

// forward maps a base loss to the subsampled loss of the remove direction.
func (s subsampledSpec) forward(l float64) float64 {
	if math.IsInf(l, -1) {
		return math.Log1p(-s.rate)
	}
	if l > 700 {
		// ln(1 − q + q e^l) = l + ln q + log1p((1 − q)/q·e^(−l)), without overflow of e^l
		return l + math.Log(s.rate) + math.Log1p((1-s.rate)/s.rate*math.Exp(-l))
	}
	// ln(1 − q + q e^l) = log1p(q·expm1(l))
	return math.Log1p(s.rate * math.Expm1(l))
}

func (s subsampledSpec) cell(a, b float64) (p, lq, relErr float64) {
	if !s.add {
		lo, hi := s.baseLoss(a), s.baseLoss(b)
		if math.IsInf(a, -1) {
			lo = math.Inf(-1)
		}
		bp, blq, e := s.base.cell(lo, hi)
		bq, eq := expErr(blq, e)
		return s.rate*bp + (1-s.rate)*bq, blq, math.Max(e, eq) + 2*u
	}
	// L' ∈ (a, b] ⟺ ln(1−q+qe^L) ∈ [−b, −a) ⟺ L ∈ [g(−b), g(−a)); the base cell is
	// taken as (g(−b)⁻, g(−a)], which may also count base outcomes at L' = a (mass from
	// just below the cell: the discretisations treat that as mass moved up, see
	// discretize) but never outcomes above b.
	lo, hi := s.baseLoss(-b), s.baseLoss(-a)
	if math.IsInf(lo, -1) {
		lo = -math.MaxFloat64 // every finite base loss, but not L = −∞ (see below)
	} else {
		lo = math.Nextafter(lo, math.Inf(-1))
	}
	// Base outcomes Q alone can produce (L = −∞) have L' = −ln(1−q) exactly: counted in
	// the cell that holds that value (not sent to +∞).
	if edge := -math.Log1p(-s.rate); a < edge && edge <= b {
		lo = math.Inf(-1)
	}
	bp, blq, e := s.base.cell(lo, hi)
	bq, eq := expErr(blq, e)
	lq = logAdd(math.Log(s.rate)+math.Log(bp), math.Log1p(-s.rate)+blq)
	return bq, lq, math.Max(e, eq) + 4*u
}

// expErr returns e^lq and its relative error, for lq with absolute error e plus the
// rounding of its own magnitude (4u·|lq|).
func expErr(lq, e float64) (float64, float64) {
	if math.IsInf(lq, -1) {
		return 0, 0
	}
	return math.Exp(lq), e + 4*u*math.Abs(lq) + 2*u
}

func (s subsampledSpec) support(eta float64) (lo, hi float64) {
	blo, bhi := s.base.support(eta)
	lo, hi = s.forward(blo), s.forward(bhi)
	if s.add {
		// The largest loss, −ln(1−q), comes from base outcomes Q alone can produce.
		lo, hi = -hi, -math.Log1p(-s.rate)
	}
	if hi <= lo {
		hi = lo + math.Max(math.Abs(lo)*1e-9, 1e-12)
	}
	return lo, hi
}

// heavyAtoms returns the subsampled images lo < hi of the base's extreme atoms ±M when
// the base loss has atoms (Laplace, geometric, randomized response, (ε, δ) pairs carry
// most of their mass there).
func (s subsampledSpec) heavyAtoms() (lo, hi float64, ok bool) {
	m := s.base.maxLoss()
	if s.base.atomUnit() <= 0 || math.IsInf(m, 0) || m <= 0 {
		return 0, 0, false
	}
	lo, hi = s.forward(-m), s.forward(m)
	if s.add {
		lo, hi = -hi, -lo
	}
	return lo, hi, hi > lo
}

// atomUnit and atomOffset: when the base has atoms, the two heavy atoms of the
// subsampled loss are lo and lo + (hi − lo), on the grid lo + (hi − lo)/2^j·Z, so the
// lattice is aligned with them (its Shift is lo). Otherwise the subsampled losses lie in
// [ln(1−q), −ln(1−q)] (remove: from below, add: from above), with mass piling up at that
// edge; aligning the lattice with it keeps the edge on a grid point.
func (s subsampledSpec) atomUnit() float64 {
	if lo, hi, ok := s.heavyAtoms(); ok {
		return hi - lo
	}
	return -math.Log1p(-s.rate)
}

// twoAtoms reports whether the subsampled loss is its two heavy atoms only: the base
// is a pair of outcomes with losses ±M and no mass at ±∞ (binary randomized response,
// an (ε, 0) pair). A base outcome at ±∞ or inside (−M, M) would add an atom off the grid
// of atomUnit.
func (s subsampledSpec) twoAtoms() bool {
	b, ok := s.base.(*atomSpec)
	return ok && len(b.loss) == 2 && b.loss[0] == -b.loss[1] && b.loss[1] > 0 && b.pInf == 0 && b.qNegInf == 0
}

func (s subsampledSpec) atomOffset() float64 {
	lo, _, _ := s.heavyAtoms()
	return lo
}

// shiftedSpec is a spec with every loss moved down by o (Q-masses scaled by e^o, so
// that each outcome's P-mass and loss agree): discretising it on the grid hZ and adding
// o back puts the original on the grid o + hZ. Cells are asked of the original at
// (a + o, b + o]; the rounding of that sum moves a boundary by an ulp, which the
// read-out's outward rounding of losses covers.
type shiftedSpec struct {
	s spec
	o float64
}

func (s shiftedSpec) cell(a, b float64) (p, lq, relErr float64) {
	p, lq, relErr = s.s.cell(a+s.o, b+s.o)
	return p, lq + s.o, relErr + 2*u
}

// support is widened by the rounding of the shift, so that an atom at the original
// support's end is not cut off (it would go to +∞, or be dropped).
func (s shiftedSpec) support(eta float64) (lo, hi float64) {
	lo, hi = s.s.support(eta)
	slack := 8 * u * (math.Abs(lo) + math.Abs(hi) + math.Abs(s.o))
	return lo - s.o - slack, hi - s.o + slack
}

// gridSlack bounds how far the rounding of a + o can move an atom off its grid point.
func (s shiftedSpec) gridSlack() float64 {
	lo, hi := s.s.support(0)
	return 8 * u * (math.Abs(lo) + math.Abs(hi) + math.Abs(s.o))
}

func (s shiftedSpec) infMass() float64  { return s.s.infMass() }
func (s shiftedSpec) variance() float64 { return s.s.variance() }
func (s shiftedSpec) atomUnit() float64 { return s.s.atomUnit() }
func (s shiftedSpec) maxLoss() float64  { return s.s.maxLoss() - s.o }

// maxLoss is an upper bound on the largest loss: the forward map (expm1, a product and
// log1p, each within an ulp; log1p's relative condition number is at most 1) is rounded
// up by 4u relative and an ulp, as is −log1p(−q).
func (s subsampledSpec) maxLoss() float64 {
	var l float64
	if s.add {
		l = -math.Log1p(-s.rate)
	} else {
		l = s.forward(s.base.maxLoss())
	}
	if math.IsInf(l, 0) || math.IsNaN(l) {
		return l
	}
	return math.Nextafter(l+4*u*math.Abs(l), math.Inf(1))
}

func (s subsampledSpec) infMass() float64 {
	if s.add {
		return 0
	}
	return s.rate * s.base.infMass()
}

func (s subsampledSpec) variance() float64 {
	// For small q, L' ≈ ±q·(e^L − 1), whose second moment under Q is q²·χ²(P‖Q); for a
	// Gaussian χ² = e^(μ²) − 1 = expm1(Var L). Only a guide for the lattice spacing.
	// That grows as e^(μ²) for a large base loss, while |L'| ≤ |L| always: the second
	// moment of the base loss (at most M² for a loss bounded by M, and μ² + μ⁴/4 for a
	// Gaussian's) bounds it too.
	v := s.base.variance()
	m2 := v + v*v/4
	if m := s.base.maxLoss(); !math.IsInf(m, 0) {
		m2 = m * m
	}
	return math.Min(s.rate*s.rate*math.Expm1(math.Min(v, 700)), m2)
}

// discreteLaplaceSpec: P(x) = c·r^|x|, Q(x) = c·r^|x−d| on the integers, r = e^(−1/t),
// c = (1−r)/(1+r). The loss is (d − 2x)/t for 0 ≤ x ≤ d (x ≤ 0 all give d/t, with P-mass
// 1/(1+r); x ≥ d all give −d/t, with P-mass r^d/(1+r)); cells are summed in closed form
// (geometric series), so d may be large (a fine grid).
type discreteLaplaceSpec struct {
	t float64
	d int64
}

// mass returns Σ_{x=x1..x2} P(x) and ln Σ_{x=x1..x2} Q(x) over 0 ≤ x1 ≤ x2 ≤ d, ends
// included (the Q-masses in log space: r^d underflows for a large d/t).
func (s discreteLaplaceSpec) mass(x1, x2 int64) (p, lq float64) {
	lr := -1 / s.t // ln r
	r := math.Exp(lr)
	l1r := math.Log1p(r)
	c := -math.Expm1(lr) / (1 + r)
	geo := func(y1, y2 int64) float64 { // Σ_{y=y1..y2} c·r^y, 0 < y1 ≤ y2 < d
		if y2 < y1 {
			return 0
		}
		return c * math.Exp(float64(y1)*lr) * math.Expm1(float64(y2-y1+1)*lr) / math.Expm1(lr)
	}
	logGeo := func(y1, y2 int64) float64 { // ln of geo: c = −expm1(ln r)/(1 + r)
		if y2 < y1 {
			return math.Inf(-1)
		}
		return float64(y1)*lr - l1r + math.Log(-math.Expm1(float64(y2-y1+1)*lr))
	}
	// The ends: x ≤ 0 all have P-mass 1/(1+r) and Q-mass r^d/(1+r); x ≥ d the reverse.
	lq = math.Inf(-1)
	if x1 == 0 {
		p += 1 / (1 + r)
		lq = logAdd(lq, float64(s.d)*lr-l1r)
		x1 = 1
	}
	if x2 == s.d && x1 <= s.d {
		p += math.Exp(float64(s.d)*lr) / (1 + r)
		lq = logAdd(lq, -l1r)
		x2 = s.d - 1
	}
	p += geo(x1, x2)
	lq = logAdd(lq, logGeo(s.d-x2, s.d-x1))
	return p, lq
}

func (s discreteLaplaceSpec) cell(a, b float64) (p, lq, relErr float64) {
	// loss ∈ (a, b] ⟺ (d − b·t)/2 ≤ x < (d − a·t)/2; the estimates are then corrected
	// against the losses as computed in float64, (d − 2x)·fl(1/t): an integer times the
	// atom unit, as the aligned lattice's grid points are (unit/2^j times an integer), so
	// an atom on a grid point is found in the cell it tops. fl(1/t) is within u of 1/t: the
	// lattice read-out's outward rounding of losses (Lattice.Discrete) covers it.
	if b <= a || math.IsInf(b, -1) || math.IsInf(a, 1) {
		// Empty: spec.cell answers any interval (a subsampled add direction asks for
		// (a, −∞] above its edge), and the searches below would not end on one.
		return 0, math.Inf(-1), 0
	}
	d := float64(s.d)
	unit := s.atomUnit()
	loss := func(x float64) float64 { return (d - 2*x) * unit } // decreasing in x
	x1 := math.Max(math.Ceil((d-b*s.t)/2), 0)
	for x1 > 0 && loss(x1-1) <= b {
		x1--
	}
	for x1 <= d && loss(x1) > b {
		x1++
	}
	x2 := d
	if !math.IsInf(a, -1) {
		x2 = math.Min(math.Ceil((d-a*s.t)/2)-1, d)
		for x2 < d && loss(x2+1) > a {
			x2++
		}
		for x2 >= 0 && loss(x2) <= a {
			x2--
		}
	}
	if x2 < x1 {
		return 0, math.Inf(-1), 0
	}
	p, lq = s.mass(int64(x1), int64(x2))
	return p, lq, 16 * u
}

func (s discreteLaplaceSpec) support(float64) (lo, hi float64) {
	return -float64(s.d) / s.t, float64(s.d) / s.t
}
func (s discreteLaplaceSpec) infMass() float64  { return 0 }
func (s discreteLaplaceSpec) variance() float64 { e := float64(s.d) / s.t; return e * e }
func (s discreteLaplaceSpec) atomUnit() float64 { return 1 / s.t }
func (s discreteLaplaceSpec) maxLoss() float64  { return quoUp(float64(s.d), s.t) }
