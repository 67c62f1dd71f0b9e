package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/sqlite"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// A plan of 100 Gaussian releases (σ = 40, sensitivity 1) within (ε = 2, δ = 1e-6):
// their privacy loss distributions compose to μ = 0.25 Gaussian DP, ε(1e-6) ≈ 1.061
// (closed form, pld.GaussianEpsilon), so the plan fits; the same slots described only by
// their (ε, δ) = (0.25, 1e-20) would not (exact KOV composition: ε = 13.93 > 2).
func TestPlanWithMechanisms(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"), &sqlite.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := ledger.New(store)
	total := dpkit.Budget{Epsilon: 2, Delta: 1e-6}
	const n = 100
	plan := make([]dpkit.Budget, n)
	names := make([]mechanism.Descriptor, n)
	for i := range plan {
		plan[i] = dpkit.Budget{Epsilon: 0.25, Delta: 1e-20}
		names[i] = mechanism.Describe(mechanism.GaussianNoise{Sigma: 40, Sensitivity: 1})
	}
	if _, err := l.Create(ctx, ledger.Spec{ID: "p", Total: total, Policy: ledger.Policy{Kind: ledger.Plan, Plan: plan}}); !errors.Is(err, dpkit.ErrInfeasible) {
		t.Fatalf("the (ε, δ)-only plan should not fit: %v", err)
	}
	if _, err := l.Create(ctx, ledger.Spec{ID: "p", Total: total, Policy: ledger.Policy{Kind: ledger.Plan, Plan: plan, PlanMechanisms: names}}); err != nil {
		t.Fatalf("the mechanism plan should fit: %v", err)
	}
	// A release that does not run the planned mechanism is refused and records nothing.
	_, err = l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan[0], Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 4, Sensitivity: 1}), Key: "x"})
	var ex *ledger.BudgetExceededError
	if !errors.As(err, &ex) {
		t.Fatalf("a Laplace release in a Gaussian slot: %v", err)
	}
	for i := range n {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan[i], Mechanism: names[i], Key: fmt.Sprint(i)}); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan[0], Mechanism: names[0], Key: "extra"}); !errors.As(err, &ex) {
		t.Fatalf("release beyond the plan: %v", err)
	}
	st, err := l.Status(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pld.GaussianEpsilon(0.25, 1e-6) // 100 × (1/40)² = μ² = 1/16
	if st.Releases != n || st.SpentEpsilon < want || st.SpentEpsilon > want*(1+1e-9) || st.SpentEpsilon > total.Epsilon {
		t.Errorf("status %+v: spent ε %v, want the closed form %v (never below)", st, st.SpentEpsilon, want)
	}
	if _, err := l.Audit(ctx, "p"); err != nil {
		t.Errorf("audit: %v", err)
	}
	bad := []ledger.Policy{
		{Kind: ledger.Plan, Plan: plan, PlanMechanisms: names[:3]},
		{Kind: ledger.Plan, Plan: plan[:1], PlanMechanisms: []mechanism.Descriptor{mechanism.Describe(mechanism.GaussianNoise{Sigma: -1, Sensitivity: 1})}},
		{Kind: ledger.Plan, Plan: plan[:1], PlanMechanisms: []mechanism.Descriptor{mechanism.Describe(mechanism.Text{Text: "gaussian:sigma=1"})}},
	}
	for i, p := range bad {
		if _, err := l.Create(ctx, ledger.Spec{ID: fmt.Sprint("bad", i), Total: total, Policy: p}); err == nil {
			t.Errorf("bad policy %d accepted", i)
		}
	}
}
