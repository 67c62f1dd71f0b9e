package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
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
		{"MultiAggregate", testMultiAggregate},
		{"GaussianPolicies", testGaussianPolicies},
		{"AccuracyFirst", testAccuracyFirst},
		{"Policies", testPolicies},
		{"GrantBudget", testGrantBudget},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnvAt(t, newSchema(t))) })
	}
	t.Run("Restart", func(t *testing.T) { testRestart(t, newSchema(t)) })
	t.Run("MigrateV1", func(t *testing.T) { testMigrateV1(t, newSchema(t)) })
}

// TestMigrateV1: a database of the service's schema version 1 is migrated on open.
func TestMigrateV1(t *testing.T) { testMigrateV1(t, filepath.Join(t.TempDir(), "v1.db")) }

// testMigrateV1: a database of schema version 1 as dpkit wrote it (datasets without an
// origin, versions in server_migrations) is brought to the latest version on open,
// keeping its datasets, which still answer queries.
func testMigrateV1(t *testing.T, db string) {
	ctx := context.Background()
	e := newEnvAt(t, db)
	before := e.must(200, "POST", "/v1/datasets/flu/query", e.analyst, map[string]any{"sql": "SELECT COUNT(*) FROM flu"})
	// Back to version 1: the table as migration 001 made it.
	raw := rawDB(t, db)
	for _, stmt := range []string{
		"ALTER TABLE server_datasets DROP COLUMN origin",
		"ALTER TABLE server_datasets DROP COLUMN demo",
		"ALTER TABLE server_keys DROP COLUMN demo",
		"ALTER TABLE server_datasets DROP COLUMN live_url",
		"ALTER TABLE server_datasets DROP COLUMN live_table",
		"DELETE FROM server_migrations",
		"INSERT INTO server_migrations (version, applied_at) VALUES (1, 0)",
		"DELETE FROM dpkit_schema WHERE component = 'server'",
	} {
		if _, err := raw.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	e2 := newEnvAt(t, db)
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT version FROM dpkit_schema WHERE component = 'server'").Scan(&n); err != nil || n != registry.SchemaVersion {
		t.Fatalf("server schema version %d after reopening, %v; want %d", n, err, registry.SchemaVersion)
	}
	recs, err := e2.srv.reg.Datasets(ctx)
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
	if _, err := rawDB(t, e.db).ExecContext(ctx, `INSERT INTO server_answers (dataset, release_key, key_id, sql_text, response, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		"flu", key, p.ID, sql, string(body), def.Created.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "flu", Cost: *def.Policy.PerRelease, Analyst: p.ID, Key: key,
		Mechanism: mechanism.Describe(mechanism.Text{Text: fmt.Sprintf("%s:scale=%g", legacy.Mechanism, legacy.Scale)})}); err != nil {
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
