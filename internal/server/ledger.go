package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
)

// LedgerAccountant adapts a *ledger.Ledger to the Accountant the handlers use. Each
// dataset has one top-level budget whose ID is the dataset's name.
type LedgerAccountant struct {
	L *ledger.Ledger
}

var _ Accountant = LedgerAccountant{}

// policy translates a dataset's policy to the ledger's: adaptive with its privacy filter
// (basic: Σε ≤ ε, Σδ ≤ δ summed exactly; advanced; gaussian), the plan's costs, or fixed,
// where the ledger calibrates max_queries releases ((ε0, δ0) with its per-release δ rule
// δ0 = δ/(2k), or δ0 = 0 when the releases are pure, or μ0 = μ/√k for Gaussian
// releases).
func (p PolicySpec) ledger() ledger.Policy {
	switch p.Mode {
	case "adaptive":
		f := ledger.Filter(p.Filter)
		if f == "" {
			f = ledger.BasicFilter
		}
		return ledger.Policy{Kind: ledger.Adaptive, Filter: f, FilterDelta: p.FilterDelta}
	case "plan":
		return ledger.Policy{Kind: ledger.Plan, Plan: p.Plan}
	}
	lp := ledger.Policy{Kind: ledger.Fixed, Releases: p.MaxQueries, Mechanism: p.Mechanism}
	if p.Pure {
		zero := 0.0
		lp.ReleaseDelta = &zero
	}
	return lp
}

// specOf translates back: a fixed budget whose per-release δ0 is 0 has pure releases
// (also one created with the rule δ0 = δ/(2k) from a total δ of 0).
func specOf(p ledger.Policy) PolicySpec {
	switch p.Kind {
	case ledger.Adaptive:
		return PolicySpec{Mode: "adaptive", Filter: string(p.Filter), FilterDelta: p.FilterDelta}
	case ledger.Plan:
		return PolicySpec{Mode: "plan", Plan: p.Plan}
	}
	pure := p.Mechanism == "" && p.ReleaseDelta != nil && *p.ReleaseDelta == 0
	return PolicySpec{Mode: string(p.Kind), MaxQueries: p.Releases, Mechanism: p.Mechanism, Pure: pure}
}

// Create implements Accountant.
func (a LedgerAccountant) Create(ctx context.Context, budget string, total dpkit.Budget, policy PolicySpec) error {
	_, err := a.L.Create(ctx, ledger.Spec{ID: budget, Total: total, Policy: policy.ledger()})
	return translate(err)
}

// Spend implements Accountant. Under the fixed policy the release is charged the
// calibrated per-query cost.
func (a LedgerAccountant) Spend(ctx context.Context, budget string, sp Spend) (Receipt, error) {
	req, err := a.request(ctx, budget, sp)
	if err != nil {
		return Receipt{}, err
	}
	rc, err := a.L.Spend(ctx, req)
	if err != nil {
		return Receipt{}, translate(err)
	}
	// The status right after this release, from the spend's own statistics (no read);
	// the current status for a replay.
	ls, err := a.L.StatusAfter(ctx, rc)
	if err != nil {
		return Receipt{}, translate(err)
	}
	return Receipt{Number: rc.Release.Number, Charged: rc.Release.Cost, Replayed: rc.Replayed, Status: statusOf(ls), Payload: rc.Release.Payload}, nil
}

// request is the ledger's request for sp.
func (a LedgerAccountant) request(ctx context.Context, budget string, sp Spend) (ledger.Request, error) {
	cost := sp.Cost
	if cost == nil {
		def, err := a.L.Definition(ctx, budget)
		if err != nil {
			return ledger.Request{}, translate(err)
		}
		if def.Policy.PerRelease == nil {
			return ledger.Request{}, &dpkit.ParamError{Pkg: "server", Name: "epsilon", Value: nil, Want: "the cost of the query (the budget has no fixed per-query cost)"}
		}
		cost = def.Policy.PerRelease
	}
	return ledger.Request{Budget: budget, Cost: *cost, Mechanism: sp.Mechanism, Analyst: sp.Analyst, Key: sp.Key, Payload: sp.Payload}, nil
}

// Recorded implements Accountant.
func (a LedgerAccountant) Recorded(ctx context.Context, budget, key string) (Receipt, bool, error) {
	rel, found, err := a.L.Recorded(ctx, budget, key)
	if err != nil || !found {
		return Receipt{}, false, translate(err)
	}
	st, err := a.Status(ctx, budget)
	if err != nil {
		return Receipt{}, false, err
	}
	return Receipt{Number: rel.Number, Charged: rel.Cost, Replayed: true, Status: st, Payload: rel.Payload}, true, nil
}

// Check implements Accountant. The key is not looked at (Recorded does). The mechanism
// is the one the caller expects the release to run (a Gaussian budget needs its μ),
// or none.
func (a LedgerAccountant) Check(ctx context.Context, budget string, sp Spend) error {
	sp.Key, sp.Payload = "", nil
	req, err := a.request(ctx, budget, sp)
	if err != nil {
		return err
	}
	_, err = a.L.Check(ctx, req)
	return translate(err)
}

// Costs implements Accountant (the ledger caches definitions).
func (a LedgerAccountant) Costs(ctx context.Context, budget string) (Costs, error) {
	def, err := a.L.Definition(ctx, budget)
	if err != nil {
		return Costs{}, translate(err)
	}
	c := Costs{Total: def.Total, PerQuery: def.Policy.PerRelease, PerQueryMu: def.Policy.PerReleaseMu}
	if def.Policy.Kind == ledger.Plan {
		ls, err := a.L.Status(ctx, budget)
		if err != nil {
			return Costs{}, translate(err)
		}
		c.PerQuery = statusOf(ls).PerQuery
		if c.PerQuery == nil {
			last := def.Policy.Plan[len(def.Policy.Plan)-1]
			c.PerQuery = &last // the ledger refuses it: every slot is spent
		}
	}
	return c, nil
}

// subBudget is the ID of an analyst's budget within a dataset's.
func subBudget(dataset, keyID string) string { return dataset + ":" + keyID }

// AnalystBudget implements Accountant.
func (a LedgerAccountant) AnalystBudget(ctx context.Context, dataset, keyID string) (string, error) {
	id := subBudget(dataset, keyID)
	if _, err := a.L.Definition(ctx, id); err != nil {
		if errors.Is(err, ledger.ErrUnknownBudget) {
			return dataset, nil
		}
		return "", translate(err)
	}
	return id, nil
}

// GrantBudget implements Accountant: a sub-budget (ledger.Spec.Parent) whose policy
// follows the dataset's — the Gaussian filter under a Gaussian policy, the basic filter
// otherwise (each release is charged its cost to both budgets, as the command line's
// sub-budgets).
func (a LedgerAccountant) GrantBudget(ctx context.Context, dataset, keyID string, total dpkit.Budget) error {
	parent, err := a.L.Definition(ctx, dataset)
	if err != nil {
		return translate(err)
	}
	p := ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}
	if parent.Policy.Mechanism == ledger.GaussianMechanism || parent.Policy.Filter == ledger.GaussianFilter {
		p.Filter = ledger.GaussianFilter
	}
	id := subBudget(dataset, keyID)
	if def, err := a.L.Definition(ctx, id); err == nil {
		if def.Total == total {
			return nil // the same grant again
		}
		return fmt.Errorf("%w: key %s already has a budget of %v on dataset %q (budgets are immutable)", ErrExists, keyID, def.Total, dataset)
	}
	_, err = a.L.Create(ctx, ledger.Spec{ID: id, Parent: dataset, Total: total, Policy: p})
	return translate(err)
}

// Status implements Accountant.
func (a LedgerAccountant) Status(ctx context.Context, budget string) (Status, error) {
	ls, err := a.L.Status(ctx, budget)
	if err != nil {
		return Status{}, translate(err)
	}
	return statusOf(ls), nil
}

// statusOf translates a ledger status.
func statusOf(ls ledger.Status) Status {
	st := Status{
		Total:    ls.Total,
		Spent:    dpkit.Budget{Epsilon: ls.SpentEpsilon, Delta: ls.SpentDelta},
		Releases: ls.Releases,
		Policy:   specOf(ls.Policy),
		SpentMu:  ls.SpentMu,
	}
	if p := ls.Policy; p.Kind == ledger.Fixed && p.PerRelease != nil {
		// The fixed accountant accepts a release while fewer than k are recorded.
		left := max(p.Releases-ls.Releases, 0)
		slot := *p.PerRelease
		st.Remaining, st.PerQuery = &left, &slot
		if ls.Releases > 0 {
			st.Costs, st.Counts = []dpkit.Budget{slot}, []int64{ls.Releases}
		}
	}
	if p := ls.Policy; p.Kind == ledger.Plan {
		// The plan accountant accepts its slots in order: the first Releases are used.
		used := min(ls.Releases, int64(len(p.Plan)))
		left := int64(len(p.Plan)) - used
		st.Remaining = &left
		if left > 0 {
			slot := p.Plan[used]
			st.PerQuery = &slot
		}
		st.Costs, st.Counts = countCosts(p.Plan[:used])
	}
	return st
}

// countCosts returns the distinct costs of cs, in order of first appearance, and how
// many times each appears.
func countCosts(cs []dpkit.Budget) ([]dpkit.Budget, []int64) {
	var costs []dpkit.Budget
	var counts []int64
	at := map[dpkit.Budget]int{}
	for _, c := range cs {
		i, ok := at[c]
		if !ok {
			i = len(costs)
			at[c] = i
			costs, counts = append(costs, c), append(counts, 0)
		}
		counts[i]++
	}
	return costs, counts
}

// Releases implements Accountant.
func (a LedgerAccountant) Releases(ctx context.Context, budget string, page Page) ([]Release, error) {
	rels, err := a.L.Releases(ctx, budget, ledger.ReleaseFilter{AfterNumber: page.After, Analyst: page.Analyst, Limit: page.Limit})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]Release, len(rels))
	for i, r := range rels {
		out[i] = Release{Number: r.Number, Time: r.Time, Charged: r.Cost, Analyst: r.Analyst, Key: r.Key, Mechanism: r.Mechanism, Payload: r.Payload}
	}
	return out, nil
}

// translate maps the ledger's errors to the service's.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ledger.ErrBudgetExceeded):
		return fmt.Errorf("%w: %s", ErrBudgetExceeded, trimPrefix(err.Error()))
	case errors.Is(err, ledger.ErrIdempotencyConflict):
		return fmt.Errorf("%w: %s", ErrKeyConflict, trimPrefix(err.Error()))
	case errors.Is(err, ledger.ErrBudgetExists):
		return fmt.Errorf("%w: %s", ErrExists, trimPrefix(err.Error()))
	case errors.Is(err, ledger.ErrUnknownBudget):
		return fmt.Errorf("%w: %s", ErrNotFound, trimPrefix(err.Error()))
	}
	return err
}
