package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// This file holds the staircase mechanism's part of the accounting commands: the
// --mechanism staircase:… kind of compose (parsed here, dispatched from parseMechanism)
// and calibrate --mechanism staircase.

// staircaseCalibration is the answer of "dpkit calibrate --mechanism staircase": the
// largest per-release ε whose K releases meet the budget, beside KOV Thm 3.3's for
// (ε0, 0) pairs. Every key is always present.
type staircaseCalibration struct {
	Mechanism         string  `json:"mechanism"`
	EpsilonPerRelease float64 `json:"epsilon_per_release"`
	Sensitivity       float64 `json:"sensitivity"`
	K                 int64   `json:"k"`
	Epsilon           float64 `json:"epsilon"`
	Delta             float64 `json:"delta"`
	KOV               float64 `json:"kov"`
	KOVRule           string  `json:"kov_rule"`
}

// parseKeyValues reads the key=value,… part of a --mechanism kind parsed in this package's
// owners' files (staircase, jl-cut): keys lower-cased and among keys, each at most once.
func parseKeyValues(kind, rest string, keys []string) (map[string]string, error) {
	vals := map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !found || !slices.Contains(keys, k) {
			return nil, fmt.Errorf("%s: unknown key %q: want key=value with key one of %s", kind, kv, strings.Join(keys, ", "))
		}
		if _, dup := vals[k]; dup {
			return nil, fmt.Errorf("%s: key %q given twice", kind, k)
		}
		vals[k] = strings.TrimSpace(v)
	}
	return vals, nil
}

// keyNumber returns the finite number of key k in vals, or def when it is absent.
func keyNumber(kind string, vals map[string]string, k string, def float64) (float64, error) {
	v, ok := vals[k]
	if !ok {
		return def, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s: %s = %q: want a finite number", kind, k, v)
	}
	return x, nil
}

// staircaseKeys are the keys of --mechanism staircase:…: eps and sensitivity (default
// 1), count (default 1), cost l2 (default) or l1, dim 1 (default) or 2.
var staircaseKeys = []string{"eps", "sensitivity", "count", "cost", "dim"}

// parseStaircaseMechanism reads the keys of "staircase:eps=E[,sensitivity=S][,count=K]
// [,cost=l1|l2][,dim=2]" and returns the privacy loss distribution of the mechanism
// dpkit noise would run (mechanism.Staircase's exact grid pld.Staircase; for dim=2
// mechanism.StaircaseL1's exact grid pld.StaircaseL1), released count times.
func parseStaircaseMechanism(rest string) (pld.Item, error) {
	vals, err := parseKeyValues("staircase", rest, staircaseKeys)
	if err != nil {
		return pld.Item{}, err
	}
	num := func(k string, def float64) (float64, error) { return keyNumber("staircase", vals, k, def) }
	if _, ok := vals["eps"]; !ok {
		return pld.Item{}, fmt.Errorf("staircase: missing eps=…")
	}
	eps, err := num("eps", 0)
	if err != nil {
		return pld.Item{}, err
	}
	sens, err := num("sensitivity", 1)
	if err != nil {
		return pld.Item{}, err
	}
	count, err := num("count", 1)
	if err != nil {
		return pld.Item{}, err
	}
	if count != math.Trunc(count) || count < 1 || count > float64(pld.MaxCount) {
		return pld.Item{}, fmt.Errorf("staircase: count = %g: want an integer in [1, %d]", count, int64(pld.MaxCount))
	}
	dim, err := num("dim", 1)
	if err != nil {
		return pld.Item{}, err
	}
	var m interface{ PLD() (pld.Mechanism, error) }
	switch {
	case dim == 1:
		cost := mechanism.CostL2
		switch strings.ToLower(vals["cost"]) {
		case "", "l2":
		case "l1":
			cost = mechanism.CostL1
		default:
			return pld.Item{}, fmt.Errorf("staircase: cost = %q: want l2 or l1", vals["cost"])
		}
		m, err = mechanism.NewStaircase(mechanism.StaircaseOptions{Epsilon: eps, Sensitivity: sens, Cost: cost})
	case dim == 2:
		if c, ok := vals["cost"]; ok && !strings.EqualFold(c, "l1") {
			return pld.Item{}, fmt.Errorf("staircase: cost = %q: the two-dimensional staircase is ℓ1-optimal (cost=l1)", c)
		}
		m, err = mechanism.NewStaircaseL1(mechanism.StaircaseL1Options{Epsilon: eps, Sensitivity: sens, Dimension: 2})
	default:
		return pld.Item{}, fmt.Errorf("staircase: dim = %g: want 1 or 2", dim)
	}
	if err != nil {
		var pe *dpkit.ParamError
		if errors.As(err, &pe) { // name the key as the user wrote it
			key := map[string]string{"epsilon": "eps", "sensitivity": "sensitivity"}[strings.ToLower(pe.Name)]
			if key != "" {
				return pld.Item{}, fmt.Errorf("staircase: %s = %s: want %s", key, vals[key], pe.Want)
			}
		}
		return pld.Item{}, err
	}
	p, err := m.PLD()
	if err != nil {
		return pld.Item{}, err
	}
	return pld.Item{Mechanism: p, Count: int64(count)}, nil
}

// calibrateStaircase finds the largest per-release ε0 whose K staircase releases
// (mechanism.Staircase, variance-optimal γ, on the query's sensitivity) meet the budget
// by their exact privacy loss distribution (pld.Staircase). pld.CalibrateScale searches
// the scale Δ/ε0 between the pure point ε0 = E/K (K·ε0 = E always meets the budget) and
// 10^6 times it, and returns a scale whose composition was seen to meet the budget, so ε0
// = Δ/scale (rounded down) is feasible. Beside it: the ε0 of KOV Thm 3.3 for (ε0, 0)
// pairs, which is all the staircase's guarantee gives (KOV §4.1).
func (c *calibrateCommand) calibrateStaircase(ctx context.Context) error {
	switch {
	case !c.k.set:
		return flagErrorf("--k", "missing --k: the number of releases to calibrate the staircase for")
	case !c.sensitivity.set:
		return flagErrorf("--sensitivity", "missing --sensitivity: the query's sensitivity")
	}
	E, D, K, S := c.eps.value, c.delta.value, c.k.value, c.sensitivity.value
	out := staircaseCalibration{Mechanism: "staircase", Sensitivity: S, K: K, Epsilon: E, Delta: D}
	if err := runJob(ctx, c.s.stderr, "calibrating", func(context.Context, progressFunc) error {
		return staircaseEpsilon(&out)
	}); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, out)
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon per release\t%s\t(%d releases of staircase noise meet (ε=%s, δ=%s) by the certified PLD upper curve)\n",
		formatFloat(out.EpsilonPerRelease), K, formatFloat(E), formatFloat(D))
	fmt.Fprintf(w, "KOV epsilon per release\t%s\t(%s; %.4g× the PLD answer)\n", formatFloat(out.KOV), out.KOVRule, out.KOV/out.EpsilonPerRelease)
	return w.Flush()
}

// staircaseEpsilon fills out's per-release ε and its KOV comparison.
func staircaseEpsilon(out *staircaseCalibration) error {
	E, D, K, S := out.Epsilon, out.Delta, out.K, out.Sensitivity
	if E/float64(K) < noise.MinStaircaseEpsilon {
		return &dpkit.InfeasibleError{Msg: fmt.Sprintf("the staircase needs a per-release ε ≥ 2^-12; ε/K = %g (use Laplace or Gaussian noise)", E/float64(K))}
	}
	var buildErr error
	mk := func(scale float64) pld.Mechanism {
		m, err := mechanism.NewStaircase(mechanism.StaircaseOptions{Epsilon: S / scale, Sensitivity: S})
		if err != nil {
			buildErr = err
			return pld.EpsilonDelta{Epsilon: S / scale} // dominates it; the error is reported below
		}
		p, _ := m.PLD()
		return p
	}
	scale, err := pld.CalibrateScale(mk, K, dpkit.Budget{Epsilon: E, Delta: D}, float64(K)*S/E)
	if err != nil {
		return err
	}
	eps0 := math.Nextafter(S/scale, 0) // S/scale rounded down: its scale is ≥ the one verified
	if _, err := mechanism.NewStaircase(mechanism.StaircaseOptions{Epsilon: eps0, Sensitivity: S}); err != nil {
		if buildErr == nil {
			buildErr = err
		}
		return fmt.Errorf("staircase: per-release ε %g: %w", eps0, buildErr)
	}
	out.EpsilonPerRelease = eps0
	kov, err := compose.MaxEpsilonPerQuery(K, 0, dpkit.Budget{Epsilon: E, Delta: D})
	if err != nil {
		return err
	}
	out.KOV = kov
	out.KOVRule = "KOV Thm 3.3 for (ε0, 0) pairs: the staircase composed by its guarantee alone (KOV §4.1)"
	return nil
}
