package main

import (
	"encoding/json"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// HBW Example 1, corrected numbers (docs/gce.md): 1000 × (0.01, 0), δ = 1e-6.
// Expected values: the exact k-fold curve of docs/errata.md KOV item 1 evaluated
// independently by homogeneousDelta (compose_test.go); 4-digit values from the issue.
func TestGCEMembershipReferencePoint(t *testing.T) {
	for _, c := range []struct {
		bounded       bool
		k             int
		eps, parallel float64
	}{{false, 365, 0.7901, 3.65}, {true, 730, 1.1513, 7.3}} {
		args := []string{"gce", "membership", "--mech", "0.01,0,1000", "--max-member", "365", "--delta", "1e-6", "--json"}
		if c.bounded {
			args = append(args, "--bounded")
		}
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "classic_epsilon,epsilon,parallel_epsilon"; got != want {
			t.Fatalf("keys %s, want %s", got, want)
		}
		eps, classic, par := number(t, v, "epsilon"), number(t, v, "classic_epsilon"), number(t, v, "parallel_epsilon")
		if math.Abs(eps-c.eps) > 5e-5 || math.Abs(classic-1.3654) > 5e-5 || math.Abs(par-c.parallel) > 1e-12 {
			t.Errorf("bounded=%v: %v, want epsilon %v, classic 1.3654, parallel %v", c.bounded, v, c.eps, c.parallel)
		}
		// Independent check: ε meets δ = 1e-6 on the exact curve, and is the least such.
		if d := homogeneousDelta(0.01, 0, c.k, eps); d > 1e-6*(1+1e-12) {
			t.Errorf("δ(%v) = %v > 1e-6 for %d steps", eps, d, c.k)
		}
		if d := homogeneousDelta(0.01, 0, c.k, eps*(1-1e-9)); d <= 1e-6 {
			t.Errorf("a smaller ε already meets 1e-6 for %d steps", c.k)
		}
	}
	// Parallel composition does not apply with δ > 0: the key is absent.
	v := decodeJSON(t, mustSucceed(t, "", "gce", "membership", "--mech", "0.01,1e-9,1000", "--max-member", "365", "--delta", "1e-5", "--json"))
	if got, want := keysOf(v), "classic_epsilon,epsilon"; got != want {
		t.Errorf("keys %s, want %s", got, want)
	}
	out := mustSucceed(t, "", "gce", "membership", "--mech", "0.01,0,1000", "--max-member", "365", "--delta", "1e-6")
	if !strings.Contains(out, "0.7901127") || !strings.Contains(out, "parallel epsilon") {
		t.Errorf("table output:\n%s", out)
	}
}

func TestGCEUniformPrior(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "gce", "uniform-prior", "--mech", "0.01,0,1000", "--delta", "1e-6", "--json"))
	if got, want := keysOf(v), "corollary6_epsilon,delta,epsilon,simple,worst_case_epsilon"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	eps, worst := number(t, v, "epsilon"), number(t, v, "worst_case_epsilon")
	// The worst case is the classic 1000-fold composition; the uniform prior is below it
	// (0.6496: documented in docs/gce.md, checked against all components in package gce).
	if math.Abs(worst-1.3654) > 5e-5 || !(eps < worst) || math.Abs(eps-0.6496) > 5e-5 || number(t, v, "delta") != 1e-6 {
		t.Errorf("got %v", v)
	}
	// Worst case infeasible, Thm 3 feasible: null.
	v = decodeJSON(t, mustSucceed(t, "", "gce", "uniform-prior", "--mech", "0.1,0.01,3", "--delta", "0.025", "--json"))
	if v["worst_case_epsilon"] != nil {
		t.Errorf("worst_case_epsilon = %v, want null (δ below the floor of all steps)", v["worst_case_epsilon"])
	}
}

// docs/errata.md, HBW item 1 through the CLI: the general rule gives 1 (the paper's
// recipe would give 0.620, below the true 0.99997).
func TestGCEHypothesisCounterexample(t *testing.T) {
	dir := t.TempDir()
	p0 := filepath.Join(dir, "p0.json")
	p1 := filepath.Join(dir, "p1.json")
	os.WriteFile(p0, []byte(`[{"b":"10","p":"1/2"},{"b":"01","p":"1/2"}]`), 0o600)
	os.WriteFile(p1, []byte(`[{"b":"00","p":0.5},{"b":"01","p":"0.5"}]`), 0o600)
	v := decodeJSON(t, mustSucceed(t, "", "gce", "hypothesis", "--mech", "1", "--mech", "10", "--p0", p0, "--p1", p1, "--delta", "0", "--json"))
	if got, want := keysOf(v), "classic_epsilon,delta,epsilon,rule"; got != want {
		t.Fatalf("keys %s, want %s", got, want)
	}
	if eps := number(t, v, "epsilon"); eps < 0.99997 || eps > 1+1e-9 || v["rule"] != "general" || number(t, v, "classic_epsilon") != 11 {
		t.Errorf("got %v, want epsilon 1 (general rule), classic 11", v)
	}
	// p1 from stdin; point-mass rule against 0⃗.
	stdin := `[{"b":"10","p":"1/2"},{"b":"11","p":"1/2"}]`
	os.WriteFile(p0, []byte(`[{"b":"00","p":"1"}]`), 0o600)
	v = decodeJSON(t, mustSucceed(t, stdin, "gce", "hypothesis", "--mech", "1,0,2", "--p0", p0, "--p1", "-", "--delta", "0", "--json"))
	want := math.Log(0.5*math.E + 0.5*math.Exp(2))
	if eps := number(t, v, "epsilon"); v["rule"] != "point-mass" || eps < want || eps > want*(1+1e-9) {
		t.Errorf("got %v, want point-mass epsilon %v", v, want)
	}
}

func TestGCEErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`[{"b":"00","p":"1"}]`), 0o600)
	files := map[string]string{
		"notjson":  `{"b":"00"}`,
		"badb":     `[{"b":"0x","p":"1"}]`,
		"badp":     `[{"b":"00","p":"-1"}]`,
		"hugeexp":  `[{"b":"00","p":"1e999999999"}]`,
		"unknown":  `[{"b":"00","p":"1","q":1}]`,
		"missingp": `[{"b":"00"}]`,
		"sum":      `[{"b":"00","p":"1/2"}]`,
		"length":   `[{"b":"000","p":"1"}]`,
	}
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gce"}, exitUsage, "missing gce command"},
		{[]string{"gce", "nope"}, exitUsage, "unknown gce command"},
		{[]string{"gce", "membership", "--mech", "1", "--delta", "0.1"}, exitUsage, "missing --max-member"},
		{[]string{"gce", "membership", "--mech", "1", "--max-member", "0", "--delta", "0.1"}, exitUsage, "--max-member"},
		{[]string{"gce", "membership", "--mech", "1", "--max-member", "2"}, exitUsage, "missing --delta"},
		{[]string{"gce", "membership", "--max-member", "2", "--delta", "0.1"}, exitUsage, "no mechanisms"},
		{[]string{"gce", "membership", "--mech", "1,0.1,5", "--max-member", "2", "--delta", "0.01"}, exitFailure, "infeasible"},
		{[]string{"gce", "uniform-prior", "--mech", "1", "--delta", "NaN"}, exitUsage, "--delta"},
		{[]string{"gce", "uniform-prior", "--mech", "1,0.1,5", "--delta", "0.01"}, exitFailure, "infeasible"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--delta", "0"}, exitUsage, "missing --p0 or --p1"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", "-", "--p1", "-", "--delta", "0"}, exitUsage, "stdin"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "absent"), "--delta", "0"}, exitUsage, "cannot read --p1"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "notjson"), "--delta", "0"}, exitUsage, "JSON list"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "badb"), "--delta", "0"}, exitUsage, "entry 0: b"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "badp"), "--delta", "0"}, exitUsage, "entry 0: p"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "hugeexp"), "--delta", "0"}, exitUsage, "entry 0: p"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "unknown"), "--delta", "0"}, exitUsage, "unknown field"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "missingp"), "--delta", "0"}, exitUsage, `both "b" and "p"`},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "sum"), "--delta", "0"}, exitUsage, "summing to exactly 1"},
		{[]string{"gce", "hypothesis", "--mech", "1,0,2", "--p0", good, "--p1", filepath.Join(dir, "length"), "--delta", "0"}, exitUsage, "length k = 2"},
	} {
		r := dpkitRun(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("dpkit %s: exit %d, stderr %q, stdout %q; want exit %d mentioning %q", strings.Join(c.args, " "), r.code, r.stderr, r.stdout, c.code, c.msg)
		}
	}
	for _, sub := range []string{"", "membership", "uniform-prior", "hypothesis"} {
		args := []string{"gce"}
		if sub != "" {
			args = append(args, sub)
		}
		if out := mustSucceed(t, "", append(args, "--help")...); !strings.HasPrefix(out, "Usage: dpkit gce") {
			t.Errorf("%v --help: %q", args, out)
		}
	}
}

// TestGCEAllowedCorollariesRefineSubsample: the library-only parts of HBW on the command
// line. --allowed {1100, 0011}: unbounded compares each with 0⃗ (two steps differ),
// bounded compares them with each other (all four), so the answers equal compose's for
// 2 and 4 steps. uniform-prior's "simple" guarantee is Cor. 7's closed form
// ε = ln(((1 + e^ε')^k − 1)/(2^k − 1)), δ = 2^(k−1)/(2^k − 1)·k·δ' (rounded up by at most
// 3e-12 relative), and
// Theorem 3 ≤ Cor. 6 ≤ worst case. refine couples the two hypotheses with weights that
// add up to each; subsample is ln(1 + q(e^ε − 1)), qδ, rounded up by at most 1e-11.
func TestGCEAllowedCorollariesRefineSubsample(t *testing.T) {
	allowed := "# HBW Example 3 style: two disjoint pairs\n1100\n0011\n"
	for _, c := range []struct {
		bounded bool
		steps   string
	}{{false, "0.5,0,2"}, {true, "0.5,0,4"}} {
		args := []string{"gce", "membership", "--mech", "0.5,0,4", "--allowed", "-", "--delta", "1e-6", "--json"}
		if c.bounded {
			args = append(args, "--bounded")
		}
		v := decodeJSON(t, mustSucceed(t, allowed, args...))
		ref := decodeJSON(t, mustSucceed(t, "", "compose", "--mech", c.steps, "--delta", "1e-6", "--json"))
		if got, want := number(t, v, "epsilon"), number(t, ref, "epsilon"); math.Abs(got-want) > 1e-12*want {
			t.Errorf("bounded=%v: epsilon %v, compose of %s: %v", c.bounded, got, c.steps, want)
		}
	}
	v := decodeJSON(t, mustSucceed(t, "", "gce", "uniform-prior", "--mech", "0.1,1e-8,20", "--delta", "1e-6", "--json"))
	simple := v["simple"].(map[string]any)
	se, _ := simple["epsilon"].(json.Number).Float64()
	sd, _ := simple["delta"].(json.Number).Float64()
	k := 20.0
	wantE := math.Log((math.Pow(1+math.Exp(0.1), k) - 1) / (math.Pow(2, k) - 1))
	wantD := math.Pow(2, k-1) / (math.Pow(2, k) - 1) * k * 1e-8
	if !(se >= wantE && se <= wantE*(1+3e-12) && sd >= wantD*(1-1e-15) && sd <= wantD*(1+3e-12)) { // rounded up by ≤ 1e-12 relative
		t.Errorf("simple (%v, %v), Cor. 7 (%v, %v)", se, sd, wantE, wantD)
	}
	th3, cor6, worst := number(t, v, "epsilon"), number(t, v, "corollary6_epsilon"), number(t, v, "worst_case_epsilon")
	if !(th3 <= cor6 && cor6 <= worst) {
		t.Errorf("Theorem 3 %v, Cor. 6 %v, worst case %v: want ordered", th3, cor6, worst)
	}
	dir := t.TempDir()
	p0, p1 := dir+"/p0.json", dir+"/p1.json"
	os.WriteFile(p0, []byte(`[{"b":"10","p":"1/3"},{"b":"01","p":"2/3"}]`), 0o600)
	os.WriteFile(p1, []byte(`[{"b":"00","p":"1/2"},{"b":"11","p":"1/2"}]`), 0o600)
	r := decodeJSON(t, mustSucceed(t, "", "gce", "refine", "--p0", p0, "--p1", p1, "--json"))
	sums := map[string]*big.Rat{}
	for _, x := range r["pairs"].([]any) {
		p := x.(map[string]any)
		w, ok := new(big.Rat).SetString(p["weight"].(string))
		if !ok {
			t.Fatalf("weight %v", p["weight"])
		}
		for _, key := range []string{"0:" + p["b0"].(string), "1:" + p["b1"].(string)} {
			if sums[key] == nil {
				sums[key] = new(big.Rat)
			}
			sums[key].Add(sums[key], w)
		}
	}
	for key, want := range map[string]string{"0:10": "1/3", "0:01": "2/3", "1:00": "1/2", "1:11": "1/2"} {
		if sums[key] == nil || sums[key].RatString() != want {
			t.Errorf("coupling: %s weighs %v, want %s", key, sums[key], want)
		}
	}
	s := decodeJSON(t, mustSucceed(t, "", "gce", "subsample", "--mech", "1,1e-6,3", "--q", "0.25", "--json"))
	st := s["steps"].([]any)[0].(map[string]any)
	e, _ := st["epsilon"].(json.Number).Float64()
	d, _ := st["delta"].(json.Number).Float64()
	if we := math.Log1p(0.25 * math.Expm1(1)); !(e >= we && e <= we*(1+1e-11)) || !(d >= 0.25e-6 && d <= 0.25e-6*(1+1e-15)) {
		t.Errorf("subsample: (%v, %v)", e, d)
	}
	checkErrors(t, []errorCase{
		{name: "both", args: []string{"gce", "membership", "--mech", "1,0,2", "--max-member", "1", "--allowed", "-", "--delta", "0"}, code: exitUsage, want: []string{"exclude"}},
		{name: "bad vector", stdin: "10\n1x\n", args: []string{"gce", "membership", "--mech", "1,0,2", "--allowed", "-", "--delta", "0"}, code: exitUsage, want: []string{"line 2"}},
		{name: "wrong length", stdin: "101\n", args: []string{"gce", "membership", "--mech", "1,0,2", "--allowed", "-", "--delta", "0"}, code: exitUsage, want: []string{"length"}},
		{name: "refine missing", args: []string{"gce", "refine", "--p0", p0}, code: exitUsage, want: []string{"--p1"}},
		{name: "subsample q", args: []string{"gce", "subsample", "--mech", "1", "--q", "2"}, code: exitUsage, want: []string{"--q"}},
	})
}
