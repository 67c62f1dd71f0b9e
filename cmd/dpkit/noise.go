package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

const noiseUsage = `Usage: dpkit noise KIND --value V --sensitivity S --eps E [--delta D] [--n N] [--json]
       dpkit noise staircase --dim 2 --value X,Y --sensitivity S --eps E [--n N] [--json]
       dpkit noise exponential|report-noisy-max --utilities FILE --sensitivity S --eps E [--monotonic] [--n N] [--json]

Release the value V with noise calibrated to sensitivity S and privacy ε (and δ for
gaussian), from the operating system's cryptographic generator. The value is snapped to
a power-of-two grid (the granularity) and exact integer noise is added on the grid, so
the set of possible outputs does not depend on V (Mironov 2012).

KIND:
  laplace     Laplace mechanism, ε-DP, scale Δ/ε (S is the ℓ1 sensitivity)
  gaussian    Gaussian mechanism, (ε, δ)-DP, σ by the analytic calibration of Balle
              and Wang 2018 (S is the ℓ2 sensitivity; --delta required)
  geometric   geometric mechanism for integers, ε-DP (V and S integers)
  exponential the exponential mechanism (McSherry–Talwar): selects a candidate of FILE
              with probability ∝ exp(ε·u/(2S)) (ε·u/S with --monotonic), sampled
              exactly (quantized utilities, exact Bernoulli trials); S is the
              sensitivity of every utility
  report-noisy-max
              argmax of the utilities plus Gumbel noise of scale 2S/ε: the same output
              distribution as exponential (Gumbel-max), so the same exact sampler
  staircase   staircase mechanism (Geng–Viswanath), ε-DP, variance-optimal γ; with
              --dim 2 the correlated two-dimensional staircase of Kairouz's thesis
              (Thm 2.3.1: optimal for the ℓ1 error; S is the ℓ1 sensitivity of (X, Y))

Flags:
  --value V          the true value, finite (an integer for geometric) (required);
                     with --dim 2 two comma-separated values X,Y
  --dim D            dimension of the value, 1 (default) or 2 (staircase only)
  --utilities FILE   exponential, report-noisy-max: one candidate per line, "UTILITY"
                     or "LABEL UTILITY" (finite numbers; blank lines and text after '#'
                     ignored; "-" reads stdin), at most 10^6 candidates
  --monotonic        exponential, report-noisy-max: all utilities move in the same
                     direction between neighbours (halves the noise; McSherry–Talwar)
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
With --dim 2:
  {"mechanism":"staircase","dimension":2,"vectors":[[x,y],…],"scale":…,"granularity":…,
   "gamma":…,"expected_l1_error":…,"l1_radius95":…,"epsilon":…,"delta":0}
gamma is the grid's γ (≈ the thesis's γ*), expected_l1_error is E‖noise‖₁ (thesis
eq. (2.9)) and l1_radius95 a w with P(‖released − value‖₁ ≥ w) ≤ 5%.
With exponential and report-noisy-max:
  {"mechanism":…,"selected":[i,…],"labels":[…],"probabilities":[…],"utility_gap95":…,
   "epsilon":…,"delta":0}
selected are the chosen candidates' indices (from 0, in FILE's order), labels the
candidates' labels (their line's LABEL, or the index), probabilities the released
distribution, and utility_gap95 a gap with P(u(selected) ≤ max u − gap) ≤ 5%.

Exit status: 0 success; 1 infeasible; 2 usage error.

Examples:
  dpkit noise laplace --value 1234 --sensitivity 1 --eps 0.5
  dpkit noise gaussian --value 10.5 --sensitivity 2 --eps 1 --delta 1e-6 --n 5 --json
  dpkit noise staircase --dim 2 --value 120,37 --sensitivity 1 --eps 4
`

const maxNoiseN = 100000

type noiseCommand struct {
	stdin  io.Reader
	stdout io.Writer

	value            *vectorFlag
	sens, eps, delta *floatFlag
	n, dim           int
	utilities        string
	monotonic        bool
	json             bool
}

// vectorFlag is --value: one finite number, or with --dim 2 two comma-separated ones.
type vectorFlag struct {
	values []float64
	set    bool
}

func (f *vectorFlag) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return fmt.Errorf("%q: want one number, or two comma-separated numbers X,Y with --dim 2", s)
	}
	vals := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%q: want a finite number", strings.TrimSpace(p))
		}
		vals[i] = v
	}
	f.values, f.set = vals, true
	return nil
}

func (f *vectorFlag) String() string {
	parts := make([]string, len(f.values))
	for i, v := range f.values {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
func (f *vectorFlag) Type() string { return "float[,float]" }

func init() {
	register(command{name: "noise", order: 40,
		summary: "release a value with secure Laplace, Gaussian, geometric or staircase noise",
		build:   func(s streams) *cobra.Command { return newNoiseCommand(s.stdin, s.stdout) }})
}

func finiteCheck(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &dpkit.ParamError{Name: name, Value: v, Want: "a finite number"}
	}
	return nil
}

func newNoiseCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	c := &noiseCommand{
		stdin:  stdin,
		stdout: stdout,
		value:  &vectorFlag{},
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
	flags.IntVar(&c.dim, "dim", 1, "")
	flags.StringVar(&c.utilities, "utilities", "", "")
	flags.BoolVar(&c.monotonic, "monotonic", false, "")
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
		return usagef("missing KIND: one of laplace, gaussian, geometric, staircase, exponential, report-noisy-max")
	}
	if len(args) > 1 {
		return usagef("unexpected argument %q", args[1])
	}
	kind := args[0]
	if kind == "exponential" || kind == "report-noisy-max" {
		return c.runExponential(kind)
	}
	if c.utilities != "" || c.monotonic {
		return usagef("--utilities and --monotonic apply to exponential and report-noisy-max only")
	}
	switch {
	case !c.value.set:
		return usagef("missing --value: the true value to release is required")
	case !c.sens.set:
		return usagef("missing --sensitivity: the sensitivity of the value is required")
	case !c.eps.set:
		return usagef("missing --eps: the privacy parameter epsilon is required")
	case c.n < 1 || c.n > maxNoiseN:
		return usagef("invalid --n %d: want an integer in [1, %d]", c.n, maxNoiseN)
	case c.dim != 1 && c.dim != 2:
		return usagef("invalid --dim %d: want 1 or 2", c.dim)
	case c.dim == 2 && kind != "staircase":
		return usagef("--dim 2 applies only to staircase (the two-dimensional ℓ1 staircase)")
	case len(c.value.values) != c.dim:
		return usagef("invalid --value %s: want %d number(s) for --dim %d", c.value, c.dim, c.dim)
	}
	if kind == "gaussian" {
		if !c.delta.set || c.delta.value == 0 || c.delta.value == 1 {
			return usagef("gaussian needs --delta in (0, 1)")
		}
	} else if c.delta.set && c.delta.value != 0 {
		return usagef("--delta applies only to gaussian (%s is pure ε-DP)", kind)
	}
	src := noise.Secure()
	if c.dim == 2 {
		return c.runStaircaseL1(src)
	}
	value := c.value.values[0]
	r := noiseReport{Mechanism: kind, Values: make([]float64, c.n), Epsilon: c.eps.value}
	var half float64
	switch kind {
	case "laplace":
		m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: c.eps.value, Sensitivity: c.sens.value})
		if err != nil {
			return err
		}
		if half, err = r.releaseFloats(m, value, src); err != nil {
			return err
		}
		r.Scale = m.NoiseScale()
	case "gaussian":
		m, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: c.eps.value, Delta: c.delta.value, Sensitivity: c.sens.value})
		if err != nil {
			return err
		}
		if half, err = r.releaseFloats(m, value, src); err != nil {
			return err
		}
		r.Scale, r.Delta = m.Sigma(), c.delta.value
	case "geometric":
		v, s := value, c.sens.value
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
		if half, err = r.releaseFloats(m, value, src); err != nil {
			return err
		}
		r.Scale = m.Scale()
	default:
		return usagef("unknown KIND %q: want laplace, gaussian, geometric, staircase, exponential or report-noisy-max", kind)
	}
	r.CI95 = [2]float64{r.Values[0] - half, r.Values[0] + half}
	if c.json {
		return writeJSON(c.stdout, r)
	}
	return c.printScalar(kind, r, half)
}

// printScalar prints the text report of a scalar release.
func (c *noiseCommand) printScalar(kind string, r noiseReport, half float64) error {
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

// noiseVectorReport is the JSON output of dpkit noise staircase --dim 2.
type noiseVectorReport struct {
	Mechanism       string       `json:"mechanism"`
	Dimension       int          `json:"dimension"`
	Vectors         [][2]float64 `json:"vectors"`
	Scale           float64      `json:"scale"`
	Granularity     float64      `json:"granularity"`
	Gamma           float64      `json:"gamma"`
	ExpectedL1Error float64      `json:"expected_l1_error"`
	L1Radius95      float64      `json:"l1_radius95"`
	Epsilon         float64      `json:"epsilon"`
	Delta           float64      `json:"delta"`
}

// runStaircaseL1 releases (X, Y) with the two-dimensional ℓ1 staircase.
func (c *noiseCommand) runStaircaseL1(src noise.Source) error {
	m, err := mechanism.NewStaircaseL1(mechanism.StaircaseL1Options{Epsilon: c.eps.value, Sensitivity: c.sens.value, Dimension: 2})
	if err != nil {
		return err
	}
	r := noiseVectorReport{Mechanism: "staircase", Dimension: 2, Vectors: make([][2]float64, c.n),
		Scale: m.Scale(), Granularity: m.Granularity(), Gamma: m.Gamma(), ExpectedL1Error: m.Cost(), Epsilon: c.eps.value}
	for i := range r.Vectors {
		out, err := m.ReleaseVector(c.value.values, src)
		if err != nil {
			return err
		}
		r.Vectors[i] = [2]float64{out[0], out[1]}
	}
	if r.L1Radius95, err = m.NormBound(0.05); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, r)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	vals := make([]string, len(r.Vectors))
	for i, v := range r.Vectors {
		vals[i] = "(" + formatFloat(v[0]) + ", " + formatFloat(v[1]) + ")"
	}
	fmt.Fprintf(w, "mechanism\tstaircase, two-dimensional (ℓ1)\n")
	fmt.Fprintf(w, "released\t%s\n", strings.Join(vals, " "))
	fmt.Fprintf(w, "95%% ℓ1 radius\t%s (‖released − value‖₁ below it with probability ≥ 95%%)\n", formatFloat(r.L1Radius95))
	fmt.Fprintf(w, "expected ℓ1 error\t%s\n", formatFloat(r.ExpectedL1Error))
	fmt.Fprintf(w, "gamma\t%s\n", formatFloat(r.Gamma))
	fmt.Fprintf(w, "scale\t%s\n", formatFloat(r.Scale))
	fmt.Fprintf(w, "granularity\t%s\n", strconv.FormatFloat(r.Granularity, 'g', -1, 64))
	fmt.Fprintf(w, "guarantee\t%v per release\n", dpkit.Budget{Epsilon: r.Epsilon})
	return w.Flush()
}

// maxCandidates bounds --utilities.
const maxCandidates = 1_000_000

// noiseSelectReport is the JSON output of dpkit noise exponential / report-noisy-max.
type noiseSelectReport struct {
	Mechanism     string    `json:"mechanism"`
	Selected      []int     `json:"selected"`
	Labels        []string  `json:"labels"`
	Probabilities []float64 `json:"probabilities"`
	UtilityGap95  float64   `json:"utility_gap95"`
	Epsilon       float64   `json:"epsilon"`
	Delta         float64   `json:"delta"`
}

// runExponential selects candidates of --utilities with the exponential mechanism.
func (c *noiseCommand) runExponential(kind string) error {
	switch {
	case c.utilities == "":
		return flagErrorf("--utilities", "missing --utilities: the candidates' utilities, one per line")
	case c.value.set || c.dim != 1:
		return usagef("--value and --dim do not apply to %s: give the candidates with --utilities", kind)
	case !c.sens.set:
		return usagef("missing --sensitivity: the sensitivity of every utility")
	case !c.eps.set:
		return usagef("missing --eps: the privacy parameter epsilon is required")
	case c.delta.set && c.delta.value != 0:
		return usagef("--delta applies only to gaussian (%s is pure ε-DP)", kind)
	case c.n < 1 || c.n > maxNoiseN:
		return usagef("invalid --n %d: want an integer in [1, %d]", c.n, maxNoiseN)
	}
	labels, utils, err := readUtilities(c.stdin, c.utilities)
	if err != nil {
		return err
	}
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: c.eps.value, Sensitivity: c.sens.value, Monotonic: c.monotonic})
	if err != nil {
		return err
	}
	r := noiseSelectReport{Mechanism: kind, Selected: make([]int, c.n), Labels: labels, Epsilon: c.eps.value}
	src := noise.Secure()
	for i := range r.Selected {
		if kind == "report-noisy-max" {
			r.Selected[i], err = m.ReportNoisyMax(utils, src)
		} else {
			r.Selected[i], err = m.Select(utils, src)
		}
		if err != nil {
			return err
		}
	}
	if r.Probabilities, err = m.Probabilities(utils); err != nil {
		return err
	}
	if r.UtilityGap95, err = m.UtilityBound(len(utils), 0.05); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, r)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	sel := make([]string, len(r.Selected))
	for i, s := range r.Selected {
		sel[i] = labels[s]
	}
	fmt.Fprintf(w, "mechanism\t%s\n", kind)
	fmt.Fprintf(w, "selected\t%s\n", strings.Join(sel, " "))
	fmt.Fprintf(w, "95%% utility gap\t%s (the selection's utility is within it of the best with probability ≥ 95%%)\n", formatFloat(r.UtilityGap95))
	fmt.Fprintf(w, "guarantee\t%v per release\n", dpkit.Budget{Epsilon: r.Epsilon})
	fmt.Fprintf(w, "\ncandidate\tprobability\n")
	for i, p := range r.Probabilities {
		fmt.Fprintf(w, "%s\t%s\n", labels[i], formatFloat(p))
	}
	return w.Flush()
}

// readUtilities reads --utilities: per line "UTILITY" or "LABEL UTILITY".
func readUtilities(stdin io.Reader, name string) (labels []string, utils []float64, err error) {
	var in io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, flagErrorf("--utilities", "cannot read --utilities %q: %v", name, err)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) > 2 {
			return nil, nil, flagErrorf("--utilities", "invalid --utilities %q line %d: %q: want UTILITY or LABEL UTILITY", name, line, strings.TrimSpace(text))
		}
		u, perr := strconv.ParseFloat(fields[len(fields)-1], 64)
		if perr != nil || math.IsNaN(u) || math.IsInf(u, 0) {
			return nil, nil, flagErrorf("--utilities", "invalid --utilities %q line %d: %q: want a finite utility", name, line, fields[len(fields)-1])
		}
		label := strconv.Itoa(len(utils))
		if len(fields) == 2 {
			label = fields[0]
		}
		if len(utils) == maxCandidates {
			return nil, nil, flagErrorf("--utilities", "invalid --utilities %q: more than %d candidates", name, maxCandidates)
		}
		labels, utils = append(labels, label), append(utils, u)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, flagErrorf("--utilities", "cannot read --utilities %q: %v", name, err)
	}
	if len(utils) == 0 {
		return nil, nil, flagErrorf("--utilities", "invalid --utilities %q: no candidate", name)
	}
	return labels, utils, nil
}
