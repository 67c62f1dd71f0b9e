package multiparty

import (
	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// Simulate measures the average accuracy of the Bayes rule for f by simulation: n times,
// it draws x uniformly from {0,1}^k, runs the protocol, decides with the Bayes rule
// (eq. 13) and compares with f(x). It returns the fraction of correct answers, an
// unbiased estimate of AverageAccuracy with standard deviation √(a(1−a)/n).
func Simulate(pr *Protocol, f Function, n int, src noise.Source) (float64, error) {
	if n < 1 {
		return 0, &dpkit.ParamError{Pkg: "multiparty", Name: "n", Value: n, Want: "an integer ≥ 1"}
	}
	rule, err := BayesRule(pr, f)
	if err != nil {
		return 0, err
	}
	if src == nil {
		src = secure
	}
	k := pr.Parties()
	cache := map[string]int{}
	x := make([]int, k)
	key := make([]byte, k)
	correct := 0
	for range n {
		w := src.Uint64()
		var mask uint32
		for i := range x {
			x[i] = int(w >> i & 1)
			mask |= uint32(x[i]) << i
		}
		tau, err := pr.Randomize(x, src)
		if err != nil {
			return 0, err
		}
		for i, s := range tau {
			key[i] = byte('0' + s)
		}
		d, ok := cache[string(key)]
		if !ok {
			d = rule.Decide(tau)
			cache[string(key)] = d
		}
		if d == rule.tab[mask] {
			correct++
		}
	}
	return float64(correct) / float64(n), nil
}
