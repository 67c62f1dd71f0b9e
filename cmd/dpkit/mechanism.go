package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dpkit/dpkit/pld"
)

// mechanismSyntax is the --mechanism argument, for messages.
const mechanismSyntax = "KIND:key=value,… (KIND gaussian, laplace, geometric, rr, exponential, subsampled-gaussian, subsampled-laplace)"

// mechanismKeys lists, per KIND, the keys it takes; "count" and "sensitivity" are optional
// (default 1) everywhere they apply.
var mechanismKeys = map[string][]string{
	"gaussian":            {"sigma", "sensitivity", "count"},
	"laplace":             {"scale", "sensitivity", "count"},
	"geometric":           {"eps", "scale", "sensitivity", "count"},
	"rr":                  {"eps", "k", "count"},
	"exponential":         {"eps", "count"},
	"subsampled-gaussian": {"sigma", "q", "sensitivity", "count"},
	"subsampled-laplace":  {"scale", "q", "sensitivity", "count"},
}

// mechanismList is the repeatable --mechanism flag: releases of mechanisms whose privacy
// loss distribution dpkit knows (package pld).
type mechanismList []pld.Item

func (l *mechanismList) Set(s string) error {
	it, err := parseMechanism(s)
	if err != nil {
		return err
	}
	*l = append(*l, it)
	return nil
}

func (l *mechanismList) String() string { return fmt.Sprint(len(*l)) }
func (l *mechanismList) Type() string   { return "mechanism" }

// parseMechanism reads KIND:key=value,… into a pld.Item.
func parseMechanism(s string) (pld.Item, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	allowed, ok := mechanismKeys[kind]
	if !ok {
		return pld.Item{}, fmt.Errorf("unknown mechanism %q: want %s", kind, mechanismSyntax)
	}
	vals := map[string]float64{}
	for _, kv := range strings.Split(rest, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !found || !contains(allowed, k) {
			return pld.Item{}, fmt.Errorf("%s: unknown key %q: want key=value with key one of %s", kind, kv, strings.Join(allowed, ", "))
		}
		if _, dup := vals[k]; dup {
			return pld.Item{}, fmt.Errorf("%s: key %q given twice", kind, k)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return pld.Item{}, fmt.Errorf("%s: %s = %q: want a finite number", kind, k, v)
		}
		vals[k] = x
	}
	get := func(k string, def float64) float64 {
		if v, ok := vals[k]; ok {
			return v
		}
		return def
	}
	need := func(keys ...string) error {
		for _, k := range keys {
			if _, ok := vals[k]; !ok {
				return fmt.Errorf("%s: missing %s=…", kind, k)
			}
		}
		return nil
	}
	count := get("count", 1)
	if count < 1 || count > float64(pld.MaxCount) || count != math.Trunc(count) {
		return pld.Item{}, fmt.Errorf("%s: count = %g: want an integer in [1, 10^12]", kind, count)
	}
	sens := get("sensitivity", 1)
	var m pld.Mechanism
	switch kind {
	case "gaussian":
		if err := need("sigma"); err != nil {
			return pld.Item{}, err
		}
		m = pld.Gaussian{Sigma: vals["sigma"], Sensitivity: sens}
	case "laplace":
		if err := need("scale"); err != nil {
			return pld.Item{}, err
		}
		m = pld.Laplace{Scale: vals["scale"], Sensitivity: sens}
	case "geometric":
		_, hasEps := vals["eps"]
		_, hasScale := vals["scale"]
		if hasEps == hasScale {
			return pld.Item{}, fmt.Errorf("geometric: give exactly one of eps=… (per unit of sensitivity) and scale=…")
		}
		if sens != math.Trunc(sens) {
			return pld.Item{}, fmt.Errorf("geometric: sensitivity = %g: want an integer", sens)
		}
		scale := vals["scale"]
		if hasEps {
			if vals["eps"] <= 0 {
				return pld.Item{}, fmt.Errorf("geometric: eps = %g: want a number > 0", vals["eps"])
			}
			scale = 1 / vals["eps"]
		}
		m = pld.DiscreteLaplace{Scale: scale, Sensitivity: int64(sens)}
	case "rr":
		if err := need("eps", "k"); err != nil {
			return pld.Item{}, err
		}
		if vals["k"] != math.Trunc(vals["k"]) || vals["k"] > 1<<30 {
			return pld.Item{}, fmt.Errorf("rr: k = %g: want an integer in [2, 2^30]", vals["k"])
		}
		m = pld.RandomizedResponse{Epsilon: vals["eps"], K: int(vals["k"])}
	case "exponential":
		if err := need("eps"); err != nil {
			return pld.Item{}, err
		}
		m = pld.Exponential{Epsilon: vals["eps"]}
	case "subsampled-gaussian":
		if err := need("sigma", "q"); err != nil {
			return pld.Item{}, err
		}
		m = pld.PoissonSubsampled{Base: pld.Gaussian{Sigma: vals["sigma"], Sensitivity: sens}, Rate: vals["q"]}
	case "subsampled-laplace":
		if err := need("scale", "q"); err != nil {
			return pld.Item{}, err
		}
		m = pld.PoissonSubsampled{Base: pld.Laplace{Scale: vals["scale"], Sensitivity: sens}, Rate: vals["q"]}
	}
	if err := m.Validate(); err != nil {
		return pld.Item{}, wantOf(err)
	}
	return pld.Item{Mechanism: m, Count: int64(count)}, nil
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }

// pldJSON is the JSON result of a mechanism-aware composition.
type pldJSON struct {
	Theorem      string   `json:"theorem"`
	Epsilon      float64  `json:"epsilon"`
	Delta        float64  `json:"delta"`
	EpsilonLower *float64 `json:"epsilon_lower,omitempty"`
	DeltaLower   *float64 `json:"delta_lower,omitempty"`
	Exact        bool     `json:"exact"`
	Width        float64  `json:"width"`
}

// runPLD composes a workload that names mechanisms (--mechanism), with the (ε, δ)
// entries of --mech as canonical pairs, by their privacy loss distributions.
func (c *composeCommand) runPLD(ctx context.Context) error {
	if c.theorem.all || (c.theorem.theorem != "" && c.theorem.theorem != "exact") {
		return usagef("--theorem %s does not apply with --mechanism: mechanism-aware composition (pld) is the only one", c.theorem.String())
	}
	items := append([]pld.Item(nil), c.mechanisms...)
	if len(c.workload.mechs) > 0 || len(c.workload.files) > 0 {
		ms, err := c.workload.load(ctx, c.stdin)
		if err != nil {
			return err
		}
		for _, m := range ms {
			items = append(items, pld.Item{Mechanism: pld.EpsilonDelta{Epsilon: m.Epsilon, Delta: m.Delta}, Count: m.Count})
		}
	}
	opts := &pld.Options{Tolerance: c.tolerance.value}
	if c.delta.set && c.delta.value > 0 && c.delta.value < 1 {
		opts.Delta = c.delta.value
	}
	comp, err := pld.Compose(items, opts)
	if err != nil {
		return err
	}
	out := pldJSON{Theorem: "pld", Exact: comp.Exact()}
	if c.delta.set {
		up, lo, err := comp.Epsilon(c.delta.value)
		if err != nil {
			return err
		}
		out.Epsilon, out.Delta, out.EpsilonLower = unsignedZero(up), c.delta.value, &lo
		out.Width = comp.Width(c.delta.value)
	} else {
		up, lo, err := comp.Delta(c.eps.value)
		if err != nil {
			return err
		}
		out.Epsilon, out.Delta, out.DeltaLower = c.eps.value, up, &lo
		if up > 0 {
			out.Width = (up - lo) / up
		}
	}
	if c.json {
		return writeJSON(c.stdout, out)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "theorem\tepsilon\tdelta\tlower\texact\n")
	lower := out.EpsilonLower
	if lower == nil {
		lower = out.DeltaLower
	}
	exact := "no"
	if out.Exact {
		exact = "yes"
	}
	fmt.Fprintf(w, "pld\t%s\t%s\t%s\t%s\n", formatFloat(out.Epsilon), formatFloat(out.Delta), formatFloat(*lower), exact)
	return w.Flush()
}
