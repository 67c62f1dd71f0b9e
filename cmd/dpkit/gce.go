package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/gce"
)

func init() {
	register(command{name: "gce", order: 50,
		summary: "database-aware composition (HBW): membership constraints (membership),\nthe uniform-prior adversary (uniform-prior), explicit hypotheses (hypothesis)",
		build:   func(s streams) *cobra.Command { return newGCECommand(s) }})
}

const gceUsage = `Usage: dpkit gce membership|uniform-prior|hypothesis [flags]

The generalized composition experiment of Hartmann, Bindschaedler and West (HBW):
releases run on different databases, and the target's membership in each is a vector b.
Constraints on b, or a weaker adversary, give guarantees below the classic composition;
the exact optimal composition (KOV Thm 3.3) is used underneath. See docs/gce.md.

Commands:
  membership     the target is in at most M of the k databases
  uniform-prior  an adversary with an uninformative prior about membership (Thm 3)
  hypothesis     explicit hypotheses p0, p1 over membership vectors (hypothesis DP)

Run "dpkit gce COMMAND --help" for the flags of a command.
`

const gceWorkloadFlags = `  --mech EPS[,DELTA[,COUNT]]  COUNT steps, each (EPS, DELTA)-DP: EPS finite ≥ 0, DELTA
                              in [0, 1] (default 0), COUNT an integer in [1, 10^12]
                              (default 1). Repeatable; steps are in the order given.
  --mech-file FILE            one EPS[,DELTA[,COUNT]] entry per line; blank lines and
                              text after '#' are ignored. "-" reads stdin. Repeatable.
`

const gceMembershipUsage = `Usage: dpkit gce membership --mech EPS[,DELTA[,COUNT]]... --max-member M [--bounded] --delta D [flags]

Guarantee when the target can be in at most M of the k databases, each answered by one
(EPS, DELTA)-DP release (HBW §V-A, Example 1). Unbounded (default): the adversary
tests whether the target is in any database; the worst case composes min(M, k) steps.
--bounded: the target is known to be in some databases; two vectors with M ones each
differ in up to min(2M, k) steps. With different mechanisms the worst set of steps is
found by an exact search (branch and bound). Parallel composition (McSherry; Def. 5,
Thm 2) gives M·max ε (2M·max ε bounded) and applies only when every DELTA is 0.

Workload (at least one entry):
` + gceWorkloadFlags + `
Flags:
  --max-member M   the most databases one person can be in: an integer in [1, 10^12]
  --bounded        bounded neighbours (compare two membership vectors)
  --delta D        total δ in [0, 1]
  --tolerance T    relative width in (0, 1) of compose's certified bracket for many
                   distinct ε values (default 1e-6)
  --json           print {"epsilon":…,"classic_epsilon":…,"parallel_epsilon":…}
                   ("parallel_epsilon" only when parallel composition applies;
                   "classic_epsilon" is null when D is below the floor of all k steps)
  -h, --help       show this help

Exit status: 0 success; 1 infeasible (D below the floor 1 − Π(1 − δ_ℓ) of the worst
allowed set); 2 usage error.

Examples:
  dpkit gce membership --mech 0.01,0,1000 --max-member 365 --delta 1e-6
  dpkit gce membership --mech 0.012,0,500 --mech 0.01,2e-9,500 --max-member 365 --delta 1e-6 --json
`

const gceUniformUsage = `Usage: dpkit gce uniform-prior --mech EPS[,DELTA[,COUNT]]... --delta D [flags]

Guarantee against an adversary with an uninformative prior (HBW §V-B): "the target
is in no database" against "the target is in at least one, every such set equally
likely". Theorem 3 with the exact composition: component i composes step i with the
later steps subsampled with probability ½, (ε, δ) → (ln((1 + e^ε)/2), δ/2); the result
depends on the order of the steps. The reported epsilon is the smaller of Theorem 3 and
the worst case (the classic composition, valid for every adversary).

Workload (at least one entry):
` + gceWorkloadFlags + `
Flags:
  --delta D        total δ in [0, 1]
  --tolerance T    relative width in (0, 1) of compose's certified bracket (default 1e-6)
  --json           print {"epsilon":…,"delta":…,"worst_case_epsilon":…}
                   ("worst_case_epsilon" is null when D is below the floor of all steps)
  -h, --help       show this help

Exit status: 0 success; 1 infeasible; 2 usage error.

Example:
  dpkit gce uniform-prior --mech 0.01,0,1000 --delta 1e-6
`

const gceHypothesisUsage = `Usage: dpkit gce hypothesis --mech EPS[,DELTA[,COUNT]]... --p0 FILE --p1 FILE --delta D [flags]

(ε, δ)-hypothesis DP (HBW Def. 3) against an adversary testing hypothesis p0
against p1, distributions over membership vectors of length k (the number of steps).
The hypotheses are coupled by RefineTuples (Alg. 3, exact rationals) and the matched
pairs combined by a sound rule: "point-mass" when p0 or p1 is a single vector
(ε = ln Σ w_i e^{ε_i}); otherwise "general" (δ(ε) = Σ w_i δ_i(ε)). The paper's recipe
for the general case is unsound (docs/errata.md, HBW item 1) and is not used.

Workload (at least one entry, k = Σ COUNT ≤ 65536 steps):
` + gceWorkloadFlags + `
Flags:
  --p0 FILE, --p1 FILE  a JSON list of {"b":"0101","p":"1/4"} entries: b a string of
                   k characters 0/1 (character i is 1 when step i runs on the database
                   with the target's record), p a probability > 0 as a string ("1/4",
                   "0.25") or a number; the p must add up to exactly 1. "-" reads stdin
                   (for one of the two).
  --delta D        total δ in [0, 1]
  --tolerance T    relative width in (0, 1) of compose's certified bracket (default 1e-6)
  --json           print {"epsilon":…,"delta":…,"rule":"point-mass|general",
                   "classic_epsilon":…} ("classic_epsilon" is null when D is below the
                   floor of all steps)
  -h, --help       show this help

Exit status: 0 success; 1 infeasible; 2 usage error (including a malformed FILE).

Example:
  dpkit gce hypothesis --mech 1 --mech 10 --p0 p0.json --p1 p1.json --delta 0
`

func newGCECommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "gce",
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown gce command %q: want membership, uniform-prior or hypothesis", args[0])
			}
			return usagef("missing gce command: want membership, uniform-prior or hypothesis")
		},
	}
	withUsage(cmd, gceUsage)
	cmd.AddCommand(newGCEMembershipCommand(s), newGCEUniformCommand(s), newGCEHypothesisCommand(s))
	return cmd
}

// gceCommon holds the flags every gce subcommand takes.
type gceCommon struct {
	s         streams
	workload  workload
	delta     *floatFlag
	tolerance *floatFlag
	json      bool
}

func (c *gceCommon) register(cmd *cobra.Command) {
	c.delta, c.tolerance = deltaFlag(), toleranceFlag()
	flags := cmd.Flags()
	c.workload.register(flags)
	flags.Var(c.delta, "delta", "")
	flags.Var(c.tolerance, "tolerance", "")
	flags.BoolVar(&c.json, "json", false, "")
}

// start checks the common arguments and loads the workload.
func (c *gceCommon) start(ctx context.Context, args []string) ([]compose.Mech, *compose.Options, error) {
	if len(args) > 0 {
		return nil, nil, usagef("unexpected argument %q: give the steps with --mech or --mech-file", args[0])
	}
	if !c.delta.set {
		return nil, nil, usagef("missing --delta: give the total δ in [0, 1]")
	}
	ms, err := c.workload.load(ctx, c.s.stdin)
	if err != nil {
		return nil, nil, err
	}
	return ms, &compose.Options{Tolerance: c.tolerance.value}, nil
}

// optionalFloat is a JSON number, or null for +Inf (no finite ε).
func optionalFloat(x float64) *float64 {
	if math.IsInf(x, 1) {
		return nil
	}
	x = unsignedZero(x)
	return &x
}

// tableFloat prints x in full, or "none" for +Inf.
func tableFloat(x float64) string {
	if math.IsInf(x, 1) {
		return "none (delta below the floor)"
	}
	return formatFloat(x)
}

// --- membership ---

type gceMembershipCommand struct {
	gceCommon
	maxMember countFlag
	bounded   bool
}

func newGCEMembershipCommand(s streams) *cobra.Command {
	c := &gceMembershipCommand{gceCommon: gceCommon{s: s}}
	cmd := &cobra.Command{
		Use:  "membership",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	c.register(cmd)
	cmd.Flags().Var(&c.maxMember, "max-member", "")
	cmd.Flags().BoolVar(&c.bounded, "bounded", false, "")
	withUsage(cmd, gceMembershipUsage)
	return cmd
}

func (c *gceMembershipCommand) Run(ctx context.Context, args []string) error {
	if !c.maxMember.set && len(args) == 0 {
		return usagef("missing --max-member: give the most databases one person can be in")
	}
	ms, opts, err := c.start(ctx, args)
	if err != nil {
		return err
	}
	rel := gce.Unbounded
	if c.bounded {
		rel = gce.Bounded
	}
	r, err := gce.AtMost(ms, c.maxMember.value, rel, c.delta.value, opts)
	if err != nil {
		return err
	}
	if c.json {
		out := struct {
			Epsilon  float64  `json:"epsilon"`
			Classic  *float64 `json:"classic_epsilon"`
			Parallel *float64 `json:"parallel_epsilon,omitempty"`
		}{Epsilon: unsignedZero(r.Epsilon), Classic: optionalFloat(r.Classic)}
		if r.ParallelApplies {
			out.Parallel = optionalFloat(r.Parallel)
		}
		return writeJSON(c.s.stdout, out)
	}
	var k int64
	for _, m := range ms {
		k += m.Count
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon\t%s\tat most %d of %d databases, %s, delta %s\n", formatFloat(r.Epsilon), c.maxMember.value, k, rel, formatFloat(c.delta.value))
	fmt.Fprintf(w, "classic epsilon\t%s\tall %d steps composed\n", tableFloat(r.Classic), k)
	if r.ParallelApplies {
		fmt.Fprintf(w, "parallel epsilon\t%s\tparallel composition (McSherry)\n", formatFloat(r.Parallel))
	} else {
		fmt.Fprintf(w, "parallel epsilon\tn/a\tparallel composition needs every delta = 0\n")
	}
	if !r.Exhaustive {
		fmt.Fprintf(w, "note\tthe subset search stopped at its limit; epsilon is a valid upper bound\t\n")
	}
	return w.Flush()
}

// --- uniform-prior ---

type gceUniformCommand struct{ gceCommon }

func newGCEUniformCommand(s streams) *cobra.Command {
	c := &gceUniformCommand{gceCommon{s: s}}
	cmd := &cobra.Command{
		Use:  "uniform-prior",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	c.register(cmd)
	withUsage(cmd, gceUniformUsage)
	return cmd
}

func (c *gceUniformCommand) Run(ctx context.Context, args []string) error {
	ms, opts, err := c.start(ctx, args)
	if err != nil {
		return err
	}
	r, err := gce.UniformPrior(ms, c.delta.value, opts)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, struct {
			Epsilon   float64  `json:"epsilon"`
			Delta     float64  `json:"delta"`
			WorstCase *float64 `json:"worst_case_epsilon"`
		}{unsignedZero(r.Epsilon), unsignedZero(r.Delta), optionalFloat(r.WorstCase)})
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon\t%s\tuniform-prior adversary, delta %s\n", formatFloat(r.Epsilon), formatFloat(r.Delta))
	fmt.Fprintf(w, "theorem 3 epsilon\t%s\tHBW Thm 3 with the exact composition\n", formatFloat(r.Theorem3))
	fmt.Fprintf(w, "worst-case epsilon\t%s\tclassic composition of all steps\n", tableFloat(r.WorstCase))
	return w.Flush()
}

// --- hypothesis ---

type gceHypothesisCommand struct {
	gceCommon
	p0, p1 string
}

func newGCEHypothesisCommand(s streams) *cobra.Command {
	c := &gceHypothesisCommand{gceCommon: gceCommon{s: s}}
	cmd := &cobra.Command{
		Use:  "hypothesis",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	c.register(cmd)
	cmd.Flags().StringVar(&c.p0, "p0", "", "")
	cmd.Flags().StringVar(&c.p1, "p1", "", "")
	withUsage(cmd, gceHypothesisUsage)
	return cmd
}

func (c *gceHypothesisCommand) Run(ctx context.Context, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q: give the hypotheses with --p0 FILE and --p1 FILE", args[0])
	case c.p0 == "" || c.p1 == "":
		return usagef("missing --p0 or --p1: give both hypotheses as JSON files")
	case c.p0 == "-" && c.p1 == "-":
		return usagef(`--p0 and --p1 both "-": stdin can be read once`)
	}
	ms, opts, err := c.start(ctx, args)
	if err != nil {
		return err
	}
	p0, err := readHypothesis(c.s.stdin, "p0", c.p0)
	if err != nil {
		return err
	}
	p1, err := readHypothesis(c.s.stdin, "p1", c.p1)
	if err != nil {
		return err
	}
	r, err := gce.HDP(ms, p0, p1, c.delta.value, opts)
	if err != nil {
		return err
	}
	classic := math.Inf(1)
	if cr, err := compose.Epsilon(ms, c.delta.value, opts); err == nil {
		classic = cr.Epsilon
	} else if !errors.Is(err, dpkit.ErrInfeasible) {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, struct {
			Epsilon float64  `json:"epsilon"`
			Delta   float64  `json:"delta"`
			Rule    gce.Rule `json:"rule"`
			Classic *float64 `json:"classic_epsilon"`
		}{unsignedZero(r.Epsilon), unsignedZero(r.Delta), r.Rule, optionalFloat(classic)})
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon\t%s\t%s rule, delta %s\n", formatFloat(r.Epsilon), r.Rule, formatFloat(r.Delta))
	fmt.Fprintf(w, "classic epsilon\t%s\tall steps composed\n", tableFloat(classic))
	if err := w.Flush(); err != nil {
		return err
	}
	w = tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nb0\tb1\tweight\tepsilon of the differing steps\n")
	for _, p := range r.Pairs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.B0, p.B1, p.W.RatString(), tableFloat(p.Epsilon))
	}
	return w.Flush()
}

// maxHypothesisFile is the largest --p0/--p1 file read.
const maxHypothesisFile = 64 << 20

// readHypothesis reads a JSON list of {"b": "0101", "p": "1/4"} entries from the file
// name ("-": stdin). Malformed input is a usage error naming the flag, file and entry.
func readHypothesis(stdin io.Reader, flag, name string) (gce.Hypothesis, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("cannot read --%s %q: %s", flag, name, pathErrorText(err))
		}
		defer f.Close()
		r = f
	}
	dec := json.NewDecoder(io.LimitReader(r, maxHypothesisFile))
	dec.DisallowUnknownFields()
	var entries []struct {
		B *string         `json:"b"`
		P json.RawMessage `json:"p"`
	}
	bad := func(format string, a ...any) error {
		return usagef("invalid --%s %q: %s", flag, name, fmt.Sprintf(format, a...))
	}
	if err := dec.Decode(&entries); err != nil {
		return nil, bad(`want a JSON list of {"b":"0101","p":"1/4"} entries: %v`, err)
	}
	if dec.More() {
		return nil, bad("more than one JSON value")
	}
	h := make(gce.Hypothesis, len(entries))
	for i, e := range entries {
		if e.B == nil || e.P == nil {
			return nil, bad(`entry %d: want both "b" and "p"`, i)
		}
		b, err := gce.ParseVector(*e.B)
		if err != nil {
			return nil, bad("entry %d: b %q: want a string of the characters 0 and 1", i, *e.B)
		}
		text := strings.TrimSpace(string(e.P))
		if strings.HasPrefix(text, `"`) {
			if err := json.Unmarshal(e.P, &text); err != nil {
				return nil, bad("entry %d: p: %v", i, err)
			}
		}
		text = strings.TrimSpace(text)
		p, ok := parseProbability(text)
		if !ok || p.Sign() <= 0 || p.Cmp(big.NewRat(1, 1)) > 0 {
			return nil, bad(`entry %d: p %s: want a probability in (0, 1], as "1/4", "0.25" or 0.25`, i, text)
		}
		h[i] = gce.Tuple{B: b, W: p}
	}
	return h, nil
}

// parseProbability reads an exact rational ("1/4", "0.25", "2.5e-1"). Texts longer than
// 1000 characters or with an exponent beyond ±1000 are refused: big.Rat would build
// numbers of that many digits.
func parseProbability(text string) (*big.Rat, bool) {
	if len(text) > 1000 {
		return nil, false
	}
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		exp, err := strconv.Atoi(text[i+1:])
		if err != nil || exp < -1000 || exp > 1000 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(text)
}
