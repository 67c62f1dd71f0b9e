package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// Run runs the contract suite against h.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"Create", testCreate},
		{"Fixed", testFixed},
		{"Plan", testPlan},
		{"AdaptiveBasicExact", testAdaptiveBasic},
		{"AdaptiveAdvanced", testAdaptiveAdvanced},
		{"Idempotency", testIdempotency},
		{"Payload", testPayload},
		{"Check", testCheck},
		{"NumbersAndFilters", testNumbersAndFilters},
		{"StatusAfter", testStatusAfter},
		{"BadInput", testBadInput},
		{"SubBudgets", testSubBudgets},
		{"Reopen", testReopen},
		{"Concurrent64", testConcurrent},
		{"ConcurrentGaussian64", testConcurrentGaussian},
		{"GroupCommit", testGroupCommit},
		{"CloseDrains", testCloseDrains},
		{"TwoProcesses", testTwoProcesses},
		{"Crash", testCrash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// open opens a fresh ledger for one test.
func open(t *testing.T, h Harness) (*ledger.Ledger, ledger.Store, string) {
	t.Helper()
	loc := h.NewLocation(t)
	s, err := h.Open(context.Background(), loc, true)
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	t.Cleanup(func() { s.Close() })
	return ledger.New(s), s, loc
}

func mustCreate(t *testing.T, l *ledger.Ledger, spec ledger.Spec) ledger.Definition {
	t.Helper()
	d, err := l.Create(context.Background(), spec)
	if err != nil {
		t.Fatalf("create %+v: %v", spec, err)
	}
	return d
}

func spend(l *ledger.Ledger, budget string, eps, delta float64) (ledger.Receipt, error) {
	return l.Spend(context.Background(), ledger.Request{Budget: budget, Cost: dpkit.Budget{Epsilon: eps, Delta: delta}})
}

func mustSpend(t *testing.T, l *ledger.Ledger, budget string, eps, delta float64) ledger.Receipt {
	t.Helper()
	r, err := spend(l, budget, eps, delta)
	if err != nil {
		t.Fatalf("spend (%g, %g) on %s: %v", eps, delta, budget, err)
	}
	return r
}

func mustRefuse(t *testing.T, l *ledger.Ledger, budget string, eps, delta float64) *ledger.BudgetExceededError {
	t.Helper()
	_, err := spend(l, budget, eps, delta)
	var ex *ledger.BudgetExceededError
	if !errors.As(err, &ex) || !errors.Is(err, ledger.ErrBudgetExceeded) || !errors.Is(err, dpkit.ErrInfeasible) {
		t.Fatalf("spend (%g, %g) on %s: got %v, want a *BudgetExceededError", eps, delta, budget, err)
	}
	return ex
}

func mustAudit(t *testing.T, l *ledger.Ledger, id string, wantReleases int64) ledger.AuditReport {
	t.Helper()
	a, err := l.Audit(context.Background(), id)
	if err != nil {
		t.Fatalf("audit %s: %v", id, err)
	}
	if a.Releases != wantReleases {
		t.Fatalf("audit %s: %d releases, want %d", id, a.Releases, wantReleases)
	}
	return a
}

func status(t *testing.T, l *ledger.Ledger, id string) ledger.Status {
	t.Helper()
	s, err := l.Status(context.Background(), id)
	if err != nil {
		t.Fatalf("status %s: %v", id, err)
	}
	return s
}

func remaining(t *testing.T, l *ledger.Ledger, id string, eps, delta float64) ledger.Remaining {
	t.Helper()
	r, err := l.Remaining(context.Background(), id, dpkit.Budget{Epsilon: eps, Delta: delta})
	if err != nil {
		t.Fatalf("remaining %s: %v", id, err)
	}
	return r
}

func testCreate(t *testing.T, h Harness) {
	ctx := context.Background()
	l, s, _ := open(t, h)
	rd := 1e-9
	specs := []ledger.Spec{
		{ID: "b-fixed", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 10}},
		{ID: "a-fixed", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 7, ReleaseDelta: &rd}},
		{ID: "plan", Total: dpkit.Budget{Epsilon: 2, Delta: 1e-5}, Policy: ledger.Policy{Kind: ledger.Plan, Plan: []dpkit.Budget{{Epsilon: 0.1, Delta: 1e-7}, {Epsilon: 1.0 / 3, Delta: 0}}}},
		{ID: "adaptive", Total: dpkit.Budget{Epsilon: 0.3, Delta: 0}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}},
		{ID: "advanced", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.AdvancedFilter, FilterDelta: 5e-7}},
		{ID: "advanced.alice", Parent: "advanced", Total: dpkit.Budget{Epsilon: 0.5, Delta: 0}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}},
	}
	var defs []ledger.Definition
	for _, sp := range specs {
		defs = append(defs, mustCreate(t, l, sp))
	}
	// The fixed policy is calibrated: δ0 = δ/(2k) unless given, ε0 the exact maximum.
	if got := *defs[0].Policy.PerRelease; got.Delta != 1e-6/20 || got.Epsilon <= 0.1 {
		t.Errorf("fixed per-release cost %v: want δ0 = 5e-8 and ε0 above the basic 0.1", got)
	}
	if got := defs[1].Policy.PerRelease.Delta; got != rd {
		t.Errorf("fixed release delta %g, want %g", got, rd)
	}
	// Definitions read back exactly (floats, policy, time) from a fresh ledger (no cache).
	l2 := ledger.New(s)
	for _, d := range defs {
		got, err := l2.Definition(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, d) || !got.Created.Equal(d.Created) {
			t.Errorf("definition %s read back as %+v, want %+v", d.ID, got, d)
		}
	}
	all, err := l.Budgets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range all {
		ids = append(ids, d.ID)
	}
	if want := []string{"a-fixed", "adaptive", "advanced", "advanced.alice", "b-fixed", "plan"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("budgets %v, want %v", ids, want)
	}
	// Errors.
	if _, err := l.Create(ctx, specs[3]); !errors.Is(err, ledger.ErrBudgetExists) {
		t.Errorf("duplicate create: %v, want ErrBudgetExists", err)
	}
	sub := ledger.Spec{ID: "x", Parent: "nope", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}
	if _, err := l.Create(ctx, sub); !errors.Is(err, ledger.ErrUnknownBudget) {
		t.Errorf("unknown parent: %v, want ErrUnknownBudget", err)
	}
	sub.Parent = "advanced.alice"
	var pe *dpkit.ParamError
	if _, err := l.Create(ctx, sub); !errors.As(err, &pe) {
		t.Errorf("nested sub-budget: %v, want a *dpkit.ParamError", err)
	}
	// A plan whose exact composition exceeds the total: 2 × ε=1 at δ=0 needs ε=2.
	bad := ledger.Spec{ID: "bad", Total: dpkit.Budget{Epsilon: 1.99, Delta: 0}, Policy: ledger.Policy{Kind: ledger.Plan, Plan: []dpkit.Budget{{Epsilon: 1}, {Epsilon: 1}}}}
	if _, err := l.Create(ctx, bad); !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("infeasible plan: %v, want dpkit.ErrInfeasible", err)
	}
	bad.Total.Epsilon = 2
	mustCreate(t, l, bad) // exactly 2: fits
	for _, p := range []ledger.Policy{
		{Kind: "odometer"},
		{Kind: ledger.Fixed, Releases: 0},
		{Kind: ledger.Adaptive, Filter: "fancy"},
		{Kind: ledger.Adaptive, Filter: ledger.AdvancedFilter, FilterDelta: 0},
		{Kind: ledger.Adaptive, Filter: ledger.AdvancedFilter, FilterDelta: 2e-6}, // above total δ
		{Kind: ledger.Plan},
		{Kind: ledger.Plan, Plan: []dpkit.Budget{{Epsilon: math.NaN()}}},
	} {
		_, err := l.Create(ctx, ledger.Spec{ID: "p", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: p})
		if !errors.As(err, &pe) {
			t.Errorf("policy %+v: %v, want a *dpkit.ParamError", p, err)
		}
	}
	for _, total := range []dpkit.Budget{{Epsilon: math.NaN()}, {Epsilon: -1}, {Epsilon: math.Inf(1)}, {Epsilon: 1, Delta: 1.5}} {
		_, err := l.Create(ctx, ledger.Spec{ID: "p", Total: total, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
		if !errors.As(err, &pe) {
			t.Errorf("total %v: %v, want a *dpkit.ParamError", total, err)
		}
	}
}

func testFixed(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	d := mustCreate(t, l, ledger.Spec{ID: "f", Total: total, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 10}})
	slot := *d.Policy.PerRelease
	// Reference: the calibration is the exact inverse (compose.MaxEpsilonPerQuery); 10
	// slots meet the total, and 10 slots of ε0·(1 + 1e-9) do not (it is the maximum).
	if r, err := compose.Delta([]compose.Mech{{Epsilon: slot.Epsilon * (1 + 1e-9), Delta: slot.Delta, Count: 10}}, 1, nil); err != nil || r.Delta <= total.Delta {
		t.Errorf("ε0 = %g is not the largest per-release ε: %v, %v", slot.Epsilon, r, err)
	}
	if r := remaining(t, l, "f", slot.Epsilon, slot.Delta); r.Releases != 10 || !r.NextAllowed || r.NextEpsilon != slot.Epsilon {
		t.Errorf("remaining before spends: %+v", r)
	}
	mustRefuse(t, l, "f", math.Nextafter(slot.Epsilon, 2), slot.Delta) // above the slot
	mustRefuse(t, l, "f", slot.Epsilon, slot.Delta*2)
	mustSpend(t, l, "f", 0, 0) // cheaper than a slot: takes one
	for range 9 {
		mustSpend(t, l, "f", slot.Epsilon, slot.Delta)
	}
	ex := mustRefuse(t, l, "f", slot.Epsilon, slot.Delta)
	if ex.Budget != "f" || ex.Left.Releases != 0 || ex.Left.NextAllowed {
		t.Errorf("refusal %+v: want budget f, nothing left", ex)
	}
	st := status(t, l, "f")
	if st.Releases != 10 || st.SpentEpsilon > total.Epsilon || st.SpentDelta > total.Delta {
		t.Errorf("status %+v", st)
	}
	// Spent is the exact composition of 10 slots: ε at δ=1e-6 within 1e-9 of the total.
	if math.Abs(st.SpentEpsilon-1) > 1e-9 {
		t.Errorf("spent ε %g, want 1 (the calibrated maximum) within 1e-9", st.SpentEpsilon)
	}
	a := mustAudit(t, l, "f", 10)
	if a.SpentEpsilon != st.SpentEpsilon || a.SpentDelta != st.SpentDelta {
		t.Errorf("audit %+v disagrees with status %+v", a, st)
	}
}

func testPlan(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	plan := []dpkit.Budget{{Epsilon: 0.5}, {Epsilon: 0.25}, {Epsilon: 0.25}}
	mustCreate(t, l, ledger.Spec{ID: "p", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Plan, Plan: plan}})
	if r := remaining(t, l, "p", 0.25, 0); r.Releases != 3 || r.NextEpsilon != 0.5 {
		t.Errorf("remaining(0.25) = %+v, want 3 releases, next ε 0.5", r)
	}
	if r := remaining(t, l, "p", 0.5, 0); r.Releases != 1 {
		t.Errorf("remaining(0.5) = %+v, want 1 (the plan is consumed in order)", r)
	}
	mustRefuse(t, l, "p", 0.5, 1e-9) // δ above the slot
	mustSpend(t, l, "p", 0.5, 0)
	ex := mustRefuse(t, l, "p", 0.5, 0) // slot 2 is 0.25
	if ex.Left.Releases != 0 || ex.Left.NextEpsilon != 0.25 {
		t.Errorf("refusal left %+v, want next ε 0.25", ex.Left)
	}
	mustSpend(t, l, "p", 0.2, 0) // charged as its slot, 0.25
	mustSpend(t, l, "p", 0.25, 0)
	mustRefuse(t, l, "p", 0, 0)
	// Pure plan: spent ε is Σ slots = 1 exactly (compose sums exactly).
	if st := status(t, l, "p"); st.Releases != 3 || st.SpentEpsilon != 1 || st.SpentDelta != 0 {
		t.Errorf("status %+v, want 3 releases, spent (1, 0)", st)
	}
	mustAudit(t, l, "p", 3)
}

// The double nearest 0.1 is 0.1000000000000000055511151231257827021181583404541015625
// (IEEE 754; exact), so ten of them sum to 1 + 5.55e-17 > 1: the tenth must be refused,
// although float64 addition gives 0.9999999999999999. Eight of 0.125 sum to 1 exactly.
func testAdaptiveBasic(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	for _, id := range []string{"tenths", "eighths"} {
		mustCreate(t, l, ledger.Spec{ID: id, Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	}
	if r := remaining(t, l, "tenths", 0.1, 0); r.Releases != 9 || r.NextEpsilon != 1 {
		t.Errorf("remaining(0.1) = %+v, want 9 releases (exact sums), next ε 1", r)
	}
	for range 9 {
		mustSpend(t, l, "tenths", 0.1, 1e-7)
	}
	ex := mustRefuse(t, l, "tenths", 0.1, 0)
	// Left: 1 − 9·0.1d = 0.0999999999999999500399638918679556809365749359130859375
	// exactly; the next ε is the largest double at or below it.
	left, _ := new(big.Rat).SetString("0.0999999999999999500399638918679556809365749359130859375")
	want, _ := left.Float64()
	if new(big.Rat).SetFloat64(want).Cmp(left) > 0 {
		want = math.Nextafter(want, 0)
	}
	if ex.Left.NextEpsilon != want || ex.Left.Releases != 0 {
		t.Errorf("left %+v, want next ε %v", ex.Left, want)
	}
	mustRefuse(t, l, "tenths", 0, 2e-7) // δ: 9e-7 + 2e-7 > 1e-6
	mustSpend(t, l, "tenths", want, 0)
	mustRefuse(t, l, "tenths", math.SmallestNonzeroFloat64, 0)
	mustSpend(t, l, "tenths", 0, 0)
	for range 8 {
		mustSpend(t, l, "eighths", 0.125, 0)
	}
	mustRefuse(t, l, "eighths", math.SmallestNonzeroFloat64, 0)
	if st := status(t, l, "eighths"); st.SpentEpsilon != 1 || st.SpentDelta != 0 || st.Releases != 8 {
		t.Errorf("status %+v, want spent exactly (1, 0)", st)
	}
	if st := status(t, l, "tenths"); st.SpentEpsilon < 1 || st.SpentEpsilon > math.Nextafter(1, 2) || st.Releases != 11 {
		t.Errorf("status %+v, want spent ε 1 (rounded up, at most one ulp)", st)
	}
	mustAudit(t, l, "tenths", 11)
	mustAudit(t, l, "eighths", 8)
}

// advancedCapacity is an independent reference for the number m of releases of ε0 the
// advanced filter admits: solving sqrt(2aV) + V/2 = ε for s = sqrt(V) gives
// s = sqrt(2a + 2ε) − sqrt(2a), so m = ⌊(sqrt(2a+2ε) − sqrt(2a))² / ε0²⌋, evaluated here
// in 256-bit arithmetic (a = ln(1/δ') from math.Log, relative error < 2^-52). It also
// returns the distance of the quotient to the nearest integer, which must exceed the
// reference's uncertainty (~1e-13 relative) for the test to be meaningful.
func advancedCapacity(eps, filterDelta, eps0 float64) (int64, float64) {
	const prec = 256
	f := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	twoA := f(-2 * math.Log(filterDelta))
	s := new(big.Float).SetPrec(prec).Sqrt(new(big.Float).SetPrec(prec).Add(twoA, f(2*eps)))
	s.Sub(s, new(big.Float).SetPrec(prec).Sqrt(twoA))
	e0 := f(eps0)
	q := new(big.Float).SetPrec(prec).Mul(s, s)
	q.Quo(q, new(big.Float).SetPrec(prec).Mul(e0, e0))
	m, _ := q.Int64()
	frac, _ := new(big.Float).Sub(q, new(big.Float).SetInt64(m)).Float64()
	return m, math.Min(frac, 1-frac)
}

func testAdaptiveAdvanced(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	mustCreate(t, l, ledger.Spec{ID: "adv", Total: total, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.AdvancedFilter, FilterDelta: 1e-6}})
	const eps0 = 0.02
	m, margin := advancedCapacity(total.Epsilon, 1e-6, eps0)
	if margin < 1e-6 {
		t.Fatalf("reference too close to an integer (%g): pick another ε0", margin)
	}
	// ~87 releases of 0.02, where basic composition allows 50.
	if r := remaining(t, l, "adv", eps0, 0); r.Releases != m {
		t.Fatalf("remaining(%g) = %+v, want %d releases (closed-form reference)", eps0, r, m)
	}
	mustRefuse(t, l, "adv", 0.01, 1e-12) // δ'' = 0: no release may have δ > 0
	for range m {
		mustSpend(t, l, "adv", eps0, 0)
	}
	mustRefuse(t, l, "adv", eps0, 0)
	r := remaining(t, l, "adv", 0, 0)
	if !r.NextAllowed {
		t.Fatalf("remaining after %d: %+v", m, r)
	}
	if r.NextEpsilon > 0 {
		mustRefuse(t, l, "adv", math.Nextafter(r.NextEpsilon, 1), 0)
	}
	mustSpend(t, l, "adv", r.NextEpsilon, 0)
	st := status(t, l, "adv")
	if st.SpentEpsilon > total.Epsilon*(1+1e-12) || st.SpentEpsilon < total.Epsilon*(1-1e-3) {
		t.Errorf("filter level %g, want just below %g", st.SpentEpsilon, total.Epsilon)
	}
	mustAudit(t, l, "adv", m+1)
}

func testIdempotency(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	for _, id := range []string{"a", "b"} {
		mustCreate(t, l, ledger.Spec{ID: id, Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	}
	req := ledger.Request{Budget: "a", Cost: dpkit.Budget{Epsilon: 0.5}, Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 2, Sensitivity: 1}), Analyst: "alice", Key: "q-1"}
	first, err := l.Spend(ctx, req)
	if err != nil || first.Replayed {
		t.Fatalf("first spend: %+v, %v", first, err)
	}
	again, err := l.Spend(ctx, req)
	if err != nil || !again.Replayed || !reflect.DeepEqual(again.Release, first.Release) {
		t.Fatalf("same key, same content: %+v, %v; want the original %+v replayed", again, err, first)
	}
	if st := status(t, l, "a"); st.Releases != 1 || st.SpentEpsilon != 0.5 {
		t.Errorf("replay charged: %+v", st)
	}
	for _, alter := range []func(*ledger.Request){
		func(r *ledger.Request) { r.Cost.Epsilon = 0.25 },
		func(r *ledger.Request) { r.Cost.Delta = 1e-9 },
		func(r *ledger.Request) { r.Mechanism = mechanism.Descriptor{} },
		func(r *ledger.Request) { r.Analyst = "bob" },
	} {
		r := req
		alter(&r)
		if _, err := l.Spend(ctx, r); !errors.Is(err, ledger.ErrIdempotencyConflict) {
			t.Errorf("same key, content %+v: %v, want ErrIdempotencyConflict", r, err)
		}
	}
	// A replay is answered even when the budget is exhausted.
	mustSpend(t, l, "a", 0.5, 0)
	if r, err := l.Spend(ctx, req); err != nil || !r.Replayed {
		t.Errorf("replay on an exhausted budget: %+v, %v", r, err)
	}
	// Keys are per budget.
	req.Budget = "b"
	if r, err := l.Spend(ctx, req); err != nil || r.Replayed {
		t.Errorf("same key on another budget: %+v, %v", r, err)
	}
	mustAudit(t, l, "a", 2)
}

// testPayload: a release's payload is recorded with it, binary-safe, returned by the
// receipt and the history; a replay returns the first payload whatever the retry
// carries; a refused spend records nothing; an oversized payload is a ParamError.
func testPayload(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "p", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	binary := make([]byte, 512)
	for i := range binary {
		binary[i] = byte(i) // every byte value, NUL included, twice
	}
	req := ledger.Request{Budget: "p", Cost: dpkit.Budget{Epsilon: 0.5}, Mechanism: mechanism.Describe(mechanism.Text{Text: "m"}), Key: "k1", Payload: binary}
	first, err := l.Spend(ctx, req)
	if err != nil || first.Replayed || !bytes.Equal(first.Release.Payload, binary) {
		t.Fatalf("spend with a payload: %v, %v", first.Release.Payload, err)
	}
	retry := req
	retry.Payload = []byte(`{"another":"answer"}`)
	again, err := l.Spend(ctx, retry)
	if err != nil || !again.Replayed || !bytes.Equal(again.Release.Payload, binary) {
		t.Fatalf("replay with another payload: %+v, %v; want the first payload", again, err)
	}
	none, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: dpkit.Budget{Epsilon: 0.25}, Key: "k2", Payload: []byte{}})
	if err != nil || none.Release.Payload != nil {
		t.Fatalf("spend with an empty payload: %+v, %v; want a nil payload", none, err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: dpkit.Budget{Epsilon: 0.5}, Key: "k3", Payload: []byte("refused")}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("over budget: %v", err)
	}
	var pe *dpkit.ParamError
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: dpkit.Budget{Epsilon: 0.1}, Payload: make([]byte, ledger.MaxPayloadLen+1)}); !errors.As(err, &pe) || pe.Name != "payload" {
		t.Fatalf("oversized payload: %v, want a *dpkit.ParamError naming payload", err)
	}
	hist, err := l.History(ctx, "p", 0, 0)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %d releases, %v; want 2", len(hist), err)
	}
	if !bytes.Equal(hist[0].Payload, binary) || hist[1].Payload != nil || hist[0].Key != "k1" || hist[1].Key != "k2" {
		t.Errorf("history payloads %q, %q", hist[0].Payload, hist[1].Payload)
	}
	mustAudit(t, l, "p", 2)
}

// testStatusAfter: Ledger.StatusAfter of a receipt is the status right after its
// release: equal to Status read at once when spends are sequential; and, with 16
// goroutines spending concurrently, the receipts ordered by Seq see the release counts
// 1, 2, …, n — every spend was decided after exactly the releases committed before it.
func testStatusAfter(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	d := mustCreate(t, l, ledger.Spec{ID: "f", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 48}})
	cost := *d.Policy.PerRelease
	var early ledger.Receipt
	var earlyStatus ledger.Status
	for i := range 3 {
		rc := mustSpend(t, l, "f", cost.Epsilon, cost.Delta)
		got, err := l.StatusAfter(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		if want := status(t, l, "f"); !reflect.DeepEqual(got, want) || got.Releases != int64(i+1) {
			t.Fatalf("StatusAfter %+v, Status %+v", got, want)
		}
		if i == 0 {
			early, earlyStatus = rc, got
		}
	}
	if got, _ := l.StatusAfter(ctx, early); !reflect.DeepEqual(got, earlyStatus) {
		t.Errorf("StatusAfter of the first receipt later: %+v, want %+v", got, earlyStatus)
	}
	var mu sync.Mutex
	var receipts []ledger.Receipt
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				rc, err := spend(l, "f", cost.Epsilon, cost.Delta)
				if errors.Is(err, ledger.ErrBudgetExceeded) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				receipts = append(receipts, rc)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(receipts) != 45 {
		t.Fatalf("%d concurrent spends accepted, want 45", len(receipts))
	}
	sort.Slice(receipts, func(i, j int) bool { return receipts[i].Release.Seq < receipts[j].Release.Seq })
	for i, rc := range receipts {
		st, err := l.StatusAfter(ctx, rc)
		if err != nil {
			t.Fatal(err)
		}
		if st.Releases != int64(4+i) {
			t.Fatalf("receipt seq %d: StatusAfter counts %d releases, want %d", rc.Release.Seq, st.Releases, 4+i)
		}
	}
	// A replayed receipt: the current status.
	rc, err := l.Spend(ctx, ledger.Request{Budget: "f", Cost: cost, Key: "x"})
	if !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("spend on the exhausted budget: %+v %v", rc, err)
	}
	if st, err := l.StatusAfter(ctx, ledger.Receipt{Release: receipts[0].Release, Replayed: true}); err != nil || st.Releases != 48 {
		t.Errorf("StatusAfter of a replayed receipt: %+v %v, want the current status (48 releases)", st, err)
	}
}

func testBadInput(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "a", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	var pe *dpkit.ParamError
	for _, c := range []dpkit.Budget{
		{Epsilon: math.NaN()}, {Epsilon: -0.1}, {Epsilon: math.Inf(1)}, {Epsilon: math.Inf(-1)},
		{Epsilon: 0.1, Delta: math.NaN()}, {Epsilon: 0.1, Delta: -1e-9}, {Epsilon: 0.1, Delta: 1.5},
	} {
		if _, err := spend(l, "a", c.Epsilon, c.Delta); !errors.As(err, &pe) {
			t.Errorf("spend %v: %v, want a *dpkit.ParamError", c, err)
		}
		if _, err := l.Remaining(ctx, "a", c); !errors.As(err, &pe) {
			t.Errorf("remaining %v: %v, want a *dpkit.ParamError", c, err)
		}
	}
	mustRefuse(t, l, "a", 1e300, 0)                // oversized
	mustRefuse(t, l, "a", math.MaxFloat64, 0)      // oversized
	mustRefuse(t, l, "a", 0, 1)                    // δ = 1
	mustRefuse(t, l, "a", math.Nextafter(1, 2), 0) // one ulp above the total
	if _, err := spend(l, "missing", 0.1, 0); !errors.Is(err, ledger.ErrUnknownBudget) {
		t.Errorf("unknown budget: %v", err)
	}
	for _, f := range []func() error{
		func() error { _, err := l.Status(ctx, "missing"); return err },
		func() error { _, err := l.History(ctx, "missing", 0, 0); return err },
		func() error { _, err := l.Remaining(ctx, "missing", dpkit.Budget{}); return err },
		func() error { _, err := l.Audit(ctx, "missing"); return err },
	} {
		if err := f(); !errors.Is(err, ledger.ErrUnknownBudget) {
			t.Errorf("unknown budget: %v", err)
		}
	}
	for _, req := range []ledger.Request{
		{Budget: ""}, {Budget: "a b"}, {Budget: "a'; drop table x; --"},
		{Budget: "a", Key: "k\x00"}, {Budget: "a", Analyst: "\n"}, {Budget: "a", Mechanism: mechanism.Describe(mechanism.Text{Text: "\xff"})},
	} {
		if _, err := l.Spend(ctx, req); !errors.As(err, &pe) {
			t.Errorf("request %+v: %v, want a *dpkit.ParamError", req, err)
		}
	}
	if st := status(t, l, "a"); st.Releases != 0 {
		t.Errorf("bad input recorded releases: %+v", st)
	}
}

func testSubBudgets(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	basic := ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}
	mustCreate(t, l, ledger.Spec{ID: "flu", Total: dpkit.Budget{Epsilon: 1}, Policy: basic})
	mustCreate(t, l, ledger.Spec{ID: "flu.alice", Parent: "flu", Total: dpkit.Budget{Epsilon: 0.625}, Policy: basic})
	mustCreate(t, l, ledger.Spec{ID: "flu.bob", Parent: "flu", Total: dpkit.Budget{Epsilon: 0.625}, Policy: basic})
	mustSpend(t, l, "flu.alice", 0.5, 0)
	ex := mustRefuse(t, l, "flu.alice", 0.25, 0) // alice: 0.75 > 0.625
	if ex.Budget != "flu.alice" {
		t.Errorf("refused by %q, want flu.alice", ex.Budget)
	}
	mustSpend(t, l, "flu.bob", 0.375, 0)
	ex = mustRefuse(t, l, "flu.bob", 0.25, 0) // dataset: 0.5 + 0.375 + 0.25 > 1
	if ex.Budget != "flu" {
		t.Errorf("refused by %q, want the dataset budget flu", ex.Budget)
	}
	if r := remaining(t, l, "flu.bob", 0.0625, 0); r.Releases != 2 || r.NextEpsilon != 0.125 {
		t.Errorf("bob's remaining %+v, want 2 releases and next ε 0.125 (the dataset's)", r)
	}
	mustSpend(t, l, "flu", 0.125, 0)
	if st := status(t, l, "flu"); st.Releases != 3 || st.SpentEpsilon != 1 {
		t.Errorf("dataset status %+v, want 3 releases, ε 1", st)
	}
	hist, err := l.History(ctx, "flu", 0, 0)
	if err != nil || len(hist) != 3 {
		t.Fatalf("dataset history: %d, %v", len(hist), err)
	}
	if hist[0].Budget != "flu.alice" || hist[1].Budget != "flu.bob" || hist[2].Budget != "flu" || !(hist[0].Seq < hist[1].Seq && hist[1].Seq < hist[2].Seq) {
		t.Errorf("dataset history %+v", hist)
	}
	if h2, err := l.History(ctx, "flu", hist[0].Seq, 1); err != nil || len(h2) != 1 || h2[0].Seq != hist[1].Seq {
		t.Errorf("history after %d limit 1: %+v, %v", hist[0].Seq, h2, err)
	}
	if h3, err := l.History(ctx, "flu.bob", 0, 0); err != nil || len(h3) != 1 || h3[0].Budget != "flu.bob" {
		t.Errorf("bob's history: %+v, %v", h3, err)
	}
	mustAudit(t, l, "flu", 3)
	mustAudit(t, l, "flu.alice", 1)
	mustAudit(t, l, "flu.bob", 1)
}

// testCheck: Ledger.Check says what Spend would do without recording or charging
// anything — a replay (with the recorded payload) for a recorded key, a conflict for a
// recorded key with other content, a refusal for a release that does not fit, the
// release otherwise — and Spend then does what it said.
func testCheck(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "c", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	req := ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.75}, Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 2, Sensitivity: 1}), Analyst: "a", Key: "k", Payload: []byte("answer")}
	rc, err := l.Check(ctx, req)
	if err != nil || rc.Replayed || rc.Release.Seq != 0 || rc.Release.Cost != req.Cost {
		t.Fatalf("check of a fitting release: %+v, %v", rc, err)
	}
	if st := status(t, l, "c"); st.Releases != 0 {
		t.Fatalf("Check recorded something: %+v", st)
	}
	first := mustSpendReq(t, l, req)
	retry := req
	retry.Payload = []byte("another answer")
	rc, err = l.Check(ctx, retry)
	if err != nil || !rc.Replayed || !reflect.DeepEqual(rc.Release, first.Release) || string(rc.Release.Payload) != "answer" {
		t.Fatalf("check of a recorded key: %+v, %v; want the original %+v", rc, err, first.Release)
	}
	conflict := req
	conflict.Cost.Epsilon = 0.5
	if _, err := l.Check(ctx, conflict); !errors.Is(err, ledger.ErrIdempotencyConflict) {
		t.Fatalf("check of a key recorded with another cost: %v", err)
	}
	over := ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.5}, Key: "k2"}
	_, err = l.Check(ctx, over)
	var ex *ledger.BudgetExceededError
	if !errors.As(err, &ex) || ex.Budget != "c" {
		t.Fatalf("check of a release that does not fit: %v", err)
	}
	if _, err := l.Spend(ctx, over); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("the spend Check refused: %v", err)
	}
	if _, err := l.Check(ctx, ledger.Request{Budget: "nope", Cost: dpkit.Budget{Epsilon: 0.1}}); !errors.Is(err, ledger.ErrUnknownBudget) {
		t.Fatalf("check on an unknown budget: %v", err)
	}
	var pe *dpkit.ParamError
	if _, err := l.Check(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: math.NaN()}}); !errors.As(err, &pe) {
		t.Fatalf("check of a NaN cost: %v", err)
	}
	if st := status(t, l, "c"); st.Releases != 1 {
		t.Fatalf("status after the checks: %+v", st)
	}
	mustAudit(t, l, "c", 1)
}

func mustSpendReq(t *testing.T, l *ledger.Ledger, req ledger.Request) ledger.Receipt {
	t.Helper()
	r, err := l.Spend(context.Background(), req)
	if err != nil {
		t.Fatalf("spend %+v: %v", req, err)
	}
	return r
}

// testNumbersAndFilters: each release is numbered 1, 2, … among the releases of its
// top-level budget (those of its sub-budgets included), whatever other budgets do; a
// replay keeps its number; Releases filters by analyst, by Seq and by Number, and
// limits.
func testNumbersAndFilters(t *testing.T, h Harness) {
	ctx := context.Background()
	l, _, _ := open(t, h)
	basic := ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}
	for _, spec := range []ledger.Spec{
		{ID: "x", Total: dpkit.Budget{Epsilon: 10}, Policy: basic},
		{ID: "y", Total: dpkit.Budget{Epsilon: 10}, Policy: basic},
		{ID: "x.sub", Parent: "x", Total: dpkit.Budget{Epsilon: 10}, Policy: basic},
	} {
		mustCreate(t, l, spec)
	}
	want := map[string]int64{}
	for i := range 9 {
		budget := []string{"x", "y", "x.sub"}[i%3]
		analyst := []string{"ann", "bo"}[i%2]
		r := mustSpendReq(t, l, ledger.Request{Budget: budget, Cost: dpkit.Budget{Epsilon: 0.5}, Analyst: analyst, Key: fmt.Sprint("k", i)})
		root := budget[:1]
		want[root]++
		if r.Release.Number != want[root] {
			t.Fatalf("release %d on %s: number %d, want %d", i, budget, r.Release.Number, want[root])
		}
		if again := mustSpendReq(t, l, ledger.Request{Budget: budget, Cost: dpkit.Budget{Epsilon: 0.5}, Analyst: analyst, Key: fmt.Sprint("k", i)}); !again.Replayed || again.Release.Number != r.Release.Number {
			t.Fatalf("replay of release %d: %+v", i, again)
		}
	}
	all, err := l.Releases(ctx, "x", ledger.ReleaseFilter{})
	if err != nil || len(all) != 6 {
		t.Fatalf("x: %d releases, %v", len(all), err)
	}
	for i, r := range all {
		if r.Number != int64(i+1) {
			t.Fatalf("x's release %d has number %d", i, r.Number)
		}
	}
	check := func(id string, f ledger.ReleaseFilter, numbers ...int64) {
		t.Helper()
		got, err := l.Releases(ctx, id, f)
		if err != nil {
			t.Fatal(err)
		}
		var n []int64
		for _, r := range got {
			n = append(n, r.Number)
			if f.Analyst != "" && r.Analyst != f.Analyst {
				t.Fatalf("filter %+v returned a release of %q", f, r.Analyst)
			}
		}
		if !reflect.DeepEqual(n, numbers) {
			t.Fatalf("%s %+v: numbers %v, want %v", id, f, n, numbers)
		}
	}
	// x's releases: i = 0 (ann), 2 (x.sub, ann), 3 (bo), 5 (x.sub, bo), 6 (ann), 8 (x.sub, ann).
	check("x", ledger.ReleaseFilter{Analyst: "ann"}, 1, 2, 5, 6)
	check("x", ledger.ReleaseFilter{Analyst: "bo", AfterNumber: 3}, 4)
	check("x", ledger.ReleaseFilter{AfterNumber: 2, Limit: 2}, 3, 4)
	check("x", ledger.ReleaseFilter{After: all[4].Seq}, 6)
	check("x.sub", ledger.ReleaseFilter{}, 2, 4, 6)
	check("x.sub", ledger.ReleaseFilter{Analyst: "bo"}, 4)
	check("y", ledger.ReleaseFilter{Analyst: "nobody"})
	if _, err := l.Releases(ctx, "nope", ledger.ReleaseFilter{}); !errors.Is(err, ledger.ErrUnknownBudget) {
		t.Fatalf("unknown budget: %v", err)
	}
}

func testReopen(t *testing.T, h Harness) {
	ctx := context.Background()
	l, s, loc := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "r", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.AdvancedFilter, FilterDelta: 1e-7}})
	for i := range 5 {
		mustSpend(t, l, "r", 0.01*float64(i+1), 1e-8)
	}
	before := status(t, l, "r")
	hist, _ := l.History(ctx, "r", 0, 0)
	s.Close()
	s2, err := h.Open(ctx, loc, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	l2 := ledger.New(s2)
	if after := status(t, l2, "r"); !reflect.DeepEqual(after, before) || !after.Created.Equal(before.Created) {
		t.Errorf("status after reopen %+v, want %+v", after, before)
	}
	hist2, _ := l2.History(ctx, "r", 0, 0)
	if !reflect.DeepEqual(hist, hist2) {
		t.Errorf("history after reopen %+v, want %+v", hist2, hist)
	}
	mustAudit(t, l2, "r", 5)
}

// testConcurrent: 64 goroutines spend on one budget until refused; exactly the
// capacity is accepted (fixed: k = 40; adaptive: 4/0.125 = 32, exact).
func testConcurrent(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	d := mustCreate(t, l, ledger.Spec{ID: "fixed", Total: dpkit.Budget{Epsilon: 1, Delta: 1e-6}, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 40}})
	mustCreate(t, l, ledger.Spec{ID: "adaptive", Total: dpkit.Budget{Epsilon: 4}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	for _, tc := range []struct {
		id       string
		cost     dpkit.Budget
		capacity int64
	}{{"fixed", *d.Policy.PerRelease, 40}, {"adaptive", dpkit.Budget{Epsilon: 0.125}, 32}} {
		spendAll(t, l, ledger.Request{Budget: tc.id, Cost: tc.cost}, tc.capacity)
	}
}

// spendAll spends req from 64 goroutines until the budget refuses, and checks that
// exactly capacity spends were accepted and that the budget's log audits.
func spendAll(t *testing.T, l *ledger.Ledger, req ledger.Request, capacity int64) {
	t.Helper()
	var accepted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				_, err := l.Spend(context.Background(), req)
				if errors.Is(err, ledger.ErrBudgetExceeded) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%s: %v", req.Budget, err)
	}
	if got := accepted.Load(); got != capacity {
		t.Errorf("%s: %d spends accepted by 64 goroutines, want exactly %d", req.Budget, got, capacity)
	}
	mustAudit(t, l, req.Budget, capacity)
}

// testConcurrentGaussian: 64 goroutines spend Gaussian releases (their descriptors carry
// μ_i = 1/σ) on a Gaussian filter and on a fixed Gaussian budget; exactly the releases
// whose Σ μ_i² fits μ² (computed here in exact rationals), resp. K, are accepted.
func testConcurrentGaussian(t *testing.T, h Harness) {
	l, _, _ := open(t, h)
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	g := mustCreate(t, l, ledger.Spec{ID: "filter", Total: total, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.GaussianFilter}})
	f := mustCreate(t, l, ledger.Spec{ID: "fixed", Total: total, Policy: ledger.Policy{Kind: ledger.Fixed, Releases: 30, Mechanism: ledger.GaussianMechanism}})
	mu := *g.Policy.Mu
	sigma := 7 / mu // μ_i = μ/7 rounded: about 49 releases fit
	mi := new(big.Rat).Quo(big.NewRat(1, 1), new(big.Rat).SetFloat64(sigma))
	mui, _ := mi.Float64()
	if new(big.Rat).SetFloat64(mui).Cmp(mi) < 0 {
		mui = math.Nextafter(mui, math.Inf(1)) // the ledger rounds μ_i up
	}
	m2 := new(big.Rat).Mul(new(big.Rat).SetFloat64(mu), new(big.Rat).SetFloat64(mu))
	q := new(big.Rat).Quo(m2, new(big.Rat).Mul(new(big.Rat).SetFloat64(mui), new(big.Rat).SetFloat64(mui)))
	capacity := new(big.Int).Quo(q.Num(), q.Denom()).Int64()
	for _, tc := range []struct {
		id       string
		sigma    float64
		capacity int64
	}{{"filter", sigma, capacity}, {"fixed", 1.001 / *f.Policy.PerReleaseMu, 30}} {
		desc := mechanism.Describe(mechanism.GaussianNoise{Sigma: tc.sigma, Sensitivity: 1})
		spendAll(t, l, ledger.Request{Budget: tc.id, Cost: dpkit.Budget{Epsilon: 0.01, Delta: 1e-9}, Mechanism: desc}, tc.capacity)
	}
}

// testTwoProcesses: two processes (2 goroutines each) spend on one budget of exact
// capacity 20/0.125 = 160.
func testTwoProcesses(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	l, _, loc := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "shared", Total: dpkit.Budget{Epsilon: 20}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	a := startChild(t, loc, "shared", 0.125, 2, "A")
	b := startChild(t, loc, "shared", 0.125, 2, "B")
	a.ready(t)
	b.ready(t)
	a.start(t)
	b.start(t)
	var wg sync.WaitGroup
	var ackA, ackB map[string]bool
	var doneA, doneB bool
	wg.Go(func() { _, ackA, doneA = a.collect(t, 2*time.Minute, nil) })
	wg.Go(func() { _, ackB, doneB = b.collect(t, 2*time.Minute, nil) })
	wg.Wait()
	if !doneA || !doneB {
		t.Fatalf("children did not finish: %v %v", doneA, doneB)
	}
	if got := len(ackA) + len(ackB); got != 160 {
		t.Errorf("two processes: %d + %d = %d spends accepted, want exactly 160", len(ackA), len(ackB), got)
	}
	t.Logf("process A accepted %d, process B %d", len(ackA), len(ackB))
	mustAudit(t, l, "shared", 160)
}

// testCrash: a child process spending from 4 goroutines is SIGKILLed after at least 25
// acknowledged spends. Reopening, every acknowledged release is recorded; every
// recorded release was acknowledged or was in flight at the kill (at most one per
// goroutine: a commit that completed before its acknowledgement was printed), and
// retrying those keys returns them without charging again; the statistics match the
// log (Audit), and two reopenings give the same status.
func testCrash(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	ctx := context.Background()
	l, s, loc := open(t, h)
	mustCreate(t, l, ledger.Spec{ID: "c", Total: dpkit.Budget{Epsilon: 1e6}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
	s.Close()
	c := startChild(t, loc, "c", 1, 4, "K")
	c.ready(t)
	c.start(t)
	tried, acked, done := c.collect(t, 2*time.Minute, func(n int) bool { return n >= 25 })
	if done {
		t.Fatal("the child finished before it was killed")
	}
	statusAfterReopen := func() (ledger.Status, []ledger.Release, *ledger.Ledger, ledger.Store) {
		s, err := h.Open(ctx, loc, false)
		if err != nil {
			t.Fatalf("reopen after SIGKILL: %v", err)
		}
		l := ledger.New(s)
		hist, err := l.History(ctx, "c", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return status(t, l, "c"), hist, l, s
	}
	st1, hist, l1, s1 := statusAfterReopen()
	recorded := map[string]bool{}
	for _, r := range hist {
		recorded[r.Key] = true
	}
	for k := range acked {
		if !recorded[k] {
			t.Errorf("acknowledged release %s lost", k)
		}
	}
	var inflight []string
	for k := range recorded {
		if !tried[k] {
			t.Errorf("recorded release %s was never requested", k)
		}
		if !acked[k] {
			inflight = append(inflight, k)
		}
	}
	if len(inflight) > 4 {
		t.Errorf("%d recorded releases were not acknowledged (%v); at most 4 (one per goroutine) may have been in flight", len(inflight), inflight)
	}
	if st1.Releases != int64(len(hist)) {
		t.Errorf("status counts %d releases, the log holds %d", st1.Releases, len(hist))
	}
	mustAudit(t, l1, "c", int64(len(hist)))
	s1.Close()
	st2, _, l2, s2 := statusAfterReopen()
	defer s2.Close()
	if !reflect.DeepEqual(st1, st2) {
		t.Errorf("status differs between reopenings: %+v vs %+v", st1, st2)
	}
	for k := range tried {
		r, err := l2.Spend(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 1}, Key: k, Analyst: "child"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Replayed != recorded[k] {
			t.Errorf("retry of %s: replayed %v, want %v", k, r.Replayed, recorded[k])
		}
	}
	t.Logf("killed after %d acknowledged spends; %d recorded; %d in flight", len(acked), len(hist), len(inflight))
}

// String helps failure messages.
func (h Harness) String() string { return fmt.Sprintf("harness %p", h.Open) }

// testGroupCommit starts 48 spends at once on a budget that fits 8 (basic filter,
// ε = 1, cost 0.125: exactly 8), with 12 idempotency keys shared by 4 spends each,
// plus store-level spends that fail inside the writer's transaction (an unknown budget,
// a decide error). Whatever the batching: exactly 8 keys are recorded, each once; every
// spend of a recorded key gets the same release (one original, the others replays);
// every spend of another key is refused; the failing spends fail alone; Audit passes.
func testGroupCommit(t *testing.T, h Harness) {
	ctx := context.Background()
	l, s, _ := open(t, h)
	if _, err := l.Create(ctx, ledger.Spec{ID: "g", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		key string
		rc  ledger.Receipt
		err error
	}
	results := make(chan result, 48)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			<-start
			key := fmt.Sprintf("k%d", i%12)
			rc, err := l.Spend(ctx, ledger.Request{Budget: "g", Cost: dpkit.Budget{Epsilon: 0.125}, Key: key, Payload: []byte(key)})
			results <- result{key, rc, err}
		})
	}
	errDecide := errors.New("decide says no")
	var storeErrs [8]error
	for i := range storeErrs {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				_, _, storeErrs[i] = s.Spend(ctx, []string{"nope"}, ledger.Release{Budget: "nope"}, func(st []ledger.Stats) ([]ledger.Stats, error) { return st, nil })
			} else {
				_, _, storeErrs[i] = s.Spend(ctx, []string{"g"}, ledger.Release{Budget: "g"}, func([]ledger.Stats) ([]ledger.Stats, error) { return nil, errDecide })
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	for i, err := range storeErrs {
		if i%2 == 0 && !errors.Is(err, ledger.ErrUnknownBudget) || i%2 == 1 && !errors.Is(err, errDecide) {
			t.Errorf("failing store spend %d: %v", i, err)
		}
	}
	seqOf := map[string]int64{}
	originals := 0
	var refused []string
	for r := range results {
		switch {
		case errors.Is(r.err, ledger.ErrBudgetExceeded):
			refused = append(refused, r.key)
			continue
		case r.err != nil:
			t.Fatalf("key %s: %v", r.key, r.err)
		}
		if string(r.rc.Release.Payload) != r.key || r.rc.Release.Key != r.key {
			t.Errorf("key %s: receipt %+v", r.key, r.rc.Release)
		}
		if !r.rc.Replayed {
			originals++
		}
		if seq, ok := seqOf[r.key]; ok && seq != r.rc.Release.Seq {
			t.Errorf("key %s recorded twice: seq %d and %d", r.key, seq, r.rc.Release.Seq)
		}
		seqOf[r.key] = r.rc.Release.Seq
	}
	if originals != 8 || len(seqOf) != 8 {
		t.Fatalf("%d original releases over %d keys, want 8 and 8", originals, len(seqOf))
	}
	for _, k := range refused {
		if _, ok := seqOf[k]; ok {
			t.Errorf("key %s was refused once and recorded once", k)
		}
	}
	hist, err := l.History(ctx, "g", 0, 0)
	if err != nil || len(hist) != 8 {
		t.Fatalf("history: %d releases, %v", len(hist), err)
	}
	if a, err := l.Audit(ctx, "g"); err != nil || a.Releases != 8 {
		t.Fatalf("audit: %+v %v", a, err)
	}
}

// testCloseDrains: spends queued when Close is called complete (recorded and
// acknowledged); a spend after Close fails.
func testCloseDrains(t *testing.T, h Harness) {
	ctx := context.Background()
	p := h.NewLocation(t)
	s, err := h.Open(ctx, p, true)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "c", Total: dpkit.Budget{Epsilon: 100}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for range 32 {
		wg.Go(func() {
			if _, err := l.Spend(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.5}}); err == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			}
		})
	}
	s.Close()
	wg.Wait()
	if _, err := l.Spend(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.5}}); err == nil {
		t.Fatal("spend after Close succeeded")
	}
	s2, err := h.Open(ctx, p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	st, err := ledger.New(s2).Status(ctx, "c")
	if err != nil || st.Releases != int64(acked) {
		t.Fatalf("after Close: %d releases recorded, %d acknowledged (%v)", st.Releases, acked, err)
	}
}
