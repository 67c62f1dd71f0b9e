package server

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// sourceTable creates, in a fresh schema of the PostgreSQL at DPKIT_TEST_POSTGRES, the
// table pay and returns the URL of that schema (its search_path) and the schema's name.
// The rows are the reference the tests check the snapshot against.
func sourceTable(t *testing.T) (srcURL, schema string) {
	t.Helper()
	srcURL = newSchema(t)
	u, err := url.Parse(srcURL)
	if err != nil {
		t.Fatal(err)
	}
	schema = u.Query().Get("search_path")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srcURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, stmt := range []string{
		`CREATE TABLE pay (id serial PRIMARY KEY, "Name" text, dept varchar(10), salary integer NOT NULL,
			bonus numeric, score double precision, tags text[], secret text)`,
		// Ann and Bob inside the bounds; Cy's salary above them, Dee's below and her bonus
		// above: the loader clamps them (salary to [10000, 100000], bonus to [0, 5000]).
		// Bob's name needs CSV quoting; Cy's dept is NULL (an empty string, in no group).
		`INSERT INTO pay ("Name", dept, salary, bonus, score, tags, secret) VALUES
			('Ann', 'eng', 50000, 1000.5, 0.25, '{a}', 's1'),
			('Bob, "B"', 'ops', 20000, 0, 1.5, '{}', 's2'),
			(E'Cy\nline', NULL, 150000, 2500.25, -3, NULL, 's3'),
			('Dee', 'eng', 5000, 99999999999.75, 2, '{b,c}', 's4')`,
		`CREATE TABLE odd (x double precision, n integer, s text)`,
		`CREATE TABLE "Mixed" (a integer, "A" integer)`,
		`CREATE TABLE audit (at timestamptz DEFAULT now())`,
		// A view whose reading writes: allowed only outside a read-only transaction.
		`CREATE FUNCTION noisy() RETURNS integer LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit DEFAULT VALUES; RETURN 1; END $$`,
		`CREATE VIEW writes AS SELECT noisy() AS n`,
		`CREATE SEQUENCE seq`,
	} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return srcURL, schema
}

// tableSpec is a registration of the table name of the database srcURL.
func tableSpec(dataset, srcURL, name string) map[string]any {
	return map[string]any{
		"name": dataset,
		"columns": map[string]any{
			"name":   map[string]any{"type": "string"},
			"dept":   map[string]any{"type": "string", "domain": []string{"eng", "ops"}},
			"salary": map[string]any{"type": "int", "min": 10000, "max": 100000},
			"bonus":  map[string]any{"type": "float", "min": 0, "max": 5000},
		},
		"budget": map[string]any{"epsilon": 1, "delta": 1e-6},
		"policy": map[string]any{"mode": "fixed", "max_queries": 5},
		"table":  map[string]any{"url": srcURL, "name": name},
	}
}

// exact evaluates sql on the loaded table of dataset name without noise.
func exact(t *testing.T, srv *Server, name, sql string) *query.Result {
	t.Helper()
	ctx := context.Background()
	d, err := srv.dataset(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := srv.table(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := query.Prepare(tab.(queryTable).t, name, sql, sensitivity.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	return p.Evaluate()
}

// checkPay checks the exact aggregates of dataset name against the rows sourceTable
// inserted (the reference, computed by hand from them; all exact: integers and
// multiples of 2^-2 well inside float64).
func checkPay(t *testing.T, srv *Server, name string) {
	t.Helper()
	for _, c := range []struct {
		sql  string
		want float64
	}{
		{"SELECT COUNT(*) FROM " + name, 4},
		// 50000 + 20000 + 100000 (150000 clamped) + 10000 (5000 clamped)
		{"SELECT SUM(salary) FROM " + name, 180000},
		// 1000.5 + 0 + 2500.25 + 5000 (99999999999.75 clamped)
		{"SELECT SUM(bonus) FROM " + name, 8500.75},
		{"SELECT COUNT(*) FROM " + name + " WHERE name = 'Bob, \"B\"'", 1},
		{"SELECT COUNT(*) FROM " + name + " WHERE name = 'Ann' AND dept = 'eng'", 1},
		{"SELECT COUNT(*) FROM " + name + " WHERE dept = ''", 1}, // Cy's NULL dept
	} {
		if got := exact(t, srv, name, c.sql).Value; got != c.want {
			t.Errorf("%s = %v, want %v", c.sql, got, c.want)
		}
	}
	g := exact(t, srv, name, "SELECT COUNT(*) FROM "+name+" GROUP BY dept").Groups
	if len(g) != 2 || g[0].Key != "eng" || g[0].Value != 2 || g[1].Key != "ops" || g[1].Value != 1 {
		t.Errorf("GROUP BY dept: %+v, want eng 2, ops 1", g)
	}
}

// TestTableDataset registers PostgreSQL tables as datasets of a service on SQLite.
func TestTableDataset(t *testing.T) { testTableDataset(t, newEnv(t)) }

// testTableDataset: a table is registered (qualified or through the URL's search_path),
// snapshotted, queried; the snapshot survives the table's removal and a restart; every
// bad registration is a 400 naming the problem, and nothing is written to the source.
func testTableDataset(t *testing.T, e *env) {
	srcURL, schema := sourceTable(t)
	ctx := context.Background()

	v := e.must(201, "POST", "/v1/datasets", e.admin, tableSpec("pay", srcURL, schema+".pay"))
	src, _ := v["source"].(string)
	if !strings.HasPrefix(src, `postgres table "`+schema+`"."pay" of postgres://postgres@`) || strings.Contains(src, "search_path") {
		t.Fatalf("source %q", src)
	}
	checkPay(t, e.srv, "pay")
	e.must(204, "PUT", "/v1/datasets/pay/grants/"+mustWhoami(t, e, e.analyst), e.admin, nil)
	q := e.must(200, "POST", "/v1/datasets/pay/query", e.analyst, map[string]any{"sql": "SELECT SUM(salary) FROM pay"})
	if _, ok := q["result"].(float64); !ok || q["remaining_queries"] != 4.0 {
		t.Fatalf("query: %v", q)
	}
	// Analysts do not see the source.
	if d := e.must(200, "GET", "/v1/datasets/pay", e.analyst, nil); d["source"] != nil {
		t.Fatalf("analyst sees the source: %v", d)
	}
	// Unqualified: the URL's search_path; the declared "name" matches the column "Name".
	e.must(201, "POST", "/v1/datasets", e.admin, tableSpec("pay2", srcURL, "pay"))
	checkPay(t, e.srv, "pay2")

	// A snapshot: dropping the table changes nothing, also after a restart.
	c, err := pgx.Connect(ctx, srcURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "ALTER TABLE pay RENAME TO pay_gone"); err != nil {
		t.Fatal(err)
	}
	e2 := newEnvAt(t, e.db)
	checkPay(t, e2.srv, "pay")
	if d := e2.must(200, "GET", "/v1/datasets/pay", e2.admin, nil); d["source"] != src {
		t.Fatalf("source after restart: %v, want %q", d["source"], src)
	}
	q = e2.must(200, "POST", "/v1/datasets/pay/query", e2.admin, map[string]any{"sql": "SELECT COUNT(*) FROM pay"})
	if q["remaining_queries"] != 3.0 {
		t.Fatalf("query after restart: %v", q)
	}
	if _, err := c.Exec(ctx, "ALTER TABLE pay_gone RENAME TO pay"); err != nil {
		t.Fatal(err)
	}

	bad := func(mut func(m map[string]any), substr string) {
		t.Helper()
		m := tableSpec("bad", srcURL, schema+".pay")
		mut(m)
		t.Log(e.mustError(400, substr, "POST", "/v1/datasets", e.admin, m)["error"])
	}
	table := func(m map[string]any) map[string]any { return m["table"].(map[string]any) }
	column := func(name string, spec map[string]any) func(map[string]any) {
		return func(m map[string]any) { m["columns"].(map[string]any)[name] = spec }
	}
	unreachable := "postgres://postgres:hunter2@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5"
	bad(func(m map[string]any) { table(m)["url"] = unreachable }, "a reachable PostgreSQL database")
	bad(func(m map[string]any) { table(m)["url"] = "mysql://localhost/x" }, "table.url")
	bad(func(m map[string]any) { table(m)["url"] = "" }, "table.url")
	bad(func(m map[string]any) { table(m)["name"] = "nope" }, "an existing table or view")
	bad(func(m map[string]any) { table(m)["name"] = "PAY" }, "an existing table or view") // literal names
	bad(func(m map[string]any) { table(m)["name"] = "a.b.c" }, "table.name")
	bad(func(m map[string]any) { table(m)["name"] = "" }, "table.name")
	bad(func(m map[string]any) { table(m)["name"] = schema + ".seq" }, "a table or view (not")
	bad(func(m map[string]any) { table(m)["name"] = "pay; DROP TABLE pay" }, "an existing table or view")
	bad(func(m map[string]any) { table(m)["name"] = `pay" ; DROP TABLE pay; --` }, "an existing table or view")
	bad(func(m map[string]any) { m["csv"] = "name\nA\n" }, `exactly one of "csv"`)
	bad(func(m map[string]any) { m["path"] = "/etc/hostname" }, `exactly one of "csv"`)
	bad(column("nope", map[string]any{"type": "string"}), "columns[nope]")
	bad(column("secret", map[string]any{"type": "int", "min": 0, "max": 1}), "PostgreSQL type text")
	bad(column("bonus", map[string]any{"type": "int", "min": 0, "max": 1}), "PostgreSQL type numeric")
	bad(column("tags", map[string]any{"type": "string"}), "PostgreSQL type text[]")
	bad(column("score", map[string]any{"type": "string"}), "PostgreSQL type double precision")
	oddSpec := func(col string, spec map[string]any) func(map[string]any) {
		return func(m map[string]any) {
			table(m)["name"] = "odd"
			m["columns"] = map[string]any{col: spec}
		}
	}
	if _, err := c.Exec(ctx, "INSERT INTO odd VALUES (1, NULL, NULL), ('NaN', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
	bad(oddSpec("n", map[string]any{"type": "int", "min": 0, "max": 1}), `column "n" has a NULL value`)
	bad(oddSpec("x", map[string]any{"type": "float", "min": 0, "max": 1}), `column "x" has a value NaN`)
	if _, err := c.Exec(ctx, "UPDATE odd SET x = 'Infinity' WHERE n = 1"); err != nil {
		t.Fatal(err)
	}
	bad(oddSpec("x", map[string]any{"type": "float", "min": 0, "max": 1}), `column "x" has a value Infinity`)
	// A NULL string is an empty string, as an empty CSV field.
	ok := tableSpec("odd_s", srcURL, "odd")
	ok["columns"] = map[string]any{"s": map[string]any{"type": "string", "domain": []string{"", "x"}}}
	e.must(201, "POST", "/v1/datasets", e.admin, ok)
	if g := exact(t, e.srv, "odd_s", "SELECT COUNT(*) FROM odd_s GROUP BY s").Groups; len(g) != 2 || g[0].Value != 1 || g[1].Value != 1 {
		t.Fatalf("NULL string: %+v", g)
	}
	// Two columns differing only in case: the exact name wins; otherwise ambiguous.
	mixed := func(col string) func(map[string]any) {
		return func(m map[string]any) {
			table(m)["name"] = "Mixed"
			m["columns"] = map[string]any{col: map[string]any{"type": "int", "min": 0, "max": 1}}
		}
	}
	mixedOK := tableSpec("mixed", srcURL, "Mixed")
	mixed("a")(mixedOK)
	e.must(201, "POST", "/v1/datasets", e.admin, mixedOK)
	if _, err := c.Exec(ctx, `ALTER TABLE "Mixed" RENAME COLUMN a TO "aA"; ALTER TABLE "Mixed" RENAME COLUMN "A" TO "Aa"`); err != nil {
		t.Fatal(err)
	}
	bad(mixed("aa"), "differ only in case")
	// Read-only: a view whose reading would write fails, and writes nothing.
	bad(func(m map[string]any) {
		table(m)["name"] = "writes"
		m["columns"] = map[string]any{"n": map[string]any{"type": "int", "min": 0, "max": 1}}
	}, "read-only transaction")
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM audit").Scan(&n); err != nil || n != 0 {
		t.Fatalf("audit rows %d, %v: the import wrote to the source", n, err)
	}
	// Nothing injected: the table is still there, with its rows.
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pay").Scan(&n); err != nil || n != 4 {
		t.Fatalf("pay rows %d, %v", n, err)
	}
	// Admin only; the password never appears in an answer.
	code, body, _ := e.do("POST", "/v1/datasets", e.analyst, tableSpec("x", srcURL, "pay"))
	if code != 403 {
		t.Fatalf("analyst registering a table: %d %v", code, body)
	}
	m := tableSpec("bad", unreachable, "pay")
	if v := e.mustError(400, "table.url", "POST", "/v1/datasets", e.admin, m); strings.Contains(v["error"].(string), "hunter2") {
		t.Fatalf("the password leaks: %v", v)
	}
	if _, err := e.srv.dataset(ctx, "bad"); err == nil {
		t.Fatal("a refused registration left a dataset")
	}
}

func mustWhoami(t *testing.T, e *env, key string) string {
	t.Helper()
	return e.must(200, "GET", "/v1/whoami", key, nil)["id"].(string)
}
