package multiparty

import (
	"math"
	"slices"

	"github.com/dpkit/dpkit/internal/numeric"
)

// certificate is a rule with its certified worst-case accuracy and a prior with its
// certified Bayes accuracy: lower ≤ value of the game ≤ upper.
type certificate struct {
	q, pi        []float64
	lower, upper float64
}

// offer keeps the better of the current and the candidate bounds.
func (c *certificate) offerRule(q []float64, lower float64) {
	if lower > c.lower {
		c.q, c.lower = slices.Clone(q), lower
	}
}

// offerPrior takes the prior scaled to sum 1: the Bayes accuracy is homogeneous of
// degree 1 in π, so upper is divided by Σπ (compensated sum).
func (c *certificate) offerPrior(pi []float64, upper float64) {
	var s numeric.Sum
	for _, p := range pi {
		s.Add(p)
	}
	sum := s.Value()
	if !(sum > 0) {
		return
	}
	if upper /= sum; upper < c.upper {
		c.pi, c.upper = slices.Clone(pi), upper
		for x := range c.pi {
			c.pi[x] /= sum
		}
	}
}

// projectSimplex replaces v by its Euclidean projection onto {v ≥ 0, Σ v = 1}
// (Held–Wolfe–Crowder; sort-based, O(n log n)). buf has len(v).
func projectSimplex(v, buf []float64) {
	if len(v) == 2 {
		a := min(max((v[0]-v[1]+1)/2, 0), 1)
		v[0], v[1] = a, 1-a
		return
	}
	copy(buf, v)
	slices.Sort(buf)
	s, theta := 0.0, 0.0
	n := len(buf)
	for i := n - 1; i >= 0; i-- {
		s += buf[i]
		t := (s - 1) / float64(n-i)
		if i == 0 || buf[i-1] <= t {
			theta = t
			break
		}
	}
	for i := range v {
		v[i] = max(v[i]-theta, 0)
	}
}

// pdhg runs the primal–dual hybrid gradient method (Chambolle–Pock 2011 with the
// diagonal preconditioning of Pock–Chambolle 2011, α = 1) on the saddle problem
// max_q min_π Σ_x π(x) acc_q(x), with restarts to the average iterate when the
// duality gap — computable exactly here, since both feasible sets are bounded — has
// fallen by a constant factor (Applegate et al. 2023, restarted PDHG for LP). Every
// iterate's rule and prior are offered to cert. Each iteration costs one product with
// a and one with its transpose.
//
// The iteration starts from the rule start (cert.q when nil) and the prior startPi
// (cert.pi when nil).
func pdhg(g game, cert *certificate, start, startPi []float64, iters int, tol float64) {
	if start == nil {
		start = cert.q
	}
	if startPi == nil {
		startPi = cert.pi
	}
	r := newPDHGRun(g, start, startPi)
	const check = 32
	for it := 1; it <= iters; it++ {
		r.step(cert, it)
		if it%check == 0 && r.restart(cert, tol) {
			return
		}
	}
}

// pdhgRun is the state of pdhg: the iterate (q, π) with acc = accuracy of q, the running
// averages since the last restart (qa, pa; navg iterates), the iterate at the last
// restart (q0, p0), the primal steps τ and weight ω, and the restart schedule's gaps.
type pdhgRun struct {
	g                game
	nx, nt, ny       int
	tau              []float64
	omega            float64
	q, pi, qa, pa    []float64
	q0, p0           []float64
	navg             int
	acc, accNew, sc  []float64
	buf, scBuf       []float64
	accBuf           []float64
	lastGap, prevGap float64
}

// newPDHGRun sets the diagonal steps and starts from the rule start and the prior
// startPi.
func newPDHGRun(g game, start, startPi []float64) *pdhgRun {
	nx, nt, ny := g.size()
	ones := make([]float64, nx)
	for i := range ones {
		ones[i] = 1
	}
	colsum := make([]float64, nt*ny)
	g.scores(ones, colsum)
	tau := make([]float64, nt) // primal step per transcript: 1 / max_y column sum
	for t := range nt {
		m := 0.0
		for _, v := range colsum[t*ny : (t+1)*ny] {
			m = max(m, v)
		}
		if m > 0 {
			tau[t] = 1 / m
		}
	}
	// Row sums are 1 (each row of a is a distribution), so σ = 1; the primal weight
	// ω rescales τ → ω τ, σ → σ/ω.
	r := &pdhgRun{g: g, nx: nx, nt: nt, ny: ny, tau: tau, omega: 1}
	r.q, r.pi = slices.Clone(start), slices.Clone(startPi)
	r.qa, r.pa = slices.Clone(r.q), slices.Clone(r.pi) // averages since the last restart
	r.q0, r.p0 = slices.Clone(r.q), slices.Clone(r.pi) // iterate at the last restart
	r.acc = make([]float64, nx)
	r.accNew = make([]float64, nx)
	r.sc = make([]float64, nt*ny)
	r.buf = make([]float64, max(nx, ny))
	r.scBuf = make([]float64, nt*ny)
	r.accBuf = make([]float64, nx)
	g.accuracy(r.q, r.acc)
	// The restart schedule follows this run's own gap, from its starting point.
	r.lastGap = upperBound(g, r.pi, r.scBuf) - lowerBound(g, r.q, r.accBuf)
	r.prevGap = r.lastGap
	return r
}

// step is iteration it: a projected ascent step of the rule on the prior's scores, a
// projected descent step of the prior on the extrapolated accuracy 2·acc_new − acc, and
// the running averages; every eighth iterate is offered to cert.
func (r *pdhgRun) step(cert *certificate, it int) {
	g, nx, nt, ny := r.g, r.nx, r.nt, r.ny
	q, pi, sc := r.q, r.pi, r.sc
	g.scores(pi, sc)
	if it%8 == 1 {
		cert.offerPrior(pi, upperFromScores(sc, nt, ny))
	}
	for t := range nt {
		row := q[t*ny : (t+1)*ny]
		st := r.omega * r.tau[t]
		for y := range row {
			row[y] += st * sc[t*ny+y]
		}
		projectSimplex(row, r.buf[:ny])
	}
	g.accuracy(q, r.accNew)
	if it%8 == 1 {
		lo := math.Inf(1)
		for _, a := range r.accNew {
			lo = min(lo, a)
		}
		cert.offerRule(q, lo)
	}
	sig := 1 / r.omega
	for x := range nx {
		pi[x] -= sig * (2*r.accNew[x] - r.acc[x])
	}
	projectSimplex(pi, r.buf[:nx])
	r.acc, r.accNew = r.accNew, r.acc
	// Running averages.
	r.navg++
	w := 1 / float64(r.navg)
	for i := range q {
		r.qa[i] += w * (q[i] - r.qa[i])
	}
	for i := range pi {
		r.pa[i] += w * (pi[i] - r.pa[i])
	}
}

// restart offers the averages to cert and reports whether its gap is within tol;
// otherwise, when the better of the average's and the iterate's gap has fallen enough
// (to 0.2 of the last restart's, or to 0.8 and no longer falling), it restarts from the
// better of the two and updates the primal weight.
func (r *pdhgRun) restart(cert *certificate, tol float64) bool {
	g, q, pi := r.g, r.q, r.pi
	loA := lowerBound(g, r.qa, r.accBuf)
	upA := upperBound(g, r.pa, r.scBuf)
	cert.offerRule(r.qa, loA)
	cert.offerPrior(r.pa, upA)
	loC := lowerBound(g, q, r.accBuf)
	upC := upperBound(g, pi, r.scBuf)
	if cert.upper-cert.lower <= tol {
		return true
	}
	gapA, gapC := upA-loA, upC-loC
	candGap := min(gapA, gapC)
	if candGap <= 0.2*r.lastGap || (candGap <= 0.8*r.lastGap && candGap > r.prevGap) {
		if gapA < gapC {
			copy(q, r.qa)
			copy(pi, r.pa)
		}
		// Primal weight update (PDLP, in this parametrization): ω ← exp(½ log(Δq/Δπ) + ½ log ω).
		dq, dp := dist(q, r.q0), dist(pi, r.p0)
		if dq > 1e-12 && dp > 1e-12 {
			r.omega = math.Exp(0.5*math.Log(dq/dp) + 0.5*math.Log(r.omega))
			r.omega = min(max(r.omega, 1e-4), 1e6)
		}
		copy(r.q0, q)
		copy(r.p0, pi)
		copy(r.qa, q)
		copy(r.pa, pi)
		r.navg = 0
		g.accuracy(q, r.acc)
		r.lastGap = candGap
	}
	r.prevGap = candGap
	return false
}

func dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

func upperFromScores(sc []float64, nt, ny int) float64 {
	s := 0.0
	for t := range nt {
		best := 0.0
		for _, v := range sc[t*ny : (t+1)*ny] {
			best = max(best, v)
		}
		s += best
	}
	return s
}
