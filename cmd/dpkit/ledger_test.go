package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ledgerDBs returns the --db values to test: a SQLite file, and a PostgreSQL schema
// when DPKIT_TEST_POSTGRES is set (see ledger/postgres).
func ledgerDBs(t *testing.T) map[string]string {
	dbs := map[string]string{"sqlite": filepath.Join(t.TempDir(), "ledger.db")}
	if u := os.Getenv("DPKIT_TEST_POSTGRES"); u != "" {
		dbs["postgres"] = postgresSchemaURL(t, u)
	}
	return dbs
}

func TestLedgerCLI(t *testing.T) {
	for backend, db := range ledgerDBs(t) {
		t.Run(backend, func(t *testing.T) {
			v := decodeJSON(t, mustSucceed(t, "", "ledger", "init", "--db", db, "--json"))
			if v["backend"] != backend || keysOf(v) != "backend,db,schema_version" {
				t.Errorf("init: %v", v)
			}
			mustSucceed(t, "", "ledger", "init", "--db", db) // idempotent

			v = decodeJSON(t, mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "flu", "--eps", "1", "--delta", "1e-6",
				"--policy", "fixed", "--releases", "3", "--json"))
			pol := v["policy"].(map[string]any)
			per := pol["per_release"].(map[string]any)
			total, k := 1e-6, 3.0
			if number(t, per, "delta") != total/(2*k) || number(t, per, "epsilon") <= 1.0/3 {
				t.Errorf("fixed per-release cost %v: want δ0 = δ/(2k) and ε0 above the basic 1/3", per)
			}
			eps0 := per["epsilon"].(interface{ String() string }).String()
			mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "sales", "--eps", "1", "--delta", "0", "--policy", "adaptive", "--filter", "basic")
			mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "sales.alice", "--parent", "sales", "--eps", "0.5", "--delta", "0", "--policy", "adaptive", "--filter", "basic")
			mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "census", "--eps", "1", "--delta", "0", "--policy", "plan", "--plan", "0.25,0,4")

			for i := range 3 {
				v = decodeJSON(t, mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "flu", "--eps", eps0,
					"--mechanism", "laplace:scale=3", "--analyst", "ann", "--key", "k"+string(rune('0'+i)), "--json"))
				if v["replayed"] != false || keysOf(v) != "release,replayed" {
					t.Errorf("spend: %v", v)
				}
			}
			v = decodeJSON(t, mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "flu", "--eps", eps0,
				"--mechanism", "laplace:scale=3", "--analyst", "ann", "--key", "k0", "--json"))
			if v["replayed"] != true {
				t.Errorf("same key: %v, want replayed", v)
			}
			r := dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "flu", "--eps", "0")
			if r.code != exitFailure || !strings.Contains(r.stderr, "exceeded") || !strings.Contains(r.stderr, "all 3 planned releases are spent") {
				t.Errorf("refused spend: exit %d, %q", r.code, r.stderr)
			}
			r = dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "flu", "--eps", "0.1", "--key", "k0")
			if r.code != exitFailure || !strings.Contains(r.stderr, "idempotency key reused") {
				t.Errorf("key conflict: exit %d, %q", r.code, r.stderr)
			}
			mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "sales.alice", "--eps", "0.5")
			r = dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "sales.alice", "--eps", "1e-300")
			if r.code != exitFailure || !strings.Contains(r.stderr, `"sales.alice"`) {
				t.Errorf("sub-budget refusal: exit %d, %q", r.code, r.stderr)
			}

			v = decodeJSON(t, mustSucceed(t, "", "ledger", "status", "--db", db, "--budget", "sales", "--json"))
			if number(t, v, "releases") != 1 || number(t, v, "spent_epsilon") != 0.5 || number(t, v, "spent_delta") != 0 {
				t.Errorf("status: %v", v)
			}
			v = decodeJSON(t, mustSucceed(t, "", "ledger", "status", "--db", db, "--json"))
			if n := len(v["budgets"].([]any)); n != 4 {
				t.Errorf("status of all: %d budgets, want 4", n)
			}
			v = decodeJSON(t, mustSucceed(t, "", "ledger", "history", "--db", db, "--budget", "flu", "--after", "1", "--json"))
			if rels := v["releases"].([]any); len(rels) != 2 {
				t.Errorf("history after 1: %v", v)
			}
			v = decodeJSON(t, mustSucceed(t, "", "ledger", "remaining", "--db", db, "--budget", "census", "--eps", "0.25", "--json"))
			if number(t, v, "releases") != 4 || number(t, v, "next_epsilon") != 0.25 || v["next_allowed"] != true {
				t.Errorf("remaining: %v", v)
			}
			v = decodeJSON(t, mustSucceed(t, "", "ledger", "audit", "--db", db, "--budget", "flu", "--json"))
			if number(t, v, "releases") != 3 {
				t.Errorf("audit: %v", v)
			}
			for _, args := range [][]string{{"status", "--db", db}, {"history", "--db", db, "--budget", "sales"}, {"remaining", "--db", db, "--budget", "flu"}} {
				mustSucceed(t, "", append([]string{"ledger"}, args...)...)
			}
		})
	}
}

func TestLedgerCLIErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	mustSucceed(t, "", "ledger", "init", "--db", db)
	mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "b", "--eps", "1", "--delta", "0", "--policy", "adaptive", "--filter", "basic")
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("not a database"), 0o600)
	cases := []errorCase{
		{name: "no subcommand", args: []string{"ledger"}, code: exitUsage, want: []string{"missing ledger command"}},
		{name: "unknown subcommand", args: []string{"ledger", "drop"}, code: exitUsage, want: []string{`unknown ledger command "drop"`}},
		{name: "no db", args: []string{"ledger", "status"}, code: exitUsage, want: []string{"missing --db"}},
		{name: "missing file", args: []string{"ledger", "status", "--db", filepath.Join(dir, "nope.db")}, code: exitFailure, want: []string{"does not exist", "dpkit ledger init"}},
		{name: "not a database", args: []string{"ledger", "status", "--db", notDB}, code: exitFailure, want: []string{"not a dpkit ledger", "not a SQLite database"}},
		{name: "nan eps", args: []string{"ledger", "spend", "--db", db, "--budget", "b", "--eps", "NaN"}, code: exitUsage, want: []string{"--eps", "finite"}},
		{name: "negative eps", args: []string{"ledger", "spend", "--db", db, "--budget", "b", "--eps", "-1"}, code: exitUsage, want: []string{"--eps"}},
		{name: "delta above 1", args: []string{"ledger", "spend", "--db", db, "--budget", "b", "--eps", "0", "--delta", "2"}, code: exitUsage, want: []string{"--delta", "[0, 1]"}},
		{name: "oversized", args: []string{"ledger", "spend", "--db", db, "--budget", "b", "--eps", "1e308"}, code: exitFailure, want: []string{"exceeded"}},
		{name: "unknown budget", args: []string{"ledger", "spend", "--db", db, "--budget", "zz", "--eps", "0.1"}, code: exitFailure, want: []string{"unknown budget", `"zz"`}},
		{name: "bad budget id", args: []string{"ledger", "spend", "--db", db, "--budget", "a b", "--eps", "0.1"}, code: exitUsage, want: []string{"invalid budget"}},
		{name: "exists", args: []string{"ledger", "create", "--db", db, "--budget", "b", "--eps", "1", "--delta", "0", "--policy", "adaptive", "--filter", "basic"}, code: exitFailure, want: []string{"already exists"}},
		{name: "no policy", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "0"}, code: exitUsage, want: []string{"missing --policy"}},
		{name: "fixed without k", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "0", "--policy", "fixed"}, code: exitUsage, want: []string{"--releases"}},
		{name: "advanced without share", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "1e-6", "--policy", "adaptive", "--filter", "advanced"}, code: exitUsage, want: []string{"--filter-delta"}},
		{name: "bad filter", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "0", "--policy", "adaptive", "--filter", "x"}, code: exitUsage, want: []string{"filter"}},
		{name: "plan too big", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "0", "--policy", "plan", "--plan", "0.5,0,3"}, code: exitFailure, want: []string{"infeasible", "plan"}},
		{name: "mixed flags", args: []string{"ledger", "create", "--db", db, "--budget", "c", "--eps", "1", "--delta", "0", "--policy", "plan", "--plan", "0.5", "--releases", "3"}, code: exitUsage, want: []string{"--policy fixed only"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dpkitRun(t, tc.stdin, tc.args...)
			if r.code != tc.code || r.stdout != "" {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
		})
	}
}

// A plan of named mechanisms fits by their PLDs where their (ε, δ) would not, and a
// release for a slot must run the slot's mechanism.
func TestLedgerPlanMechanism(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	mustSucceed(t, "", "ledger", "init", "--db", db)
	r := dpkitRun(t, "", "ledger", "create", "--db", db, "--budget", "m", "--eps", "2", "--delta", "1e-6", "--policy", "plan", "--plan", "0.25,1e-20,100")
	if r.code != exitFailure {
		t.Fatalf("(ε, δ)-only plan: exit %d, %q; want 1 (13.93 > 2)", r.code, r.stderr)
	}
	mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "m", "--eps", "2", "--delta", "1e-6", "--policy", "plan",
		"--plan-mechanism", "gaussian:sigma=40,sensitivity=1,count=100@0.25,1e-20")
	mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "m", "--eps", "0.25", "--delta", "1e-20", "--mechanism", "gaussian:sigma=40,sensitivity=1", "--key", "a")
	r = dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "m", "--eps", "0.25", "--delta", "1e-20", "--mechanism", "laplace:scale=4", "--key", "b")
	if r.code != exitFailure || !strings.Contains(r.stderr, "must run") {
		t.Errorf("wrong mechanism: exit %d, %q", r.code, r.stderr)
	}
	for _, bad := range []string{"gaussian:sigma=40", "gaussian:sigma=-1@0.25", "gaussian:sigma=40@x"} {
		r := dpkitRun(t, "", "ledger", "create", "--db", db, "--budget", "b", "--eps", "2", "--delta", "1e-6", "--policy", "plan", "--plan-mechanism", bad)
		if r.code != exitUsage {
			t.Errorf("--plan-mechanism %q: exit %d, %q; want 2", bad, r.code, r.stderr)
		}
	}
}

// --pure: a fixed budget whose releases are all pure ε takes δ0 = 0, so ε0 is the one
// calibrate gives for K pure releases (20 releases in (1, 1e-6): 0.05695, where the
// default δ0 = δ/(2K) leaves 0.05611); a release with δ > 0 is then refused. An
// adaptive/advanced budget with no release has spent nothing (issue 25).
func TestLedgerPureAndEmptyFilter(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	mustSucceed(t, "", "ledger", "init", "--db", db)
	v := decodeJSON(t, mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "counts", "--eps", "1", "--delta", "1e-6",
		"--policy", "fixed", "--releases", "20", "--pure", "--json"))
	per := v["policy"].(map[string]any)["per_release"].(map[string]any)
	want := decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "20", "--json"))
	if number(t, per, "delta") != 0 || number(t, per, "epsilon") != number(t, want, "epsilon_per_query") {
		t.Errorf("--pure per-release cost %v, want δ0 = 0 and ε0 = calibrate's %v", per, want["epsilon_per_query"])
	}
	v = decodeJSON(t, mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "mixed", "--eps", "1", "--delta", "1e-6",
		"--policy", "fixed", "--releases", "20", "--json"))
	if eps := number(t, v["policy"].(map[string]any)["per_release"].(map[string]any), "epsilon"); !(eps < number(t, per, "epsilon")) {
		t.Errorf("default δ0: ε0 = %v, want below --pure's %v", eps, per["epsilon"])
	}
	r := dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "counts", "--eps", "0.01", "--delta", "1e-9")
	if r.code != exitFailure || !strings.Contains(r.stderr, "exceeded") {
		t.Errorf("δ > 0 on a --pure budget: exit %d, %q", r.code, r.stderr)
	}
	checkError(t, "dpkit ledger create", errorCase{args: []string{"ledger", "create", "--db", db, "--budget", "x", "--eps", "1", "--delta", "1e-6",
		"--policy", "fixed", "--releases", "20", "--pure", "--release-delta", "0"}, code: exitUsage, want: []string{"--pure and --release-delta both given"}})

	mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "filter", "--eps", "1", "--delta", "1e-6", "--policy", "adaptive",
		"--filter", "advanced", "--filter-delta", "1e-6")
	st := decodeJSON(t, mustSucceed(t, "", "ledger", "status", "--db", db, "--budget", "filter", "--json"))
	if number(t, st, "spent_delta") != 0 || number(t, st, "spent_epsilon") != 0 {
		t.Errorf("empty advanced filter: %v, want nothing spent", st)
	}
}

// Gaussian budgets from the command line (issue 25 item 6): --mechanism gaussian (fixed)
// and --filter gaussian (adaptive). μ is the largest GDP parameter whose curve
// δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth and Su, "Gaussian differential
// privacy", Cor. 2.13) meets the total. References: the root of δ_μ(ε) = 1e-6 with mpmath
// 1.3.0 at 60 digits (bisection, 300 halvings of [1e-6, 50]), independent of dpkit:
// ε = 1: μ = 0.2367043806634357096; ε = 2: μ = 0.4483347403951927753. ledger.GaussianMu
// is at most 1e-12 (relative) below the root and never above it.
func TestLedgerGaussian(t *testing.T) {
	const muAt1, muAt2, tol = 0.2367043806634357096, 0.4483347403951927753, 1e-12
	below := func(got, want float64) bool { return got <= want && got >= want*(1-tol) }
	db := filepath.Join(t.TempDir(), "l.db")
	mustSucceed(t, "", "ledger", "init", "--db", db)

	v := decodeJSON(t, mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "sums", "--eps", "1", "--delta", "1e-6",
		"--policy", "fixed", "--releases", "100", "--mechanism", "gaussian", "--json"))
	p := v["policy"].(map[string]any)
	mu, mu0 := number(t, p, "mu"), number(t, p, "per_release_mu")
	if p["mechanism"] != "gaussian" || !below(mu, muAt1) || !below(mu0, muAt1/10) || mu0*10 > mu {
		t.Fatalf("fixed Gaussian budget: %v, want μ ≈ %v and μ0 = μ/10", p, muAt1)
	}
	out := mustSucceed(t, "", "ledger", "create", "--db", db, "--budget", "model", "--eps", "2", "--delta", "1e-6",
		"--policy", "adaptive", "--filter", "gaussian")
	if !strings.Contains(out, "policy adaptive/gaussian") || !strings.Contains(out, "mu 0.4483347403") {
		t.Fatalf("create --filter gaussian: %q", out)
	}
	st := decodeJSON(t, mustSucceed(t, "", "ledger", "status", "--db", db, "--budget", "model", "--json"))
	if m := number(t, st["policy"].(map[string]any), "mu"); !below(m, muAt2) {
		t.Fatalf("Gaussian filter μ = %v, want ≈ %v", m, muAt2)
	}

	// Fixed: a release of μ = 1/50 ≤ μ0 fits, one of μ = 1/40 > μ0 does not.
	mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "sums", "--eps", "0.1", "--delta", "1e-8", "--mechanism", "gaussian:sigma=50,sensitivity=1")
	if r := dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "sums", "--eps", "0.1", "--delta", "1e-8", "--mechanism", "gaussian:sigma=40,sensitivity=1"); r.code != exitFailure || !strings.Contains(r.stderr, "μ0") {
		t.Errorf("a release above μ0: exit %d, %q", r.code, r.stderr)
	}
	// The filter: releases of μ = 1/4 while Σμ² ≤ μ² = 0.2010: three fit (0.1875), not four.
	for range 3 {
		mustSucceed(t, "", "ledger", "spend", "--db", db, "--budget", "model", "--eps", "0.1", "--mechanism", "gaussian:sigma=4,sensitivity=1")
	}
	if r := dpkitRun(t, "", "ledger", "spend", "--db", db, "--budget", "model", "--eps", "0.1", "--mechanism", "gaussian:sigma=4,sensitivity=1"); r.code != exitFailure || !strings.Contains(r.stderr, "Σμ²") {
		t.Errorf("a fourth release under the filter: exit %d, %q", r.code, r.stderr)
	}
	st = decodeJSON(t, mustSucceed(t, "", "ledger", "status", "--db", db, "--budget", "model", "--json"))
	if m := number(t, st, "spent_mu"); m < math.Sqrt(0.1875) || m > math.Sqrt(0.1875)*(1+1e-15) {
		t.Errorf("spent μ %v, want √(3/16) = 0.4330127018922193 rounded up", m)
	}
	table := mustSucceed(t, "", "ledger", "status", "--db", db)
	if !strings.Contains(table, "spent mu") || !strings.Contains(table, "fixed/gaussian") || !strings.Contains(table, "0.02") {
		t.Errorf("status table: %q", table)
	}
	if out := mustSucceed(t, "", "ledger", "remaining", "--db", db, "--budget", "model", "--eps", "0.1"); !strings.Contains(out, "Gaussian releases of mu 0.1 that still fit: 1\n") {
		t.Errorf("remaining under the filter: %q", out) // (0.2010 − 0.1875)/0.01 = 1.35
	}
	if out := mustSucceed(t, "", "ledger", "remaining", "--db", db, "--budget", "sums"); !strings.Contains(out, "that still fit: 99\n") {
		t.Errorf("remaining of the fixed Gaussian budget: %q", out)
	}

	base := []string{"ledger", "create", "--db", db, "--budget", "x", "--eps", "1"}
	for _, c := range []errorCase{
		{name: "delta0", args: append(slices.Clone(base), "--delta", "0", "--policy", "fixed", "--releases", "10", "--mechanism", "gaussian"), code: exitUsage, want: []string{"--delta 0", "δ > 0"}},
		{name: "laplace", args: append(slices.Clone(base), "--delta", "1e-6", "--policy", "fixed", "--releases", "10", "--mechanism", "laplace"), code: exitUsage, want: []string{"invalid --mechanism laplace"}},
		{name: "pure", args: append(slices.Clone(base), "--delta", "1e-6", "--policy", "fixed", "--releases", "10", "--mechanism", "gaussian", "--pure"), code: exitUsage, want: []string{"excludes --pure"}},
		{name: "adaptive", args: append(slices.Clone(base), "--delta", "1e-6", "--policy", "adaptive", "--filter", "basic", "--mechanism", "gaussian"), code: exitUsage, want: []string{"--policy fixed only"}},
		{name: "filter-delta", args: append(slices.Clone(base), "--delta", "1e-6", "--policy", "adaptive", "--filter", "gaussian", "--filter-delta", "1e-7"), code: exitUsage, want: []string{"invalid --filter-delta 1e-07"}},
		{name: "filter-delta0", args: append(slices.Clone(base), "--delta", "0", "--policy", "adaptive", "--filter", "gaussian"), code: exitUsage, want: []string{"--delta 0"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkError(t, "dpkit ledger create", c) })
	}
}
