package server

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
)

// The SQL surface of issue #19 through the API: several aggregates and grouping
// columns, partition selection, Gaussian policies, accuracy-first queries and grants
// with a budget.

// staffSpec is a dataset of 3000 people (one row each) in two declared departments and
// three cities found only in the data: "paris" (2000 people), "lyon" (999) and "solo"
// (1 person), with δ = delta.
func staffSpec(name string, delta float64, policy map[string]any) map[string]any {
	var b strings.Builder
	b.WriteString("id,dept,city,salary,score\n")
	for i := range 3000 {
		city := "paris"
		switch {
		case i == 0:
			city = "solo"
		case i%3 == 0:
			city = "lyon"
		}
		dept := "eng"
		if i%2 == 1 {
			dept = "ops"
		}
		fmt.Fprintf(&b, "u%d,%s,%s,%d,0.5\n", i, dept, city, 20000+(i%50)*1000)
	}
	return map[string]any{
		"name": name,
		"columns": map[string]any{
			"id":     map[string]any{"type": "string"},
			"dept":   map[string]any{"type": "string", "domain": []string{"eng", "ops"}},
			"city":   map[string]any{"type": "string"},
			"salary": map[string]any{"type": "int", "min": 0, "max": 100000},
			"score":  map[string]any{"type": "float", "min": 0, "max": 1},
		},
		"privacy_unit": map[string]any{"column": "id", "max_rows": 2, "max_groups": 1},
		"budget":       map[string]any{"epsilon": 10, "delta": delta},
		"policy":       policy,
		"csv":          b.String(),
	}
}

func adaptive() map[string]any { return map[string]any{"mode": "adaptive"} }

func TestMultiAggregate(t *testing.T) { testMultiAggregate(t, newEnv(t)) }

// testMultiAggregate: several aggregates and grouping columns, their response shape,
// and partition selection over a column without a declared domain.
func testMultiAggregate(t *testing.T, e *env) {
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("staff", 1e-6, adaptive()))
	path := "/v1/datasets/staff/query"
	v := e.must(200, "POST", path, e.admin, map[string]any{
		"sql":     "SELECT COUNT(*), SUM(salary), AVG(salary), QUANTILE(salary, 0.9) FROM staff GROUP BY dept, city",
		"epsilon": 4, "delta": 1e-7,
	})
	aggs := v["aggregates"].([]any)
	if fmt.Sprint(aggs) != "[COUNT(*) SUM(salary) AVG(salary) QUANTILE(salary, 0.9)]" || fmt.Sprint(v["group_by"]) != "[dept city]" || v["result"] != nil {
		t.Fatalf("aggregates: %v", v)
	}
	// paris and lyon are held by ≥ 499 people in each department: released (with
	// probability 1 − 1e-50 or more); solo, held by one person, with probability ≤ δ.
	groups := v["groups"].([]any)
	var keys []string
	for _, g := range groups {
		g := g.(map[string]any)
		key := g["key"].([]any)
		keys = append(keys, fmt.Sprint(key))
		vals, ci := g["values"].([]any), g["ci95"].([]any)
		if len(key) != 2 || len(vals) != 4 || len(ci) != 4 {
			t.Fatalf("group shape: %v", g)
		}
		for i, c := range ci {
			if i < 3 && len(c.([]any)) != 2 || i == 3 && c != nil {
				t.Fatalf("group %v: ci95[%d] = %v (want an interval for COUNT, SUM and AVG, null for QUANTILE)", key, i, c)
			}
		}
		if n := vals[0].(float64); math.Abs(n-1000) > 100 && math.Abs(n-500) > 100 {
			t.Fatalf("group %v: count %v", key, n)
		}
	}
	if fmt.Sprint(keys) != "[[eng lyon] [eng paris] [ops lyon] [ops paris]]" {
		t.Fatalf("released keys %v, want the four big groups (sorted)", keys)
	}
	charged := obj(t, v, "charged")
	if charged["epsilon"] != 4.0 || charged["delta"] != 1e-7 {
		t.Fatalf("charged once for the whole query: %v", charged)
	}
	if b := e.must(200, "GET", "/v1/datasets/staff/budget", e.admin, nil); num(t, b, "releases") != 1 {
		t.Fatalf("one ledger entry: %v", b)
	}

	// Several aggregates, ungrouped: "values" and one interval per aggregate.
	u := e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*), MEDIAN(salary) FROM staff", "epsilon": 1})
	if vals, ci := u["values"].([]any), u["ci95"].([]any); len(vals) != 2 || len(ci) != 2 || ci[1] != nil || u["result"] != nil {
		t.Fatalf("ungrouped: %v", u)
	}
	// One aggregate, one grouping column: the single-aggregate shape.
	s := e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM staff GROUP BY dept", "epsilon": 1})
	g0 := s["groups"].([]any)[0].(map[string]any)
	if g0["key"] != "eng" || g0["value"] == nil || len(g0["ci95"].([]any)) != 2 || fmt.Sprint(s["aggregates"]) != "[COUNT(*)]" {
		t.Fatalf("single-aggregate shape: %v", s)
	}
	// Partition selection on one column: the legacy shape, released keys only.
	c := e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM staff GROUP BY city", "epsilon": 1, "delta": 1e-7})
	if cg := c["groups"].([]any); len(cg) != 2 || cg[0].(map[string]any)["key"] != "lyon" {
		t.Fatalf("partition selection: %v", c)
	}

	// Bad input: 400 naming the problem, nothing charged.
	before := num(t, e.must(200, "GET", "/v1/datasets/staff/budget", e.admin, nil), "releases")
	bad := func(substr string, body map[string]any) {
		t.Helper()
		e.mustError(400, substr, "POST", path, e.admin, body)
	}
	bad("STDDEV", map[string]any{"sql": "SELECT STDDEV(salary) FROM staff", "epsilon": 1})
	bad("score", map[string]any{"sql": "SELECT COUNT(*) FROM staff GROUP BY score", "epsilon": 1})
	bad("(0, 1)", map[string]any{"sql": "SELECT QUANTILE(salary, 1.5) FROM staff", "epsilon": 1})
	bad("delta", map[string]any{"sql": "SELECT COUNT(*) FROM staff GROUP BY city", "epsilon": 1})
	bad("mu", map[string]any{"sql": "SELECT COUNT(*) FROM staff", "mu": 0.5})
	bad("mechanism", map[string]any{"sql": "SELECT COUNT(*) FROM staff", "epsilon": 1, "mechanism": "cauchy"})
	bad("delta", map[string]any{"sql": "SELECT COUNT(*) FROM staff", "epsilon": 1, "mechanism": "gaussian"})
	bad("accuracy", map[string]any{"sql": "SELECT AVG(salary) FROM staff", "accuracy": map[string]any{"ci95_halfwidth": 10}})
	bad("accuracy", map[string]any{"sql": "SELECT COUNT(*) FROM staff", "epsilon": 1, "accuracy": map[string]any{"ci95_halfwidth": 10}})
	bad("accuracy.ci95_halfwidth", map[string]any{"sql": "SELECT COUNT(*) FROM staff", "accuracy": map[string]any{"ci95_halfwidth": -1}})
	bad("accuracy.ci95_halfwidth", map[string]any{"sql": "SELECT SUM(salary) FROM staff", "accuracy": map[string]any{"ci95_halfwidth": 1e-3}})
	if after := num(t, e.must(200, "GET", "/v1/datasets/staff/budget", e.admin, nil), "releases"); after != before {
		t.Fatalf("bad queries were charged: %v releases, %v before", after, before)
	}

	// δ = 0: partition selection is refused with a 400 naming it.
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("pure", 0, adaptive()))
	e.mustError(400, "partition selection", "POST", "/v1/datasets/pure/query", e.admin,
		map[string]any{"sql": "SELECT COUNT(*) FROM pure GROUP BY city", "epsilon": 1, "delta": 0})
	e.mustError(400, "delta", "POST", "/v1/datasets/pure/query", e.admin,
		map[string]any{"sql": "SELECT COUNT(*) FROM pure GROUP BY city", "epsilon": 1})
}

func TestGaussianPolicies(t *testing.T) { testGaussianPolicies(t, newEnv(t)) }

// testGaussianPolicies: fixed Gaussian releases, the Gaussian filter, and a Gaussian
// query under the basic filter.
func testGaussianPolicies(t *testing.T, e *env) {
	// Fixed: 4 Gaussian releases composing exactly to (10, 1e-6): μ0 = μ/2.
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("fg", 1e-6, map[string]any{"mode": "fixed", "max_queries": 4, "mechanism": "gaussian"}))
	mu, err := ledger.GaussianMu(dpkit.Budget{Epsilon: 10, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	v := e.must(200, "POST", "/v1/datasets/fg/query", e.analyst0(t, "fg"), map[string]any{"sql": "SELECT COUNT(*) FROM fg GROUP BY dept"})
	if got := num(t, v, "mu"); got > mu/2 || got < mu/2*(1-1e-9) || v["mechanism"] != "discrete gaussian" {
		t.Fatalf("fixed Gaussian: μ %v, want μ/√4 = %v; %v", got, mu/2, v)
	}
	e.mustError(400, "invalid mu = 1: want no mu", "POST", "/v1/datasets/fg/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM fg", "mu": 1})
	for range 3 {
		e.must(200, "POST", "/v1/datasets/fg/query", e.admin, map[string]any{"sql": "SELECT SUM(salary) FROM fg"})
	}
	e.mustError(409, "budget", "POST", "/v1/datasets/fg/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM fg"})

	// The Gaussian filter: queries spend μ_i while Σμ_i² ≤ μ².
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("gf", 1e-6, map[string]any{"mode": "adaptive", "filter": "gaussian"}))
	path := "/v1/datasets/gf/query"
	first := e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf", "mu": 0.8 * mu})
	if num(t, first, "mu") != 0.8*mu {
		t.Fatalf("gaussian filter: %v", first)
	}
	// 0.64 + 0.49 > 1: refused; 0.64 + 0.36 = 1 (to rounding, on the safe side): the
	// ledger may refuse it by its rounding, so 0.35.
	e.mustError(409, "budget", "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf", "mu": 0.7 * mu})
	e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf", "mu": math.Sqrt(0.35) * mu})
	e.mustError(400, "epsilon", "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf", "epsilon": 1})
	e.mustError(400, "mechanism", "POST", path, e.admin, map[string]any{"sql": "SELECT MEDIAN(salary) FROM gf", "mu": 0.01})
	e.mustError(400, "mu", "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf", "mu": -1})
	e.mustError(400, "mu", "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gf"})

	// A Gaussian query under the basic filter: the μ whose curve meets its (ε, δ).
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("bg", 1e-6, adaptive()))
	g := e.must(200, "POST", "/v1/datasets/bg/query", e.admin, map[string]any{"sql": "SELECT SUM(salary) FROM bg", "epsilon": 1, "delta": 1e-7, "mechanism": "gaussian"})
	want, err := ledger.GaussianMu(dpkit.Budget{Epsilon: 1, Delta: 1e-7})
	if err != nil {
		t.Fatal(err)
	}
	if got := num(t, g, "mu"); got > want || got < want*(1-1e-6) || obj(t, g, "charged")["epsilon"] != 1.0 {
		t.Fatalf("basic-filter Gaussian: μ %v, want ≤ %v; %v", got, want, g)
	}
}

// analyst0 returns a new analyst key granted the dataset.
func (e *env) analyst0(t *testing.T, dataset string) string {
	t.Helper()
	return e.must(201, "POST", "/v1/keys", e.admin, map[string]any{"name": "a-" + dataset, "role": "analyst", "datasets": []string{dataset}})["key"].(string)
}

func TestAccuracyFirst(t *testing.T) { testAccuracyFirst(t, newEnv(t)) }

// testAccuracyFirst: an accuracy instead of a cost, under the adaptive and fixed
// policies; the charge is the plan's CostForAccuracy, and the interval meets it.
func testAccuracyFirst(t *testing.T, e *env) {
	spec := staffSpec("acc", 1e-6, adaptive())
	e.must(201, "POST", "/v1/datasets", e.admin, spec)
	path := "/v1/datasets/acc/query"
	for _, tc := range []struct {
		sql string
		h   float64
	}{
		{"SELECT COUNT(*) FROM acc", 20},
		{"SELECT SUM(salary) FROM acc WHERE dept = 'eng'", 1e6},
		{"SELECT COUNT(*) FROM acc GROUP BY dept", 30},
	} {
		v := e.must(200, "POST", path, e.admin, map[string]any{"sql": tc.sql, "accuracy": map[string]any{"ci95_halfwidth": tc.h}})
		o, err := e.preparedOf(t, "acc", tc.sql).CostForAccuracy(tc.h, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := obj(t, v, "charged")["epsilon"].(float64); got != o.Budget.Epsilon {
			t.Fatalf("%s: charged ε %v, want the cheapest meeting ±%v: %v", tc.sql, got, tc.h, o.Budget.Epsilon)
		}
		ci, res := v["ci95"], v["result"]
		if groups, ok := v["groups"].([]any); ok {
			g := groups[0].(map[string]any)
			ci, res = g["ci95"], g["value"]
		}
		lo, hi := ci.([]any)[0].(float64), ci.([]any)[1].(float64)
		if r := res.(float64); r-lo > tc.h*(1+1e-12) || hi-r > tc.h*(1+1e-12) {
			t.Fatalf("%s: interval [%v, %v] around %v wider than ±%v", tc.sql, lo, hi, r, tc.h)
		}
	}
	// Replay: the same key and accuracy return the release; another accuracy conflicts.
	body := map[string]any{"sql": "SELECT COUNT(*) FROM acc", "accuracy": map[string]any{"ci95_halfwidth": 50}, "idempotency_key": "acc1"}
	first := e.must(200, "POST", path, e.admin, body)
	if again := e.must(200, "POST", path, e.admin, body); again["release"] != first["release"] {
		t.Fatalf("replay: %v, first %v", again, first)
	}
	body["accuracy"] = map[string]any{"ci95_halfwidth": 51}
	e.mustError(409, "idempotency key", "POST", path, e.admin, body)

	// The Gaussian filter: μ from the accuracy.
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("accg", 1e-6, map[string]any{"mode": "adaptive", "filter": "gaussian"}))
	g := e.must(200, "POST", "/v1/datasets/accg/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM accg", "accuracy": map[string]any{"ci95_halfwidth": 20}})
	if r, ci := num(t, g, "result"), g["ci95"].([]any); r-ci[0].(float64) > 20 || num(t, g, "mu") <= 0 {
		t.Fatalf("gaussian filter accuracy: %v", g)
	}

	// Fixed: the set cost's interval, or a 400 saying how wide it is.
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("accf", 1e-6, map[string]any{"mode": "fixed", "max_queries": 10}))
	e.mustError(400, "fixed policy", "POST", "/v1/datasets/accf/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM accf", "accuracy": map[string]any{"ci95_halfwidth": 1}})
	e.must(200, "POST", "/v1/datasets/accf/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM accf", "accuracy": map[string]any{"ci95_halfwidth": 100}})
	if b := e.must(200, "GET", "/v1/datasets/accf/budget", e.admin, nil); num(t, b, "releases") != 1 {
		t.Fatalf("fixed accuracy: %v", b)
	}
}

// preparedOf prepares sql on the service's table of dataset.
func (e *env) preparedOf(t *testing.T, dataset, sql string) Prepared {
	t.Helper()
	ctx := context.Background()
	d, err := e.srv.dataset(ctx, dataset)
	if err != nil {
		t.Fatal(err)
	}
	table, err := e.srv.table(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := table.Prepare(dataset, sql)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicies(t *testing.T) { testPolicies(t, newEnv(t)) }

// testPolicies: the plan policy and the advanced filter through the API, and their
// bad specs.
func testPolicies(t *testing.T, e *env) {
	plan := map[string]any{"mode": "plan", "plan": []map[string]any{{"epsilon": 5, "delta": 0}, {"epsilon": 2, "delta": 0}}}
	v := e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("pl", 0, plan))
	if obj(t, v, "policy")["mode"] != "plan" {
		t.Fatalf("plan dataset: %v", v)
	}
	for i, eps := range []float64{5, 2} {
		r := e.must(200, "POST", "/v1/datasets/pl/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pl"})
		if got := obj(t, r, "charged")["epsilon"]; got != eps || num(t, r, "remaining_queries") != float64(1-i) {
			t.Fatalf("plan slot %d: charged %v, want %v; %v", i, got, eps, r)
		}
	}
	e.mustError(409, "budget", "POST", "/v1/datasets/pl/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pl"})
	// The plan's costs were fixed in advance: the curve is their optimal composition.
	if c := e.must(200, "GET", "/v1/datasets/pl/curve", e.admin, nil); c["theorem"] != "exact" || len(c["points"].([]any)) != curvePoints {
		t.Fatalf("plan curve: %v", c)
	}

	adv := map[string]any{"mode": "adaptive", "filter": "advanced", "filter_delta": 1e-7}
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("adv", 1e-6, adv))
	e.must(200, "POST", "/v1/datasets/adv/query", e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM adv", "epsilon": 0.5})

	bad := func(policy map[string]any, delta float64, substr string) {
		t.Helper()
		e.mustError(400, substr, "POST", "/v1/datasets", e.admin, staffSpec("bad", delta, policy))
	}
	bad(map[string]any{"mode": "plan"}, 0, "policy.plan")
	bad(map[string]any{"mode": "plan", "plan": []map[string]any{{"epsilon": -1}}}, 0, "policy.plan[0].epsilon")
	bad(map[string]any{"mode": "plan", "plan": []map[string]any{{"epsilon": 20}}}, 0, "")
	bad(map[string]any{"mode": "adaptive", "filter": "gaussian"}, 0, "budget.delta")
	bad(map[string]any{"mode": "adaptive", "filter": "magic"}, 1e-6, "policy.filter")
	bad(map[string]any{"mode": "adaptive", "filter": "advanced"}, 1e-6, "policy.filter_delta")
	bad(map[string]any{"mode": "fixed", "max_queries": 3, "mechanism": "gaussian"}, 0, "budget.delta")
	bad(map[string]any{"mode": "adaptive", "mechanism": "gaussian"}, 1e-6, "policy.mechanism")
	bad(map[string]any{"mode": "fixed", "max_queries": 3, "filter": "gaussian"}, 1e-6, "policy.filter")
}

func TestGrantBudget(t *testing.T) { testGrantBudget(t, newEnv(t)) }

// testGrantBudget: PUT …/grants/{key} with a budget gives the analyst a sub-budget;
// its releases must fit it and the dataset's.
func testGrantBudget(t *testing.T, e *env) {
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("gr", 1e-6, adaptive()))
	created := e.must(201, "POST", "/v1/keys", e.admin, map[string]any{"name": "ann", "role": "analyst"})
	key, id := created["key"].(string), created["id"].(string)
	grant := "/v1/datasets/gr/grants/" + id
	e.mustError(400, "budget.epsilon", "PUT", grant, e.admin, map[string]any{"budget": map[string]any{"epsilon": 0}})
	e.mustError(400, "unknown field", "PUT", grant, e.admin, map[string]any{"budgett": 1})
	e.must(204, "PUT", grant, e.admin, map[string]any{"budget": map[string]any{"epsilon": 1, "delta": 0}})
	e.must(204, "PUT", grant, e.admin, map[string]any{"budget": map[string]any{"epsilon": 1, "delta": 0}}) // the same again
	e.mustError(409, "exists", "PUT", grant, e.admin, map[string]any{"budget": map[string]any{"epsilon": 2}})

	path := "/v1/datasets/gr/query"
	e.must(200, "POST", path, key, map[string]any{"sql": "SELECT COUNT(*) FROM gr", "epsilon": 0.75})
	e.mustError(409, "budget", "POST", path, key, map[string]any{"sql": "SELECT COUNT(*) FROM gr", "epsilon": 0.5})
	// The admin spends on the dataset's budget, which the analyst's release was charged too.
	e.must(200, "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gr", "epsilon": 9})
	e.mustError(409, "budget", "POST", path, e.admin, map[string]any{"sql": "SELECT COUNT(*) FROM gr", "epsilon": 0.5})
	if b := e.must(200, "GET", "/v1/datasets/gr/budget", e.admin, nil); obj(t, b, "spent")["epsilon"] != 9.75 {
		t.Fatalf("dataset budget: %v", b)
	}
	// A plain grant (no body) still works, and a Gaussian dataset needs δ > 0.
	e.must(201, "POST", "/v1/datasets", e.admin, staffSpec("gg", 1e-6, map[string]any{"mode": "adaptive", "filter": "gaussian"}))
	e.must(204, "PUT", "/v1/datasets/gg/grants/"+id, e.admin, nil)
	e.mustError(400, "budget.delta", "PUT", "/v1/datasets/gg/grants/"+id, e.admin, map[string]any{"budget": map[string]any{"epsilon": 1}})
	e.must(204, "PUT", "/v1/datasets/gg/grants/"+id, e.admin, map[string]any{"budget": map[string]any{"epsilon": 1, "delta": 1e-7}})
	e.must(200, "POST", "/v1/datasets/gg/query", key, map[string]any{"sql": "SELECT COUNT(*) FROM gg", "mu": 0.1})
}
