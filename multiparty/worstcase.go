package multiparty

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// MaxLPCells was the size limit of the former dense linear program.
//
// Deprecated: WorstCaseAccuracy no longer builds the dense program; its limits are
// MaxOrbitCells and MaxTranscripts.
const MaxLPCells = 1 << 15

// Size limits of the worst-case solver.
const (
	// MaxOrbitCells bounds the dense matrix of the symmetry-reduced game (input orbits ×
	// transcript orbits). Equal budgets and a symmetric f give few orbits at any k ≤ 12
	// (13 × 455 for the majority of 12 parties with 0 < δ < 1).
	MaxOrbitCells = 1 << 22
	// MaxTranscripts bounds the transcripts of a game without enough symmetry, handled
	// through the Kronecker structure of P(τ | x): 4^12, every protocol of at most
	// MaxParties parties.
	MaxTranscripts = 1 << 24
	// pdhgMaxTranscripts bounds the transcripts of the games given to the first-order
	// method (it keeps seven rule-sized vectors); larger ones (0 < δ_i < 1 and k ≥ 10)
	// start from the prior of the δ = 0 game instead.
	pdhgMaxTranscripts = 1 << 18
	// maxDirectCells bounds the tableau (rows × columns) solved directly by the simplex
	// method; larger games go through the first-order method and a restricted simplex.
	maxDirectCells = 1 << 21
	// maxPolishCells bounds the tableau of a restricted program.
	maxPolishCells = 1 << 22
	// maxRuleTranscripts bounds the transcripts for which WorstCase.Rule is filled in.
	maxRuleTranscripts = 1 << 16
	// certMargin is the relative margin by which the certified bounds are moved
	// outwards to cover floating-point rounding in their evaluation (≤ 3k + 12 units
	// in the last place, 1e-13 ≈ 450 of them).
	certMargin = 1e-13
	// pdhgIters caps the first-order iterations; gapTol stops them early.
	pdhgIters = 4000
	gapTol    = 1e-12
)

// WorstCase is the answer of the worst-case program (KOV eq. 14) with a
// certificate: an explicit rule attaining Accuracy, and a prior on the inputs whose Bayes
// accuracy is UpperBound, so that
//
//	Accuracy ≤ max_rule min_x P(correct | x) ≤ UpperBound.
//
// Both bounds are evaluated from the rule and the prior (not read off a solver) and moved
// outwards by a relative 1e-13 to cover rounding: Accuracy is attained by Rule, UpperBound
// is never below the optimum.
type WorstCase struct {
	// Accuracy is min_x P(correct | x) of the rule found: attained, and at most
	// Gap() below the optimum.
	Accuracy float64
	// UpperBound is the Bayes accuracy Σ_τ max_y Σ_{x: f(x)=y} Prior(x) P(τ|x) of Prior:
	// no rule has a larger worst-case accuracy (LP weak duality: the worst case is at
	// most the average under any prior).
	UpperBound float64
	// Rule[t][y] is the probability of answering y on the t-th transcript, in the order
	// of [Protocol.Transcripts]; nil when there are more than 65536 transcripts (use
	// [WorstCase.Decide]).
	Rule [][]float64
	// Prior[x] is the dual certificate: a distribution on the inputs (bit i of x is party
	// i's bit), concentrated on the hardest ones.
	Prior []float64
	// Orbits is the number of input classes × transcript classes of the game solved
	// after symmetry reduction (2^k × T without symmetry).
	Orbits [2]int

	decide func(tau []int) []float64
}

// Gap returns UpperBound − Accuracy: the optimum lies in [Accuracy, Accuracy + Gap()].
func (w *WorstCase) Gap() float64 { return w.UpperBound - w.Accuracy }

// Decide returns the rule's answer probabilities for the transcript tau (nil for a
// transcript of the wrong length or with a symbol of probability zero).
func (w *WorstCase) Decide(tau []int) []float64 {
	if w.decide == nil {
		return nil
	}
	return w.decide(tau)
}

// WorstCaseAccuracy returns the largest worst-case accuracy (KOV eq. 11 with the
// 0/1 measure) of the central observer for f, with a randomized rule attaining it and a
// prior certifying it, by solving the linear program of KOV eq. (14)
//
//	maximize z  subject to  Σ_τ P(τ|x) Q(τ, f(x)) ≥ z for every x,
//	                        Σ_y Q(τ, y) = 1 for every τ,  Q ≥ 0,
//
// whose dual is min over priors π of the Bayes accuracy Σ_τ max_y Σ_{x:f(x)=y} π(x) P(τ|x).
// The method:
//
//  1. Symmetry. Parties with equal (ε, δ) within which f is symmetric are exchangeable:
//     the program has an optimal rule that depends on the transcript only through how
//     many parties of each class sent each symbol, and a worst-case prior uniform on each
//     class of inputs with the same number of 1s per class. The reduced game has
//     Π_c (n_c+1) input orbits and Π_c (n_c+1) (δ = 0) or Π_c C(n_c+3, 3) (0 < δ < 1)
//     transcript orbits, with P(orbit | x) a product of multinomial sums; its value is the
//     same. Without symmetry the game is the full 2^k × T one, whose matrix P(τ|x) is a
//     Kronecker product of per-party matrices (δ = 0: the likelihoods factor over parties),
//     applied in O(|Y| T k) without being stored.
//  2. Small games (tableau up to 2^21 cells) are solved by a bounded-variable simplex
//     method (O(m(n+m)) per pivot).
//  3. Larger ones: restarted, preconditioned primal–dual hybrid gradient (Chambolle–Pock;
//     restarts as in PDLP), each iteration one product with P and one with its transpose
//     (up to 2^18 transcripts; larger protocols start from the prior of the same parties
//     with δ = 0), then row and column generation on a simplex tableau kept across
//     rounds: the rule is fixed to the best prior's Bayes decision outside a set of free
//     transcripts, only a set of inputs is constrained, and both sets grow (dual and
//     primal simplex steps) until no input is left below the restricted optimum and no
//     fixed decision is beaten by the restricted prior's Bayes decision.
//  4. Two outputs: a primal–dual interior point method (Mehrotra; ipmCertify). For 4^k
//     transcripts and at most 2^10 inputs it runs before generation, with exact Newton
//     solves (Woodbury: a Cholesky factor of a 2^k × 2^k matrix formed by one Kronecker
//     product, ipmDirect, refined against the Newton operator), and generation then
//     starts from its prior; for two-symbol parties it runs when generation stopped at
//     its cap, with conjugate gradients through the Kronecker products and a crossover
//     to the vertex its last iterate suggests.
//  5. Two outputs, 4^k transcripts and more inputs (k = 11, 12): the same method on
//     restricted programs (ipmReveal): the inputs the best prior weighs or the best
//     rule leaves worst (at most 2^11), and the transcripts of the most probable sets
//     of revealing parties, whose blocks are Kronecker products of the other parties'
//     noisy factors (revealGame); the rule is fixed elsewhere to the Bayes decision of
//     the best prior. Two passes (the first chooses the inputs and fixed decisions of
//     the second); generation follows only when they leave a gap above 1e-4.
//
// Whatever the path, Accuracy is computed from the final rule and UpperBound from the
// final prior, so the gap is certified. The work is capped deterministically (about
// 6·10¹⁰ tableau updates); the gap is below 1e-9 for every symmetric case and, with
// unequal budgets, for δ = 0 up to k = 10, for majority, AND and OR of 10 parties with
// 0 < δ_i < 1, for AND of 12 parties with 0 < δ_i < 1, and for majority, AND, OR and
// XOR of 12 parties with δ = 0, but it may stay wider (a random function of 12
// parties: 1.4e-5 after the interior point stage, about 90 s; a random function of 10
// parties with 0 < δ_i < 1: 2e-6; majority of 11 and 12 parties with 0 < δ_i < 1:
// about 1e-6 and 3.4e-6, where the restricted interior point method stalls; more than
// two outputs at k = 10: up to about 2.5e-2; docs/local-dp.md lists the measured gaps
// and times). The reported accuracy is safe (attained); UpperBound − Accuracy bounds
// how far below the optimum it may be.
//
// Limits: the reduced game must have at most MaxOrbitCells orbit pairs, or the
// protocol at most MaxTranscripts transcripts; otherwise a *dpkit.ParamError. This
// admits every protocol of k ≤ MaxParties parties. A 4^12-transcript program takes
// about a minute and a half and keeps a few vectors of 268 MB (|Y| = 2). For the parity,
// XORAccuracy gives the value in closed form.
func WorstCaseAccuracy(pr *Protocol, f Function) (*WorstCase, error) {
	k := pr.Parties()
	tab, err := f.table(k)
	if err != nil {
		return nil, err
	}
	ny := f.Outputs
	classes := symmetryClasses(pr, tab)
	nxo, nto := orbitCounts(pr, classes)
	var (
		g     game
		og    *orbitGame
		kg    *kronGame
		sizes [2]int
	)
	// The dense orbit game when it is small or clearly smaller than the Kronecker form.
	switch {
	case nxo*nto <= MaxOrbitCells && (nxo*nto <= 1<<12 || nxo*nto <= 2*k*pr.NumTranscripts() || pr.NumTranscripts() > MaxTranscripts):
		og = newOrbitGame(pr, tab, ny, classes)
		g, sizes = og, [2]int{og.nx, og.nt}
	case pr.NumTranscripts() <= MaxTranscripts:
		kg = newKronGame(pr, tab, ny)
		g, sizes = kg, [2]int{kg.nx, kg.nt}
	default:
		return nil, &dpkit.ParamError{Pkg: "multiparty", Name: "parties", Value: k,
			Want: fmt.Sprintf("a worst-case program of at most %d orbit pairs or %d transcripts (this one has %d × %d orbits and %d transcripts)",
				MaxOrbitCells, MaxTranscripts, nxo, nto, pr.NumTranscripts())}
	}
	var warmQ, warmPi []float64
	if kg != nil && kg.nt > pdhgMaxTranscripts {
		warmQ, warmPi = warmStart(pr, tab, ny)
	}
	cert := solveGame(g, warmQ, warmPi)
	wc := &WorstCase{
		Accuracy:   max(0, cert.lower*(1-certMargin)),
		UpperBound: min(1, cert.upper*(1+certMargin)),
		Orbits:     sizes,
	}
	q := cert.q
	prior := make([]float64, 1<<k)
	if og != nil {
		for x := range prior {
			xo := og.inputOrbit(uint32(x))
			prior[x] = cert.pi[xo] / og.xSize[xo]
		}
		wc.decide = func(tau []int) []float64 {
			if !pr.validTranscript(tau) {
				return nil
			}
			t := og.transcriptOrbit(tau)
			return slices.Clone(q[t*ny : (t+1)*ny])
		}
	} else {
		copy(prior, cert.pi)
		wc.decide = func(tau []int) []float64 {
			if !pr.validTranscript(tau) {
				return nil
			}
			t := 0
			for i, s := range tau {
				t = t*len(kg.syms[i]) + slices.Index(kg.syms[i], s)
			}
			return slices.Clone(q[t*ny : (t+1)*ny])
		}
	}
	wc.Prior = prior
	if pr.NumTranscripts() <= maxRuleTranscripts {
		pr.Transcripts(func(tau []int) { wc.Rule = append(wc.Rule, wc.decide(tau)) })
	}
	return wc, nil
}

// validTranscript reports whether tau has one symbol of positive probability per party.
func (pr *Protocol) validTranscript(tau []int) bool {
	if len(tau) != pr.Parties() {
		return false
	}
	for i, s := range tau {
		if !slices.Contains(pr.symbols(i), s) {
			return false
		}
	}
	return true
}

// warmStart returns a starting rule and prior for a game with 4-symbol parties too
// large for the first-order method, from the same parties with δ_i = 0: that game is
// solved (its 2^k transcripts are few), its prior is the starting prior, and its rule is
// lifted by liftRule, which keeps every input's accuracy, so the δ > 0 game starts at
// least at the δ = 0 game's certified worst case.
func warmStart(pr *Protocol, tab []int, ny int) (q, pi []float64) {
	b := pr.Budgets()
	for i := range b {
		b[i].Delta = 0
	}
	pr0, err := NewProtocol(b)
	if err != nil {
		return nil, nil
	}
	cert := solveGame(newKronGame(pr0, tab, ny), nil, nil)
	return liftRule(pr, cert.q, ny), cert.pi
}

// liftRule maps a rule q0 for the protocol with every δ_i = 0 (transcripts of noisy
// bits) to a rule for pr with the same accuracy on every input: the δ = 0 report of
// party i is a post-processing of its eq. (16) report — keep a noisy bit, and replace a
// revealed bit b by randomized response at ε_i (b with probability e^ε_i/(1+e^ε_i)) —
// so answering q0 on the post-processed transcript is a rule for pr whose transcript
// distribution, hence accuracy, is that of q0 under the δ = 0 protocol. Applied one
// party's axis at a time (party 0 slowest), as in kronGame.
func liftRule(pr *Protocol, q0 []float64, ny int) []float64 {
	k := pr.Parties()
	nt := pr.NumTranscripts()
	// Per party, K(noisy bit | symbol): a symbol × 2 matrix.
	lift := make([][]float64, k)
	ns, two := make([]int, k), make([]int, k)
	for i := range k {
		syms := pr.symbols(i)
		p := pr.p[i]
		m := make([]float64, 2*len(syms))
		for j, sym := range syms {
			switch sym {
			case Noisy0:
				m[2*j] = 1
			case Noisy1:
				m[2*j+1] = 1
			case Reveal0:
				m[2*j], m[2*j+1] = p, 1-p
			case Reveal1:
				m[2*j], m[2*j+1] = 1-p, p
			}
		}
		lift[i], ns[i], two[i] = m, len(syms), 2
	}
	q := make([]float64, nt*ny)
	src, a, b := make([]float64, 1<<k), make([]float64, nt), make([]float64, nt)
	for y := range ny {
		for t := range src {
			src[t] = q0[t*ny+y]
		}
		r := kronMul(lift, ns, two, src, a, b)
		for t := range nt {
			q[t*ny+y] = r[t]
		}
	}
	return q
}

// solveGame returns certified bounds on the value of g, with the rule and the prior;
// warmQ and warmPi, when not nil, are a rule and a prior to start from. Small programs are
// solved directly (solveDirect); larger ones go through the first-order stage
// (firstOrder), the interior point stage where it applies (interiorStage), row and column
// generation, and for two-symbol parties a final interior point run.
func solveGame(g game, warmQ, warmPi []float64) certificate {
	nx, nt, ny := g.size()
	accBuf := make([]float64, nx)
	scBuf := make([]float64, nt*ny)
	// Start: the uniform prior and the rule that answers uniformly at random.
	cert := certificate{pi: make([]float64, nx), q: make([]float64, nt*ny)}
	for x := range cert.pi {
		cert.pi[x] = 1 / float64(nx)
	}
	for i := range cert.q {
		cert.q[i] = 1 / float64(ny)
	}
	cert.lower = lowerBound(g, cert.q, accBuf)
	cert.upper = upperBound(g, cert.pi, scBuf)
	if ny == 1 {
		return cert
	}
	rows := nx
	if ny > 2 {
		rows += nt
	}
	if cols := 1 + nt*(ny-1) + rows; rows*cols <= maxDirectCells {
		solveDirect(g, &cert, accBuf, scBuf)
		return cert
	}
	firstOrder(g, &cert, warmQ, warmPi, accBuf, scBuf)
	initCols, done := interiorStage(g, &cert, accBuf, scBuf)
	if done {
		return cert
	}
	if cert.upper-cert.lower > gapTol {
		generate(g, &cert, initCols)
	}
	// Two outputs and two-symbol parties: when generation stopped at its cap, the
	// interior point method with a crossover (ipmCertify).
	if kg, ok := g.(*kronGame); ok && kg.binary && ny == 2 && cert.upper-cert.lower > gapTol {
		ipmCertify(kg, &cert, accBuf, scBuf)
	}
	// Recompute both bounds from the final rule and prior with the certified routines.
	finalize(g, &cert, accBuf, scBuf)
	return cert
}

// solveDirect solves a small program whole by the simplex method, from the Bayes rule of
// the current prior, and polishes a nearly degenerate one.
func solveDirect(g game, cert *certificate, accBuf, scBuf []float64) {
	nx, nt, _ := g.size()
	all := func(n int) []bool {
		s := make([]bool, n)
		for i := range s {
			s[i] = true
		}
		return s
	}
	q, pi, ok := solveRestricted(g, all(nx), all(nt), bayesRule(g, cert.pi))
	if ok {
		offerCertified(g, cert, q, pi, accBuf, scBuf)
	}
	if cert.upper-cert.lower > gapTol { // a nearly degenerate program: polish
		polish(g, cert)
		finalize(g, cert, accBuf, scBuf)
	}
}

// firstOrder offers the Bayes rule of the uniform prior and the warm start, then (up to
// pdhgMaxTranscripts transcripts) runs the first-order method from the uniform random
// rule and from that Bayes rule.
func firstOrder(g game, cert *certificate, warmQ, warmPi, accBuf, scBuf []float64) {
	nx, nt, ny := g.size()
	// The Bayes rule of the uniform prior is often optimal (the parity) or close; its
	// worst case may be poor (AND: always 0), but it is the better start for the
	// first-order method.
	bayes := bayesRule(g, cert.pi)
	offerCertified(g, cert, slices.Clone(bayes), slices.Clone(cert.pi), accBuf, scBuf)
	if warmPi != nil && cert.upper-cert.lower > gapTol {
		offerCertified(g, cert, bayesRule(g, warmPi), slices.Clone(warmPi), accBuf, scBuf)
	}
	if warmQ != nil && cert.upper-cert.lower > gapTol {
		offerCertified(g, cert, warmQ, slices.Clone(cert.pi), accBuf, scBuf)
	}
	// Two first-order runs, from the uniform random rule and from the Bayes rule: the
	// better start differs between functions (majority: Bayes; random tables: uniform).
	if cert.upper-cert.lower > gapTol && nt <= pdhgMaxTranscripts {
		uniform := make([]float64, nt*ny)
		for i := range uniform {
			uniform[i] = 1 / float64(ny)
		}
		flat := make([]float64, nx)
		for x := range flat {
			flat[x] = 1 / float64(nx)
		}
		pdhg(g, cert, uniform, flat, pdhgIters, gapTol)
		if cert.upper-cert.lower > gapTol {
			pdhg(g, cert, bayes, flat, pdhgIters, gapTol)
		}
	}
}

// interiorStage runs the interior point method on programs with two outputs and 4^k
// transcripts, before generation: with exact Newton solves for few inputs (its prior
// starts the generation near the optimum: genIPMCols columns), the restricted stage for
// k ≥ 11. It returns the columns generation starts with, and done when the certificate
// is final.
func interiorStage(g game, cert *certificate, accBuf, scBuf []float64) (initCols int, done bool) {
	nx, nt, ny := g.size()
	kg, ok := g.(*kronGame)
	if !ok || kg.binary || ny != 2 || nt <= pdhgMaxTranscripts || cert.upper-cert.lower <= gapTol {
		return genInitCols, false
	}
	if nx <= ipmDirectMaxInputs {
		ipmCertify(kg, cert, accBuf, scBuf)
		return genIPMCols, false
	}
	// k ≥ 11: the restricted stage; when it certifies a gap below revealAccept,
	// generation (capped rounds, each two passes over the 4^k transcripts) would not
	// improve on it. Otherwise (AND, whose restricted programs stall early) generation
	// runs as without the stage.
	ipmReveal(kg, cert, accBuf, scBuf)
	if cert.upper-cert.lower <= revealAccept {
		finalize(g, cert, accBuf, scBuf)
		return genInitCols, true
	}
	// The stage's garbage (rule-sized vectors of 268 MB at k = 12) would otherwise still
	// be on the heap when generation builds its tableau: AND of 12 at δ_i = 0.01 peaked
	// at 3.6 GB without this collection, 3.1 GB with it.
	runtime.GC()
	return genInitCols, false
}

// bayesRule returns the deterministic Bayes rule for the prior pi (KOV eq. 13 with
// the prior in place of the uniform one).
func bayesRule(g game, pi []float64) []float64 {
	_, nt, ny := g.size()
	sc := make([]float64, nt*ny)
	g.scores(pi, sc)
	q := make([]float64, nt*ny)
	for t := range nt {
		row := sc[t*ny : (t+1)*ny]
		q[t*ny+slices.Index(row, slices.Max(row))] = 1
	}
	return q
}

// normalize makes q a rule (rows non-negative, summing to 1) and pi a prior.
func normalize(q, pi []float64, ny int) {
	for t := 0; t < len(q); t += ny {
		row := q[t : t+ny]
		s := 0.0
		for y := range row {
			row[y] = max(0, row[y])
			s += row[y]
		}
		if s == 0 {
			row[0], s = 1, 1
		}
		for y := range row {
			row[y] /= s
		}
	}
	var s numeric.Sum
	for x := range pi {
		pi[x] = max(0, pi[x])
		s.Add(pi[x])
	}
	if v := s.Value(); v > 0 {
		for x := range pi {
			pi[x] /= v
		}
	} else {
		for x := range pi {
			pi[x] = 1 / float64(len(pi))
		}
	}
}

// offerCertified normalizes the candidates, evaluates their bounds and keeps the better.
func offerCertified(g game, cert *certificate, q, pi, accBuf, scBuf []float64) {
	_, _, ny := g.size()
	normalize(q, pi, ny)
	cert.offerRule(q, lowerBound(g, q, accBuf))
	cert.offerPrior(pi, upperBound(g, pi, scBuf))
}

func finalize(g game, cert *certificate, accBuf, scBuf []float64) {
	_, _, ny := g.size()
	normalize(cert.q, cert.pi, ny)
	cert.lower = lowerBound(g, cert.q, accBuf)
	cert.upper = upperBound(g, cert.pi, scBuf)
}

// solveRestricted solves the program of eq. (14) restricted to the inputs in S (the other
// constraints dropped) with the rule free on the transcripts in F and equal to fixed
// elsewhere, by the bounded simplex method. With Q(τ, 0) = 1 − Σ_{y≥1} Q(τ, y):
//
//	maximize z  s.t.  z − Σ_{τ∈F} P(τ|x) Q(τ, f(x)) ≤ c_x  (x ∈ S),
//	                  Σ_{y≥1} Q(τ, y) ≤ 1  (τ ∈ F, only when |Y| > 2),  0 ≤ Q ≤ 1,
//
// c_x the accuracy contributed by the fixed transcripts. Columns are scaled to a largest
// entry of 1. It returns the full rule, the row duals as a prior supported on S, and
// whether the tableau fitted.
func solveRestricted(g game, S, F []bool, fixed []float64) (q, pi []float64, ok bool) {
	nx, _, ny := g.size()
	var xs, ts []int
	for x, in := range S {
		if in {
			xs = append(xs, x)
		}
	}
	for t, in := range F {
		if in {
			ts = append(ts, t)
		}
	}
	m := len(xs)
	if ny > 2 {
		m += len(ts)
	}
	n := 1 + len(ts)*(ny-1)
	if m*(n+m) > maxPolishCells || len(xs) == 0 {
		return nil, nil, false
	}
	lp := restrictedLP(g, xs, ts, fixed, m, n)
	scale := lp.scale(len(xs))
	// Start from the fixed rule where it is deterministic (Q(τ, y) = 1 at its upper
	// bound), so that few constraints start degenerate.
	lp.start = make([]bool, n)
	for j, t := range ts {
		for y := 1; y < ny; y++ {
			if fixed[t*ny+y] == 1 {
				lp.start[1+j*(ny-1)+y-1] = true
			}
		}
	}
	// At most 50 (m + n) pivots and about 4·10⁹ tableau updates (a few seconds).
	res := lp.solve(min(50*(m+n), 1+4_000_000_000/(m*(n+m))))
	q = slices.Clone(fixed)
	for j, t := range ts {
		row := q[t*ny : (t+1)*ny]
		rest := 1.0
		for y := 1; y < ny; y++ {
			v := res.v[1+j*(ny-1)+y-1] / scale[1+j*(ny-1)+y-1]
			row[y] = v
			rest -= v
		}
		row[0] = max(0, rest)
	}
	pi = make([]float64, nx)
	for r, x := range xs {
		pi[x] = res.duals[r]
	}
	return q, pi, true
}

// restrictedLP returns solveRestricted's program (m rows, n columns, unscaled) for the
// inputs xs and free transcripts ts, with c_x from the fixed part of the rule.
func restrictedLP(g game, xs, ts []int, fixed []float64, m, n int) *boundedLP {
	nx, _, ny := g.size()
	qf := slices.Clone(fixed)
	for _, t := range ts {
		clear(qf[t*ny : (t+1)*ny])
	}
	cx := make([]float64, nx)
	g.accuracy(qf, cx)
	lp := &boundedLP{m: m, n: n, g: make([]float64, m*n), h: make([]float64, m), c: make([]float64, n), u: make([]float64, n)}
	lp.c[0] = 1
	lp.u[0] = math.Inf(1)
	for j := 1; j < n; j++ {
		lp.u[j] = 1
	}
	for r, x := range xs {
		row := lp.g[r*n : (r+1)*n]
		row[0] = 1
		fx := g.answer(x)
		h := cx[x]
		for j, t := range ts {
			a := g.entry(x, t)
			if a == 0 {
				continue
			}
			if fx == 0 {
				h += a
				for y := 1; y < ny; y++ {
					row[1+j*(ny-1)+y-1] = a
				}
			} else {
				row[1+j*(ny-1)+fx-1] = -a
			}
		}
		lp.h[r] = h
	}
	if ny > 2 {
		for j := range ts {
			r := len(xs) + j
			for y := 1; y < ny; y++ {
				lp.g[r*n+1+j*(ny-1)+y-1] = 1
			}
			lp.h[r] = 1
		}
	}
	return lp
}

// scale scales the columns of lp: v' = s_j v with s_j the largest |entry| of column j in
// the first inputs rows (the bounds become s_j); then each later (transcript) row is
// scaled to a largest entry of 1. It returns s (s_0 = 0: column 0 is not scaled).
func (lp *boundedLP) scale(inputs int) []float64 {
	m, n := lp.m, lp.n
	scale := make([]float64, n)
	for j := 1; j < n; j++ {
		s := 0.0
		for r := range inputs {
			s = max(s, math.Abs(lp.g[r*n+j]))
		}
		if s == 0 {
			s = 1
		}
		scale[j] = s
		for r := range m {
			lp.g[r*n+j] /= s
		}
		lp.u[j] = s
	}
	for r := inputs; r < m; r++ {
		row := lp.g[r*n : (r+1)*n]
		s := 0.0
		for _, v := range row {
			s = max(s, math.Abs(v))
		}
		for j := range row {
			row[j] /= s
		}
		lp.h[r] /= s
	}
	return scale
}

// polish improves the certificate of a small, nearly degenerate program by an
// active-set method: the rule is fixed to the Bayes decision of the best prior where
// that decision is clear, the nearly worst inputs are kept, and the restricted program
// is solved by the simplex method; up to 12 rounds.
func polish(g game, cert *certificate) {
	nx, nt, ny := g.size()
	S := make([]bool, nx)
	F := make([]bool, nt)
	acc := make([]float64, nx)
	sc := make([]float64, nt*ny)
	accBuf := make([]float64, nx)
	scBuf := make([]float64, nt*ny)
	gap := cert.upper - cert.lower
	if gap <= gapTol {
		return
	}
	markInputs := func(q []float64, lower, slack float64) {
		g.accuracy(q, acc)
		for x, a := range acc {
			if a <= lower+slack {
				S[x] = true
			}
		}
	}
	// markTranscripts adds the transcripts whose Bayes decision under pi is not clear
	// (relative margin ≤ eta) and returns the Bayes rule for pi.
	markTranscripts := func(pi []float64, eta float64) []float64 {
		g.scores(pi, sc)
		bayes := make([]float64, nt*ny)
		for t := range nt {
			row := sc[t*ny : (t+1)*ny]
			best, second := 0, -1
			for y := 1; y < ny; y++ {
				if row[y] > row[best] {
					best, second = y, best
				} else if second < 0 || row[y] > row[second] {
					second = y
				}
			}
			bayes[t*ny+best] = 1
			if row[best]-row[second] <= eta*row[best] {
				F[t] = true
			}
		}
		return bayes
	}
	for x, p := range cert.pi {
		if p > 1e-9 {
			S[x] = true
		}
	}
	markInputs(cert.q, cert.lower, max(4*gap, 1e-12))
	for t := range nt {
		row := cert.q[t*ny : (t+1)*ny]
		if slices.Max(row) < 1-1e-6 {
			F[t] = true
		}
	}
	fixed := markTranscripts(cert.pi, max(4*gap, 1e-9))
	for range 12 {
		q, pi, ok := solveRestricted(g, S, F, fixed)
		if !ok {
			return
		}
		offerCertified(g, cert, q, pi, accBuf, scBuf)
		if cert.upper-cert.lower <= gapTol {
			return
		}
		// Enlarge: inputs the new rule leaves below the restricted optimum, and
		// transcripts on which the new prior's Bayes decision is unclear or differs
		// from the fixed one.
		lo := lowerBound(g, q, accBuf)
		markInputs(q, lo, 1e-12)
		bayes := markTranscripts(pi, 1e-9)
		for t := range nt {
			if !F[t] && !slices.Equal(bayes[t*ny:(t+1)*ny], fixed[t*ny:(t+1)*ny]) {
				F[t] = true
			}
		}
		fixed = q
	}
}
