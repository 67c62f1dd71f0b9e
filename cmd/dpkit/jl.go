package main

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// jlCutKeys are the keys of --mechanism jl-cut:….
var jlCutKeys = []string{"eps", "delta", "eta", "nu", "count"}

// parseJLCutMechanism reads "jl-cut:eps=E,delta=D,eta=H,nu=V[,count=K]": count releases of
// the Johnson–Lindenstrauss cut mechanism (mechanism.JLCut, KOV App. C.1), each accounted
// as its r rows of (ε0, δ0) pairs, r·count pairs in all.
func parseJLCutMechanism(rest string) (pld.Item, error) {
	text, err := parseKeyValues("jl-cut", rest, jlCutKeys)
	if err != nil {
		return pld.Item{}, err
	}
	vals := map[string]float64{}
	for _, k := range []string{"eps", "delta", "eta", "nu"} {
		if _, ok := text[k]; !ok {
			return pld.Item{}, fmt.Errorf("jl-cut: missing %s=…", k)
		}
	}
	for _, k := range jlCutKeys {
		if vals[k], err = keyNumber("jl-cut", text, k, 1); err != nil { // count defaults to 1
			return pld.Item{}, err
		}
	}
	count := vals["count"]
	if count != math.Trunc(count) || count < 1 || count > float64(pld.MaxCount) {
		return pld.Item{}, fmt.Errorf("jl-cut: count = %g: want an integer in [1, %d]", count, int64(pld.MaxCount))
	}
	m, err := mechanism.NewJLCut(mechanism.JLCutOptions{Epsilon: vals["eps"], Delta: vals["delta"], Eta: vals["eta"], Nu: vals["nu"]})
	if err != nil {
		return pld.Item{}, err
	}
	it := m.PLDItems()[0]
	if float64(it.Count)*count > float64(pld.MaxCount) {
		return pld.Item{}, fmt.Errorf("jl-cut: %d rows × count %g exceed %d releases", it.Count, count, int64(pld.MaxCount))
	}
	it.Count *= int64(count)
	return it, nil
}
