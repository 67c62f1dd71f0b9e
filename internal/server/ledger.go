package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// LedgerAccountant adapts a *ledger.Ledger to the Accountant the handlers use. Each
// dataset has one top-level budget whose ID is the dataset's name.
type LedgerAccountant struct {
	L *ledger.Ledger
}

var _ Accountant = LedgerAccountant{}

// policy translates a dataset's policy to the ledger's. The adaptive policy uses the
// basic privacy filter (Σε ≤ ε, Σδ ≤ δ, summed exactly), valid for adaptively chosen
// costs; the fixed policy lets the ledger calibrate (ε0, δ0) for max_queries releases
// with its documented per-release δ rule (δ0 = δ/(2k)).
func (p PolicySpec) ledger() ledger.Policy {
	if p.Mode == "adaptive" {
		return ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}
	}
	return ledger.Policy{Kind: ledger.Fixed, Releases: p.MaxQueries}
}

// specOf translates back.
func specOf(p ledger.Policy) PolicySpec {
	if p.Kind == ledger.Adaptive {
		return PolicySpec{Mode: "adaptive"}
	}
	return PolicySpec{Mode: string(p.Kind), MaxQueries: p.Releases}
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

// Check implements Accountant. The key is not looked at (Recorded does): the release's
// mechanism is known only once it is computed, and the ledger compares it for a
// recorded key.
func (a LedgerAccountant) Check(ctx context.Context, budget string, sp Spend) error {
	sp.Key, sp.Mechanism, sp.Payload = "", mechanism.Descriptor{}, nil
	req, err := a.request(ctx, budget, sp)
	if err != nil {
		return err
	}
	_, err = a.L.Check(ctx, req)
	return translate(err)
}

// PerQuery implements Accountant (the ledger caches definitions).
func (a LedgerAccountant) PerQuery(ctx context.Context, budget string) (*dpkit.Budget, error) {
	def, err := a.L.Definition(ctx, budget)
	if err != nil {
		return nil, translate(err)
	}
	return def.Policy.PerRelease, nil
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
	return st
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
