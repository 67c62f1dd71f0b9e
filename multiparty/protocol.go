package multiparty

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// MaxParties is the largest number of parties: functions of k bits are tables of 2^k
// entries, and the Bayes rule costs O(k 4^k) when every δ_i > 0.
const MaxParties = 12

// Transcript symbols of one party (KOV eq. 16).
const (
	Reveal0 = 0 // "my bit is 0", with probability δ_i when x_i = 0
	Noisy0  = 1 // a noisy report of 0
	Noisy1  = 2 // a noisy report of 1
	Reveal1 = 3 // "my bit is 1", with probability δ_i when x_i = 1
)

// Protocol is the randomized-response protocol of KOV eq. (16) for k parties with
// privacy levels (ε_i, δ_i): party i broadcasts x̃_i with
//
//	P(x̃=0 | 0) = δ_i,                     P(x̃=0 | 1) = 0,
//	P(x̃=1 | 0) = (1−δ_i) e^ε_i/(1+e^ε_i),  P(x̃=1 | 1) = (1−δ_i)/(1+e^ε_i),
//	P(x̃=2 | 0) = (1−δ_i)/(1+e^ε_i),        P(x̃=2 | 1) = (1−δ_i) e^ε_i/(1+e^ε_i),
//	P(x̃=3 | 0) = 0,                        P(x̃=3 | 1) = δ_i.
//
// Its privacy region for party i is exactly R(ε_i, δ_i), so it is (ε_i, δ_i)-DP for
// party i and dominates every other protocol (KOV App. D, Thm D.1).
type Protocol struct {
	parties []dpkit.Budget
	p       []float64 // e^ε_i/(1+e^ε_i)
	reveal  []uint64  // realized reveal threshold: ⌊δ_i 2^53⌋
	flip    []uint64  // realized fair-coin threshold: ⌈2/(1+e^ε_i) 2^53⌉
}

// NewProtocol returns the randomized-response protocol for 1 ≤ k ≤ MaxParties parties
// with the given budgets (ε_i finite ≥ 0, δ_i ∈ [0, 1]).
func NewProtocol(parties []dpkit.Budget) (*Protocol, error) {
	if err := dpkit.CheckCount("parties", int64(len(parties)), MaxParties); err != nil {
		return nil, err
	}
	pr := &Protocol{parties: append([]dpkit.Budget(nil), parties...)}
	for i, b := range parties {
		if err := dpkit.CheckEpsilon(fmt.Sprintf("eps[%d]", i), b.Epsilon); err != nil {
			return nil, err
		}
		if err := dpkit.CheckDelta(fmt.Sprintf("delta[%d]", i), b.Delta); err != nil {
			return nil, err
		}
		pr.p = append(pr.p, 1/(1+math.Exp(-b.Epsilon)))
		pr.reveal = append(pr.reveal, uint64(math.Floor(b.Delta*(1-1e-15)*(1<<53))))
		e := math.Exp(-b.Epsilon)
		pr.flip = append(pr.flip, min(uint64(math.Ceil(2*e/(1+e)*(1+1e-15)*(1<<53))), 1<<53))
	}
	return pr, nil
}

// Parties returns k.
func (pr *Protocol) Parties() int { return len(pr.parties) }

// Budgets returns a copy of the parties' (ε_i, δ_i).
func (pr *Protocol) Budgets() []dpkit.Budget { return append([]dpkit.Budget(nil), pr.parties...) }

// Prob returns P(x̃_i = symbol | x_i = bit) of eq. (16).
func (pr *Protocol) Prob(i, symbol, bit int) float64 {
	d, p := pr.parties[i].Delta, pr.p[i]
	truthful := symbol == Noisy0 && bit == 0 || symbol == Noisy1 && bit == 1
	switch symbol {
	case Reveal0:
		if bit == 0 {
			return d
		}
		return 0
	case Reveal1:
		if bit == 1 {
			return d
		}
		return 0
	case Noisy0, Noisy1:
		if truthful {
			return (1 - d) * p
		}
		return (1 - d) * (1 - p)
	}
	return 0
}

// symbols returns the symbols party i broadcasts with positive probability.
func (pr *Protocol) symbols(i int) []int {
	switch d := pr.parties[i].Delta; {
	case d == 0:
		return []int{Noisy0, Noisy1}
	case d == 1:
		return []int{Reveal0, Reveal1}
	default:
		return []int{Reveal0, Noisy0, Noisy1, Reveal1}
	}
}

// Randomize returns the transcript broadcast for the bits x (x[i] ∈ {0, 1}), drawing
// from src (noise.Secure() when nil). The sampler realizes eq. (16) from 53-bit uniform
// integers with the reveal probability rounded down to δ'_i ≤ δ_i and the probability of
// a fair coin rounded up to γ'_i ≥ 2/(1+e^ε_i): the realized protocol is (ε_i, δ'_i)-DP
// for party i.
func (pr *Protocol) Randomize(x []int, src noise.Source) ([]int, error) {
	if len(x) != len(pr.parties) {
		return nil, &dpkit.ParamError{Pkg: "multiparty", Name: "bits", Value: fmt.Sprintf("%d bits", len(x)), Want: fmt.Sprintf("%d bits, one per party", len(pr.parties))}
	}
	if src == nil {
		src = secure
	}
	t := make([]int, len(x))
	for i, b := range x {
		if b != 0 && b != 1 {
			return nil, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("bits[%d]", i), Value: b, Want: "0 or 1"}
		}
		switch {
		case src.Uint64()>>11 < pr.reveal[i]:
			t[i] = Reveal0 + 3*b
		case src.Uint64()>>11 < pr.flip[i]:
			t[i] = Noisy0 + int(src.Uint64()&1)
		default:
			t[i] = Noisy0 + b
		}
	}
	return t, nil
}

var secure = noise.Secure()

// probTranscript returns P(τ | x) = Π_i P(τ_i | x_i), x as a bit mask (bit i = party i).
func (pr *Protocol) probTranscript(tau []int, x uint32) float64 {
	p := 1.0
	for i, s := range tau {
		p *= pr.Prob(i, s, int(x>>i&1))
		if p == 0 {
			return 0
		}
	}
	return p
}

// Transcripts calls fn for every transcript with positive probability under some input,
// in lexicographic order of the symbols (party 0 first). fn must not keep tau.
func (pr *Protocol) Transcripts(fn func(tau []int)) {
	k := len(pr.parties)
	syms := make([][]int, k)
	for i := range k {
		syms[i] = pr.symbols(i)
	}
	tau := make([]int, k)
	var rec func(i int)
	rec = func(i int) {
		if i == k {
			fn(tau)
			return
		}
		for _, s := range syms[i] {
			tau[i] = s
			rec(i + 1)
		}
	}
	rec(0)
}

// NumTranscripts returns the number of transcripts with positive probability: Π_i 2 or 4.
func (pr *Protocol) NumTranscripts() int {
	n := 1
	for i := range pr.parties {
		n *= len(pr.symbols(i))
	}
	return n
}
