package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/region"
)

const regionUsage = `Usage: dpkit region --mech EPS[,DELTA[,COUNT]]... [--plot FILE.svg|FILE.png] [--json]
       dpkit region --dominates --pair M --pair M' [--json]

The exact privacy region of a composition (Kairouz–Oh–Viswanath Thm 3.3): the (ε_j, δ_j)
pairs whose intersection ∩ R(ε_j, δ_j) is the region, by decreasing ε_j. For COUNT
copies of one (ε, δ) these are the ⌊COUNT/2⌋+1 pairs ((COUNT − 2i)ε, δ_i).

Workload (at least one entry; --mech and --mech-file combine):
  --mech EPS[,DELTA[,COUNT]]  COUNT releases, each (EPS, DELTA)-DP: EPS finite ≥ 0,
                              DELTA in [0, 1] (default 0), COUNT an integer in
                              [1, 10^12] (default 1). Repeatable.
  --mech-file FILE            one EPS[,DELTA[,COUNT]] entry per line; blank lines and
                              text after '#' are ignored. "-" reads stdin. Repeatable.

Flags:
  --plot FILE      draw the regions of the basic (KOV Thm 3.1), DRV (Thm 3.2), KOV
                   (Thm 3.4/3.5) and exact (Thm 3.3) composition theorems in the plane
                   of missed detection P_MD and false alarm P_FA, as in KOV Figs. 2–3.
                   The format follows the extension: .svg or .png. Prints "wrote FILE"
                   unless --json is given.
  --json           print one JSON object instead of a table
  -h, --help       show this help

JSON output:
  {"breakpoints":[{"epsilon":…,"delta":…},…],"exact":true}
"exact" is false when the workload's ε values are too many and distinct for exact
evaluation: the pairs then describe a certified region that contains the exact one.

Dominance (KOV Thm 2.4/2.5): --dominates with two --pair flags reports whether the
first mechanism M dominates the second M', R(M') ⊆ R(M): by the data-processing
inequality (Thm 2.4) and Blackwell's theorem (Thm 2.5) that holds exactly when M' is a
post-processing of M. A pair is given as the output distributions under the two
hypotheses, "P0|P1" with P0 and P1 comma-separated probabilities over the same outputs
("0.6,0.4|0.3,0.7"), or as "eps=E,delta=D" for the canonical (ε, δ) pair of KOV eq.
(17)/(18), which dominates every (ε, δ)-DP mechanism. Probabilities within 1e-12 relative
are treated as equal (region.Dominates).
  --dominates      compare two pairs instead of composing a workload
  --pair M         a mechanism, "P0|P1" or "eps=E,delta=D"; exactly two
  JSON output: {"dominates":…,"dominated":…} (M dominates M'; M' dominates M)

Exit status: 0 success; 1 the plot could not be written; 2 usage error (including more
than 10^6 breakpoints).

Examples:
  dpkit region --mech 0.1,0.001,30 --json
  dpkit region --mech 0.1,0.001,30 --plot fig3.svg
  dpkit region --dominates --pair eps=1,delta=0 --pair "0.6,0.4|0.4,0.6"
`

// regionCommand is "dpkit region".
type regionCommand struct {
	s streams

	workload  workload
	plot      string
	json      bool
	dominates bool
	pairs     []string
}

func newRegionCommand(s streams) *cobra.Command {
	c := &regionCommand{s: s}
	cmd := &cobra.Command{
		Use:  "region",
		Args: cobra.ArbitraryArgs, // Run rejects them with a usage error
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	flags := cmd.Flags()
	c.workload.register(flags)
	flags.StringVar(&c.plot, "plot", "", "")
	flags.BoolVar(&c.json, "json", false, "")
	flags.BoolVar(&c.dominates, "dominates", false, "")
	flags.StringArrayVar(&c.pairs, "pair", nil, "")
	withUsage(cmd, regionUsage)
	return cmd
}

// Run computes the exact breakpoints, and draws or prints them.
func (c *regionCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q: give the workload with --mech or --mech-file", args[0])
	}
	if c.dominates || len(c.pairs) > 0 {
		return c.runDominates()
	}
	var format string
	if c.plot != "" {
		var err error
		if format, err = plotFormat(c.plot); err != nil {
			return err
		}
	}
	ms, err := c.workload.load(ctx, c.s.stdin)
	if err != nil {
		return err
	}
	var curve *compose.Curve
	var breakpoints []dpkit.Budget
	err = runJob(ctx, c.s.stderr, "computing the region", func(context.Context, progressFunc) error {
		var err error
		if curve, err = compose.NewCurve(ms, nil); err != nil {
			return err
		}
		breakpoints, err = curve.Breakpoints()
		return err
	})
	if err != nil {
		return err
	}
	for i, b := range breakpoints {
		breakpoints[i] = dpkit.Budget{Epsilon: unsignedZero(b.Epsilon), Delta: unsignedZero(b.Delta)}
	}

	if c.plot != "" {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeRegionPlot(c.plot, format, ms, breakpoints); err != nil {
			return err
		}
	}
	switch {
	case c.json:
		return writeJSON(c.s.stdout, struct {
			Breakpoints []dpkit.Budget `json:"breakpoints"`
			Exact       bool           `json:"exact"`
		}{breakpoints, curve.Exact()})
	case c.plot != "":
		_, err := fmt.Fprintf(c.s.stdout, "wrote %s\n", c.plot)
		return err
	default:
		w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "epsilon\tdelta\n")
		for _, b := range breakpoints {
			fmt.Fprintf(w, "%s\t%s\n", formatFloat(b.Epsilon), formatFloat(b.Delta))
		}
		if !curve.Exact() {
			fmt.Fprintf(w, "(certified bracket: the region drawn by these pairs contains the exact one)\n")
		}
		return w.Flush()
	}
}

// plotFormat returns "svg" or "png" from the extension of the --plot file name.
func plotFormat(name string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", usagef("invalid --plot %q: want a file name ending in .svg or .png", name)
	}
}

// runDominates compares two mechanisms' privacy regions (KOV Thm 2.4/2.5).
func (c *regionCommand) runDominates() error {
	switch {
	case !c.dominates:
		return flagErrorf("--pair", "--pair needs --dominates")
	case len(c.pairs) != 2:
		return flagErrorf("--pair", "--dominates needs exactly two --pair flags, got %d", len(c.pairs))
	case len(c.workload.mechs) > 0 || len(c.workload.files) > 0 || c.plot != "":
		return usagef("--dominates compares two --pair mechanisms: drop --mech, --mech-file and --plot")
	}
	var pairs [2]*region.Pair
	for i, text := range c.pairs {
		p, err := parsePair(text)
		if err != nil {
			return flagErrorf("--pair", "invalid --pair %q: %v", text, err)
		}
		pairs[i] = p
	}
	// The two pairs may have different output alphabets: a post-processing may change it.
	fwd, rev := region.Dominates(pairs[0], pairs[1]), region.Dominates(pairs[1], pairs[0])
	if c.json {
		return writeJSON(c.s.stdout, struct {
			Dominates bool `json:"dominates"`
			Dominated bool `json:"dominated"`
		}{fwd, rev})
	}
	say := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "M dominates M'\t%s\tR(M') ⊆ R(M): M' is a post-processing of M (KOV Thm 2.4/2.5)\n", say(fwd))
	fmt.Fprintf(w, "M' dominates M\t%s\tR(M) ⊆ R(M')\n", say(rev))
	return w.Flush()
}

func canonicalPair(text string) bool { return strings.Contains(text, "=") }

// parsePair reads "P0|P1" (two comma-separated probability lists) or "eps=E,delta=D".
func parsePair(text string) (*region.Pair, error) {
	if canonicalPair(text) {
		var b dpkit.Budget
		seen := map[string]bool{}
		for _, kv := range strings.Split(text, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			k = strings.ToLower(strings.TrimSpace(k))
			if !ok || (k != "eps" && k != "delta") || seen[k] {
				return nil, fmt.Errorf("want eps=E,delta=D")
			}
			seen[k] = true
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("%s = %q: want a number", k, v)
			}
			if k == "eps" {
				b.Epsilon = x
			} else {
				b.Delta = x
			}
		}
		if !seen["eps"] {
			return nil, fmt.Errorf("missing eps=")
		}
		p, err := region.Canonical(b)
		if err != nil {
			return nil, wantOf(err)
		}
		return p, nil
	}
	a, b, ok := strings.Cut(text, "|")
	if !ok {
		return nil, fmt.Errorf(`want "P0|P1" or "eps=E,delta=D"`)
	}
	var dists [2][]float64
	for i, part := range []string{a, b} {
		for _, f := range strings.Split(part, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, fmt.Errorf("%q: want comma-separated probabilities", strings.TrimSpace(f))
			}
			dists[i] = append(dists[i], x)
		}
	}
	p, err := region.NewPair(dists[0], dists[1])
	if err != nil {
		return nil, err
	}
	return p, nil
}
