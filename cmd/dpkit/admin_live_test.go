package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit/internal/pgtest"
)

// TestAdminLiveTable: "dpkit admin dataset register … --table-url URL --table NAME --live"
// registers a live PostgreSQL table in a running "dpkit serve" (the real binary), whose
// queries through "dpkit admin query" are computed inside PostgreSQL and follow the
// table's changes; --live without a table is a usage error.
func TestAdminLiveTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	src := pgtest.Schema(t, "dpkit_admin_live_")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE pay AS SELECT 'p' || i AS name, CASE WHEN i % 4 = 0 THEN 'ops' ELSE 'eng' END AS dept,
		10000 + (i % 90) * 1000 AS salary FROM generate_series(1, 4000) i`); err != nil {
		t.Fatal(err)
	}
	bin := buildDpkit(t)
	d := startServe(t, bin, "--demo", "--db", filepath.Join(t.TempDir(), "a.db"), "--statement-timeout", "1m")
	url, root := d.url(), d.banner["admin_key"]
	v := adminJSON(t, url, root, "dataset", "register", "--name", "pay", "--column", "name:string", "--column", "dept:string",
		"--domain", "dept=eng,ops", "--column", "salary:int:10000:100000", "--unit", "name:1", "--epsilon", "100", "--delta", "1e-6",
		"--adaptive", "--table-url", src, "--table", "pay", "--live")
	if v["live"] != true || !strings.Contains(v["source"].(string), "(live)") {
		t.Fatalf("register --live: %v", v)
	}
	// COUNT at ε = 20 (Δ = 1): the noise is within ±1 with probability > 1 − 10^-8.
	count := func() float64 {
		q := adminJSON(t, url, root, "query", "pay", "SELECT COUNT(*) FROM pay WHERE dept = 'ops'", "--epsilon", "20")
		return q["result"].(float64)
	}
	if n := count(); n < 999 || n > 1001 {
		t.Fatalf("COUNT(*) of ops = %v, want 1000 ± 1", n)
	}
	if _, err := c.Exec(ctx, `DELETE FROM pay WHERE dept = 'ops' AND salary > 50000`); err != nil {
		t.Fatal(err)
	}
	if n := count(); n < 471 || n > 473 {
		t.Fatalf("COUNT(*) of ops after the delete = %v, want 472 ± 1", n)
	}
	if code, out, _ := admin(t, url, root, "query", "pay", "SELECT COUNT(*), AVG(salary) FROM pay GROUP BY dept", "--epsilon", "1"); code != 0 || !strings.Contains(out, "ops") {
		t.Fatalf("a grouped query as a table: %d %s", code, out)
	}
	if code, _, errOut := admin(t, url, root, "dataset", "register", "--name", "x", "--column", "a:int:0:1", "--epsilon", "1", "--adaptive", "--csv", "/dev/null", "--live"); code != exitUsage || !strings.Contains(errOut, "--live goes with --table-url") {
		t.Fatalf("--live without a table: %d %s", code, errOut)
	}
}
