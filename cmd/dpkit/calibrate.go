package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

const calibrateUsage = `Usage: dpkit calibrate --eps E --delta D (--k K | --query-eps E0) [--query-delta D0] [--json]
       dpkit calibrate --mechanism gaussian|laplace|geometric --sensitivity S --k K --eps E --delta D [--json]
       dpkit calibrate --mechanism subsampled-gaussian --q Q --steps T --eps E --delta D [--json]
       dpkit calibrate --mechanism staircase --sensitivity S --k K --eps E --delta D [--json]
       dpkit calibrate --mechanism jl-cut|jl-variance --eta H --nu V --k K --eps E --delta D [--json]

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
                       (Thm 4.3, Cor 4.2, Cor 4.1) would require;
  with --mechanism staircase:
                       the largest per-release ε of the staircase mechanism (dpkit
                       noise staircase) such that K releases meet (E, D) by its exact
                       privacy loss distribution, beside KOV Thm 3.3's ε0 for (ε0, 0)
                       pairs (all that its guarantee gives);
  with --mechanism jl-cut or jl-variance:
                       the largest per-release ε (per-release δ = D/K) of the
                       Johnson–Lindenstrauss cut or variance sketch such that K
                       releases, r = ⌈8 ln(2/ν)/η²⌉ rows each, meet (E, D) by the
                       exact composition of their (ε0, δ0) rows (KOV Thm 3.3), with
                       the rows and the weight w that ε gives, beside the basic split
                       ε = E/K;
  with --mechanism subsampled-gaussian (DP-SGD):
                       the smallest noise multiplier σ (noise standard deviation over
                       the clipping norm) such that T steps, each a Gaussian of σ on a
                       Poisson sample of rate Q, meet (E, D) by the certified upper
                       curve; certified: 1% less noise does not meet it (its certified
                       lower ε is above E).

Flags:
  --eps E            total ε, finite ≥ 0 (required)
  --delta D          total δ in [0, 1] (required)
  --k K              number of queries, an integer in [1, 10^12] (1e9 is accepted)
  --query-eps E0     per-query ε, finite ≥ 0
  --query-delta D0   per-query δ in [0, 1] (default 0)
  --mechanism M      gaussian, laplace, geometric, staircase (need --k and
                     --sensitivity), jl-cut, jl-variance (need --k, --eta and --nu)
                     or subsampled-gaussian (needs --q and --steps)
  --sensitivity S    the query's sensitivity, finite > 0 (an integer for geometric)
  --q Q              subsampled-gaussian: the sampling rate, in (0, 1]
  --steps T          subsampled-gaussian: the number of steps, an integer in [1, 10^12]
  --eta H            jl-cut, jl-variance: the multiplicative error of an answer, in (0, 1)
  --nu V             jl-cut, jl-variance: the failure probability of an answer, in (0, 1)
  --json             print one JSON object instead of text
  -h, --help         show this help
Exactly one of --k and --query-eps (without --mechanism).

JSON output (every key always present):
  with --k:          {"epsilon_per_query":…|null,"delta_per_query":…,"k":…,
                      "unbounded":false}
                     (null and "unbounded":true when D = 1: every ε0 fits)
  with --query-eps:  {"max_queries":…,"at_least":false}
                     ("at_least":true: 10^12 or more fit; the search stops there)
  with --mechanism gaussian, laplace, geometric:
                     {"mechanism":…,"sigma"|"scale":…,"sensitivity":…,"k":…,
                      "epsilon":…,"delta":…,"kov":…|null,"kov_rule":…}
                     (sigma/scale is at most 1e-4 relative above the smallest that
                     meets the budget; "kov" is null where the KOV rule does not hold)
  with --mechanism staircase:
                     {"mechanism":"staircase","epsilon_per_release":…,"sensitivity":…,
                      "k":…,"epsilon":…,"delta":…,"kov":…,"kov_rule":…}
                     (epsilon_per_release is at most 1e-4 relative below the largest
                     that meets the budget)
  with --mechanism jl-cut, jl-variance:
                     {"mechanism":…,"epsilon_per_release":…,"delta_per_release":…,
                      "rows":…,"row_epsilon":…,"row_delta":…,"weight":…,"k":…,"eta":…,
                      "nu":…,"epsilon":…,"delta":…,"epsilon_upper":…,
                      "basic_epsilon_per_release":…,"basic_weight":…}
                     (epsilon_upper ≤ E: the certified ε of the K·rows rows at D;
                     epsilon_per_release is at most 1e-4 relative below the largest
                     whose rows meet the budget by that certified curve)
  with --mechanism subsampled-gaussian:
                     {"mechanism":"subsampled-gaussian","sigma":…,"q":…,"steps":…,
                      "epsilon":…,"delta":…,"epsilon_upper":…,"sigma_below":…,
                      "epsilon_lower_below":…}
                     (epsilon_upper ≤ E: the certified ε at sigma; epsilon_lower_below
                     > E: the certified lower ε at sigma_below = 0.99·sigma)
  Errors: {"error":{"message":…,"flag":…,"code":…}}.
epsilon_per_query never exceeds the exact maximum (it is below it by at most 1e-12
relative).

Exit status: 0 success; 1 infeasible (K queries with δ0 already exceed δ: the floor
1 − (1 − δ0)^K is above D; or Gaussian noise at D = 0); 2 usage error; 3 internal
error; 130 interrupted.

Examples:
  dpkit calibrate --eps 1 --delta 1e-6 --k 40
  dpkit calibrate --eps 1 --delta 1e-6 --query-eps 0.05 --query-delta 1e-8 --json
  dpkit calibrate --mechanism gaussian --sensitivity 1 --k 10000 --eps 1 --delta 1e-5
  dpkit calibrate --mechanism subsampled-gaussian --q 0.04 --steps 2250 --eps 8 --delta 1e-5
`

// calibrateCommand is "dpkit calibrate".
type calibrateCommand struct {
	s streams

	eps, delta           *floatFlag
	k                    countFlag
	queryEps, queryDelta *floatFlag
	json                 bool

	mechanism   string
	sensitivity *floatFlag
	q           *floatFlag
	steps       countFlag
	eta, nu     *floatFlag
}

func newCalibrateCommand(s streams) *cobra.Command {
	c := &calibrateCommand{
		s:           s,
		eps:         epsilonFlag(),
		delta:       deltaFlag(),
		queryEps:    epsilonFlag(),
		queryDelta:  deltaFlag(),
		sensitivity: &floatFlag{check: dpkit.CheckPositive},
		q:           &floatFlag{check: checkRate},
		eta:         &floatFlag{check: checkOpenUnit},
		nu:          &floatFlag{check: checkOpenUnit},
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
	flags.Var(c.q, "q", "")
	flags.Var(&c.steps, "steps", "")
	flags.Var(c.eta, "eta", "")
	flags.Var(c.nu, "nu", "")
	completeWords(cmd, "mechanism", "gaussian", "laplace", "geometric", "subsampled-gaussian")
	withUsage(cmd, calibrateUsage)
	return cmd
}

// Run solves for the per-query ε (--k), the number of queries (--query-eps) or the noise
// (--mechanism).
func (c *calibrateCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	switch {
	case !c.eps.set:
		return flagErrorf("--eps", "missing --eps: the total epsilon of the budget is required")
	case !c.delta.set:
		return flagErrorf("--delta", "missing --delta: the total delta of the budget is required (0 for pure DP)")
	case c.mechanism != "":
		return c.calibrateNoise(ctx)
	case c.q.set || c.steps.set || c.sensitivity.set || c.eta.set || c.nu.set:
		return usagef("--q, --steps, --sensitivity, --eta and --nu apply with --mechanism only")
	case c.k.set && c.queryEps.set:
		return usagef("--k and --query-eps both given: give exactly one (the number of queries, or the epsilon of each)")
	case !c.k.set && !c.queryEps.set:
		return usagef("missing --k or --query-eps: give exactly one (the number of queries, or the epsilon of each)")
	case c.k.set:
		return c.perQuery(ctx)
	default:
		return c.maxQueries(ctx)
	}
}

// perQuery prints the largest per-query ε0 for --k queries.
func (c *calibrateCommand) perQuery(ctx context.Context) error {
	total := dpkit.Budget{Epsilon: c.eps.value, Delta: c.delta.value}
	queryDelta := c.queryDelta.value // 0 unless given
	out := struct {
		EpsilonPerQuery *float64 `json:"epsilon_per_query"` // null when unbounded
		DeltaPerQuery   float64  `json:"delta_per_query"`
		K               int64    `json:"k"`
		Unbounded       bool     `json:"unbounded"`
	}{DeltaPerQuery: unsignedZero(queryDelta), K: c.k.value}
	if total.Delta >= 1 {
		// δ(ε) ≤ 1 always: every ε0 fits, and there is no largest one to report.
		out.Unbounded = true
	} else {
		var eps0 float64
		err := runJob(ctx, c.s.stderr, "calibrating", func(ctx context.Context, _ progressFunc) error {
			var err error
			eps0, err = compose.MaxEpsilonPerQueryContext(ctx, c.k.value, queryDelta, total)
			return err
		})
		if err != nil {
			return err
		}
		eps0 = unsignedZero(eps0)
		out.EpsilonPerQuery = &eps0
	}
	if c.json {
		return writeJSON(c.s.stdout, out)
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	if out.Unbounded {
		fmt.Fprintf(w, "epsilon per query\tunbounded (a total delta of 1 is met at every epsilon)\n")
	} else {
		fmt.Fprintf(w, "epsilon per query\t%s\n", formatFloat(*out.EpsilonPerQuery))
	}
	fmt.Fprintf(w, "delta per query\t%s\n", formatFloat(queryDelta))
	fmt.Fprintf(w, "queries\t%d\n", c.k.value)
	fmt.Fprintf(w, "total\t%v (exact composition, KOV Thm 3.3)\n", total)
	return w.Flush()
}

// maxQueries prints the largest number of --query-eps queries that fit.
func (c *calibrateCommand) maxQueries(ctx context.Context) error {
	total := dpkit.Budget{Epsilon: c.eps.value, Delta: c.delta.value}
	query := dpkit.Budget{Epsilon: c.queryEps.value, Delta: c.queryDelta.value}
	var n int64
	err := runJob(ctx, c.s.stderr, "calibrating", func(ctx context.Context, _ progressFunc) error {
		var err error
		n, err = compose.MaxQueriesContext(ctx, query, total)
		return err
	})
	if err != nil {
		return err
	}
	atLeast := n >= compose.MaxCount
	if c.json {
		return writeJSON(c.s.stdout, struct {
			MaxQueries int64 `json:"max_queries"`
			AtLeast    bool  `json:"at_least"`
		}{n, atLeast})
	}
	more := ""
	if atLeast {
		more = " (at least: the search stops at 10^12)"
	}
	_, err = fmt.Fprintf(c.s.stdout, "max queries: %d%s of %v within %v (exact composition, KOV Thm 3.3)\n", n, more, query, total)
	return err
}

// checkOpenUnit accepts a number in (0, 1) (--eta, --nu).
func checkOpenUnit(name string, v float64) error {
	if !(v > 0 && v < 1) {
		return &dpkit.ParamError{Name: name, Value: v, Want: "in (0, 1)"}
	}
	return nil
}

// checkRate accepts a sampling rate in (0, 1].
func checkRate(name string, v float64) error {
	if !(v > 0 && v <= 1) {
		return &dpkit.ParamError{Name: name, Value: v, Want: "in (0, 1]"}
	}
	return nil
}
