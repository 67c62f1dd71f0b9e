package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"text/tabwriter"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/internal/numeric"
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

// jlCalibration is the answer of "dpkit calibrate --mechanism jl-cut|jl-variance": the
// largest per-release ε (at per-release δ = D/K) whose K releases meet the budget when
// their K·r rows are composed exactly, the release's rows and weight w at that ε, and the
// same at the basic split ε = E/K for comparison. Every key is always present.
type jlCalibration struct {
	Mechanism         string  `json:"mechanism"`
	EpsilonPerRelease float64 `json:"epsilon_per_release"`
	DeltaPerRelease   float64 `json:"delta_per_release"`
	Rows              int64   `json:"rows"`
	RowEpsilon        float64 `json:"row_epsilon"`
	RowDelta          float64 `json:"row_delta"`
	Weight            float64 `json:"weight"`
	K                 int64   `json:"k"`
	Eta               float64 `json:"eta"`
	Nu                float64 `json:"nu"`
	Epsilon           float64 `json:"epsilon"`
	Delta             float64 `json:"delta"`
	EpsilonUpper      float64 `json:"epsilon_upper"`
	BasicEpsilon      float64 `json:"basic_epsilon_per_release"`
	BasicWeight       float64 `json:"basic_weight"`
}

// jlRelease is what calibration needs of a JL mechanism.
type jlRelease interface {
	Rows() int64
	RowEpsilon() float64
	RowDelta() float64
	Weight() float64
}

// newJL builds the kind ("jl-cut" or "jl-variance") at per-release (eps, delta).
func newJL(kind string, eps, delta, eta, nu float64) (jlRelease, error) {
	if kind == "jl-cut" {
		return mechanism.NewJLCut(mechanism.JLCutOptions{Epsilon: eps, Delta: delta, Eta: eta, Nu: nu})
	}
	return mechanism.NewJLVariance(mechanism.JLVarianceOptions{Epsilon: eps, Delta: delta, Eta: eta, Nu: nu})
}

// calibrateJL answers calibrate --mechanism jl-cut|jl-variance.
func (c *calibrateCommand) calibrateJL(ctx context.Context) error {
	switch {
	case c.sensitivity.set || c.q.set || c.steps.set:
		return usagef("--sensitivity, --q and --steps do not apply to --mechanism %s: give --k, --eta and --nu", c.mechanism)
	case !c.k.set:
		return flagErrorf("--k", "missing --k: the number of releases to calibrate the %s sketch for", c.mechanism)
	case !c.eta.set:
		return flagErrorf("--eta", "missing --eta: the multiplicative error η of an answer, in (0, 1)")
	case !c.nu.set:
		return flagErrorf("--nu", "missing --nu: the failure probability ν of an answer, in (0, 1)")
	case c.delta.value == 0:
		return flagErrorf("--delta", "invalid --delta 0 for --mechanism %s: want in (0, 1) (the sketch is (ε, δ)-DP with δ > 0)", c.mechanism)
	}
	out := jlCalibration{Mechanism: c.mechanism, K: c.k.value, Eta: c.eta.value, Nu: c.nu.value, Epsilon: c.eps.value, Delta: c.delta.value}
	if err := runJob(ctx, c.s.stderr, "calibrating", func(context.Context, progressFunc) error {
		return jlEpsilon(&out)
	}); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, out)
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon per release\t%s\t(delta per release %s; %d releases, %d rows in all, meet (ε=%s, δ=%s) by the exact composition of their rows: ε ≤ %s)\n",
		formatFloat(out.EpsilonPerRelease), formatFloat(out.DeltaPerRelease), out.K, out.K*out.Rows, formatFloat(out.Epsilon), formatFloat(out.Delta), formatFloat(out.EpsilonUpper))
	fmt.Fprintf(w, "rows per release\t%d\t(each (ε0=%s, δ0=%s)-DP)\n", out.Rows, formatFloat(out.RowEpsilon), formatFloat(out.RowDelta))
	fmt.Fprintf(w, "weight w\t%s\t(%s at the basic split ε = E/K = %s)\n", formatFloat(out.Weight), formatFloat(out.BasicWeight), formatFloat(out.BasicEpsilon))
	return w.Flush()
}

// jlEpsilon fills out: the largest per-release ε in [E/K, E] (bisected to 1e-4 relative,
// answered from the side that was seen to pass) such that the K·r rows of K releases at
// (ε, D/K), each (ε0, δ0), compose to at most E at δ = D by compose's certified exact
// composition (KOV Thm 3.3). At the basic split ε = E/K the K releases meet (E, D) by
// basic composition, so the search starts from a point that passes; per-release δ = D/K
// keeps the rows' δ0 = D/(2Kr) and the composition's slack D/2 as one release at (E, D)
// would have them.
func jlEpsilon(out *jlCalibration) error {
	E, D, K := out.Epsilon, out.Delta, out.K
	out.DeltaPerRelease = D / float64(K)
	composed := func(eps float64) (float64, jlRelease, error) {
		m, err := newJL("jl-cut", eps, out.DeltaPerRelease, out.Eta, out.Nu) // the same rows for both kinds
		if err != nil {
			return 0, nil, err
		}
		if float64(m.Rows())*float64(K) > float64(compose.MaxCount) {
			return 0, nil, flagErrorf("--k", "invalid --k %d: %d releases of %d rows exceed %d rows in all", K, K, m.Rows(), int64(compose.MaxCount))
		}
		got, err := compose.Epsilon([]compose.Mech{{Epsilon: m.RowEpsilon(), Delta: m.RowDelta(), Count: m.Rows() * K}}, D, nil)
		return got.Epsilon, m, err
	}
	fits := func(eps float64) (bool, error) {
		got, _, err := composed(eps)
		return got <= E, err
	}
	basic := E / float64(K)
	if ok, err := fits(basic); err != nil || !ok {
		if err == nil {
			err = &dpkit.InfeasibleError{Msg: fmt.Sprintf("%s: %d releases at the basic split (ε=%g, δ=%g) are not certified within (ε=%g, δ=%g)", out.Mechanism, K, basic, out.DeltaPerRelease, E, D)}
		}
		return jlFlagError(err)
	}
	eps := basic
	if ok, err := fits(E); err != nil {
		return jlFlagError(err)
	} else if ok {
		eps = E
	} else if K > 1 {
		lo, _, err := numeric.Bisect(basic, E, fits, numeric.Stop{RelTol: 1e-4, Geometric: true})
		if err != nil {
			return jlFlagError(err)
		}
		eps = lo
	}
	upper, _, err := composed(eps)
	if err != nil {
		return jlFlagError(err)
	}
	m, err := newJL(out.Mechanism, eps, out.DeltaPerRelease, out.Eta, out.Nu)
	if err != nil {
		return jlFlagError(err)
	}
	b, err := newJL(out.Mechanism, basic, out.DeltaPerRelease, out.Eta, out.Nu)
	if err != nil {
		return jlFlagError(err)
	}
	out.EpsilonPerRelease, out.EpsilonUpper, out.BasicEpsilon, out.BasicWeight = eps, upper, basic, b.Weight()
	out.Rows, out.RowEpsilon, out.RowDelta, out.Weight = m.Rows(), m.RowEpsilon(), m.RowDelta(), m.Weight()
	return nil
}

// jlFlagError names the flag of a JL parameter the mechanism refused.
func jlFlagError(err error) error {
	var pe *dpkit.ParamError
	if errors.As(err, &pe) {
		if flag := map[string]string{"eta": "--eta", "nu": "--nu"}[pe.Name]; flag != "" {
			return flagErrorf(flag, "invalid %s %v: want %s", flag, pe.Value, pe.Want)
		}
	}
	return err
}
