package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

const composeUsage = `Usage: dpkit compose --mech EPS[,DELTA[,COUNT]]... (--delta D | --eps E) [flags]
       dpkit compose --mechanism KIND:key=value,... [--mech …]... (--delta D | --eps E) [flags]

Compose differentially private releases: the smallest total ε at a total δ (--delta),
or the smallest total δ at a total ε (--eps). The default theorem is the exact optimum
(Kairouz–Oh–Viswanath Thm 3.3); the closed-form theorems are looser bounds. A reported
ε or δ is never below the optimum for its theorem.

Workload (at least one entry; --mech and --mech-file combine):
  --mech EPS[,DELTA[,COUNT]]  COUNT releases, each (EPS, DELTA)-DP: EPS finite ≥ 0,
                              DELTA in [0, 1] (default 0), COUNT an integer in
                              [1, 10^12] (default 1; 1e9 is accepted). Repeatable.
  --mech-file FILE            one EPS[,DELTA[,COUNT]] entry per line; blank lines and
                              text after '#' are ignored. "-" reads stdin. Repeatable.
  --mechanism KIND:key=value,…
                              COUNT releases of a mechanism whose exact privacy loss
                              distribution is composed (theorem "pld"; far tighter than
                              its (ε, δ)): gaussian:sigma=S, laplace:scale=B,
                              geometric:eps=E|scale=T, rr:eps=E,k=K, exponential:eps=E,
                              subsampled-gaussian:sigma=S,q=Q, subsampled-laplace:scale=B,q=Q,
                              staircase:eps=E[,cost=l2|l1][,dim=2] (the noise that dpkit
                              noise staircase adds; exact three-loss PLD in one and two
                              dimensions), jl-cut:eps=E,delta=D,eta=H,nu=V and
                              jl-variance:… (the Johnson–Lindenstrauss cut and variance
                              sketches of KOV App. C.1: their r rows as (ε0, δ0) pairs; no
                              sensitivity=);
                              each also takes sensitivity=… (default 1) and count=…
                              (default 1). Repeatable; --mech entries join as (ε, δ) pairs.

Target (exactly one):
  --delta D        total δ in [0, 1]: report the total ε
  --eps E          total ε, finite ≥ 0: report the total δ

Flags:
  --theorem T      exact (default): KOV Thm 3.3, the optimum;
                   kov: KOV Thm 3.4 (one (ε, δ)) / Thm 3.5 (several), closed form;
                   drv: Dwork–Rothblum–Vadhan advanced composition (KOV Thm 3.2);
                   basic: (Σ ε_ℓ, Σ δ_ℓ) (KOV Thm 3.1);
                   all: every theorem, in the order basic, drv, kov, exact
  --every N        with one --mechanism of count=T: the answer after N, 2N, …, T
                   releases (DP-SGD: ε after every N steps), one row each
  --plot FILE      also draw the answer: the privacy curve δ(ε) on a log δ axis with
                   the target marked (with --theorem all, every theorem's curve), or
                   with --every, ε against the number of releases. .svg or .png
  --tolerance T    the relative width in (0, 1) the certified bracket must reach when
                   the answer is not exact (many distinct ε, or --mechanism); exit
                   status 1 if it cannot. Without it, dpkit's fast default is used
                   and the width reached is reported
  --json           print one JSON object (below) instead of a table
  -h, --help       show this help

JSON output (one object; every key is always present):
  {"theorem":"exact","method":"exact-sum","epsilon":…,"delta":…,"epsilon_lower":…,
   "exact":true,"width":9.2…e-14}
With --eps the lower key is "delta_lower" (a certified value the optimal δ is at or
above) instead of "epsilon_lower". "theorem" is exact, kov, drv, basic, or pld (with
--mechanism); "method" says how the number was obtained: "closed-form" (the theorem's
formula; Gaussians alone under pld), "exact-sum" (KOV Thm 3.3 evaluated exactly), or
"lattice" (a certified bracket on a lattice; "exact" is then false). "exact" is true
when the answer equals the theorem's exact value up to 1e-9 relative; the closed-form
theorems are bounds, so for them it is false and the lower value equals the value.
"width" is the relative width (value − lower)/value of the certified bracket: at most
1e-9 when exact (the exact sums' own rounding), 0 for the closed-form theorems (whose
lower value is their value).
With --theorem all: {"results":[{…},…]}, where a theorem that cannot reach the target
appears as {"theorem":"basic","error":"…"}.
With --every N: {"steps":[{"releases":N,…},{"releases":2N,…},…]}, each object the
one above plus "releases".
Errors: {"error":{"message":…,"flag":…,"code":…}}.

Exit status: 0 success; 1 no requested answer is feasible (e.g. --delta below the floor
1 − Π(1 − δ_ℓ), or every theorem of --theorem all infeasible), no finite answer can be
certified, or --tolerance not reached; 2 usage error; 3 internal error; 130 interrupted.

Examples:
  dpkit compose --mech 1,0.001,30 --delta 0.06
  dpkit compose --mech 0.1,1e-6,1000 --delta 1e-5 --theorem all --json
  dpkit compose --mech-file workload.txt --eps 1
  dpkit compose --mechanism gaussian:sigma=100,sensitivity=1,count=10000 \
      --mechanism laplace:scale=2,sensitivity=1,count=5 --mech 0.1,1e-6,3 --delta 1e-5 --json
  dpkit compose --mechanism subsampled-gaussian:sigma=1.1,q=0.01,count=10000 \
      --delta 1e-5 --every 1000 --plot epsilon.svg
`

// composeCommand is "dpkit compose".
type composeCommand struct {
	s streams

	workload  workload
	delta     *floatFlag
	eps       *floatFlag
	theorem   theoremFlag
	tolerance *floatFlag
	json      bool
	plot      string
	every     countFlag

	mechanisms mechanismList
}

func newComposeCommand(s streams) *cobra.Command {
	c := &composeCommand{
		s:         s,
		delta:     deltaFlag(),
		eps:       epsilonFlag(),
		theorem:   theoremFlag{theorem: compose.Exact},
		tolerance: toleranceFlag(),
	}
	cmd := &cobra.Command{
		Use:  "compose",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	c.workload.register(flags)
	flags.Var(c.delta, "delta", "")
	flags.Var(c.eps, "eps", "")
	flags.Var(&c.theorem, "theorem", "")
	flags.Var(c.tolerance, "tolerance", "")
	flags.BoolVar(&c.json, "json", false, "")
	flags.Var(&c.mechanisms, "mechanism", "")
	flags.StringVar(&c.plot, "plot", "", "")
	flags.Var(&c.every, "every", "")
	completeWords(cmd, "theorem", "exact", "kov", "drv", "basic", "all")
	withUsage(cmd, composeUsage)
	return cmd
}

// Methods of a composeRow: how its number was obtained.
const (
	methodClosedForm = "closed-form" // a theorem's formula, or Gaussians alone (μ in closed form)
	methodExactSum   = "exact-sum"   // KOV Thm 3.3 evaluated exactly (binomial sums)
	methodLattice    = "lattice"     // a certified bracket on a lattice
)

// composeRow is one answer of dpkit compose: a theorem's (ε, δ) and the certified lower
// value of the computed one, or why the theorem has none.
type composeRow struct {
	theorem  string
	method   string
	epsilon  float64
	delta    float64
	lower    float64 // of ε with --delta, of δ with --eps
	exact    bool
	releases int64 // --every: the number of releases so far
	err      error
}

// value is the computed number of r: ε with --delta, δ with --eps.
func (r composeRow) value(byDelta bool) float64 {
	if byDelta {
		return r.epsilon
	}
	return r.delta
}

// width is the relative width (value − lower)/value of r's bracket: the true width also
// for exact answers (their certified bracket is at most 1e-9 wide, e.g. 1e-13 for the
// errata example) and 0 only when the lower value equals the value (closed-form bounds)
// or the value is 0.
func (r composeRow) width(byDelta bool) float64 {
	v := r.value(byDelta)
	if v <= 0 {
		return 0
	}
	return math.Max(0, (v-r.lower)/v)
}

// check turns an answer dpkit cannot print into an error: +Inf (no finite value is
// certified) or NaN (a bug).
func (r composeRow) check(byDelta bool) error {
	name, v := "delta", r.delta
	if byDelta {
		name, v = "epsilon", r.epsilon
	}
	switch {
	case math.IsNaN(v) || math.IsNaN(r.lower) || math.IsNaN(r.epsilon) || math.IsNaN(r.delta):
		return &internalError{msg: fmt.Sprintf("%s: %s = NaN", r.theorem, name)}
	case math.IsInf(v, 0):
		target := r.delta
		if !byDelta {
			target = r.epsilon
		}
		other := "delta"
		if !byDelta {
			other = "epsilon"
		}
		return &dpkit.InfeasibleError{Msg: fmt.Sprintf("no finite %s is certified at total %s %s (%s)", name, other, formatFloat(target), r.theorem)}
	}
	return nil
}

// Run evaluates the requested theorems and prints their results.
func (c *composeCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q: give the workload with --mech or --mech-file", args[0])
	}
	switch {
	case c.delta.set && c.eps.set:
		return usagef("--delta and --eps both given: give exactly one (the total δ to report ε at, or the total ε to report δ at)")
	case !c.delta.set && !c.eps.set:
		return usagef("missing --delta or --eps: give exactly one (the total δ to report ε at, or the total ε to report δ at)")
	case c.every.set && len(c.mechanisms.items) != 1:
		return flagErrorf("--every", "--every needs exactly one --mechanism KIND:…,count=T: the answer after every N of its T releases")
	}
	if c.plot != "" {
		if _, err := plotFormat(c.plot); err != nil {
			return err
		}
	}
	if len(c.mechanisms.items) > 0 {
		return c.runPLD(ctx)
	}
	ms, err := c.workload.load(ctx, c.s.stdin)
	if err != nil {
		return err
	}
	rows, err := c.theorems(ctx, ms)
	if err != nil {
		return err
	}
	if c.plot != "" {
		if err := c.plotCurves(ctx, rows, ms); err != nil {
			return err
		}
	}
	return c.write(rows, compose.Floor(ms))
}

// theorems evaluates each requested theorem on ms. With --theorem all, a theorem that
// cannot reach the target is reported in its row; when none can, the command fails with
// the exact theorem's reason (it is the optimum, so it fails only when all do).
func (c *composeCommand) theorems(ctx context.Context, ms []compose.Mech) ([]composeRow, error) {
	ths := c.theorem.theorems()
	opts := &compose.Options{Tolerance: c.tolerance.value} // 0: the library's default
	rows := make([]composeRow, 0, len(ths))
	err := runJob(ctx, c.s.stderr, "composing", func(ctx context.Context, progress progressFunc) error {
		for i, th := range ths {
			progress(int64(i), int64(len(ths)))
			if err := ctx.Err(); err != nil {
				return err
			}
			var r compose.Result
			var err error
			if c.delta.set {
				r, err = compose.EpsilonBy(th, ms, c.delta.value, opts)
			} else {
				r, err = compose.DeltaBy(th, ms, c.eps.value, opts)
			}
			row := composeRow{theorem: string(th), err: err}
			if err == nil {
				row.epsilon, row.delta, row.lower, row.exact = unsignedZero(r.Epsilon), unsignedZero(r.Delta), unsignedZero(r.Lower), r.Exact
				row.method = methodOf(th, r.Exact)
				row.err = row.check(c.delta.set)
			}
			if row.err != nil && (!c.theorem.all || !errors.Is(row.err, dpkit.ErrInfeasible)) {
				// Any other error, or a single theorem's, fails the command.
				return row.err
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if failed := rows[len(rows)-1].err; failed != nil { // exact is last in "all"
		return nil, &dpkit.InfeasibleError{Msg: "no theorem of --theorem all reaches the target: " + strings.TrimPrefix(describe(failed), "infeasible: ")}
	}
	return rows, c.checkTolerance(rows)
}

// methodOf names how compose computed theorem th's answer.
func methodOf(th compose.Theorem, exact bool) string {
	switch {
	case th != compose.Exact:
		return methodClosedForm
	case exact:
		return methodExactSum
	default:
		return methodLattice
	}
}

// checkTolerance fails when --tolerance was given and a bracket is wider.
func (c *composeCommand) checkTolerance(rows []composeRow) error {
	if !c.tolerance.set {
		return nil
	}
	for _, r := range rows {
		if r.err != nil || r.exact {
			continue // an exact answer is within 1e-9 of the optimum, whatever T asks
		}
		if w := r.width(c.delta.set); w > c.tolerance.value {
			return &flagFailure{flag: "--tolerance", msg: fmt.Sprintf("--tolerance %s not reached: the certified bracket [%s, %s] has relative width %.3g",
				formatFloat(c.tolerance.value), formatFloat(r.lower), formatFloat(r.value(c.delta.set)), w)}
		}
	}
	return nil
}

// composeJSON is one result object of the JSON output. Every key is present in a
// result; an error entry of --theorem all has only "theorem" and "error".
type composeJSON struct {
	Releases     *int64   `json:"releases,omitempty"`
	Theorem      string   `json:"theorem"`
	Method       string   `json:"method,omitempty"`
	Epsilon      *float64 `json:"epsilon,omitempty"`
	Delta        *float64 `json:"delta,omitempty"`
	EpsilonLower *float64 `json:"epsilon_lower,omitempty"`
	DeltaLower   *float64 `json:"delta_lower,omitempty"`
	Exact        *bool    `json:"exact,omitempty"`
	Width        *float64 `json:"width,omitempty"`
	Error        string   `json:"error,omitempty"`
}

func (c *composeCommand) toJSON(row composeRow) composeJSON {
	if row.err != nil {
		return composeJSON{Theorem: row.theorem, Error: describe(row.err)}
	}
	width := row.width(c.delta.set)
	out := composeJSON{Theorem: row.theorem, Method: row.method, Epsilon: &row.epsilon, Delta: &row.delta, Exact: &row.exact, Width: &width}
	if c.delta.set {
		out.EpsilonLower = &row.lower
	} else {
		out.DeltaLower = &row.lower
	}
	if c.every.set {
		out.Releases = &row.releases
	}
	return out
}

// write prints rows as JSON or as a table.
func (c *composeCommand) write(rows []composeRow, floor float64) error {
	if c.json {
		return writeJSON(c.s.stdout, c.jsonValue(rows))
	}
	if err := c.writeTable(rows); err != nil {
		return err
	}
	if floor > 0 {
		if _, err := fmt.Fprintf(c.s.stdout, "floor: total delta ≥ 1 − Π(1 − δ_ℓ) = %s for every epsilon\n", formatFloat(floor)); err != nil {
			return err
		}
	}
	if c.plot != "" {
		_, err := fmt.Fprintf(c.s.stdout, "wrote %s\n", c.plot)
		return err
	}
	return nil
}

// jsonValue is the JSON output of rows: one object, or {"results":[…]} for --theorem
// all, or {"steps":[…]} for --every.
func (c *composeCommand) jsonValue(rows []composeRow) any {
	if !c.every.set && !c.theorem.all {
		return c.toJSON(rows[0])
	}
	objs := make([]composeJSON, len(rows))
	for i, row := range rows {
		objs[i] = c.toJSON(row)
	}
	if c.every.set {
		return struct {
			Steps []composeJSON `json:"steps"`
		}{objs}
	}
	return struct {
		Results []composeJSON `json:"results"`
	}{objs}
}

// writeTable prints an aligned table of rows. Numbers are printed in full: rounding them
// for display could report an ε below the certified value.
func (c *composeCommand) writeTable(rows []composeRow) error {
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	lower := "delta lower"
	if c.delta.set {
		lower = "epsilon lower"
	}
	first := "theorem"
	if c.every.set {
		first = "releases"
	}
	fmt.Fprintf(w, "%s\tepsilon\tdelta\t%s\texact\twidth\n", first, lower)
	for _, row := range rows {
		name := row.theorem
		if c.every.set {
			name = fmt.Sprint(row.releases)
		}
		if row.err != nil {
			// The message is the line's last cell, so it does not widen the columns.
			fmt.Fprintf(w, "%s\t%s\n", name, describe(row.err))
			continue
		}
		exact := "no"
		if row.exact {
			exact = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", name, formatFloat(row.epsilon), formatFloat(row.delta), formatFloat(row.lower), exact, formatWidth(row.width(c.delta.set)))
	}
	return w.Flush()
}

// formatWidth prints a relative width with two significant digits (it describes the
// bracket; the bracket's ends are printed in full).
func formatWidth(w float64) string {
	if w == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2g", w)
}
