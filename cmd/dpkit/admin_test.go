package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/testcert"
)

// admin runs "dpkit admin ARGS… --url URL --key KEY" in this process and returns its exit
// status, standard output and standard error.
func admin(t *testing.T, url, key string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(append([]string{"admin"}, args...), "--url", url, "--key", key)
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// adminJSON runs an admin command with --json, requires success and decodes its output.
func adminJSON(t *testing.T, url, key string, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := admin(t, url, key, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("dpkit admin %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("dpkit admin %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// TestAdminCLI drives a running "dpkit serve" (the real binary) with every command of
// "dpkit admin": register datasets from a schema file and from flags, list datasets and
// budgets, create a key, grant, query as that key, read the audit log as the admin and as
// the analyst, take the grant back, revoke the key; bad input is an exit status 2 that
// quotes the service, a refusal an exit status 1.
func TestAdminCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildDpkit(t)
	d := startServe(t, bin, "--demo", "--db", filepath.Join(t.TempDir(), "a.db"))
	url, root := d.url(), d.banner["admin_key"]
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	csv := write("pay.csv", "name,dept,salary\nA,eng,50000\nB,ops,20000\nC,eng,150000\n")
	schema := write("pay.json", `{"name": "pay", "columns": {"name": {"type": "string"}, "dept": {"type": "string", "domain": ["eng", "ops"]},
		"salary": {"type": "int", "min": 10000, "max": 100000}}, "budget": {"epsilon": 1, "delta": 1e-6}, "policy": {"mode": "fixed", "max_queries": 5}}`)

	if v := adminJSON(t, url, root, "whoami"); v["role"] != "admin" || v["name"] != "demo admin" {
		t.Fatalf("whoami: %v", v)
	}
	if v := adminJSON(t, url, root, "dataset", "register", "--schema", schema, "--csv", csv); v["name"] != "pay" || v["source"] != "csv" {
		t.Fatalf("register from a schema file: %v", v)
	}
	v := adminJSON(t, url, root, "dataset", "register", "--name", "pay2", "--column", "name:string", "--column", "dept:string",
		"--domain", "dept=eng,ops", "--column", "salary:int:10000:100000", "--unit", "name:1", "--epsilon", "1", "--delta", "1e-6", "--adaptive", "--csv", csv)
	if v["name"] != "pay2" || obj(t, v, "policy")["mode"] != "adaptive" || obj(t, v, "privacy_unit")["max_rows"] != 1.0 ||
		len(obj(t, obj(t, v, "columns"), "dept")["domain"].([]any)) != 2 {
		t.Fatalf("register from flags: %v", v)
	}
	// Bad input: the service's message, exit status 2; a refusal: exit status 1.
	code, _, errOut := admin(t, url, root, "dataset", "register", "--name", "bad", "--column", "x:int", "--epsilon", "1", "--max-queries", "3", "--csv", csv)
	if code != exitUsage || !strings.Contains(errOut, "missing columns[x].min") {
		t.Fatalf("a numeric column without bounds: %d %s", code, errOut)
	}
	code, _, errOut = admin(t, url, root, "dataset", "register", "--name", "bad", "--column", "salary:int:0:1", "--epsilon", "-1", "--delta", "0", "--max-queries", "3", "--csv", csv)
	if code != exitUsage || !strings.Contains(errOut, "budget.epsilon") {
		t.Fatalf("a negative ε: %d %s", code, errOut)
	}
	if code, _, errOut = admin(t, url, root, "dataset", "register", "--schema", schema, "--csv", csv); code != exitFailure || !strings.Contains(errOut, "409") {
		t.Fatalf("registering pay again: %d %s", code, errOut)
	}
	if code, _, errOut = admin(t, url, root, "dataset", "register", "--schema", schema); code != exitUsage || !strings.Contains(errOut, "exactly one of --csv") {
		t.Fatalf("no rows: %d %s", code, errOut)
	}

	list := adminJSON(t, url, root, "datasets")["datasets"].([]any)
	var names []string
	for _, ds := range list {
		names = append(names, ds.(map[string]any)["name"].(string))
		if st := obj(t, ds.(map[string]any), "budget_status"); st["releases"] != 0.0 {
			t.Fatalf("a new dataset's budget: %v", st)
		}
	}
	if !slices.Equal(names, []string{"flu", "pay", "pay2", "salary", "visits"}) {
		t.Fatalf("datasets: %v", names)
	}

	k := adminJSON(t, url, root, "key", "create", "--name", "alice", "--dataset", "pay")
	alice, aliceID := k["key"].(string), k["id"].(string)
	adminJSON(t, url, root, "grant", "flu", aliceID)
	for _, kk := range adminJSON(t, url, root, "keys")["keys"].([]any) {
		if kk := kk.(map[string]any); kk["id"] == aliceID && len(kk["datasets"].([]any)) != 2 {
			t.Fatalf("alice's grants: %v", kk)
		}
	}
	q := adminJSON(t, url, alice, "query", "pay", "SELECT SUM(salary) FROM pay WHERE dept = 'eng'", "--idempotency-key", "q1")
	if q["release"] != 1.0 || q["remaining_queries"] != 4.0 {
		t.Fatalf("query: %v", q)
	}
	if again := adminJSON(t, url, alice, "query", "pay", "SELECT SUM(salary) FROM pay WHERE dept = 'eng'", "--idempotency-key", "q1"); again["result"] != q["result"] {
		t.Fatalf("retry: %v, first %v", again, q)
	}
	adminJSON(t, url, root, "query", "pay", "SELECT COUNT(*) FROM pay")
	if code, out, _ := admin(t, url, alice, "query", "pay", "SELECT COUNT(*) FROM pay GROUP BY dept"); code != 0 || !strings.Contains(out, "eng") || !strings.Contains(out, "95% INTERVAL") {
		t.Fatalf("a grouped query as a table: %d %s", code, out)
	}
	rels := adminJSON(t, url, root, "releases", "pay", "--all")["releases"].([]any)
	mine := adminJSON(t, url, alice, "releases", "pay")["releases"].([]any)
	filtered := adminJSON(t, url, root, "releases", "pay", "--analyst", aliceID, "--limit", "1", "--all")["releases"].([]any)
	if len(rels) != 3 || len(mine) != 2 || len(filtered) != 2 {
		t.Fatalf("releases: admin %d, alice %d, admin's filter by alice %d; want 3, 2, 2", len(rels), len(mine), len(filtered))
	}
	if code, out, _ := admin(t, url, root, "budget", "pay"); code != 0 || !strings.Contains(out, "releases   3") {
		t.Fatalf("budget: %d %s", code, out)
	}
	if code, out, _ := admin(t, url, root, "dataset", "show", "pay"); code != 0 || !strings.Contains(out, "[10000, 100000]") {
		t.Fatalf("dataset show: %d %s", code, out)
	}

	adminJSON(t, url, root, "ungrant", "pay", aliceID)
	if code, _, errOut := admin(t, url, alice, "query", "pay", "SELECT COUNT(*) FROM pay"); code != exitFailure || !strings.Contains(errOut, "404") {
		t.Fatalf("after the grant was taken back: %d %s", code, errOut)
	}
	adminJSON(t, url, root, "key", "revoke", aliceID)
	if code, _, errOut := admin(t, url, alice, "whoami"); code != exitFailure || !strings.Contains(errOut, "401") {
		t.Fatalf("a revoked key: %d %s", code, errOut)
	}
	if code, _, errOut := admin(t, "", root, "whoami"); code != exitUsage || !strings.Contains(errOut, "--url") {
		t.Fatalf("no --url: %d %s", code, errOut)
	}
	if code, _, errOut := admin(t, url, root, "frobnicate"); code != exitUsage || !strings.Contains(errOut, "unknown admin command") {
		t.Fatalf("an unknown command: %d %s", code, errOut)
	}
	testAdminPure(t, url, root, csv)
}

// testAdminPure: "dataset register --pure" gives the fixed policy pure releases: δ0 = 0
// and the ε0 that "dpkit calibrate" computes for K pure queries (the command line's own
// calibration, in this process, not the service's); "dataset show" says so; a query
// that needs δ > 0 is refused naming policy.pure; --pure needs the fixed policy.
func testAdminPure(t *testing.T, url, root, csv string) {
	v := adminJSON(t, url, root, "dataset", "register", "--name", "pay3", "--column", "name:string", "--column", "dept:string",
		"--domain", "dept=eng,ops", "--column", "salary:int:10000:100000", "--unit", "name:1",
		"--epsilon", "1", "--delta", "1e-6", "--max-queries", "20", "--pure", "--csv", csv)
	if p := obj(t, v, "policy"); p["pure"] != true || p["max_queries"] != 20.0 {
		t.Fatalf("register --pure: %v", v)
	}
	per := obj(t, adminJSON(t, url, root, "budget", "pay3"), "per_query")
	want := number(t, decodeJSON(t, mustSucceed(t, "", "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "20", "--json")), "epsilon_per_query")
	// Both are the largest ε0 of the exact composition, at most 1e-12 (relative) below
	// it (compose.MaxEpsilonPerQuery's tolerance): they agree to 2e-12.
	if got, _ := per["epsilon"].(float64); per["delta"] != 0.0 || math.Abs(got-want) > 2e-12*want {
		t.Fatalf("--pure per-query cost %v, want δ0 = 0 and calibrate's ε0 = %v", per, want)
	}
	if code, out, _ := admin(t, url, root, "dataset", "show", "pay3"); code != 0 || !strings.Contains(out, "fixed, 20 queries, pure ε (δ0 = 0)") {
		t.Fatalf("dataset show --pure: %d %s", code, out)
	}
	if code, _, errOut := admin(t, url, root, "query", "pay3", "SELECT COUNT(*) FROM pay3 GROUP BY name"); code != exitUsage || !strings.Contains(errOut, "policy.pure") {
		t.Fatalf("partition selection under --pure: %d %s", code, errOut)
	}
	code, _, errOut := admin(t, url, root, "dataset", "register", "--name", "pay4", "--column", "name:string", "--epsilon", "1", "--delta", "1e-6",
		"--adaptive", "--pure", "--csv", csv)
	if code != exitUsage || !strings.Contains(errOut, "--pure") {
		t.Fatalf("--pure --adaptive: %d %s", code, errOut)
	}
}

// TestServeTLS is the end-to-end test of issue #20 item 4: "dpkit serve" with a
// generated certificate prints an https URL and answers the admin CLI that trusts the
// certificate (--ca); without it the handshake fails. Listening beyond the loopback
// interface without TLS prints a warning; with TLS it does not.
func TestServeTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildDpkit(t)
	dir := t.TempDir()
	cert, key, _ := testcert.Files(t, dir)
	d := startServe(t, bin, "--demo", "--db", filepath.Join(dir, "t.db"), "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(d.url(), "https://127.0.0.1:") {
		t.Fatalf("url %q", d.url())
	}
	if v := adminJSON(t, d.url(), d.banner["admin_key"], "whoami", "--ca", cert); v["role"] != "admin" {
		t.Fatalf("whoami over TLS: %v", v)
	}
	if q := adminJSON(t, d.url(), d.banner["analyst_key"], "query", "visits", "SELECT COUNT(*) FROM visits", "--ca", cert); q["release"] != 1.0 {
		t.Fatalf("query over TLS: %v", q)
	}
	if code, _, errOut := admin(t, d.url(), d.banner["admin_key"], "whoami"); code != exitFailure || !strings.Contains(errOut, "certificate") {
		t.Fatalf("without --ca: %d %s", code, errOut)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()
	if strings.Contains(d.stderr.String(), "WARNING") {
		t.Fatalf("a warning with TLS: %s", d.stderr)
	}

	plain := startServe(t, bin, "--db", filepath.Join(dir, "p.db"), "--addr", "0.0.0.0:0")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(plain.stderr.String(), "WARNING") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(plain.stderr.String(), "without TLS") {
		t.Fatalf("no warning on 0.0.0.0 without TLS: %q", plain.stderr)
	}
	plain.cmd.Process.Signal(syscall.SIGTERM)
	plain.cmd.Wait()

	for _, args := range [][]string{{"--tls-cert", cert}, {"--tls-key", key}} {
		c := errorCase{name: "tls", args: append([]string{"serve"}, args...), code: exitUsage, want: []string{"--tls-cert and --tls-key go together"}}
		checkError(t, "dpkit serve", c)
	}
}

// TestServeDemoSpent: "dpkit serve --demo" on a database whose demo budget is spent
// says so and how to start over; --demo --reset moves that database aside and starts
// with fresh budgets; --reset on a database with other datasets is refused.
func TestServeDemoSpent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildDpkit(t)
	db := filepath.Join(t.TempDir(), "demo.db")
	d := startServe(t, bin, "--demo", "--db", db)
	for i := range 20 {
		if code, v := call(t, "POST", d.url()+"/v1/datasets/flu/query", d.banner["analyst_key"], map[string]any{"sql": "SELECT COUNT(*) FROM flu"}); code != 200 {
			t.Fatalf("query %d: %d %v", i, code, v)
		}
	}
	code, v := call(t, "POST", d.url()+"/v1/datasets/flu/query", d.banner["analyst_key"], map[string]any{"sql": "SELECT COUNT(*) FROM flu"})
	if msg, _ := v["error"].(string); code != 409 || !strings.Contains(msg, "--demo --reset") {
		t.Fatalf("the 21st query: %d %v", code, v)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()

	d = startServe(t, bin, "--demo", "--db", db)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(d.stderr.String(), "spent") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s := d.stderr.String(); !strings.Contains(s, "demo budget of flu is spent") || !strings.Contains(s, "--demo --reset") {
		t.Fatalf("restart on a spent demo: stderr %q", s)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()

	d = startServe(t, bin, "--demo", "--reset", "--db", db)
	if code, v := call(t, "GET", d.url()+"/v1/datasets/flu/budget", d.banner["analyst_key"], nil); code != 200 || v["remaining_queries"] != 20.0 {
		t.Fatalf("after --reset: %d %v", code, v)
	}
	if !strings.Contains(d.stderr.String(), "moved "+db+" aside to "+db+".reset-") {
		t.Fatalf("--reset said %q", d.stderr)
	}
	code, v = call(t, "POST", d.url()+"/v1/datasets", d.banner["admin_key"], map[string]any{
		"name": "real", "columns": map[string]any{"x": map[string]any{"type": "int", "min": 0, "max": 1}}, "csv": "x\n1\n",
		"budget": map[string]any{"epsilon": 1, "delta": 0}, "policy": map[string]any{"mode": "fixed", "max_queries": 2}})
	if code != 201 {
		t.Fatalf("register: %d %v", code, v)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.cmd.Wait()
	c := errorCase{name: "reset refused", args: []string{"serve", "--demo", "--reset", "--db", db, "--addr", "127.0.0.1:0"}, code: exitFailure,
		want: []string{`holds the dataset "real"`, "fresh --db"}}
	checkError(t, "dpkit serve", c)
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("a refused --reset touched the database: %v", err)
	}
}

// obj returns v[key] as a JSON object.
func obj(t *testing.T, v map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := v[key].(map[string]any)
	if !ok {
		t.Fatalf("%q = %#v, want an object (in %v)", key, v[key], v)
	}
	return o
}
