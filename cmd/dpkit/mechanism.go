package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/dpkit/dpkit/pld"
)

// mechanismList is the repeatable --mechanism flag: releases of mechanisms whose privacy
// loss distribution dpkit knows (package pld).
type mechanismList []pld.Item

func (l *mechanismList) Set(s string) error {
	it, err := pld.ParseMechanism(s)
	if err != nil {
		return wantOf(err)
	}
	*l = append(*l, it)
	return nil
}

func (l *mechanismList) String() string { return fmt.Sprint(len(*l)) }
func (l *mechanismList) Type() string   { return "mechanism" }

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
	switch {
	case c.delta.set && c.delta.value > 0 && c.delta.value < 1:
		opts.Delta = c.delta.value
	case !c.delta.set && c.eps.value > 0:
		opts.Epsilon = c.eps.value // refine where δ(ε) is read
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
