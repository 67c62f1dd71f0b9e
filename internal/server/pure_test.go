package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/internal/registry"
)

// The largest per-query ε0 of 20 releases composing within (ε = 1, δ = 1e-6) by the
// exact optimal composition (Kairouz, Oh and Viswanath, "The composition theorem for
// differential privacy", Thm 3.3): with δ0 = 0, the root of
//
//	Σ_ℓ C(20, ℓ) (e^{(20−ℓ)ε0} − e^{1+ℓε0})_+ / (1 + e^{ε0})^20 = 1e-6,
//
// and with δ0 = δ/(2K) = 2.5e-8, of 1 − (1 − δ0)^20 (1 − that sum) = 1e-6. Computed
// independently of dpkit, with mpmath 1.3.0 at 60 digits (bisection, 200 halvings of
// [0, 1]); `dpkit calibrate --eps 1 --delta 1e-6 --k 20` prints 0.056950119628469846.
const (
	pureEps0Ref = 0.05695011962848550693365769
	rule0Ref    = 0.05610640099350177619952219
	// calibrationTol is compose.MaxEpsilonPerQuery's documented distance below the exact
	// maximum (1e-12 relative); it never answers above it.
	calibrationTol = 1e-12
)

// pureSpec is a dataset of 40 people with a declared domain (dept) and a column without
// one (city), under the fixed policy of 20 queries in (ε = 1, δ), "pure" as given.
func pureSpec(name string, delta float64, pure bool) map[string]any {
	var b strings.Builder
	b.WriteString("name,dept,city\n")
	for i := range 40 {
		b.WriteString("p" + strconv.Itoa(i) + "," + []string{"eng", "ops"}[i%2] + ",paris\n")
	}
	policy := map[string]any{"mode": "fixed", "max_queries": 20}
	if pure {
		policy["pure"] = true
	}
	return map[string]any{
		"name": name,
		"columns": map[string]any{
			"name": map[string]any{"type": "string"},
			"dept": map[string]any{"type": "string", "domain": []string{"eng", "ops"}},
			"city": map[string]any{"type": "string"},
		},
		"privacy_unit": map[string]any{"column": "name", "max_rows": 1},
		"budget":       map[string]any{"epsilon": 1, "delta": delta},
		"policy":       policy,
		"csv":          b.String(),
	}
}

// within reports got ≤ want and got ≥ want·(1 − rel): a calibrated ε0 is never above
// the exact maximum and at most rel below it.
func within(got, want, rel float64) bool { return got <= want && got >= want*(1-rel) }

// TestPureFixedPolicy: "pure": true calibrates δ0 = 0 and the largest ε0 that K pure
// releases compose within the total (against an independent reference); the K charges
// composed back stay within the total and the next query is refused; a query that needs
// δ > 0 (partition selection) is a 400 naming policy.pure that charges nothing; the
// policy shows in the dataset's info and budget; without "pure" the rule δ0 = δ/(2K)
// stays.
func TestPureFixedPolicy(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", "/v1/datasets", e.admin, pureSpec("pure", 1e-6, true))
	e.must(201, "POST", "/v1/datasets", e.admin, pureSpec("rule", 1e-6, false))

	info := e.must(200, "GET", "/v1/datasets/pure", e.admin, nil)
	if p := obj(t, info, "policy"); p["pure"] != true || p["mode"] != "fixed" {
		t.Fatalf("info policy: %v", p)
	}
	b := e.must(200, "GET", "/v1/datasets/pure/budget", e.admin, nil)
	per := obj(t, b, "per_query")
	if e0 := num(t, per, "epsilon"); per["delta"] != 0.0 || !within(e0, pureEps0Ref, calibrationTol) {
		t.Fatalf("pure per-query cost %v, want δ0 = 0 and ε0 within %g below %v", per, calibrationTol, pureEps0Ref)
	}
	if p := obj(t, b, "policy"); p["pure"] != true {
		t.Fatalf("budget policy: %v", p)
	}
	rb := e.must(200, "GET", "/v1/datasets/rule/budget", e.admin, nil)
	rper := obj(t, rb, "per_query")
	if e0 := num(t, rper, "epsilon"); rper["delta"] != 1e-6/40 || !within(e0, rule0Ref, calibrationTol) {
		t.Fatalf("default per-query cost %v, want δ0 = 2.5e-8 and ε0 within %g below %v", rper, calibrationTol, rule0Ref)
	}
	if p := obj(t, rb, "policy"); p["pure"] != nil {
		t.Fatalf("default policy shows %v", p)
	}

	// Partition selection needs δ > 0: refused, naming the field, nothing charged.
	msg := e.mustError(400, "policy.pure", "POST", "/v1/datasets/pure/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pure GROUP BY city"})["error"].(string)
	if !strings.Contains(msg, "partition selection") || !strings.Contains(msg, "δ0 = 0") {
		t.Fatalf("refusal: %q", msg)
	}
	e.mustError(400, "policy.pure", "POST", "/v1/datasets/pure/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pure GROUP BY city", "accuracy": map[string]any{"ci95_halfwidth": 1e6}})
	if r := num(t, e.must(200, "GET", "/v1/datasets/pure/budget", e.admin, nil), "releases"); r != 0 {
		t.Fatalf("a refused query was charged: %v releases", r)
	}
	// Under the rule δ0 > 0 the same query runs.
	e.must(200, "POST", "/v1/datasets/rule/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM rule GROUP BY city"})

	// K releases, each charged (ε0, 0); composed back, within the total.
	var charges []compose.Mech
	queries := []string{"SELECT COUNT(*) FROM pure", "SELECT COUNT(*) FROM pure GROUP BY dept", "SELECT COUNT(*) FROM pure WHERE dept = 'ops'"}
	for i := range 20 {
		v := e.must(200, "POST", "/v1/datasets/pure/query", e.admin, map[string]any{"sql": queries[i%len(queries)]})
		c := obj(t, v, "charged")
		if c["delta"] != 0.0 || c["epsilon"] != per["epsilon"] {
			t.Fatalf("release %d charged %v, want the per-query cost %v", i+1, c, per)
		}
		charges = append(charges, compose.Mech{Epsilon: num(t, c, "epsilon"), Count: 1})
	}
	r, err := compose.Epsilon(compose.Group(charges), 1e-6, nil)
	if err != nil || r.Epsilon > 1 {
		t.Fatalf("20 charges compose to ε = %v at δ = 1e-6 (%v), want ≤ 1", r.Epsilon, err)
	}
	d, err := compose.Delta(compose.Group(charges), 1, nil)
	if err != nil || d.Delta > 1e-6 {
		t.Fatalf("20 charges compose to δ = %v at ε = 1 (%v), want ≤ 1e-6", d.Delta, err)
	}
	// Independent check of the same (200-bit evaluation of KOV Thm 3.3).
	if dd := kovDelta(20, per["epsilon"].(float64), 0, 1); dd > 1e-6 || dd < 1e-6*(1-1e-9) {
		t.Fatalf("kovDelta(20 × ε0, ε = 1) = %g, want just below 1e-6", dd)
	}
	spent := obj(t, e.must(200, "GET", "/v1/datasets/pure/budget", e.admin, nil), "spent")
	if num(t, spent, "epsilon") > 1 || num(t, spent, "delta") > 1e-6 {
		t.Fatalf("spent %v beyond the total", spent)
	}
	e.mustError(409, "", "POST", "/v1/datasets/pure/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pure"})
}

// TestPurePolicyValidation: "pure" goes with the fixed policy of pure releases only;
// a total δ of 0 makes the fixed policy pure (δ0 = δ/(2K) = 0), and its refusal of
// partition selection names budget.delta.
func TestPurePolicyValidation(t *testing.T) {
	e := newEnv(t)
	bad := func(name string, policy map[string]any) {
		t.Helper()
		spec := pureSpec("bad", 1e-6, false)
		spec["policy"] = policy
		e.mustError(400, name, "POST", "/v1/datasets", e.admin, spec)
	}
	bad("policy.pure", map[string]any{"mode": "adaptive", "pure": true})
	bad("policy.pure", map[string]any{"mode": "plan", "plan": []any{map[string]any{"epsilon": 1}}, "pure": true})
	bad("policy.pure", map[string]any{"mode": "fixed", "max_queries": 20, "mechanism": "gaussian", "pure": true})
	e.mustError(404, "", "GET", "/v1/datasets/bad", e.admin, nil)

	e.must(201, "POST", "/v1/datasets", e.admin, pureSpec("zero", 0, false))
	if p := obj(t, e.must(200, "GET", "/v1/datasets/zero", e.admin, nil), "policy"); p["pure"] != true {
		t.Fatalf("a fixed policy with total δ 0: %v, want pure", p)
	}
	e.mustError(400, "budget.delta", "POST", "/v1/datasets/zero/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM zero GROUP BY city"})
	e.must(200, "POST", "/v1/datasets/zero/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM zero GROUP BY dept"})
}

// TestPureOldFormat: a dataset registered before "pure" existed (its stored spec and
// ledger budget as an earlier dpkit wrote them: no "pure", δ0 = δ/(2K)) keeps its
// policy and its cost across a restart with the new demo (whose new datasets are pure).
func TestPureOldFormat(t *testing.T) {
	ctx := context.Background()
	db := t.TempDir() + "/dpkit.db"
	srv, closeDB := open(t, db)
	const oldSpec = `{"name":"flu","columns":{"flu":{"type":"int","min":0,"max":1,"domain":["0","1"]},"name":{"type":"string"}},` +
		`"budget":{"epsilon":1,"delta":1e-06},"policy":{"mode":"fixed","max_queries":20}}`
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	if err := srv.ledger.Create(ctx, "flu", total, PolicySpec{Mode: "fixed", MaxQueries: 20}); err != nil {
		t.Fatal(err)
	}
	if err := srv.reg.AddDataset(ctx, registry.DatasetRecord{Name: "flu", Spec: []byte(oldSpec), CSV: fluCSV, Created: time.Now(), Demo: true}); err != nil {
		t.Fatal(err)
	}
	closeDB()

	e := newEnvDemo(t, db, smallDemo())
	if p := obj(t, e.must(200, "GET", "/v1/datasets/flu", e.admin, nil), "policy"); p["pure"] != nil || p["max_queries"] != 20.0 {
		t.Fatalf("old flu policy after restart: %v", p)
	}
	if p := obj(t, e.must(200, "GET", "/v1/datasets/salary", e.admin, nil), "policy"); p["pure"] != true {
		t.Fatalf("new demo salary policy: %v", p)
	}
	c := obj(t, e.must(200, "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu"}), "charged")
	if c["delta"] != 1e-6/40 || !within(num(t, c, "epsilon"), rule0Ref, calibrationTol) {
		t.Fatalf("old flu charged %v, want its δ0 = 2.5e-8 and ε0 ≈ %v", c, rule0Ref)
	}
	c = obj(t, e.must(200, "POST", "/v1/datasets/salary/query", e.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM salary"}), "charged")
	if c["delta"] != 0.0 || !within(num(t, c, "epsilon"), pureEps0Ref, calibrationTol) {
		t.Fatalf("new salary charged %v, want (%v, 0)", c, pureEps0Ref)
	}
}
