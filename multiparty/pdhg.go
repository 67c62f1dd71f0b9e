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
	omega := 1.0
	if start == nil {
		start = cert.q
	}
	if startPi == nil {
		startPi = cert.pi
	}
	q, pi := slices.Clone(start), slices.Clone(startPi)
	qa, pa := slices.Clone(q), slices.Clone(pi) // averages since the last restart
	q0, p0 := slices.Clone(q), slices.Clone(pi) // iterate at the last restart
	navg := 0
	acc := make([]float64, nx)
	accNew := make([]float64, nx)
	sc := make([]float64, nt*ny)
	buf := make([]float64, max(nx, ny))
	scBuf := make([]float64, nt*ny)
	accBuf := make([]float64, nx)
	g.accuracy(q, acc)
	// The restart schedule follows this run's own gap, from its starting point.
	lastGap := upperBound(g, pi, scBuf) - lowerBound(g, q, accBuf)
	prevGap := lastGap
	const check = 32
	for it := 1; it <= iters; it++ {
		g.scores(pi, sc)
		if it%8 == 1 {
			cert.offerPrior(pi, upperFromScores(sc, nt, ny))
		}
		for t := range nt {
			row := q[t*ny : (t+1)*ny]
			st := omega * tau[t]
			for y := range row {
				row[y] += st * sc[t*ny+y]
			}
			projectSimplex(row, buf[:ny])
		}
		g.accuracy(q, accNew)
		if it%8 == 1 {
			lo := math.Inf(1)
			for _, a := range accNew {
				lo = min(lo, a)
			}
			cert.offerRule(q, lo)
		}
		sig := 1 / omega
		for x := range nx {
			pi[x] -= sig * (2*accNew[x] - acc[x])
		}
		projectSimplex(pi, buf[:nx])
		acc, accNew = accNew, acc
		// Running averages.
		navg++
		w := 1 / float64(navg)
		for i := range q {
			qa[i] += w * (q[i] - qa[i])
		}
		for i := range pi {
			pa[i] += w * (pi[i] - pa[i])
		}
		if it%check != 0 {
			continue
		}
		loA := lowerBound(g, qa, accBuf)
		upA := upperBound(g, pa, scBuf)
		cert.offerRule(qa, loA)
		cert.offerPrior(pa, upA)
		loC := lowerBound(g, q, accBuf)
		upC := upperBound(g, pi, scBuf)
		if cert.upper-cert.lower <= tol {
			return
		}
		gapA, gapC := upA-loA, upC-loC
		candGap := min(gapA, gapC)
		if candGap <= 0.2*lastGap || (candGap <= 0.8*lastGap && candGap > prevGap) {
			if gapA < gapC {
				copy(q, qa)
				copy(pi, pa)
			}
			// Primal weight update (PDLP, in this parametrization): ω ← exp(½ log(Δq/Δπ) + ½ log ω).
			dq, dp := dist(q, q0), dist(pi, p0)
			if dq > 1e-12 && dp > 1e-12 {
				omega = math.Exp(0.5*math.Log(dq/dp) + 0.5*math.Log(omega))
				omega = min(max(omega, 1e-4), 1e6)
			}
			copy(q0, q)
			copy(p0, pi)
			copy(qa, q)
			copy(pa, pi)
			navg = 0
			g.accuracy(q, acc)
			lastGap = candGap
		}
		prevGap = candGap
	}
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
