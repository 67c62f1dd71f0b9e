package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

const calibrateUsage = `Usage: dpkit calibrate --eps E --delta D (--k K | --query-eps E0) [--query-delta D0] [--json]
       dpkit calibrate --mechanism gaussian|laplace|geometric --sensitivity S --k K --eps E --delta D [--json]

Fit queries into a total (ε, δ) budget by the exact optimal composition (Kairouz–Oh–
Viswanath Thm 3.3):

  with --k K:          the largest per-query ε0 such that K releases, each
                       (ε0, D0)-DP, compose to at most (E, D);
  with --query-eps E0: the largest number of (E0, D0)-DP releases that compose to at
                       most (E, D);
  with --mechanism M:  the smallest noise (σ for gaussian, scale for laplace and
                       geometric) such that K releases of M on a query of sensitivity S
                       meet (E, D) by the certified upper curve of their exact privacy
                       loss distribution (Gaussians: closed form), beside what KOV §4
                       (Thm 4.3, Cor 4.2, Cor 4.1) would require.

Flags:
  --eps E            total ε, finite ≥ 0 (required)
  --delta D          total δ in [0, 1] (required)
  --k K              number of queries, an integer in [1, 10^12]
  --query-eps E0     per-query ε, finite ≥ 0
  --query-delta D0   per-query δ in [0, 1] (default 0)
  --mechanism M      gaussian, laplace or geometric: calibrate noise (needs --k and
                     --sensitivity)
  --sensitivity S    the query's sensitivity, finite > 0 (an integer for geometric)
  --json             print one JSON object instead of text
  -h, --help         show this help
Exactly one of --k and --query-eps.

JSON output:
  with --k:          {"epsilon_per_query":…,"delta_per_query":…}
  with --query-eps:  {"max_queries":…}
  with --mechanism:  {"mechanism":…,"sigma"|"scale":…,"kov":…|null,"kov_rule":…,
                      "k":…,"epsilon":…,"delta":…}
  (sigma/scale is at most 1e-4 relative above the smallest that meets the budget)
epsilon_per_query never exceeds the exact maximum (it is below it by at most 1e-12
relative). max_queries is 0 when not even one query fits, and 10^12 means "at least
10^12".

Exit status: 0 success; 1 infeasible (K queries with δ0 already exceed δ: the floor
1 − (1 − δ0)^K is above D); 2 usage error.

Examples:
  dpkit calibrate --eps 1 --delta 1e-6 --k 40
  dpkit calibrate --eps 1 --delta 1e-6 --query-eps 0.05 --query-delta 1e-8 --json
  dpkit calibrate --mechanism gaussian --sensitivity 1 --k 10000 --eps 1 --delta 1e-5
`

// calibrateCommand is "dpkit calibrate".
type calibrateCommand struct {
	stdout io.Writer

	eps, delta           *floatFlag
	k                    countFlag
	queryEps, queryDelta *floatFlag
	json                 bool

	mechanism   string
	sensitivity *floatFlag
}

func newCalibrateCommand(stdout io.Writer) *cobra.Command {
	c := &calibrateCommand{
		stdout:      stdout,
		eps:         epsilonFlag(),
		delta:       deltaFlag(),
		queryEps:    epsilonFlag(),
		queryDelta:  deltaFlag(),
		sensitivity: &floatFlag{check: dpkit.CheckPositive},
	}
	cmd := &cobra.Command{
		Use:  "calibrate",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	flags.Var(c.eps, "eps", "")
	flags.Var(c.delta, "delta", "")
	flags.Var(&c.k, "k", "")
	flags.Var(c.queryEps, "query-eps", "")
	flags.Var(c.queryDelta, "query-delta", "")
	flags.BoolVar(&c.json, "json", false, "")
	flags.StringVar(&c.mechanism, "mechanism", "", "")
	flags.Var(c.sensitivity, "sensitivity", "")
	withUsage(cmd, calibrateUsage)
	return cmd
}

// Run solves for the per-query ε (--k) or the number of queries (--query-eps).
func (c *calibrateCommand) Run(_ context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	switch {
	case !c.eps.set:
		return usagef("missing --eps: the total epsilon of the budget is required")
	case !c.delta.set:
		return usagef("missing --delta: the total delta of the budget is required (0 for pure DP)")
	case c.mechanism != "":
		return c.calibrateNoise()
	case c.k.set && c.queryEps.set:
		return usagef("--k and --query-eps both given: give exactly one (the number of queries, or the epsilon of each)")
	case !c.k.set && !c.queryEps.set:
		return usagef("missing --k or --query-eps: give exactly one (the number of queries, or the epsilon of each)")
	}
	total := dpkit.Budget{Epsilon: c.eps.value, Delta: c.delta.value}
	queryDelta := c.queryDelta.value // 0 unless given

	if c.k.set {
		eps0, err := compose.MaxEpsilonPerQuery(c.k.value, queryDelta, total)
		if err != nil {
			return err
		}
		if c.json {
			return writeJSON(c.stdout, struct {
				EpsilonPerQuery float64 `json:"epsilon_per_query"`
				DeltaPerQuery   float64 `json:"delta_per_query"`
			}{unsignedZero(eps0), unsignedZero(queryDelta)})
		}
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "epsilon per query\t%s\n", formatFloat(eps0))
		fmt.Fprintf(w, "delta per query\t%s\n", formatFloat(queryDelta))
		fmt.Fprintf(w, "queries\t%d\n", c.k.value)
		fmt.Fprintf(w, "total\t%v (exact composition, KOV Thm 3.3)\n", total)
		return w.Flush()
	}

	query := dpkit.Budget{Epsilon: c.queryEps.value, Delta: queryDelta}
	n, err := compose.MaxQueries(query, total)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, struct {
			MaxQueries int64 `json:"max_queries"`
		}{n})
	}
	atLeast := ""
	if n == compose.MaxCount {
		atLeast = " (at least: the search stops at 10^12)"
	}
	_, err = fmt.Fprintf(c.stdout, "max queries: %d%s of %v within %v (exact composition, KOV Thm 3.3)\n", n, atLeast, query, total)
	return err
}
