package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// --k: the per-query ε meets the total by the exact curve (docs/errata.md, KOV item 1 formula,
// evaluated independently) and a per-query ε 1e-9 larger would not.
func TestCalibratePerQueryEpsilon(t *testing.T) {
	for _, c := range []struct {
		eps, delta, queryDelta string
		k                      int
	}{
		{"1", "1e-6", "", 40},
		{"1", "1e-6", "1e-9", 40},
		{"0.5", "1e-5", "0", 100},
	} {
		args := []string{"calibrate", "--eps", c.eps, "--delta", c.delta, "--k", itoa(c.k), "--json"}
		if c.queryDelta != "" {
			args = append(args, "--query-delta", c.queryDelta)
		}
		v := decodeJSON(t, mustSucceed(t, "", args...))
		if got, want := keysOf(v), "delta_per_query,epsilon_per_query,k,unbounded"; got != want || v["unbounded"] != false || number(t, v, "k") != float64(c.k) {
			t.Fatalf("keys %s, want %s", got, want)
		}
		eps, delta, d0 := parse(c.eps), parse(c.delta), parse(c.queryDelta)
		eps0 := number(t, v, "epsilon_per_query")
		if number(t, v, "delta_per_query") != d0 {
			t.Errorf("%v: delta_per_query = %v, want %v", args, number(t, v, "delta_per_query"), d0)
		}
		if d := homogeneousDelta(eps0, d0, c.k, eps); d > delta*(1+1e-12) {
			t.Errorf("%v: %d × (%v, %v) has δ(%v) = %v above %v", args, c.k, eps0, d0, eps, d, delta)
		}
		if d := homogeneousDelta(eps0*(1+1e-9), d0, c.k, eps); d <= delta {
			t.Errorf("%v: ε0 = %v is not the largest: %v also fits (δ = %v)", args, eps0, eps0*(1+1e-9), d)
		}
	}
}

// Pure DP with a total δ = 0: basic composition is exact, so k queries of ε/k fit
// (KOV Thm 3.1; Thm 3.3 at δ = 0 gives the same).
func TestCalibratePureDP(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "2", "--delta", "0", "--k", "10", "--json"))
	if eps0 := number(t, v, "epsilon_per_query"); math.Abs(eps0-0.2) > 1e-12 {
		t.Errorf("ε0 = %v, want 0.2", eps0)
	}
	v = decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "0", "--query-eps", "0.125", "--json"))
	if n := number(t, v, "max_queries"); n != 8 {
		t.Errorf("max_queries = %v, want 8", n)
	}
}

// --query-eps: the largest number of queries, checked against the docs/errata.md KOV item 1 formula.
func TestCalibrateMaxQueries(t *testing.T) {
	v := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--query-eps", "0.05", "--query-delta", "1e-8", "--json"))
	if keysOf(v) != "at_least,max_queries" || v["at_least"] != false {
		t.Fatalf("got %v, want max_queries and at_least false", v)
	}
	n := int(number(t, v, "max_queries"))
	if d := homogeneousDelta(0.05, 1e-8, n, 1); d > 1e-6 {
		t.Errorf("%d queries: δ(1) = %v above 1e-6", n, d)
	}
	if d := homogeneousDelta(0.05, 1e-8, n+1, 1); d <= 1e-6 {
		t.Errorf("%d queries also fit: δ(1) = %v", n+1, d)
	}
	// Not even one query fits: 0, not an error.
	v = decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "0.1", "--delta", "0", "--query-eps", "0.2", "--json"))
	if n := number(t, v, "max_queries"); n != 0 {
		t.Errorf("max_queries = %v, want 0", n)
	}
}

func TestCalibrateText(t *testing.T) {
	out := mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "40")
	if !strings.HasPrefix(out, "epsilon per query  0.0388") || !strings.Contains(out, "\nqueries            40\n") {
		t.Errorf("output:\n%s", out)
	}
	out = mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--query-eps", "0.05", "--query-delta", "1e-8")
	if !strings.HasPrefix(out, "max queries: ") || strings.Count(out, "\n") != 1 {
		t.Errorf("output:\n%s", out)
	}
}

func TestCalibrateErrors(t *testing.T) {
	budget := []string{"calibrate", "--eps", "1", "--delta", "1e-6"}
	with := func(args ...string) []string { return append(append([]string(nil), budget...), args...) }
	for _, c := range []errorCase{
		{name: "no eps", args: []string{"calibrate", "--delta", "1e-6", "--k", "3"}, code: exitUsage, want: []string{"missing --eps"}},
		{name: "no delta", args: []string{"calibrate", "--eps", "1", "--k", "3"}, code: exitUsage, want: []string{"missing --delta"}},
		{name: "neither k nor query-eps", args: with(), code: exitUsage, want: []string{"missing --k or --query-eps"}},
		{name: "both k and query-eps", args: with("--k", "3", "--query-eps", "0.1"), code: exitUsage,
			want: []string{"--k and --query-eps both given"}},
		{name: "k 0", args: with("--k", "0"), code: exitUsage, want: []string{`invalid --k "0": want an integer in [1, 1000000000000]`}},
		{name: "k fractional", args: with("--k", "1.5"), code: exitUsage, want: []string{`invalid --k "1.5"`}},
		{name: "k negative", args: with("--k", "-2"), code: exitUsage, want: []string{`invalid --k "-2"`}},
		{name: "delta above 1", args: []string{"calibrate", "--eps", "1", "--delta", "2", "--k", "3"}, code: exitUsage,
			want: []string{`invalid --delta "2": want in [0, 1]`}},
		{name: "NaN eps", args: []string{"calibrate", "--eps", "NaN", "--delta", "0", "--k", "3"}, code: exitUsage,
			want: []string{`invalid --eps "NaN": want a finite number ≥ 0`}},
		{name: "negative query eps", args: with("--query-eps", "-0.1"), code: exitUsage, want: []string{`invalid --query-eps "-0.1"`}},
		{name: "query delta above 1", args: with("--k", "3", "--query-delta", "1.1"), code: exitUsage, want: []string{`invalid --query-delta "1.1"`}},
		{name: "unknown flag", args: with("--queries", "3"), code: exitUsage, want: []string{"unknown flag: --queries"}},
		{name: "positional argument", args: with("--k", "3", "x"), code: exitUsage, want: []string{`unexpected argument "x"`}},
		{name: "floor above delta", args: with("--k", "40", "--query-delta", "1e-6"), code: exitFailure,
			want: []string{"dpkit calibrate: infeasible: 40 queries with delta 1e-06 have delta floor"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit calibrate", c) })
	}
}

func itoa(k int) string { return strconv.Itoa(k) }

// parse reads a test's number ("" is 0).
func parse(s string) float64 {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}
