package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
                              [1, 10^12] (default 1). Repeatable.
  --mech-file FILE            one EPS[,DELTA[,COUNT]] entry per line; blank lines and
                              text after '#' are ignored. "-" reads stdin. Repeatable.
  --mechanism KIND:key=value,…
                              COUNT releases of a mechanism whose exact privacy loss
                              distribution is composed (theorem "pld"; far tighter than
                              its (ε, δ)): gaussian:sigma=S, laplace:scale=B,
                              geometric:eps=E|scale=T, rr:eps=E,k=K, exponential:eps=E,
                              subsampled-gaussian:sigma=S,q=Q, subsampled-laplace:scale=B,q=Q;
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
  --tolerance T    relative width in (0, 1) of the certified bracket used when the
                   workload has many distinct ε values (default 1e-6; with
                   --mechanism, 1e-3)
  --json           print one JSON object (below) instead of a table
  -h, --help       show this help

JSON output, with --delta (with --eps the lower key is "delta_lower"):
  {"theorem":"exact","epsilon":…,"delta":…,"epsilon_lower":…,"exact":true}
"epsilon_lower" is a certified value the optimal ε is at or above; "exact" is false
when the answer is a certified bracket, and for the closed-form theorems (whose lower
value equals their value). With --theorem all: {"results":[{…},…]}, where a theorem
that cannot reach the target appears as {"theorem":"basic","error":"…"}.
With --mechanism: {"theorem":"pld","epsilon":…,"delta":…,"epsilon_lower":…,
"exact":false,"width":…} ("exact" is true for Gaussians alone, composed in closed form;
"width" is the relative width of the bracket).

Exit status: 0 success; 1 infeasible (e.g. --delta below the floor 1 − Π(1 − δ_ℓ),
or below Σ δ_ℓ for a single closed-form theorem); 2 usage error.

Examples:
  dpkit compose --mech 1,0.001,30 --delta 0.06
  dpkit compose --mech 0.1,1e-6,1000 --delta 1e-5 --theorem all --json
  dpkit compose --mech-file workload.txt --eps 1
  dpkit compose --mechanism gaussian:sigma=100,sensitivity=1,count=10000 \
      --mechanism laplace:scale=2,sensitivity=1,count=5 --mech 0.1,1e-6,3 --delta 1e-5 --json
`

// composeCommand is "dpkit compose".
type composeCommand struct {
	stdin  io.Reader
	stdout io.Writer

	workload  workload
	delta     *floatFlag
	eps       *floatFlag
	theorem   theoremFlag
	tolerance *floatFlag
	json      bool

	mechanisms mechanismList
}

func newComposeCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	c := &composeCommand{
		stdin:     stdin,
		stdout:    stdout,
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
	withUsage(cmd, composeUsage)
	return cmd
}

// composeRow is one theorem's answer, or why it has none.
type composeRow struct {
	theorem compose.Theorem
	result  compose.Result
	err     error
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
	}
	if len(c.mechanisms) > 0 {
		return c.runPLD(ctx)
	}
	ms, err := c.workload.load(ctx, c.stdin)
	if err != nil {
		return err
	}
	opts := &compose.Options{Tolerance: c.tolerance.value}

	var rows []composeRow
	for _, th := range c.theorem.theorems() {
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
		if err != nil {
			// With --theorem all, a theorem that cannot reach the target is reported
			// in its row; any other error, or a single theorem's, fails the command.
			if !c.theorem.all || !errors.Is(err, dpkit.ErrInfeasible) {
				return err
			}
		}
		rows = append(rows, composeRow{theorem: th, result: r, err: err})
	}
	if c.json {
		return c.writeJSON(rows)
	}
	return c.writeTable(rows, ms)
}

// composeJSON is one result object of the JSON output. The pointers mark which keys are
// present: one of EpsilonLower and DeltaLower, and either the numbers or Error.
type composeJSON struct {
	Theorem      compose.Theorem `json:"theorem"`
	Epsilon      *float64        `json:"epsilon,omitempty"`
	Delta        *float64        `json:"delta,omitempty"`
	EpsilonLower *float64        `json:"epsilon_lower,omitempty"`
	DeltaLower   *float64        `json:"delta_lower,omitempty"`
	Exact        *bool           `json:"exact,omitempty"`
	Error        string          `json:"error,omitempty"`
}

func (c *composeCommand) toJSON(row composeRow) composeJSON {
	if row.err != nil {
		return composeJSON{Theorem: row.theorem, Error: describe(row.err)}
	}
	r := row.result
	r.Epsilon, r.Delta, r.Lower = unsignedZero(r.Epsilon), unsignedZero(r.Delta), unsignedZero(r.Lower)
	out := composeJSON{Theorem: r.Theorem, Epsilon: &r.Epsilon, Delta: &r.Delta, Exact: &r.Exact}
	if c.delta.set {
		out.EpsilonLower = &r.Lower
	} else {
		out.DeltaLower = &r.Lower
	}
	return out
}

func (c *composeCommand) writeJSON(rows []composeRow) error {
	var v any
	if c.theorem.all {
		results := make([]composeJSON, len(rows))
		for i, row := range rows {
			results[i] = c.toJSON(row)
		}
		v = struct {
			Results []composeJSON `json:"results"`
		}{results}
	} else {
		v = c.toJSON(rows[0])
	}
	return writeJSON(c.stdout, v)
}

// writeTable prints an aligned table of the results, and the δ floor 1 − Π(1 − δ_ℓ)
// when the releases have δ_ℓ > 0. Numbers are printed in full: rounding them for
// display could report an ε below the certified value.
func (c *composeCommand) writeTable(rows []composeRow, ms []compose.Mech) error {
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	lower := "delta lower"
	if c.delta.set {
		lower = "epsilon lower"
	}
	fmt.Fprintf(w, "theorem\tepsilon\tdelta\t%s\texact\n", lower)
	for _, row := range rows {
		if row.err != nil {
			// The message is the line's last cell, so it does not widen the columns.
			fmt.Fprintf(w, "%s\t%s\n", row.theorem, describe(row.err))
			continue
		}
		r := row.result
		exact := "no"
		if r.Exact {
			exact = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Theorem, formatFloat(r.Epsilon), formatFloat(r.Delta), formatFloat(r.Lower), exact)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if floor := compose.Floor(ms); floor > 0 {
		_, err := fmt.Fprintf(c.stdout, "floor: total delta ≥ 1 − Π(1 − δ_ℓ) = %s for every epsilon\n", formatFloat(floor))
		return err
	}
	return nil
}
