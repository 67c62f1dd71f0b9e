package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/postgres"
	"github.com/dpkit/dpkit/ledger/sqlite"
	"github.com/dpkit/dpkit/mechanism"
)

func init() {
	register(command{name: "ledger", order: 40,
		summary: "the privacy-budget ledger: create budgets, spend, status, history, remaining\n(SQLite file or PostgreSQL)",
		build:   newLedgerCommand})
}

const ledgerUsage = `Usage: dpkit ledger init|create|spend|status|history|remaining|audit --db PATH|URL [flags]

The budget ledger remembers every release and refuses what would exceed a budget,
exactly (no floating-point subtraction: exact sums and the exact optimal composition)
and durably (a release is recorded before it is acknowledged). See docs/ledger.md.

--db is a SQLite file path (one file, WAL) or a PostgreSQL URL (postgres://… or
postgresql://…; the tables live in the first schema of search_path).

Commands:
  init       create an empty ledger in --db
  create     create a budget with a policy (fixed, plan or adaptive)
  spend      record one release, or refuse it (exit status 1) saying what is left
  status     what a budget (or every budget) has used
  history    the releases of a budget, in order
  remaining  how many more releases of a cost fit, and the largest next ε
  audit      replay a budget's release log and check its recorded statistics

Every command takes --json (one JSON object on stdout).

Exit status: 0 success; 1 refused spend, unknown budget, idempotency conflict, or a
database that is not a ledger; 2 usage error.

Run "dpkit ledger COMMAND --help" for the flags of a command.
`

// ledgerCommon holds the flags every ledger subcommand takes.
type ledgerCommon struct {
	s    streams
	db   string
	json bool
}

func (c *ledgerCommon) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.db, "db", "", "")
	cmd.Flags().BoolVar(&c.json, "json", false, "")
}

// open opens the ledger at --db; only init creates a new one.
func (c *ledgerCommon) open(ctx context.Context, create bool) (*ledger.Ledger, func(), error) {
	if c.db == "" {
		return nil, nil, usagef("missing --db PATH|URL: a SQLite file or a postgres:// URL")
	}
	var s ledger.Store
	var err error
	if isPostgresURL(c.db) {
		s, err = postgres.Open(ctx, c.db, &postgres.Options{Create: create})
	} else {
		s, err = sqlite.Open(ctx, c.db, &sqlite.Options{Create: create})
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w; create it with: dpkit ledger init --db %s", err, c.db)
	}
	if err != nil {
		return nil, nil, err
	}
	return ledger.New(s), func() { s.Close() }, nil
}

func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// output prints v as JSON, or text() as text.
func (c *ledgerCommon) output(v any, text func(w io.Writer) error) error {
	if c.json {
		return writeJSON(c.s.stdout, v)
	}
	return text(c.s.stdout)
}

func newLedgerCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "ledger",
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown ledger command %q: want one of init, create, spend, status, history, remaining, audit", args[0])
			}
			return usagef("missing ledger command: want one of init, create, spend, status, history, remaining, audit")
		},
	}
	withUsage(cmd, ledgerUsage)
	for _, build := range []func(streams) *cobra.Command{
		newLedgerInit, newLedgerCreate, newLedgerSpend, newLedgerStatus, newLedgerHistory, newLedgerRemaining, newLedgerAudit,
	} {
		cmd.AddCommand(build(s))
	}
	return cmd
}

// subcommand builds a ledger subcommand whose Run is run.
func subcommand(name, usage string, c *ledgerCommon, run func(ctx context.Context) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:  name,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return run(cmd.Context())
		},
	}
	c.register(cmd)
	withUsage(cmd, usage)
	return cmd
}

// ---- init ----

const ledgerInitUsage = `Usage: dpkit ledger init --db PATH|URL [--json]

Create an empty ledger: a new SQLite file (or an empty file), or the ledger's tables in
the first schema of a PostgreSQL URL's search_path. An existing ledger is left as it is
(and migrated to this version's schema if older). A file or schema that holds something
else is refused.

Flags:
  --db PATH|URL   SQLite file or postgres:// URL (required)
  --json          print {"db":…,"backend":"sqlite"|"postgres","schema_version":…}
  -h, --help      show this help

Examples:
  dpkit ledger init --db ledger.db
  dpkit ledger init --db 'postgres://dpkit@db.internal/privacy?search_path=ledger'
`

func newLedgerInit(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	return subcommand("init", ledgerInitUsage, c, func(ctx context.Context) error {
		_, closeFn, err := c.open(ctx, true)
		if err != nil {
			return err
		}
		closeFn()
		backend, version := "sqlite", sqlite.SchemaVersion
		if isPostgresURL(c.db) {
			backend, version = "postgres", postgres.SchemaVersion
		}
		out := struct {
			DB            string `json:"db"`
			Backend       string `json:"backend"`
			SchemaVersion int    `json:"schema_version"`
		}{redactURL(c.db), backend, version}
		return c.output(out, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "ledger ready: %s (%s, schema version %d)\n", out.DB, backend, version)
			return err
		})
	})
}

// redactURL hides a password in a PostgreSQL URL.
func redactURL(db string) string {
	if i, j := strings.Index(db, "://"), strings.LastIndex(db, "@"); isPostgresURL(db) && i >= 0 && j > i {
		if k := strings.Index(db[i+3:j], ":"); k >= 0 {
			return db[:i+3+k] + ":***" + db[j:]
		}
	}
	return db
}

// ---- create ----

const ledgerCreateUsage = `Usage: dpkit ledger create --db PATH|URL --budget ID --eps E --delta D --policy POLICY [flags]

Create a budget: a total (ε, δ) and the policy that accounts its releases.

Policies:
  fixed      every release costs at most (ε0, δ0), calibrated now from the total and
             --releases K by the exact optimal composition (KOV Thm 3.3), with
             δ0 = D/(2K) unless --release-delta or --pure is given; valid although
             queries are chosen adaptively, since the cost is fixed in advance. When
             every release is pure ε-DP (Laplace, geometric, randomized response,
             exponential), --pure (δ0 = 0) gives a larger ε0: for 20 releases in
             (ε=1, δ=1e-6), 0.05695 instead of 0.05611.
             With --mechanism gaussian: K Gaussian releases, each at most μ0-GDP,
             μ0 = μ/√K, where μ is the largest GDP parameter whose curve meets (E, D)
             (needs D > 0): K releases of μ0-GDP compose exactly to √K·μ0-GDP
             (Dong–Roth–Su, Gaussian differential privacy, Cor. 3.3), which beats
             KOV's composition of their (ε, δ) points. Each spend names its
             mechanism, --mechanism gaussian:sigma=S,sensitivity=Δ (μ = Δ/σ ≤ μ0);
             its --eps/--delta are recorded as given
  plan       the declared list of costs (--plan, in order, then --plan-mechanism),
             consumed in order; the exact composition of the whole plan must fit the
             total — by the mechanisms' privacy loss distributions when slots name
             mechanisms (far tighter than their (ε, δ)); a release for such a slot must
             run exactly that mechanism (spend --mechanism)
  adaptive   each release chooses its cost; a privacy filter valid for adaptively
             chosen parameters decides: --filter basic (Σε ≤ E, Σδ ≤ D, exact sums) or
             --filter advanced (Whitehouse–Ramdas–Rogers–Wu 2023:
             sqrt(2 ln(1/D') Σε²) + Σε²/2 ≤ E and Σδ ≤ D − D', D' = --filter-delta)
             or --filter gaussian (Smith–Thakurta 2022, fully adaptive composition
             for Gaussian DP: releases of μ_i-GDP, each μ_i chosen after the earlier
             answers, accepted while Σμ_i² ≤ μ², μ the largest GDP parameter whose
             curve meets (E, D); needs D > 0). Each spend names its Gaussian
             mechanism (spend --mechanism gaussian:sigma=S,sensitivity=Δ, μ_i = Δ/σ),
             and is charged μ_i

Flags:
  --budget ID            budget name: 1–128 characters from A-Z a-z 0-9 . _ : @ - (required)
  --parent ID            make it an analyst sub-budget of the top-level budget ID: each
                         spend must fit both
  --eps E                total ε, finite ≥ 0 (required)
  --delta D              total δ in [0, 1] (required)
  --policy P             fixed, plan or adaptive (required)
  --releases K           fixed: the number of releases, an integer in [1, 10^12]
  --release-delta D0     fixed: per-release δ0 in [0, 1] (default D/(2K))
  --pure                 fixed: every release is pure ε-DP, δ0 = 0 (releases with
                         δ > 0 are then refused)
  --mechanism gaussian   fixed: K Gaussian releases accounted in Gaussian DP (above)
  --plan EPS[,DELTA[,COUNT]]
                         plan: COUNT releases of (EPS, DELTA) (DELTA default 0, COUNT
                         default 1). Repeatable; the order is the plan's order
  --plan-mechanism KIND:key=value,…@EPS[,DELTA]
                         plan: count= (default 1) releases of the mechanism (as in
                         dpkit compose --mechanism), each costing at most (EPS, DELTA).
                         Repeatable; these slots follow the --plan slots, in order
  --filter F             adaptive: basic, advanced or gaussian
  --filter-delta D'      adaptive, advanced filter: the filter's share δ' of D, in (0, D]
  --db PATH|URL          SQLite file or postgres:// URL (required)
  --json                 print the budget's definition as JSON
  -h, --help             show this help

Exit status: 0 success; 1 the budget exists, or the policy cannot fit the total
(e.g. a plan whose exact composition exceeds it); 2 usage error.

Examples:
  dpkit ledger create --db ledger.db --budget flu --eps 1 --delta 1e-6 --policy fixed --releases 40
  dpkit ledger create --db ledger.db --budget counts --eps 1 --delta 1e-6 --policy fixed --releases 20 --pure
  dpkit ledger create --db ledger.db --budget sums --eps 1 --delta 1e-6 --policy fixed --releases 100 --mechanism gaussian
  dpkit ledger create --db ledger.db --budget census --eps 2 --delta 1e-6 --policy plan --plan 0.5,1e-7,2 --plan 0.25,0,4
  dpkit ledger create --db ledger.db --budget model --eps 2 --delta 1e-6 --policy plan \
      --plan-mechanism 'gaussian:sigma=40,sensitivity=1,count=100@0.25,1e-20'
  dpkit ledger create --db ledger.db --budget sales --eps 1 --delta 1e-6 --policy adaptive --filter advanced --filter-delta 1e-6
  dpkit ledger create --db ledger.db --budget sales.alice --parent sales --eps 0.5 --delta 0 --policy adaptive --filter basic
  dpkit ledger create --db ledger.db --budget model --eps 2 --delta 1e-6 --policy adaptive --filter gaussian
`

// ledgerCreate is "dpkit ledger create": its flags, and how they make a ledger.Spec.
type ledgerCreate struct {
	ledgerCommon
	budget, parent, policy, filter string
	mechanism                      string
	eps, delta                     *floatFlag
	releases                       countFlag
	releaseDelta                   *floatFlag
	pure                           bool
	plan                           mechList
	planMechs                      []string
	filterDelta                    *floatFlag
}

// ledgerCreateFlags are the flags that set the parameters ledger.Create may refuse
// (their dpkit.ParamError names, in the current and the user-facing spellings).
var ledgerCreateFlags = paramFlags{names: map[string]string{
	"epsilon": "--eps", "delta": "--delta", "releases": "--releases",
	"release delta": "--release-delta", "release_delta": "--release-delta",
	"filter": "--filter", "filter delta": "--filter-delta", "filter_delta": "--filter-delta",
	"parent": "--parent", "policy": "--policy", "plan": "--plan", "mechanism": "--mechanism",
}}

func newLedgerCreate(s streams) *cobra.Command {
	c := &ledgerCreate{ledgerCommon: ledgerCommon{s: s}, eps: epsilonFlag(), delta: deltaFlag(), releaseDelta: deltaFlag(), filterDelta: deltaFlag()}
	cmd := subcommand("create", ledgerCreateUsage, &c.ledgerCommon, c.run)
	f := cmd.Flags()
	f.StringVar(&c.budget, "budget", "", "")
	f.StringVar(&c.parent, "parent", "", "")
	f.Var(c.eps, "eps", "")
	f.Var(c.delta, "delta", "")
	f.StringVar(&c.policy, "policy", "", "")
	f.Var(&c.releases, "releases", "")
	f.Var(c.releaseDelta, "release-delta", "")
	f.BoolVar(&c.pure, "pure", false, "")
	f.StringVar(&c.mechanism, "mechanism", "", "")
	f.Var(&c.plan, "plan", "")
	f.StringArrayVar(&c.planMechs, "plan-mechanism", nil, "")
	f.StringVar(&c.filter, "filter", "", "")
	f.Var(c.filterDelta, "filter-delta", "")
	completeWords(cmd, "policy", "fixed", "plan", "adaptive")
	completeWords(cmd, "filter", "basic", "advanced", "gaussian")
	completeWords(cmd, "mechanism", "gaussian")
	return cmd
}

// run creates the budget and prints its definition.
func (c *ledgerCreate) run(ctx context.Context) error {
	switch {
	case c.budget == "":
		return usagef("missing --budget ID")
	case !c.eps.set || !c.delta.set:
		return usagef("missing --eps or --delta: give the budget's total ε and δ")
	case c.policy == "":
		return usagef("missing --policy: want fixed, plan or adaptive")
	}
	p, err := c.policySpec()
	if err != nil {
		return err
	}
	l, closeFn, err := c.open(ctx, false)
	if err != nil {
		return err
	}
	defer closeFn()
	def, err := l.Create(ctx, ledger.Spec{ID: c.budget, Parent: c.parent, Total: dpkit.Budget{Epsilon: c.eps.value, Delta: c.delta.value}, Policy: p})
	if err != nil {
		return ledgerCreateFlags.translate(err)
	}
	return c.output(def, func(w io.Writer) error {
		fmt.Fprintf(w, "created budget %q: total %v, policy %s\n", def.ID, def.Total, def.Policy)
		p := def.Policy
		switch {
		case p.PerReleaseMu != nil && p.Mu != nil && p.PerRelease != nil:
			fmt.Fprintf(w, "each of the %d Gaussian releases may be at most mu0 %s (sigma >= sensitivity/mu0); together at most mu %s\n",
				p.Releases, formatFloat(*p.PerReleaseMu), formatFloat(*p.Mu))
			fmt.Fprintf(w, "(one such release is (epsilon %s, delta %s)-DP)\n", formatFloat(p.PerRelease.Epsilon), formatFloat(p.PerRelease.Delta))
		case p.PerRelease != nil:
			fmt.Fprintf(w, "each of the %d releases may cost up to epsilon %s, delta %s\n", p.Releases, formatFloat(p.PerRelease.Epsilon), formatFloat(p.PerRelease.Delta))
		case p.Filter == ledger.GaussianFilter && p.Mu != nil:
			fmt.Fprintf(w, "Gaussian releases of mu_i are accepted while the sum of mu_i^2 is at most mu^2, mu %s\n", formatFloat(*p.Mu))
		}
		return nil
	})
}

// policySpec builds the policy from the flags, refusing flags of another policy.
func (c *ledgerCreate) policySpec() (ledger.Policy, error) {
	kind := ledger.Kind(c.policy)
	if kind != ledger.Fixed && (c.releases.set || c.releaseDelta.set || c.pure || c.mechanism != "") {
		return ledger.Policy{}, usagef("--releases, --release-delta, --pure and --mechanism apply to --policy fixed only")
	}
	if kind != ledger.Plan && (len(c.plan) > 0 || len(c.planMechs) > 0) {
		return ledger.Policy{}, usagef("--plan and --plan-mechanism apply to --policy plan only")
	}
	if kind != ledger.Adaptive && (c.filter != "" || c.filterDelta.set) {
		return ledger.Policy{}, usagef("--filter and --filter-delta apply to --policy adaptive only")
	}
	switch kind {
	case ledger.Fixed:
		return c.fixedPolicy()
	case ledger.Plan:
		return c.planPolicy()
	case ledger.Adaptive:
		if c.filter == "" {
			return ledger.Policy{}, usagef("--policy adaptive needs --filter basic, advanced or gaussian")
		}
		p := ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.Filter(c.filter), FilterDelta: c.filterDelta.value}
		if p.Filter == ledger.AdvancedFilter && !c.filterDelta.set {
			return ledger.Policy{}, usagef("--filter advanced needs --filter-delta D' (its share of --delta)")
		}
		return p, nil
	default:
		return ledger.Policy{}, usagef("invalid --policy %q: want fixed, plan or adaptive", c.policy)
	}
}

// fixedPolicy: --releases K, and δ0 from --release-delta, --pure (δ0 = 0) or the
// default D/(2K) the ledger applies.
func (c *ledgerCreate) fixedPolicy() (ledger.Policy, error) {
	if !c.releases.set {
		return ledger.Policy{}, usagef("--policy fixed needs --releases K")
	}
	p := ledger.Policy{Kind: ledger.Fixed, Releases: c.releases.value}
	switch c.mechanism {
	case "":
	case ledger.GaussianMechanism:
		if c.pure || c.releaseDelta.set {
			return ledger.Policy{}, usagef("--mechanism gaussian excludes --pure and --release-delta: Gaussian releases are accounted by their μ, not by a per-release (ε0, δ0)")
		}
		p.Mechanism = ledger.GaussianMechanism
		return p, nil
	default:
		return ledger.Policy{}, flagErrorf("--mechanism", "invalid --mechanism %s: want gaussian (or no --mechanism: releases accounted by (ε0, δ0))", dpkit.FormatValue(c.mechanism))
	}
	switch {
	case c.pure && c.releaseDelta.set:
		return ledger.Policy{}, usagef("--pure and --release-delta both given: --pure means --release-delta 0")
	case c.pure:
		zero := 0.0
		p.ReleaseDelta = &zero
	case c.releaseDelta.set:
		p.ReleaseDelta = &c.releaseDelta.value
	}
	return p, nil
}

// planPolicy: the --plan slots, then the --plan-mechanism slots, in order.
func (c *ledgerCreate) planPolicy() (ledger.Policy, error) {
	if len(c.plan) == 0 && len(c.planMechs) == 0 {
		return ledger.Policy{}, usagef("--policy plan needs --plan EPS[,DELTA[,COUNT]] or --plan-mechanism (repeatable)")
	}
	p := ledger.Policy{Kind: ledger.Plan}
	for _, m := range c.plan {
		if m.Count > ledger.MaxPlan || int64(len(p.Plan))+m.Count > ledger.MaxPlan {
			return ledger.Policy{}, usagef("--plan declares more than %d releases", ledger.MaxPlan)
		}
		for range m.Count {
			p.Plan = append(p.Plan, dpkit.Budget{Epsilon: m.Epsilon, Delta: m.Delta})
		}
	}
	if len(c.planMechs) > 0 {
		p.PlanMechanisms = make([]mechanism.Descriptor, len(p.Plan))
	}
	for _, pm := range c.planMechs {
		text, cost, ok := strings.Cut(pm, "@")
		if !ok {
			return ledger.Policy{}, usagef("invalid --plan-mechanism %q: want KIND:key=value,…@EPS[,DELTA]", pm)
		}
		it, err := parseMechanism(text)
		if err != nil {
			return ledger.Policy{}, usagef("invalid --plan-mechanism %q: %s", pm, describe(err))
		}
		slot, err := parseMech(cost)
		if err != nil || slot.Count != 1 {
			return ledger.Policy{}, usagef("invalid --plan-mechanism %q: the cost after @ must be EPS[,DELTA]", pm)
		}
		if it.Count > ledger.MaxPlan || int64(len(p.Plan))+it.Count > ledger.MaxPlan {
			return ledger.Policy{}, usagef("the plan declares more than %d releases", ledger.MaxPlan)
		}
		one, err := mechanism.DescribePLD(it.Mechanism) // one slot's mechanism, as the ledger records it
		if err != nil {
			return ledger.Policy{}, usagef("invalid --plan-mechanism %q: %s", pm, describe(err))
		}
		for range it.Count {
			p.Plan = append(p.Plan, dpkit.Budget{Epsilon: slot.Epsilon, Delta: slot.Delta})
			p.PlanMechanisms = append(p.PlanMechanisms, one)
		}
	}
	return p, nil
}

// ---- spend ----

const ledgerSpendUsage = `Usage: dpkit ledger spend --db PATH|URL --budget ID --eps E [--delta D] [flags]

Record one release of cost (E, D) on a budget, in one durable transaction that checks
the budget (and its parent's, for an analyst sub-budget) with all recorded releases plus
this one. If it does not fit, nothing is recorded and the command fails (exit status 1)
saying what is left. Publish the release's result only after this command succeeds.

The same --key on the same budget never charges twice: with the same cost, mechanism
and analyst it returns the original release ("replayed"), otherwise it fails.

Flags:
  --budget ID        the budget or analyst sub-budget (required)
  --eps E            the release's ε, finite ≥ 0 (required)
  --delta D          the release's δ in [0, 1] (default 0)
  --mechanism TEXT   the mechanism the release ran, recorded as a typed descriptor:
                     KIND:key=value (e.g. gaussian:sigma=100,sensitivity=1) or a
                     JSON descriptor {"kind":…,"version":1,…}; other text is
                     recorded as a note
  --analyst NAME     who asks
  --key KEY          idempotency key (unique per budget)
  --db PATH|URL      SQLite file or postgres:// URL (required)
  --json             print {"release":{"seq":…,"budget":…,"cost":{"epsilon":…,"delta":…},
                     "mechanism":…,"analyst":…,"key":…,"time":…},"replayed":…}
  -h, --help         show this help

Exit status: 0 recorded (or replayed); 1 refused, unknown budget or key conflict;
2 usage error (e.g. a negative or NaN ε).

Example:
  dpkit ledger spend --db ledger.db --budget flu --eps 0.02 --mechanism laplace:scale=50 --key q-17
`

func newLedgerSpend(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	var budget, mechText, analyst, key string
	eps, delta := epsilonFlag(), deltaFlag()
	cmd := subcommand("spend", ledgerSpendUsage, c, func(ctx context.Context) error {
		if budget == "" || !eps.set {
			return usagef("missing --budget or --eps: give the budget and the release's ε")
		}
		l, closeFn, err := c.open(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		mech, err := releaseMechanism(mechText)
		if err != nil {
			return err
		}
		r, err := l.Spend(ctx, ledger.Request{Budget: budget, Cost: dpkit.Budget{Epsilon: eps.value, Delta: delta.value},
			Mechanism: mech, Analyst: analyst, Key: key})
		if err != nil {
			return err
		}
		return c.output(r, func(w io.Writer) error {
			verb := "recorded"
			if r.Replayed {
				verb = "already recorded (same key): not charged again"
			}
			_, err := fmt.Fprintf(w, "release %d on %q %s: epsilon %s, delta %s\n", r.Release.Seq, r.Release.Budget, verb,
				formatFloat(r.Release.Cost.Epsilon), formatFloat(r.Release.Cost.Delta))
			return err
		})
	})
	f := cmd.Flags()
	f.StringVar(&budget, "budget", "", "")
	f.Var(eps, "eps", "")
	f.Var(delta, "delta", "")
	f.StringVar(&mechText, "mechanism", "", "")
	f.StringVar(&analyst, "analyst", "", "")
	f.StringVar(&key, "key", "", "")
	return cmd
}

// ---- status ----

const ledgerStatusUsage = `Usage: dpkit ledger status --db PATH|URL [--budget ID] [--json]

What a budget has used: its releases and the spent (ε, δ) under its policy — for fixed
and plan budgets the exact optimal composition of the releases so far (ε at the total δ,
δ at the total ε; never below the optimum); for adaptive/basic the exact Σε and Σδ
(rounded up); for adaptive/advanced the filter's level sqrt(2 ln(1/δ') Σε²) + Σε²/2 and
δ' + Σδ; for Gaussian budgets (fixed --mechanism gaussian, --filter gaussian) the μ of
the releases' composition (spent mu: √(Σμ_i²), rounded up) and its curve's ε at the total δ
and δ at the total ε. Without --budget, every budget.

Flags:
  --budget ID     one budget (default: all)
  --db PATH|URL   SQLite file or postgres:// URL (required)
  --json          print the status object ({"id":…,"total":…,"policy":…,"releases":…,
                  "spent_epsilon":…,"spent_delta":…}, and "spent_mu" for a Gaussian
                  budget), or {"budgets":[…]} for all
  -h, --help      show this help
`

func newLedgerStatus(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	var budget string
	cmd := subcommand("status", ledgerStatusUsage, c, func(ctx context.Context) error {
		l, closeFn, err := c.open(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		var ids []string
		if budget != "" {
			ids = []string{budget}
		} else {
			defs, err := l.Budgets(ctx)
			if err != nil {
				return err
			}
			for _, d := range defs {
				ids = append(ids, d.ID)
			}
		}
		sts := make([]ledger.Status, 0, len(ids))
		for _, id := range ids {
			st, err := l.Status(ctx, id)
			if err != nil {
				return err
			}
			sts = append(sts, st)
		}
		var v any = struct {
			Budgets []ledger.Status `json:"budgets"`
		}{sts}
		if budget != "" {
			v = sts[0]
		}
		return c.output(v, func(w io.Writer) error {
			// A Gaussian budget's spent μ (the releases are jointly μ-GDP) in a column of
			// its own, shown when a budget has one.
			gaussian := slices.ContainsFunc(sts, func(st ledger.Status) bool { return st.SpentMu != nil })
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprint(tw, "budget\tparent\tpolicy\ttotal epsilon\ttotal delta\treleases\tspent epsilon\tspent delta")
			if gaussian {
				fmt.Fprint(tw, "\tspent mu")
			}
			fmt.Fprintln(tw)
			for _, st := range sts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", st.ID, orDash(st.Parent), st.Policy, formatFloat(st.Total.Epsilon),
					formatFloat(st.Total.Delta), st.Releases, formatFloat(st.SpentEpsilon), formatFloat(st.SpentDelta))
				switch {
				case st.SpentMu != nil:
					fmt.Fprintf(tw, "\t%s", formatFloat(*st.SpentMu))
				case gaussian:
					fmt.Fprint(tw, "\t-")
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		})
	})
	cmd.Flags().StringVar(&budget, "budget", "", "")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ---- history ----

const ledgerHistoryUsage = `Usage: dpkit ledger history --db PATH|URL --budget ID [--after SEQ] [--limit N] [--json]

The releases of a budget in the order they were recorded (for a top-level budget,
including those of its analyst sub-budgets).

Flags:
  --budget ID     the budget (required)
  --after SEQ     only releases with a sequence number above SEQ (default 0)
  --limit N       at most N releases (default: all)
  --db PATH|URL   SQLite file or postgres:// URL (required)
  --json          print {"releases":[{"seq":…,"budget":…,"cost":{…},"mechanism":…,
                  "analyst":…,"key":…,"time":…},…]}
  -h, --help      show this help
`

func newLedgerHistory(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	var budget string
	var after, limit int64
	cmd := subcommand("history", ledgerHistoryUsage, c, func(ctx context.Context) error {
		if budget == "" {
			return usagef("missing --budget ID")
		}
		if after < 0 || limit < 0 {
			return usagef("--after and --limit must be ≥ 0")
		}
		l, closeFn, err := c.open(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		rels, err := l.History(ctx, budget, after, int(limit))
		if err != nil {
			return err
		}
		if rels == nil {
			rels = []ledger.Release{}
		}
		return c.output(struct {
			Releases []ledger.Release `json:"releases"`
		}{rels}, func(w io.Writer) error {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "seq\tbudget\tepsilon\tdelta\tmechanism\tanalyst\tkey\ttime")
			for _, r := range rels {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Budget, formatFloat(r.Cost.Epsilon), formatFloat(r.Cost.Delta),
					orDash(r.Mechanism.String()), orDash(r.Analyst), orDash(r.Key), r.Time.Format(time.RFC3339Nano))
			}
			return tw.Flush()
		})
	})
	f := cmd.Flags()
	f.StringVar(&budget, "budget", "", "")
	f.Int64Var(&after, "after", 0, "")
	f.Int64Var(&limit, "limit", 0, "")
	return cmd
}

// ---- remaining ----

const ledgerRemainingUsage = `Usage: dpkit ledger remaining --db PATH|URL --budget ID [--eps E] [--delta D] [--json]

Under the budget's policy (and its parent's, for a sub-budget): how many more releases of
cost (E, D) fit one after another, and the largest ε one more release with δ = D may
have. A snapshot: concurrent spends may use the budget meanwhile.

For a Gaussian budget (--mechanism gaussian, --filter gaussian) both are in μ: --eps is
read as the μ of each further release (under the Gaussian filter; a fixed Gaussian budget
counts releases), and the answer is the largest μ one more release may have.

Flags:
  --budget ID     the budget (required)
  --eps E         the cost's ε (Gaussian budgets: its μ), finite ≥ 0 (default 0)
  --delta D       the cost's δ in [0, 1] (default 0)
  --db PATH|URL   SQLite file or postgres:// URL (required)
  --json          print {"cost":{"epsilon":…,"delta":…},"releases":…,
                  "next_allowed":…,"next_epsilon":…}; releases 10^12 means "at least"
  -h, --help      show this help
`

func newLedgerRemaining(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	var budget string
	eps, delta := epsilonFlag(), deltaFlag()
	cmd := subcommand("remaining", ledgerRemainingUsage, c, func(ctx context.Context) error {
		if budget == "" {
			return usagef("missing --budget ID")
		}
		l, closeFn, err := c.open(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		r, err := l.Remaining(ctx, budget, dpkit.Budget{Epsilon: eps.value, Delta: delta.value})
		if err != nil {
			return err
		}
		def, err := l.Definition(ctx, budget)
		if err != nil {
			return err
		}
		return c.output(r, func(w io.Writer) error {
			if p := def.Policy; p.Mechanism == ledger.GaussianMechanism || p.Filter == ledger.GaussianFilter {
				if p.PerReleaseMu != nil {
					fmt.Fprintf(w, "Gaussian releases (each of mu at most %s) that still fit: %s\n", formatFloat(*p.PerReleaseMu), countText(r.Releases))
				} else {
					fmt.Fprintf(w, "Gaussian releases of mu %s that still fit: %s\n", formatFloat(eps.value), countText(r.Releases))
				}
				if r.NextAllowed {
					_, err := fmt.Fprintf(w, "largest mu of the next release: %s\n", formatFloat(r.NextEpsilon))
					return err
				}
				_, err := fmt.Fprintln(w, "no further release fits")
				return err
			}
			fmt.Fprintf(w, "releases of (epsilon %s, delta %s) that still fit: %s\n", formatFloat(eps.value), formatFloat(delta.value), countText(r.Releases))
			if r.NextAllowed {
				_, err := fmt.Fprintf(w, "largest epsilon of the next release with delta %s: %s\n", formatFloat(delta.value), formatFloat(r.NextEpsilon))
				return err
			}
			_, err := fmt.Fprintf(w, "no further release with delta %s fits\n", formatFloat(delta.value))
			return err
		})
	})
	f := cmd.Flags()
	f.StringVar(&budget, "budget", "", "")
	f.Var(eps, "eps", "")
	f.Var(delta, "delta", "")
	return cmd
}

func countText(n int64) string {
	if n >= 1_000_000_000_000 {
		return "at least 10^12"
	}
	return strconv.FormatInt(n, 10)
}

// ---- audit ----

const ledgerAuditUsage = `Usage: dpkit ledger audit --db PATH|URL --budget ID [--json]

Replay a budget's release log from an empty budget through its policy (every release
must be accepted again), check that the recorded statistics equal the replayed ones
exactly, and, for fixed and plan budgets, recompose the used slots independently.

Flags:
  --budget ID     the budget (required)
  --db PATH|URL   SQLite file or postgres:// URL (required)
  --json          print {"budget":…,"releases":…,"spent_epsilon":…,"spent_delta":…}
  -h, --help      show this help

Exit status: 0 consistent; 1 inconsistent (the message says where) or unknown budget.
`

func newLedgerAudit(s streams) *cobra.Command {
	c := &ledgerCommon{s: s}
	var budget string
	cmd := subcommand("audit", ledgerAuditUsage, c, func(ctx context.Context) error {
		if budget == "" {
			return usagef("missing --budget ID")
		}
		l, closeFn, err := c.open(ctx, false)
		if err != nil {
			return err
		}
		defer closeFn()
		a, err := l.Audit(ctx, budget)
		if err != nil {
			return err
		}
		return c.output(a, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "budget %q consistent: %d releases replayed; spent epsilon %s, delta %s\n", a.Budget, a.Releases,
				formatFloat(a.SpentEpsilon), formatFloat(a.SpentDelta))
			return err
		})
	})
	cmd.Flags().StringVar(&budget, "budget", "", "")
	return cmd
}

// releaseMechanism converts --mechanism TEXT to the descriptor the ledger records: a
// JSON descriptor ({"kind":…}) as it is, the KIND:key=value form of one release as the
// typed descriptor of that mechanism, and any other text as a note (kind text), the way
// the ledger recorded free text before descriptors.
func releaseMechanism(text string) (mechanism.Descriptor, error) {
	var d mechanism.Descriptor
	switch {
	case text == "":
		return d, nil
	case strings.HasPrefix(strings.TrimSpace(text), "{"):
		if err := json.Unmarshal([]byte(text), &d); err != nil {
			return d, usagef("invalid --mechanism %q: %s", text, describe(err))
		}
		return d, nil
	}
	if it, err := parseMechanism(text); err == nil && it.Count == 1 {
		if d, err := mechanism.DescribePLD(it.Mechanism); err == nil {
			return d, nil
		}
	}
	return mechanism.Describe(mechanism.Text{Text: text}), nil
}
