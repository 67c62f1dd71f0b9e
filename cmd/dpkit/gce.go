package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"slices"
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

const gceUsage = `Usage: dpkit gce membership|uniform-prior|hypothesis|refine|subsample [flags]

The generalized composition experiment of Hartmann, Bindschaedler and West (HBW):
releases run on different databases, and the target's membership in each is a vector b.
Constraints on b, or a weaker adversary, give guarantees below the classic composition;
the exact optimal composition (KOV Thm 3.3) is used underneath. See docs/gce.md.

Commands:
  membership     the target is in at most M of the k databases
  uniform-prior  an adversary with an uninformative prior about membership (Thm 3)
  hypothesis     explicit hypotheses p0, p1 over membership vectors (hypothesis DP)
  refine         the coupling of two hypotheses by RefineTuples (Alg. 3)
  subsample      privacy amplification by subsampling (as HBW use it for Thm 3)

Run "dpkit gce COMMAND --help" for the flags of a command.
`

const gceWorkloadFlags = `  --mech EPS[,DELTA[,COUNT]]  COUNT steps, each (EPS, DELTA)-DP: EPS finite ≥ 0, DELTA
                              in [0, 1] (default 0), COUNT an integer in [1, 10^12]
                              (default 1). Repeatable; steps are in the order given.
  --mech-file FILE            one EPS[,DELTA[,COUNT]] entry per line; blank lines and
                              text after '#' are ignored. "-" reads stdin. Repeatable.
`

const gceMembershipUsage = `Usage: dpkit gce membership --mech EPS[,DELTA[,COUNT]]... (--max-member M | --allowed FILE) [--bounded] --delta D [flags]

Guarantee when the target can be in at most M of the k databases, each answered by one
(EPS, DELTA)-DP release (HBW §V-A, Example 1). Unbounded (default): the adversary
tests whether the target is in any database; the worst case composes min(M, k) steps.
--bounded: the target is known to be in some databases; two vectors with M ones each
differ in up to min(2M, k) steps. With different mechanisms the worst set of steps is
found by an exact search (branch and bound). Parallel composition (McSherry; Def. 5,
Thm 2) gives M·max ε (2M·max ε bounded) and applies only when every DELTA is 0.
--allowed FILE: the membership vectors allowed, listed explicitly (HBW Example 3): the
worst pair is compared directly, c against 0 (unbounded) or c against c' (bounded).

Workload (at least one entry):
` + gceWorkloadFlags + `
Flags:
  --max-member M   the most databases one person can be in: an integer in [1, 10^12]
  --allowed FILE   instead of --max-member: one allowed membership vector per line,
                   k characters 0/1 (character i is 1 when step i runs on a database
                   holding the target's record); blank lines and text after '#' ignored;
                   "-" reads stdin (k ≤ 64 steps)
  --bounded        bounded neighbours (compare two membership vectors)
  --delta D        total δ in [0, 1]
  --tolerance T    relative width in (0, 1) of compose's certified bracket for many
                   distinct ε values (default 1e-6)
  --json           print {"epsilon":…,"classic_epsilon":…,"parallel_epsilon":…}
                   ("parallel_epsilon" only when parallel composition applies, with M
                   the most ones of an allowed vector for --allowed; "classic_epsilon"
                   is null when D is below the floor of all k steps)
  -h, --help       show this help

Exit status: 0 success; 1 infeasible (D below the floor 1 − Π(1 − δ_ℓ) of the worst
allowed set); 2 usage error.

Examples:
  dpkit gce membership --mech 0.01,0,1000 --max-member 365 --delta 1e-6
  dpkit gce membership --mech 0.012,0,500 --mech 0.01,2e-9,500 --max-member 365 --delta 1e-6 --json
  printf '1100\n0011\n' | dpkit gce membership --mech 0.5,0,4 --allowed - --bounded --delta 1e-6
`

const gceUniformUsage = `Usage: dpkit gce uniform-prior --mech EPS[,DELTA[,COUNT]]... --delta D [flags]

Guarantee against an adversary with an uninformative prior (HBW §V-B): "the target
is in no database" against "the target is in at least one, every such set equally
likely". Theorem 3 with the exact composition: component i composes step i with the
later steps subsampled with probability ½, (ε, δ) → (ln((1 + e^ε)/2), δ/2); the result
depends on the order of the steps. The reported epsilon is the smaller of Theorem 3 and
the worst case (the classic composition, valid for every adversary). Also reported:
Corollary 6 (Theorem 3 with each step composed simply with the subsampled rest) and the
simple form of eq. (3)/(4), which is Corollary 7 for equal steps (simple composition of
each vector against 0⃗, combined by the point-mass rule; its δ is its own).

Workload (at least one entry):
` + gceWorkloadFlags + `
Flags:
  --delta D        total δ in [0, 1]
  --tolerance T    relative width in (0, 1) of compose's certified bracket (default 1e-6)
  --json           print {"epsilon":…,"delta":…,"worst_case_epsilon":…,
                   "corollary6_epsilon":…,"simple":{"epsilon":…,"delta":…}}
                   ("worst_case_epsilon" and "corollary6_epsilon" are null when D is
                   below the floor they need)
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
				return usagef("unknown gce command %q: want membership, uniform-prior, hypothesis, refine or subsample", args[0])
			}
			return usagef("missing gce command: want membership, uniform-prior, hypothesis, refine or subsample")
		},
	}
	withUsage(cmd, gceUsage)
	cmd.AddCommand(newGCEMembershipCommand(s), newGCEUniformCommand(s), newGCEHypothesisCommand(s),
		newGCERefineCommand(s), newGCESubsampleCommand(s))
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
	allowed   string
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
	cmd.Flags().StringVar(&c.allowed, "allowed", "", "")
	cmd.Flags().BoolVar(&c.bounded, "bounded", false, "")
	withUsage(cmd, gceMembershipUsage)
	return cmd
}

func (c *gceMembershipCommand) Run(ctx context.Context, args []string) error {
	if c.maxMember.set && c.allowed != "" {
		return usagef("--max-member and --allowed exclude each other: give one")
	}
	if !c.maxMember.set && c.allowed == "" && len(args) == 0 {
		return usagef("missing --max-member or --allowed: give the most databases one person can be in, or the allowed membership vectors")
	}
	if c.allowed == "-" && slices.Contains(c.workload.files, "-") {
		return usagef(`--allowed - and --mech-file - both read stdin: give one of them a file`)
	}
	ms, opts, err := c.start(ctx, args)
	if err != nil {
		return err
	}
	rel := gce.Unbounded
	if c.bounded {
		rel = gce.Bounded
	}
	var r gce.MembershipResult
	if c.allowed != "" {
		vs, err := readAllowed(c.s.stdin, c.allowed)
		if err != nil {
			return err
		}
		if r, err = gce.Allowed(ms, vs, rel, c.delta.value, opts); err != nil {
			return err
		}
	} else if r, err = gce.AtMost(ms, c.maxMember.value, rel, c.delta.value, opts); err != nil {
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
	if c.allowed != "" {
		var worst int64
		for _, m := range r.Worst {
			worst += m.Count
		}
		fmt.Fprintf(w, "epsilon\t%s\tthe allowed vectors of %q, %d steps, %s, delta %s (the worst pair differs in %d steps)\n", formatFloat(r.Epsilon), c.allowed, k, rel, formatFloat(c.delta.value), worst)
	} else {
		fmt.Fprintf(w, "epsilon\t%s\tat most %d of %d databases, %s, delta %s\n", formatFloat(r.Epsilon), c.maxMember.value, k, rel, formatFloat(c.delta.value))
	}
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
	cor6 := math.Inf(1)
	if b, err := gce.Corollary6(ms, c.delta.value, opts); err == nil {
		cor6 = b.Epsilon
	} else if !errors.Is(err, dpkit.ErrInfeasible) {
		return err
	}
	simple, err := gce.UniformPriorSimple(ms)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.s.stdout, struct {
			Epsilon   float64      `json:"epsilon"`
			Delta     float64      `json:"delta"`
			WorstCase *float64     `json:"worst_case_epsilon"`
			Cor6      *float64     `json:"corollary6_epsilon"`
			Simple    dpkit.Budget `json:"simple"`
		}{unsignedZero(r.Epsilon), unsignedZero(r.Delta), optionalFloat(r.WorstCase), optionalFloat(cor6), simple})
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon\t%s\tuniform-prior adversary, delta %s\n", formatFloat(r.Epsilon), formatFloat(r.Delta))
	fmt.Fprintf(w, "theorem 3 epsilon\t%s\tHBW Thm 3 with the exact composition\n", formatFloat(r.Theorem3))
	fmt.Fprintf(w, "corollary 6 epsilon\t%s\tHBW Cor. 6: each step composed simply with the subsampled rest\n", tableFloat(cor6))
	fmt.Fprintf(w, "simple (eq. 3/4, Cor. 7)\t%s\tsimple composition against 0⃗, point-mass rule\n", simple)
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
	if err := checkHypothesisFlags(args, c.p0, c.p1); err != nil {
		return err
	}
	ms, opts, err := c.start(ctx, args)
	if err != nil {
		return err
	}
	p0, p1, err := readHypotheses(c.s.stdin, c.p0, c.p1)
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

// readAllowed reads --allowed: one membership vector per line ("-": stdin).
func readAllowed(stdin io.Reader, name string) ([]gce.Vector, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, flagErrorf("--allowed", "cannot read --allowed %q: %s", name, pathErrorText(err))
		}
		defer f.Close()
		r = f
	}
	var vs []gce.Vector
	sc := bufio.NewScanner(io.LimitReader(r, maxHypothesisFile))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		v, err := gce.ParseVector(text)
		if err != nil {
			return nil, flagErrorf("--allowed", "invalid --allowed %q line %d: %q: want a string of the characters 0 and 1", name, line, text)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		return nil, flagErrorf("--allowed", "cannot read --allowed %q: %v", name, err)
	}
	if len(vs) == 0 {
		return nil, flagErrorf("--allowed", "invalid --allowed %q: no membership vector", name)
	}
	return vs, nil
}

// --- refine ---

const gceRefineUsage = `Usage: dpkit gce refine --p0 FILE --p1 FILE [--json]

The coupling of two hypotheses over membership vectors computed by RefineTuples (HBW
Alg. 3, in exact rationals, first in first out; docs/errata.md, HBW item 5): pairs
(b0, b1) with weights such that the b0 weights add up to p0 and the b1 weights to p1.
"dpkit gce hypothesis" composes each pair's differing steps; this command shows the
pairs alone.

Flags:
  --p0 FILE, --p1 FILE  a JSON list of {"b":"0101","p":"1/4"} entries (as for gce
                   hypothesis); "-" reads stdin (for one of the two)
  --json           print {"pairs":[{"b0":"01","b1":"00","weight":"1/2"},…]}
                   (weights as exact fractions)
  -h, --help       show this help

Exit status: 0 success; 2 usage error (including a malformed FILE or hypotheses of
different lengths or total weights).
`

type gceRefineCommand struct {
	s      streams
	p0, p1 string
	json   bool
}

func newGCERefineCommand(s streams) *cobra.Command {
	c := &gceRefineCommand{s: s}
	cmd := &cobra.Command{
		Use:  "refine",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	cmd.Flags().StringVar(&c.p0, "p0", "", "")
	cmd.Flags().StringVar(&c.p1, "p1", "", "")
	cmd.Flags().BoolVar(&c.json, "json", false, "")
	withUsage(cmd, gceRefineUsage)
	return cmd
}

func (c *gceRefineCommand) Run(_ context.Context, args []string) error {
	if err := checkHypothesisFlags(args, c.p0, c.p1); err != nil {
		return err
	}
	p0, p1, err := readHypotheses(c.s.stdin, c.p0, c.p1)
	if err != nil {
		return err
	}
	if len(p0) > 0 && len(p1) > 0 && len(p0[0].B) != len(p1[0].B) {
		return usagef("--p0 vectors have %d steps and --p1 vectors %d: want the same length", len(p0[0].B), len(p1[0].B))
	}
	u0, u1, err := gce.RefineTuples(p0, p1)
	if err != nil {
		return err
	}
	type pair struct {
		B0     string `json:"b0"`
		B1     string `json:"b1"`
		Weight string `json:"weight"`
	}
	pairs := make([]pair, len(u0))
	for i := range u0 {
		pairs[i] = pair{u0[i].B.String(), u1[i].B.String(), u0[i].W.RatString()}
	}
	if c.json {
		return writeJSON(c.s.stdout, struct {
			Pairs []pair `json:"pairs"`
		}{pairs})
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "b0\tb1\tweight\n")
	for _, p := range pairs {
		fmt.Fprintf(w, "%s\t%s\t%s\n", p.B0, p.B1, p.Weight)
	}
	return w.Flush()
}

// --- subsample ---

const gceSubsampleUsage = `Usage: dpkit gce subsample --mech EPS[,DELTA[,COUNT]]... --q Q [--json]

Privacy amplification by subsampling as HBW use it (Balle–Barthe–Gaboardi): an
(ε, δ)-DP step run on a subsample that holds the target's record with probability Q is
(ln(1 + Q(e^ε − 1)), Qδ)-DP (docs/errata.md, HBW item 6; Q = ½ in their Theorem 3).

Flags:
  --mech EPS[,DELTA[,COUNT]]  a step (EPS finite ≥ 0, DELTA in [0, 1]; COUNT is kept
                              as given). Repeatable.
  --mech-file FILE            one entry per line, as for compose. Repeatable.
  --q Q                       the probability the subsample holds the record, in [0, 1]
  --json                      print {"steps":[{"epsilon":…,"delta":…,"count":…},…]}
  -h, --help                  show this help

Exit status: 0 success; 2 usage error.
`

type gceSubsampleCommand struct {
	s        streams
	workload workload
	q        *floatFlag
	json     bool
}

func newGCESubsampleCommand(s streams) *cobra.Command {
	c := &gceSubsampleCommand{s: s, q: &floatFlag{check: checkProbability}}
	cmd := &cobra.Command{
		Use:  "subsample",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	c.workload.register(cmd.Flags())
	cmd.Flags().Var(c.q, "q", "")
	cmd.Flags().BoolVar(&c.json, "json", false, "")
	withUsage(cmd, gceSubsampleUsage)
	return cmd
}

// checkProbability accepts a probability in [0, 1].
func checkProbability(name string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return &dpkit.ParamError{Name: name, Value: v, Want: "in [0, 1]"}
	}
	return nil
}

func (c *gceSubsampleCommand) Run(ctx context.Context, args []string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q: give the steps with --mech or --mech-file", args[0])
	case !c.q.set:
		return flagErrorf("--q", "missing --q: the probability that the subsample holds the record")
	}
	ms, err := c.workload.load(ctx, c.s.stdin)
	if err != nil {
		return err
	}
	out := make([]compose.Mech, len(ms))
	for i, m := range ms {
		if out[i], err = gce.Subsample(m, c.q.value); err != nil {
			return err
		}
	}
	if c.json {
		type step struct {
			Epsilon float64 `json:"epsilon"`
			Delta   float64 `json:"delta"`
			Count   int64   `json:"count"`
		}
		steps := make([]step, len(out))
		for i, m := range out {
			steps[i] = step{unsignedZero(m.Epsilon), unsignedZero(m.Delta), m.Count}
		}
		return writeJSON(c.s.stdout, struct {
			Steps []step `json:"steps"`
		}{steps})
	}
	w := tabwriter.NewWriter(c.s.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "epsilon\tdelta\tcount\t(subsampled with q = %s)\n", formatFloat(c.q.value))
	for _, m := range out {
		fmt.Fprintf(w, "%s\t%s\t%d\t\n", formatFloat(m.Epsilon), formatFloat(m.Delta), m.Count)
	}
	return w.Flush()
}

// checkHypothesisFlags checks the arguments of gce hypothesis and gce refine: no
// positional argument, both --p0 and --p1, at most one of them "-".
func checkHypothesisFlags(args []string, p0, p1 string) error {
	switch {
	case len(args) > 0:
		return usagef("unexpected argument %q: give the hypotheses with --p0 FILE and --p1 FILE", args[0])
	case p0 == "" || p1 == "":
		return usagef("missing --p0 or --p1: give both hypotheses as JSON files")
	case p0 == "-" && p1 == "-":
		return usagef(`--p0 and --p1 both "-": stdin can be read once`)
	}
	return nil
}

// readHypotheses reads --p0 and --p1.
func readHypotheses(stdin io.Reader, p0, p1 string) (gce.Hypothesis, gce.Hypothesis, error) {
	h0, err := readHypothesis(stdin, "p0", p0)
	if err != nil {
		return nil, nil, err
	}
	h1, err := readHypothesis(stdin, "p1", p1)
	return h0, h1, err
}
