package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

const regionUsage = `Usage: dpkit region --mech EPS[,DELTA[,COUNT]]... [--plot FILE.svg|FILE.png] [--json]

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

Exit status: 0 success; 1 the plot could not be written; 2 usage error (including more
than 10^6 breakpoints).

Examples:
  dpkit region --mech 0.1,0.001,30 --json
  dpkit region --mech 0.1,0.001,30 --plot fig3.svg
`

// regionCommand is "dpkit region".
type regionCommand struct {
	s streams

	workload workload
	plot     string
	json     bool
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
	withUsage(cmd, regionUsage)
	return cmd
}

// Run computes the exact breakpoints, and draws or prints them.
func (c *regionCommand) Run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q: give the workload with --mech or --mech-file", args[0])
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
