package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/ledger"
)

// postgresURL is the test server's URL (see package pgtest).
func postgresURL(t testing.TB) string { return pgtest.AdminURL(t) }

// newSchema creates a fresh schema and returns a URL selecting it (see package pgtest).
func newSchema(t testing.TB) string { return pgtest.Schema(t, "dpkit_server_test_") }

// TestPostgres runs the API tests on PostgreSQL: the service's tables and the ledger
// in one fresh schema per test.
func TestPostgres(t *testing.T) {
	postgresURL(t)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"HealthzAndPage", testHealthzAndPage},
		{"Auth", testAuth},
		{"AnalystScope", testAnalystScope},
		{"CreateDataset", testCreateDataset},
		{"Query", testQuery},
		{"AdaptivePolicy", testAdaptivePolicy},
		{"Releases", testReleases},
		{"Curve", testCurve},
		{"ConcurrentClients", testConcurrentClients},
		{"LegacyAnswers", testLegacyAnswers},
		{"TableDataset", testTableDataset},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnvAt(t, newSchema(t))) })
	}
	t.Run("Restart", func(t *testing.T) { testRestart(t, newSchema(t)) })
	t.Run("Migrations", func(t *testing.T) { testMigrations(t, newSchema(t)) })
	t.Run("MigrateV1", func(t *testing.T) { testMigrateV1(t, newSchema(t)) })
}

// TestMigrations: opening the store applies every migration once and records it;
// reopening (also from two processes' worth of stores at once) changes nothing; a
// database migrated by a newer dpkit is refused.
func TestMigrations(t *testing.T) {
	testMigrations(t, filepath.Join(t.TempDir(), "m.db"))
}

func testMigrations(t *testing.T, db string) {
	ctx := context.Background()
	_, closeDB := open(t, db) // the ledger first, as dpkit serve does
	closeDB()
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			st, err := OpenStore(ctx, db)
			if err == nil {
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	st, err := OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.db.QueryContext(ctx, "SELECT version FROM server_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for rows.Next() {
		var v int
		rows.Scan(&v)
		versions = append(versions, v)
	}
	rows.Close()
	if len(versions) != len(files) {
		t.Fatalf("recorded versions %v for %d migration files", versions, len(files))
	}
	for i, v := range versions {
		if v != i+1 {
			t.Fatalf("recorded versions %v, want 1..%d", versions, len(files))
		}
	}
	if _, err := st.db.ExecContext(ctx, st.q("INSERT INTO server_migrations (version, applied_at) VALUES (?, ?)"), 999, 0); err != nil {
		t.Fatal(err)
	}
	if st2, err := OpenStore(ctx, db); err == nil || !strings.Contains(err.Error(), "newer") {
		if st2 != nil {
			st2.Close()
		}
		t.Fatalf("a schema from a newer dpkit: %v, want a refusal", err)
	}
}

// TestMigrateV1: a database of the service's schema version 1 is migrated on open.
func TestMigrateV1(t *testing.T) { testMigrateV1(t, filepath.Join(t.TempDir(), "v1.db")) }

// testMigrateV1: a database of schema version 1 (datasets without an origin) is brought
// to the latest version on open, keeping its datasets, which still answer queries.
func testMigrateV1(t *testing.T, db string) {
	ctx := context.Background()
	e := newEnvAt(t, db)
	before := e.must(200, "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu"})
	// Back to version 1: the table as migration 001 made it.
	for _, stmt := range []string{"ALTER TABLE server_datasets DROP COLUMN origin", "DELETE FROM server_migrations WHERE version > 1"} {
		if _, err := e.srv.store.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	e2 := newEnvAt(t, db)
	var n int
	if err := e2.srv.store.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM server_migrations").Scan(&n); err != nil || n != migrations.Latest() || n < 2 {
		t.Fatalf("%d migrations recorded after reopening, %v; want %d", n, err, migrations.Latest())
	}
	recs, err := e2.srv.store.Datasets(ctx)
	if err != nil || len(recs) != 2 || recs[0].Origin != "" {
		t.Fatalf("datasets after migration: %+v %v", recs, err)
	}
	after := e2.must(200, "POST", "/v1/datasets/flu/query", e2.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu"})
	if after["release"].(float64) != before["release"].(float64)+1 {
		t.Fatalf("release after migration: %v, before %v", after, before)
	}
}

// testLegacyAnswers: a release recorded by an earlier dpkit (answer in server_answers,
// no ledger payload) is replayed with that answer and listed with it in the audit log.
func testLegacyAnswers(t *testing.T, e *env) {
	ctx := context.Background()
	const sql = "SELECT COUNT(*) FROM flu WHERE flu = 1"
	first := e.must(200, "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": sql, "idempotency_key": "new"})
	p, err := e.srv.authenticateKey(ctx, e.analyst)
	if err != nil {
		t.Fatal(err)
	}
	l := e.srv.ledger.(LedgerAccountant).L
	def, err := l.Definition(ctx, "flu")
	if err != nil {
		t.Fatal(err)
	}
	// What the earlier dpkit did: store the answer, then record the release without it.
	legacy := Answer{Result: ptr(12345.0), Mechanism: first["mechanism"].(string), Scale: first["scale"].(float64), CI95: []float64{1, 2}}
	body, _ := json.Marshal(legacy)
	key := p.ID + "/old"
	if _, err := e.srv.store.PutAnswer(ctx, AnswerRecord{Dataset: "flu", ReleaseKey: key, KeyID: p.ID, SQL: sql, Response: body, Created: def.Created}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "flu", Cost: *def.Policy.PerRelease, Analyst: p.ID, Key: key,
		Mechanism: fmt.Sprintf("%s:scale=%g", legacy.Mechanism, legacy.Scale)}); err != nil {
		t.Fatal(err)
	}
	v := e.must(200, "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": sql, "idempotency_key": "old"})
	if v["result"] != 12345.0 || v["remaining_queries"] != 18.0 {
		t.Fatalf("replay of a legacy release: %v", v)
	}
	e.mustError(409, "idempotency key", "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu", "idempotency_key": "old"})
	rels := e.must(200, "GET", "/v1/datasets/flu/releases", e.analyst, nil)["releases"].([]any)
	if len(rels) != 2 {
		t.Fatalf("releases: %v", rels)
	}
	for i, want := range []any{first["result"], 12345.0} {
		r := rels[i].(map[string]any)
		if r["sql"] != sql || obj(t, r, "answer")["result"] != want {
			t.Fatalf("release %d: %v, want answer %v", i, r, want)
		}
	}
}

// TestLegacyAnswers runs testLegacyAnswers on SQLite.
func TestLegacyAnswers(t *testing.T) { testLegacyAnswers(t, newEnv(t)) }
