package main

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// jlKeys are the keys of --mechanism jl-cut:… and jl-variance:….
var jlKeys = []string{"eps", "delta", "eta", "nu", "count"}

// parseJLCutMechanism reads "jl-cut:eps=E,delta=D,eta=H,nu=V[,count=K]": count releases of
// the Johnson–Lindenstrauss cut mechanism (mechanism.JLCut, KOV App. C.1), each accounted
// as its r rows of (ε0, δ0) pairs, r·count pairs in all.
func parseJLCutMechanism(rest string) (pld.Item, error) {
	return parseJLMechanism("jl-cut", rest, func(e, d, h, v float64) (jlMechanism, error) {
		return mechanism.NewJLCut(mechanism.JLCutOptions{Epsilon: e, Delta: d, Eta: h, Nu: v})
	})
}

// parseJLVarianceMechanism reads "jl-variance:eps=E,delta=D,eta=H,nu=V[,count=K]": count
// releases of the Johnson–Lindenstrauss variance mechanism (mechanism.JLVariance), each
// accounted as its r rows of (ε0, δ0) pairs.
func parseJLVarianceMechanism(rest string) (pld.Item, error) {
	return parseJLMechanism("jl-variance", rest, func(e, d, h, v float64) (jlMechanism, error) {
		return mechanism.NewJLVariance(mechanism.JLVarianceOptions{Epsilon: e, Delta: d, Eta: h, Nu: v})
	})
}

// jlMechanism is what the accounting needs of a JL mechanism: its rows.
type jlMechanism interface{ PLDItems() []pld.Item }

// parseJLMechanism reads the keys of a JL kind and returns its rows, count times.
func parseJLMechanism(kind, rest string, build func(eps, delta, eta, nu float64) (jlMechanism, error)) (pld.Item, error) {
	text, err := parseKeyValues(kind, rest, jlKeys)
	if err != nil {
		return pld.Item{}, err
	}
	vals := map[string]float64{}
	for _, k := range []string{"eps", "delta", "eta", "nu"} {
		if _, ok := text[k]; !ok {
			return pld.Item{}, fmt.Errorf("%s: missing %s=…", kind, k)
		}
	}
	for _, k := range jlKeys {
		if vals[k], err = keyNumber(kind, text, k, 1); err != nil { // count defaults to 1
			return pld.Item{}, err
		}
	}
	count := vals["count"]
	if count != math.Trunc(count) || count < 1 || count > float64(pld.MaxCount) {
		return pld.Item{}, fmt.Errorf("%s: count = %g: want an integer in [1, %d]", kind, count, int64(pld.MaxCount))
	}
	m, err := build(vals["eps"], vals["delta"], vals["eta"], vals["nu"])
	if err != nil {
		return pld.Item{}, err
	}
	it := m.PLDItems()[0]
	if float64(it.Count)*count > float64(pld.MaxCount) {
		return pld.Item{}, fmt.Errorf("%s: %d rows × count %g exceed %d releases", kind, it.Count, count, int64(pld.MaxCount))
	}
	it.Count *= int64(count)
	return it, nil
}
