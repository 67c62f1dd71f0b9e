package multiparty

// AverageAccuracy returns the largest average accuracy (KOV eq. 9 with the 0/1
// accuracy measure: the probability of a correct answer when x is uniform on {0,1}^k)
// of the central observer for f under the protocol, attained by the Bayes rule of
// eq. (13), [Rule.Decide]:
//
//	ACC_ave = 2^(−k) Σ_τ max_y Σ_{x : f(x) = y} P(τ | x).
//
// It is AverageAccuracyWith for the uniform prior and the 0/1 measure. The sum is
// organised by the set K of parties whose transcript symbol reveals their bit: given K
// and the revealed bits, the remaining parties form a pure-ε randomized response whose
// likelihoods are a tensor product of 2×2 matrices, applied by a butterfly in O(m 2^m)
// per output for m unrevealed parties; the total cost is O(|Y| k 4^k) when every
// 0 < δ_i < 1 and O(|Y| k 2^k) when every δ_i = 0. Compensated sums: the result is
// accurate to about 1e-15 relative.
func AverageAccuracy(pr *Protocol, f Function) (float64, error) {
	v, err := AverageAccuracyWith(pr, f, Accuracy{})
	return min(1, v), err
}

// butterfly replaces v(z) by Σ_z Π_j N_j(t_j | z_j) v(z), N_j the pure randomized
// response of party free[j]: N(t = z) = e^ε/(1+e^ε), N(t ≠ z) = 1/(1+e^ε).
func (pr *Protocol) butterfly(v []float64, free []int) {
	for j, i := range free {
		p := pr.p[i]
		q := 1 - p
		step := 1 << j
		for base := 0; base < len(v); base += 2 * step {
			for z := base; z < base+step; z++ {
				a, b := v[z], v[z+step]
				v[z], v[z+step] = p*a+q*b, q*a+p*b
			}
		}
	}
}

// Rule is the Bayes decision rule of KOV eq. (13) for the central observer, for
// the 0/1 accuracy measure and uniformly distributed inputs.
type Rule struct {
	pr  *Protocol
	tab []int
	out int
	acc *Accuracy // nil: uniform inputs, 0/1 measure (RuleWith sets it)
}

// BayesRule returns the Bayes rule of eq. (13) for f under the protocol.
func BayesRule(pr *Protocol, f Function) (*Rule, error) {
	tab, err := f.table(pr.Parties())
	if err != nil {
		return nil, err
	}
	return &Rule{pr: pr, tab: tab, out: f.Outputs}, nil
}

// Decide returns argmax_y Σ_{x : f(x) = y} P(τ | x) for the transcript tau (the smallest
// maximizer on ties; any maximizer gives the same average accuracy), and −1 for a
// transcript of probability zero under every input. Cost O(k 2^k).
func (r *Rule) Decide(tau []int) int {
	if len(tau) != r.pr.Parties() {
		return -1
	}
	score := make([]float64, r.out)
	any := false
	for x, y := range r.tab {
		if p := r.pr.probTranscript(tau, uint32(x)); p > 0 {
			if r.acc != nil {
				p *= r.acc.Prior[x]
			}
			score[y] += p
			any = true
		}
	}
	if !any {
		return -1
	}
	if r.acc != nil { // expected accuracy of each decision d: Σ_y w(y, d)·score[y]
		gain := make([]float64, r.out)
		for d := range gain {
			for y := range score {
				gain[d] += r.acc.Measure[y][d] * score[y]
			}
		}
		score = gain
	}
	best := 0
	for y := range score {
		if score[y] > score[best] {
			best = y
		}
	}
	return best
}
