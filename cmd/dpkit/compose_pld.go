package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/pld"
)

// mechanismList is the repeatable --mechanism flag: releases of mechanisms whose privacy
// loss distribution dpkit knows (package pld), and their text as given (for titles).
type mechanismList struct {
	items []pld.Item
	texts []string
}

func (l *mechanismList) Set(s string) error {
	it, err := parseMechanism(s)
	if err != nil {
		return err
	}
	l.items = append(l.items, it)
	l.texts = append(l.texts, strings.TrimSpace(s))
	return nil
}

func (l *mechanismList) String() string { return strings.Join(l.texts, " ") }
func (l *mechanismList) Type() string   { return "mechanism" }

// parseMechanism reads one --mechanism value, KIND:key=value,… (pld.ParseMechanism's
// syntax, or staircase:…, jl-cut:… and jl-variance:…); its count= is read as every count is (parseCount: 1000, 1e9;
// not 1_000 or 0x10). Errors say what is wrong after the flag and its value, which the
// flag parser prints.
func parseMechanism(s string) (pld.Item, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	for _, kv := range strings.Split(rest, ",") { // count= reads as every count does
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(strings.TrimSpace(k), "count") {
			if _, err := parseCount("count", v); err != nil {
				return pld.Item{}, fmt.Errorf("%s: %s", strings.ToLower(strings.TrimSpace(kind)), describe(err))
			}
		}
	}
	var own func(string) (pld.Item, error) // kinds parsed in their owners' files
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "staircase":
		own = parseStaircaseMechanism // staircase.go
	case "jl-cut":
		own = parseJLCutMechanism // jl.go
	case "jl-variance":
		own = parseJLVarianceMechanism // jl.go
	}
	if own != nil {
		it, err := own(rest)
		if err != nil {
			return pld.Item{}, wantOf(err)
		}
		return it, nil
	}
	it, err := pld.ParseMechanism(s)
	if err != nil {
		return pld.Item{}, wantOf(err)
	}
	return it, nil
}

// maxEvery is the largest number of rows --every may ask for: each is one composition.
const maxEvery = 1000

// runPLD composes a workload that names mechanisms (--mechanism), with the (ε, δ)
// entries of --mech as canonical pairs, by their privacy loss distributions.
func (c *composeCommand) runPLD(ctx context.Context) error {
	if c.theorem.all || c.theorem.theorem != compose.Exact {
		return flagErrorf("--theorem", "--theorem %s does not apply with --mechanism: mechanism-aware composition (pld) is the only one", c.theorem.String())
	}
	items := append([]pld.Item(nil), c.mechanisms.items...)
	if len(c.workload.mechs) > 0 || len(c.workload.files) > 0 {
		if c.every.set {
			return flagErrorf("--every", "--every applies to one --mechanism alone: drop --mech and --mech-file")
		}
		ms, err := c.workload.load(ctx, c.s.stdin)
		if err != nil {
			return err
		}
		for _, m := range ms {
			items = append(items, pld.Item{Mechanism: pld.EpsilonDelta{Epsilon: m.Epsilon, Delta: m.Delta}, Count: m.Count})
		}
	}
	if c.every.set {
		return c.runEvery(ctx, items[0])
	}
	var row composeRow
	var comp *pld.Composition
	err := runJob(ctx, c.s.stderr, "composing", func(ctx context.Context, progress progressFunc) error {
		opts := c.pldOptions()
		opts.Progress = progress // pld's work units: a bar with the time left
		var err error
		comp, err = pld.ComposeContext(ctx, items, opts)
		if err != nil {
			return err
		}
		row, err = c.pldRow(comp)
		return err
	})
	if err != nil {
		return mechanismError(err)
	}
	rows := []composeRow{row}
	if err := c.checkTolerance(rows); err != nil {
		return err
	}
	if c.plot != "" {
		if err := c.plotPLD(ctx, row, comp); err != nil {
			return err
		}
	}
	return c.write(rows, 0)
}

// pldOptions are the options of pld.Compose: the tolerance if given (else the
// library's default), and where the bracket is to be tight.
func (c *composeCommand) pldOptions() *pld.Options {
	opts := &pld.Options{Tolerance: c.tolerance.value}
	switch {
	case c.delta.set && c.delta.value > 0 && c.delta.value < 1:
		opts.Delta = c.delta.value
	case !c.delta.set && c.eps.value > 0:
		opts.Epsilon = c.eps.value // refine where δ(ε) is read
	}
	return opts
}

// pldRow reads the answer off a composition.
func (c *composeCommand) pldRow(comp *pld.Composition) (composeRow, error) {
	row := composeRow{theorem: "pld", method: methodLattice, exact: comp.Exact()}
	if row.exact {
		row.method = methodClosedForm // Gaussians alone: μ² = Σ count·μ_i²
	}
	if c.delta.set {
		up, lo, err := comp.Epsilon(c.delta.value)
		if err != nil {
			return row, err
		}
		row.epsilon, row.delta, row.lower = unsignedZero(up), c.delta.value, unsignedZero(lo)
	} else {
		up, lo, err := comp.Delta(c.eps.value)
		if err != nil {
			return row, err
		}
		row.epsilon, row.delta, row.lower = c.eps.value, unsignedZero(up), unsignedZero(lo)
	}
	return row, row.check(c.delta.set)
}

// runEvery answers after every N releases of it (--every N): N, 2N, …, it.Count (the last
// row is it.Count even when N does not divide it). Each row is composed on its own, with
// the same tolerance, so each is certified as a single answer would be.
func (c *composeCommand) runEvery(ctx context.Context, it pld.Item) error {
	n := c.every.value
	if n > it.Count {
		return flagErrorf("--every", "invalid --every %d: want at most the mechanism's count=%d", n, it.Count)
	}
	steps := (it.Count + n - 1) / n
	if steps > maxEvery {
		return flagErrorf("--every", "invalid --every %d: %d rows for count=%d; want at most %d rows (--every ≥ %d)",
			n, steps, it.Count, maxEvery, (it.Count+maxEvery-1)/maxEvery)
	}
	rows := make([]composeRow, 0, steps)
	err := runJob(ctx, c.s.stderr, "composing", func(ctx context.Context, progress progressFunc) error {
		for i := int64(1); i <= steps; i++ {
			progress(i-1, steps)
			if err := ctx.Err(); err != nil {
				return err
			}
			k := min(i*n, it.Count)
			comp, err := pld.ComposeContext(ctx, []pld.Item{{Mechanism: it.Mechanism, Count: k}}, c.pldOptions())
			if err != nil {
				return err
			}
			row, err := c.pldRow(comp)
			if err != nil {
				return err
			}
			row.releases = k
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return mechanismError(err)
	}
	if err := c.checkTolerance(rows); err != nil {
		return err
	}
	if c.plot != "" {
		if err := c.plotSteps(rows); err != nil {
			return err
		}
	}
	return c.write(rows, 0)
}

// mechanismError names --mechanism in pld's refusal of the workload as a whole
// (dpkit.ParamError "mechanisms": a loss beyond what a lattice composes soundly, or a
// lattice beyond its bins), so that the JSON error's "flag" says which flag to change.
func mechanismError(err error) error {
	var param *dpkit.ParamError
	if !errors.As(err, &param) || param.Pkg != "pld" || param.Name != "mechanisms" {
		return err
	}
	if s, ok := param.Value.(string); ok {
		return flagErrorf("--mechanism", "invalid --mechanism %q: want %s", s, param.Want)
	}
	return flagErrorf("--mechanism", "invalid --mechanism workload (%s)", describe(param))
}
