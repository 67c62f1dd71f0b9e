package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// jlCutKeys are the keys of --mechanism jl-cut:….
var jlCutKeys = []string{"eps", "delta", "eta", "nu", "count"}

// parseJLCutMechanism reads "jl-cut:eps=E,delta=D,eta=H,nu=V[,count=K]": count releases of
// the Johnson–Lindenstrauss cut mechanism (mechanism.JLCut, KOV App. C.1), each accounted
// as its r rows of (ε0, δ0) pairs, r·count pairs in all.
func parseJLCutMechanism(rest string) (pld.Item, error) {
	vals := map[string]float64{}
	for _, kv := range strings.Split(rest, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !found || !slices.Contains(jlCutKeys, k) {
			return pld.Item{}, fmt.Errorf("jl-cut: unknown key %q: want key=value with key one of %s", kv, strings.Join(jlCutKeys, ", "))
		}
		if _, dup := vals[k]; dup {
			return pld.Item{}, fmt.Errorf("jl-cut: key %q given twice", k)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return pld.Item{}, fmt.Errorf("jl-cut: %s = %q: want a finite number", k, strings.TrimSpace(v))
		}
		vals[k] = x
	}
	for _, k := range []string{"eps", "delta", "eta", "nu"} {
		if _, ok := vals[k]; !ok {
			return pld.Item{}, fmt.Errorf("jl-cut: missing %s=…", k)
		}
	}
	count := 1.0
	if c, ok := vals["count"]; ok {
		count = c
	}
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
