package multiparty

import "math"

// XORAccuracy returns the accuracy of the central observer computing x_1 ⊕ … ⊕ x_k from
// the randomized-response protocol, for the average and the worst case alike:
//
//	ACC = ½ (1 + Π_i (δ_i + (1 − δ_i) tanh(ε_i/2))).
//
// Party i's decoded bit is correct with probability c_i = δ_i + (1−δ_i) e^ε_i/(1+e^ε_i),
// so 2c_i − 1 = δ_i + (1−δ_i) tanh(ε_i/2), and the parity of independent errors is
// correct with probability ½(1 + Π(2c_i − 1)). The rule "XOR of the decoded bits" is the
// Bayes rule (each posterior favours the decoded bit) and is equally accurate for every
// input, so it is also optimal in the worst case. For δ = 0 this is thesis Cor. 4.5.1,
// Σ_i C(k,2i) λ^(k−2i)/(1+λ)^k = ½(1 + tanh(ε/2)^k) (λ = e^ε); the thesis's §4.5 text has
// the flip probability and the collaborative accuracy wrong (docs/errata.md, thesis
// item 5).
func XORAccuracy(pr *Protocol) float64 {
	prod := 1.0
	for _, b := range pr.parties {
		prod *= b.Delta + (1-b.Delta)*math.Tanh(b.Epsilon/2)
	}
	return 0.5 * (1 + prod)
}
