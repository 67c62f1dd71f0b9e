package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

const noiseUsage = `Usage: dpkit noise KIND --value V --sensitivity S --eps E [--delta D] [--n N] [--json]

Release the value V with noise calibrated to sensitivity S and privacy ε (and δ for
gaussian), from the operating system's cryptographic generator. The value is snapped to
a power-of-two grid (the granularity) and exact integer noise is added on the grid, so
the set of possible outputs does not depend on V (Mironov 2012).

KIND:
  laplace     Laplace mechanism, ε-DP, scale Δ/ε (S is the ℓ1 sensitivity)
  gaussian    Gaussian mechanism, (ε, δ)-DP, σ by the analytic calibration of Balle
              and Wang 2018 (S is the ℓ2 sensitivity; --delta required)
  geometric   geometric mechanism for integers, ε-DP (V and S integers)
  staircase   staircase mechanism (Geng–Viswanath), ε-DP, variance-optimal γ

Flags:
  --value V          the true value, finite (an integer for geometric) (required)
  --sensitivity S    sensitivity, finite > 0 (an integer ≥ 1 for geometric) (required)
  --eps E            ε, finite > 0 (required)
  --delta D          δ in (0, 1), gaussian only (required there)
  --n N              number of independent releases, an integer in [1, 100000]
                     (default 1; each costs the full (ε, δ): for inspection only)
  --json             print one JSON object instead of text
  -h, --help         show this help

JSON output:
  {"mechanism":…,"values":[…],"scale":…,"granularity":…,"ci95":[lo,hi],
   "epsilon":…,"delta":…}
scale is the noise scale actually used (laplace: b ≥ Δ/ε; gaussian: σ; geometric: 1/rate;
staircase: the period ≥ Δ); ci95 is the 95% interval of the noise around the first
released value (every value v has the interval v ± (hi − lo)/2).

Exit status: 0 success; 1 infeasible; 2 usage error.

Examples:
  dpkit noise laplace --value 1234 --sensitivity 1 --eps 0.5
  dpkit noise gaussian --value 10.5 --sensitivity 2 --eps 1 --delta 1e-6 --n 5 --json
`

const maxNoiseN = 100000

type noiseCommand struct {
	stdout io.Writer

	value, sens, eps, delta *floatFlag
	n                       int
	json                    bool
}

func init() {
	register(command{name: "noise", order: 40,
		summary: "release a value with secure Laplace, Gaussian, geometric or staircase noise",
		build:   func(s streams) *cobra.Command { return newNoiseCommand(s.stdout) }})
}

func finiteCheck(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &dpkit.ParamError{Name: name, Value: v, Want: "a finite number"}
	}
	return nil
}

func newNoiseCommand(stdout io.Writer) *cobra.Command {
	c := &noiseCommand{
		stdout: stdout,
		value:  &floatFlag{check: finiteCheck},
		sens:   &floatFlag{check: dpkit.CheckPositive},
		eps:    &floatFlag{check: dpkit.CheckPositive},
		delta:  deltaFlag(),
	}
	cmd := &cobra.Command{
		Use:  "noise",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.Var(c.value, "value", "")
	flags.Var(c.sens, "sensitivity", "")
	flags.Var(c.eps, "eps", "")
	flags.Var(c.delta, "delta", "")
	flags.IntVar(&c.n, "n", 1, "")
	flags.BoolVar(&c.json, "json", false, "")
	withUsage(cmd, noiseUsage)
	return cmd
}

// noiseReport is the JSON output of dpkit noise.
type noiseReport struct {
	Mechanism   string     `json:"mechanism"`
	Values      []float64  `json:"values"`
	Scale       float64    `json:"scale"`
	Granularity float64    `json:"granularity"`
	CI95        [2]float64 `json:"ci95"`
	Epsilon     float64    `json:"epsilon"`
	Delta       float64    `json:"delta"`
}

// floatMechanism is what dpkit noise needs of a mechanism releasing a float64 value
// (mechanism.Laplace, Gaussian, Staircase).
type floatMechanism interface {
	Release(value float64, src noise.Source) (float64, error)
	Interval(beta float64) (float64, error)
	Granularity() float64
}

// releaseFloats fills r.Values with independent releases of v by m and r.Granularity
// with m's, and returns the half-width of the 95% interval of m's noise.
func (r *noiseReport) releaseFloats(m floatMechanism, v float64, src noise.Source) (half float64, err error) {
	for i := range r.Values {
		if r.Values[i], err = m.Release(v, src); err != nil {
			return 0, err
		}
	}
	r.Granularity = m.Granularity()
	return m.Interval(0.05)
}

// Run releases the value.
func (c *noiseCommand) Run(_ context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("missing KIND: one of laplace, gaussian, geometric, staircase")
	}
	if len(args) > 1 {
		return usagef("unexpected argument %q", args[1])
	}
	kind := args[0]
	switch {
	case !c.value.set:
		return usagef("missing --value: the true value to release is required")
	case !c.sens.set:
		return usagef("missing --sensitivity: the sensitivity of the value is required")
	case !c.eps.set:
		return usagef("missing --eps: the privacy parameter epsilon is required")
	case c.n < 1 || c.n > maxNoiseN:
		return usagef("invalid --n %d: want an integer in [1, %d]", c.n, maxNoiseN)
	}
	if kind == "gaussian" {
		if !c.delta.set || c.delta.value == 0 || c.delta.value == 1 {
			return usagef("gaussian needs --delta in (0, 1)")
		}
	} else if c.delta.set && c.delta.value != 0 {
		return usagef("--delta applies only to gaussian (%s is pure ε-DP)", kind)
	}
	src := noise.Secure()
	r := noiseReport{Mechanism: kind, Values: make([]float64, c.n), Epsilon: c.eps.value}
	var half float64
	switch kind {
	case "laplace":
		m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: c.eps.value, Sensitivity: c.sens.value})
		if err != nil {
			return err
		}
		if half, err = r.releaseFloats(m, c.value.value, src); err != nil {
			return err
		}
		r.Scale = m.NoiseScale()
	case "gaussian":
		m, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: c.eps.value, Delta: c.delta.value, Sensitivity: c.sens.value})
		if err != nil {
			return err
		}
		if half, err = r.releaseFloats(m, c.value.value, src); err != nil {
			return err
		}
		r.Scale, r.Delta = m.Sigma(), c.delta.value
	case "geometric":
		v, s := c.value.value, c.sens.value
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return &dpkit.ParamError{Name: "value", Value: v, Want: "an integer in [-2^53, 2^53] for geometric"}
		}
		if s != math.Trunc(s) || s > 1<<40 {
			return &dpkit.ParamError{Name: "sensitivity", Value: s, Want: "an integer in [1, 2^40] for geometric"}
		}
		m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: c.eps.value, Sensitivity: int64(s)})
		if err != nil {
			return err
		}
		for i := range r.Values {
			r.Values[i] = float64(m.Release(int64(v), src))
		}
		w, _ := m.Interval(0.05)
		half = float64(w)
		r.Scale, r.Granularity = 1/m.Rate(), 1
	case "staircase":
		m, err := mechanism.NewStaircase(mechanism.StaircaseOptions{Epsilon: c.eps.value, Sensitivity: c.sens.value})
		if err != nil {
			return err
		}
		if half, err = r.releaseFloats(m, c.value.value, src); err != nil {
			return err
		}
		r.Scale = m.Scale()
	default:
		return usagef("unknown KIND %q: want laplace, gaussian, geometric or staircase", kind)
	}
	r.CI95 = [2]float64{r.Values[0] - half, r.Values[0] + half}
	if c.json {
		return writeJSON(c.stdout, r)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	vals := make([]string, len(r.Values))
	for i, v := range r.Values {
		vals[i] = formatFloat(v)
	}
	fmt.Fprintf(w, "mechanism\t%s\n", kind)
	fmt.Fprintf(w, "released\t%s\n", strings.Join(vals, " "))
	fmt.Fprintf(w, "95%% interval\t[%s, %s] (noise ± %s around the first value)\n", formatFloat(r.CI95[0]), formatFloat(r.CI95[1]), formatFloat(half))
	fmt.Fprintf(w, "scale\t%s\n", formatFloat(r.Scale))
	fmt.Fprintf(w, "granularity\t%s\n", strconv.FormatFloat(r.Granularity, 'g', -1, 64))
	fmt.Fprintf(w, "guarantee\t%v per release\n", dpkit.Budget{Epsilon: r.Epsilon, Delta: r.Delta})
	return w.Flush()
}
