package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ldp"
)

func init() {
	register(command{name: "ldp", order: 60,
		summary: "local DP: the optimal mechanism for a utility (optimal), client-side\nrandomization (randomize) and frequency estimates (estimate)",
		build:   func(s streams) *cobra.Command { return newLDPCommand(s) }})
}

const ldpUsage = `Usage: dpkit ldp optimal|randomize|estimate [flags]

Local differential privacy (Kairouz, thesis ch. 3): each user randomizes their own value
before it leaves their hands.

Commands:
  optimal     the ε-LDP mechanism maximizing a utility (staircase linear program)
  randomize   privatize values read from stdin, one per line
  estimate    unbiased frequency estimates, with standard errors, from reports on stdin

Run "dpkit ldp COMMAND --help" for the flags of a command.
`

const ldpOptimalUsage = `Usage: dpkit ldp optimal --k K --eps E --utility U [--p0 P --p1 P | --prior P] [--delta D] [--compare] [--json]

The ε-LDP privatization matrix Q maximizing a utility over all mechanisms on K inputs,
by the staircase-pattern linear program (thesis Thm 3.3.4, eq. 3.12; 2^K variables).
When the binary mechanism or randomized response attains the optimum it is reported
by name. With --delta D > 0 (binary data, K = 2): the quaternary mechanism (thesis eq.
3.26), which is optimal for (ε, δ)-LDP and every utility here (Thm 3.6.1); the thesis
gives no (ε, δ) linear program for K > 2, so that is refused.

Flags:
  --k K            number of inputs, an integer in [2, 14]
  --eps E          ε, finite ≥ 0
  --delta D        δ in [0, 1] (default 0); D > 0 needs K = 2
  --utility U      kl: KL divergence D(M0‖M1) of the privatized hypotheses (needs --p0, --p1);
                   tv: total variation ‖M0 − M1‖ (needs --p0, --p1);
                   hellinger: Σ_y (√M0(y) − √M1(y))² (needs --p0, --p1);
                   chi2: Pearson's χ² Σ_y (M0(y) − M1(y))²/M1(y) (needs --p0, --p1 > 0);
                   mi: mutual information I(X; Y) for X ~ --prior (default uniform)
  --p0 P, --p1 P   the hypotheses: K comma-separated probabilities summing to 1
                   (all > 0 for kl)
  --prior P        the input distribution for mi: K comma-separated probabilities
  --compare        also report the binary mechanism, randomized response and the
                   truncated geometric baseline (thesis §3.4.2, ratio e^(−ε/(K−1))
                   per step), each with its utility and its ratio to the optimum
  --json           print {"matrix":[[…]],"utility":…,"mechanism":…,"epsilon":…,
                   "delta":…,"compare":[{"mechanism":…,"utility":…,"ratio":…},…]|null}
                   where matrix[x][y] = Q(y|x), mechanism is staircase, binary, rr or
                   quaternary, epsilon the ε of the matrix, and compare is null
                   without --compare
  -h, --help       show this help

Exit status: 0 success; 2 usage error.

Examples:
  dpkit ldp optimal --k 3 --eps 1 --utility kl --p0 0.5,0.3,0.2 --p1 0.2,0.3,0.5
  dpkit ldp optimal --k 6 --eps 8 --utility mi --compare --json
  dpkit ldp optimal --k 2 --eps 1 --delta 0.01 --utility tv --p0 0.7,0.3 --p1 0.4,0.6
`

const ldpRandomizeUsage = `Usage: dpkit ldp randomize --mechanism rr|binary --k K --eps E < values

Privatize values (integers in [0, K−1], one per line; blank lines and text after '#'
are ignored) with a cryptographically secure source, one report per line:
  rr       k-ary randomized response (thesis eq. 3.16): a value in [0, K−1]
  binary   the binary mechanism (thesis eq. 3.15) on a random split T of the values:
           "SUBSET BIT", SUBSET a string of K characters 0/1 (character v is 1 when
           v ∈ T) and BIT the privatized answer to "is my value in T"
The samplers realize an ε' ≤ ε exactly (docs/local-dp.md).

Flags:
  --mechanism M    rr or binary
  --k K            number of values, an integer in [2, 65536]
  --eps E          ε, finite ≥ 0
  -h, --help       show this help

Exit status: 0 success; 2 usage error (including a malformed value, named by line).
`

const ldpEstimateUsage = `Usage: dpkit ldp estimate --mechanism rr|binary --k K --eps E [--json] < reports

Unbiased estimates of the frequencies of the K values, with standard errors, from the
reports of "dpkit ldp randomize" (one per line; same --mechanism, --k and --eps).

Flags:
  --mechanism M    rr or binary
  --k K            number of values, an integer in [2, 65536]
  --eps E          ε, finite > 0 (at ε = 0 the reports carry no information)
  --json           print {"n":…,"frequencies":[…],"std_errors":[…]}
  -h, --help       show this help

Estimates are unbiased and may fall outside [0, 1]. At least 2 reports are needed.

Exit status: 0 success; 1 infeasible (ε = 0); 2 usage error (including a malformed
report, named by line, or fewer than 2 reports).
`

func newLDPCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "ldp",
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown ldp command %q: want optimal, randomize or estimate", args[0])
			}
			return usagef("missing ldp command: want optimal, randomize or estimate")
		},
	}
	withUsage(cmd, ldpUsage)
	cmd.AddCommand(newLDPOptimalCommand(s.stdout), newLDPRandomizeCommand(s.stdin, s.stdout), newLDPEstimateCommand(s.stdin, s.stdout))
	return cmd
}

// ldpFloats is a comma-separated list of probabilities.
type ldpFloats struct {
	values []float64
	set    bool
}

func (f *ldpFloats) Set(s string) error {
	f.values = nil
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return fmt.Errorf("want comma-separated numbers, got %q", strings.TrimSpace(part))
		}
		f.values = append(f.values, v)
	}
	f.set = true
	return nil
}

func (f *ldpFloats) String() string {
	parts := make([]string, len(f.values))
	for i, v := range f.values {
		parts[i] = formatFloat(v)
	}
	return strings.Join(parts, ",")
}

func (f *ldpFloats) Type() string { return "list" }

// ldpInt is an integer flag in [lo, hi].
type ldpInt struct {
	value, lo, hi int
	set           bool
}

func (f *ldpInt) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < f.lo || v > f.hi {
		return fmt.Errorf("want an integer in [%d, %d]", f.lo, f.hi)
	}
	f.value, f.set = v, true
	return nil
}

func (f *ldpInt) String() string { return strconv.Itoa(f.value) }
func (f *ldpInt) Type() string   { return "int" }

// ldpChoice is a string flag with a fixed set of values.
type ldpChoice struct {
	value   string
	choices []string
}

func (f *ldpChoice) Set(s string) error {
	s = strings.TrimSpace(s)
	for _, c := range f.choices {
		if s == c {
			f.value = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(f.choices, ", "))
}

func (f *ldpChoice) String() string { return f.value }
func (f *ldpChoice) Type() string   { return "string" }

type ldpOptimalCommand struct {
	stdout        io.Writer
	k             ldpInt
	eps, delta    *floatFlag
	utility       ldpChoice
	p0, p1, prior ldpFloats
	compare, json bool
}

func newLDPOptimalCommand(stdout io.Writer) *cobra.Command {
	c := &ldpOptimalCommand{stdout: stdout, k: ldpInt{lo: 2, hi: ldp.MaxOptimalInputs}, eps: epsilonFlag(), delta: deltaFlag(),
		utility: ldpChoice{choices: []string{"kl", "mi", "tv", "hellinger", "chi2"}}}
	cmd := &cobra.Command{
		Use:  "optimal",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.Var(&c.k, "k", "")
	flags.Var(c.eps, "eps", "")
	flags.Var(&c.utility, "utility", "")
	flags.Var(&c.p0, "p0", "")
	flags.Var(&c.p1, "p1", "")
	flags.Var(&c.prior, "prior", "")
	flags.Var(c.delta, "delta", "")
	flags.BoolVar(&c.compare, "compare", false, "")
	flags.BoolVar(&c.json, "json", false, "")
	withUsage(cmd, ldpOptimalUsage)
	return cmd
}

// ldpCompared is one row of ldp optimal --compare.
type ldpCompared struct {
	Mechanism string  `json:"mechanism"`
	Utility   float64 `json:"utility"`
	Ratio     float64 `json:"ratio"` // utility / optimum (NaN-free: 1 when the optimum is 0)
}

// ldpOptimalReport is the JSON output of ldp optimal; every key is always present.
type ldpOptimalReport struct {
	Matrix    ldp.Matrix    `json:"matrix"`
	Utility   float64       `json:"utility"`
	Mechanism string        `json:"mechanism"`
	Epsilon   float64       `json:"epsilon"`
	Delta     float64       `json:"delta"`
	Compare   []ldpCompared `json:"compare"`
}

// Run solves the staircase LP (or takes the quaternary mechanism for δ > 0) and prints
// the mechanism.
func (c *ldpOptimalCommand) Run(_ context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	switch {
	case !c.k.set:
		return usagef("missing --k: the number of inputs")
	case !c.eps.set:
		return usagef("missing --eps")
	case c.utility.value == "":
		return usagef("missing --utility: want kl, mi, tv, hellinger or chi2")
	case c.delta.value > 0 && c.k.value != 2:
		return usagef("invalid --delta %s with --k %d: the optimal (ε, δ)-LDP mechanism is known for binary data only (thesis Thm 3.6.1: the quaternary mechanism); give --k 2 or --delta 0", formatFloat(c.delta.value), c.k.value)
	}
	u, err := c.utilityOf()
	if err != nil {
		return err
	}
	r := ldpOptimalReport{Delta: c.delta.value}
	if c.delta.value > 0 {
		q, err := ldp.Quaternary(c.eps.value, c.delta.value)
		if err != nil {
			return err
		}
		if r.Utility, err = ldp.Value(u, q); err != nil {
			return err
		}
		r.Matrix, r.Mechanism = q, "quaternary"
		r.Epsilon = c.eps.value // Q(0|1) = 0: the matrix has no finite ε; it is (ε, δ)-LDP
	} else {
		res, err := ldp.Optimal(u, c.eps.value)
		if err != nil {
			return err
		}
		r.Matrix, r.Utility, r.Mechanism, r.Epsilon = res.Matrix, res.Utility, res.Mechanism, res.Epsilon
	}
	if c.compare {
		if r.Compare, err = ldpCompare(u, c.eps.value, r.Utility); err != nil {
			return err
		}
	}
	if c.json {
		return writeJSON(c.stdout, r)
	}
	return c.printText(r)
}

// utilityOf builds the utility the flags describe.
func (c *ldpOptimalCommand) utilityOf() (ldp.Utility, error) {
	k := c.k.value
	switch c.utility.value {
	case "mi":
		if c.p0.set || c.p1.set {
			return nil, usagef("--p0 and --p1 are for the divergence utilities (kl, tv, hellinger, chi2); give --prior")
		}
		prior := c.prior.values
		if !c.prior.set {
			prior = make([]float64, k)
			for i := range prior {
				prior[i] = 1 / float64(k)
			}
		}
		if len(prior) != k {
			return nil, usagef("--prior needs %d probabilities (--k), got %d", k, len(prior))
		}
		return ldp.NewMI(prior)
	}
	if !c.p0.set || !c.p1.set {
		return nil, usagef("--utility %s needs --p0 and --p1", c.utility.value)
	}
	if c.prior.set {
		return nil, usagef("--prior is for --utility mi; give --p0 and --p1")
	}
	if len(c.p0.values) != k || len(c.p1.values) != k {
		return nil, usagef("--p0 and --p1 need %d probabilities each (--k), got %d and %d", k, len(c.p0.values), len(c.p1.values))
	}
	switch c.utility.value {
	case "kl":
		return ldp.NewKL(c.p0.values, c.p1.values)
	case "tv":
		return ldp.NewTV(c.p0.values, c.p1.values)
	default:
		return ldp.NewFDivergence(c.utility.value, c.p0.values, c.p1.values)
	}
}

// ldpCompare evaluates the binary mechanism, randomized response and the truncated
// geometric baseline for u at ε (all ε-LDP), each against the optimum opt.
func ldpCompare(u ldp.Utility, eps, opt float64) ([]ldpCompared, error) {
	k := u.Inputs()
	var out []ldpCompared
	add := func(name string, q ldp.Matrix) error {
		v, err := ldp.Value(u, q)
		if err != nil {
			return err
		}
		ratio := 1.0
		if opt > 0 {
			ratio = v / opt
		}
		out = append(out, ldpCompared{Mechanism: name, Utility: v, Ratio: ratio})
		return nil
	}
	if bin, err := ldp.Binary(u, eps); err == nil {
		if err := add(ldp.MechanismBinary, bin.Matrix); err != nil {
			return nil, err
		}
	} // the MI binary mechanism needs k ≤ 20, always true here
	rr, err := ldp.RandomizedResponse(k, eps)
	if err != nil {
		return nil, err
	}
	if err := add(ldp.MechanismRR, rr); err != nil {
		return nil, err
	}
	geo, err := ldp.Geometric(k, eps)
	if err != nil {
		return nil, err
	}
	if err := add(ldp.MechanismGeometric, geo); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *ldpOptimalCommand) printText(r ldpOptimalReport) error {
	fmt.Fprintf(c.stdout, "mechanism: %s\nutility (%s): %s\n", r.Mechanism, c.utility.value, formatFloat(r.Utility))
	if r.Delta > 0 {
		fmt.Fprintf(c.stdout, "privacy: (ε=%s, δ=%s)-LDP\n", formatFloat(r.Epsilon), formatFloat(r.Delta))
	} else {
		fmt.Fprintf(c.stdout, "epsilon of the matrix: %s\n", formatFloat(r.Epsilon))
	}
	fmt.Fprintf(c.stdout, "matrix Q(y|x), one row per input x, one column per output y:\n")
	for _, row := range r.Matrix {
		parts := make([]string, len(row))
		for y, v := range row {
			parts[y] = formatFloat(v)
		}
		if _, err := fmt.Fprintf(c.stdout, "  %s\n", strings.Join(parts, "  ")); err != nil {
			return err
		}
	}
	if r.Compare != nil {
		fmt.Fprintf(c.stdout, "compared (ε-LDP, δ = 0):\n")
		for _, m := range r.Compare {
			fmt.Fprintf(c.stdout, "  %-10s utility %s  (ratio to the answer above %s)\n", m.Mechanism, formatFloat(m.Utility), formatFloat(m.Ratio))
		}
	}
	return nil
}

// ldpOracleFlags are the flags shared by randomize and estimate.
type ldpOracleFlags struct {
	mechanism ldpChoice
	k         ldpInt
	eps       *floatFlag
}

func newLDPOracleFlags(cmd *cobra.Command) *ldpOracleFlags {
	f := &ldpOracleFlags{mechanism: ldpChoice{choices: []string{"rr", "binary"}},
		k: ldpInt{lo: 2, hi: ldp.MaxOracleInputs}, eps: epsilonFlag()}
	cmd.Flags().Var(&f.mechanism, "mechanism", "")
	cmd.Flags().Var(&f.k, "k", "")
	cmd.Flags().Var(f.eps, "eps", "")
	return f
}

func (f *ldpOracleFlags) check(args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q: the data is read from stdin", args[0])
	case f.mechanism.value == "":
		return usagef("missing --mechanism: want rr or binary")
	case !f.k.set:
		return usagef("missing --k: the number of values")
	case !f.eps.set:
		return usagef("missing --eps")
	}
	return nil
}

// ldpLines calls fn with each non-blank line of r (text after '#' removed) and its
// 1-based line number.
func ldpLines(ctx context.Context, r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	return nil
}

func newLDPRandomizeCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "randomize", Args: cobra.ArbitraryArgs}
	f := newLDPOracleFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.check(args); err != nil {
			return err
		}
		k := f.k.value
		w := bufio.NewWriter(stdout)
		parse := func(n int, line string) (int, error) {
			v, err := strconv.Atoi(line)
			if err != nil || v < 0 || v >= k {
				return 0, &dpkit.ParamError{Name: fmt.Sprintf("value on line %d", n), Value: line, Want: fmt.Sprintf("an integer in [0, %d]", k-1)}
			}
			return v, nil
		}
		var err error
		switch f.mechanism.value {
		case "rr":
			o, e := ldp.NewRROracle(k, f.eps.value)
			if e != nil {
				return e
			}
			err = ldpLines(cmd.Context(), stdin, func(n int, line string) error {
				v, err := parse(n, line)
				if err != nil {
					return err
				}
				y, err := o.Randomize(v, nil)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(w, y)
				return err
			})
		case "binary":
			o, e := ldp.NewBinaryOracle(k, f.eps.value)
			if e != nil {
				return e
			}
			buf := make([]byte, k)
			err = ldpLines(cmd.Context(), stdin, func(n int, line string) error {
				v, err := parse(n, line)
				if err != nil {
					return err
				}
				r, err := o.Randomize(v, nil)
				if err != nil {
					return err
				}
				for i, in := range r.Subset {
					buf[i] = '0'
					if in {
						buf[i] = '1'
					}
				}
				bit := 0
				if r.InT {
					bit = 1
				}
				_, err = fmt.Fprintf(w, "%s %d\n", buf, bit)
				return err
			})
		}
		if err != nil {
			return err
		}
		return w.Flush()
	}
	withUsage(cmd, ldpRandomizeUsage)
	return cmd
}

func newLDPEstimateCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "estimate", Args: cobra.ArbitraryArgs}
	f := newLDPOracleFlags(cmd)
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.check(args); err != nil {
			return err
		}
		k := f.k.value
		var est *ldp.Estimate
		switch f.mechanism.value {
		case "rr":
			o, err := ldp.NewRROracle(k, f.eps.value)
			if err != nil {
				return err
			}
			counts := make([]int64, k)
			err = ldpLines(cmd.Context(), stdin, func(n int, line string) error {
				v, err := strconv.Atoi(line)
				if err != nil || v < 0 || v >= k {
					return &dpkit.ParamError{Name: fmt.Sprintf("report on line %d", n), Value: line, Want: fmt.Sprintf("an integer in [0, %d]", k-1)}
				}
				counts[v]++
				return nil
			})
			if err != nil {
				return err
			}
			if est, err = o.Estimate(counts); err != nil {
				return err
			}
		case "binary":
			o, err := ldp.NewBinaryOracle(k, f.eps.value)
			if err != nil {
				return err
			}
			tally := o.NewTally()
			r := ldp.BinaryReport{Subset: make([]bool, k)}
			err = ldpLines(cmd.Context(), stdin, func(n int, line string) error {
				bad := &dpkit.ParamError{Name: fmt.Sprintf("report on line %d", n), Value: line,
					Want: fmt.Sprintf(`"SUBSET BIT": %d characters 0/1, a space, and 0 or 1`, k)}
				fields := strings.Fields(line)
				if len(fields) != 2 || len(fields[0]) != k || (fields[1] != "0" && fields[1] != "1") {
					return bad
				}
				for i := range k {
					switch fields[0][i] {
					case '0':
						r.Subset[i] = false
					case '1':
						r.Subset[i] = true
					default:
						return bad
					}
				}
				r.InT = fields[1] == "1"
				return tally.Add(r)
			})
			if err != nil {
				return err
			}
			if est, err = o.Estimate(tally); err != nil {
				return err
			}
		}
		if est.N < 2 {
			return usagef("%d report on stdin: a standard error needs at least 2", est.N)
		}
		if asJSON {
			return writeJSON(stdout, struct {
				N           int64     `json:"n"`
				Frequencies []float64 `json:"frequencies"`
				StdErrors   []float64 `json:"std_errors"`
			}{est.N, est.Frequencies, est.StdErrors})
		}
		w := bufio.NewWriter(stdout)
		fmt.Fprintf(w, "reports: %d\nvalue  frequency  std_error\n", est.N)
		for v := range est.Frequencies {
			fmt.Fprintf(w, "%d  %s  %s\n", v, formatFloat(est.Frequencies[v]), formatFloat(est.StdErrors[v]))
		}
		return w.Flush()
	}
	withUsage(cmd, ldpEstimateUsage)
	return cmd
}
