package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/internal/sqldb"
)

// databases returns the databases the tests run on: a fresh SQLite file, and a fresh
// PostgreSQL schema when the test server is there.
func databases(t *testing.T) map[string]func(t *testing.T) *sqldb.DB {
	open := func(t *testing.T, dsn string) *sqldb.DB {
		db, err := sqldb.Open(context.Background(), dsn, &sqldb.Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	out := map[string]func(t *testing.T) *sqldb.DB{
		"sqlite": func(t *testing.T) *sqldb.DB { return open(t, filepath.Join(t.TempDir(), "r.db")) },
	}
	if os.Getenv("DPKIT_TEST_POSTGRES") != "" || os.Getenv("DPKIT_REQUIRE_POSTGRES") == "1" {
		out["postgres"] = func(t *testing.T) *sqldb.DB { return open(t, pgtest.Schema(t, "dpkit_registry_test_")) }
	}
	return out
}

// TestRegistry: datasets, keys and grants round-trip; a taken name or key is ErrExists,
// a missing one ErrNotFound; grants and revocations are idempotent.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	for name, newDB := range databases(t) {
		t.Run(name, func(t *testing.T) {
			r, err := Open(ctx, newDB(t))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Microsecond)
			d := DatasetRecord{Name: "pay", Spec: []byte(`{"name":"pay"}`), CSV: "a\n1\n", Origin: "somewhere", Created: now}
			if err := r.AddDataset(ctx, d); err != nil {
				t.Fatal(err)
			}
			if err := r.AddDataset(ctx, d); !errors.Is(err, ErrExists) {
				t.Fatalf("second AddDataset: %v", err)
			}
			if err := r.AddDataset(ctx, DatasetRecord{Name: "file", Spec: []byte(`{}`), Path: "/srv/x.csv", Created: now}); err != nil {
				t.Fatal(err)
			}
			ds, err := r.Datasets(ctx)
			if err != nil || len(ds) != 2 || ds[0].Name != "file" || ds[1].Name != "pay" || ds[1].CSV != "" || ds[1].Origin != "somewhere" || !ds[1].Created.Equal(now) || ds[0].Path != "/srv/x.csv" {
				t.Fatalf("datasets: %+v %v", ds, err)
			}
			if text, err := r.DatasetCSV(ctx, "pay"); err != nil || text != "a\n1\n" {
				t.Fatalf("csv: %q %v", text, err)
			}
			if _, err := r.DatasetCSV(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("csv of a missing dataset: %v", err)
			}

			k := KeyRecord{ID: "k_1", Name: "carol", Role: Analyst, Created: now}
			if err := r.AddKey(ctx, k, "h1"); err != nil {
				t.Fatal(err)
			}
			if err := r.AddKey(ctx, KeyRecord{ID: "k_2", Name: "x", Role: Admin, Created: now}, "h1"); !errors.Is(err, ErrExists) {
				t.Fatalf("a taken hash: %v", err)
			}
			if got, err := r.KeyByHash(ctx, "h1"); err != nil || got != k {
				t.Fatalf("KeyByHash: %+v %v", got, err)
			}
			if n, err := r.CountKeys(ctx, Analyst); err != nil || n != 1 {
				t.Fatalf("CountKeys: %d %v", n, err)
			}
			for range 2 {
				if err := r.Grant(ctx, "k_1", "pay"); err != nil {
					t.Fatal(err)
				}
			}
			if g, err := r.Grants(ctx, "k_1"); err != nil || len(g) != 1 || !g["pay"] {
				t.Fatalf("grants: %v %v", g, err)
			}
			if all, err := r.AllGrants(ctx); err != nil || len(all) != 1 || len(all["k_1"]) != 1 || all["k_1"][0] != "pay" {
				t.Fatalf("all grants: %v %v", all, err)
			}
			if ok, err := r.Granted(ctx, "k_1", "file"); err != nil || ok {
				t.Fatalf("Granted(file): %v %v", ok, err)
			}
			for range 2 {
				if err := r.Revoke(ctx, "k_1", "pay"); err != nil {
					t.Fatal(err)
				}
			}
			if ok, err := r.Granted(ctx, "k_1", "pay"); err != nil || ok {
				t.Fatalf("Granted after revoke: %v %v", ok, err)
			}
			if err := r.RevokeKey(ctx, "k_1"); err != nil {
				t.Fatal(err)
			}
			if err := r.RevokeKey(ctx, "k_1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("revoking twice: %v", err)
			}
			if _, err := r.KeyByHash(ctx, "h1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a revoked key: %v", err)
			}
			if ok, err := r.KeyValid(ctx, "k_1"); err != nil || ok {
				t.Fatalf("KeyValid of a revoked key: %v %v", ok, err)
			}
			keys, err := r.Keys(ctx)
			if err != nil || len(keys) != 1 || !keys[0].Revoked {
				t.Fatalf("keys: %+v %v", keys, err)
			}
			// Demo keys: marked, and revoked together.
			for i, demo := range []bool{true, true, false} {
				if err := r.AddKey(ctx, KeyRecord{ID: fmt.Sprint("d", i), Name: "demo", Role: Analyst, Created: now, Demo: demo}, fmt.Sprint("hd", i)); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := r.RevokeDemoKeys(ctx); err != nil || n != 2 {
				t.Fatalf("RevokeDemoKeys: %d %v", n, err)
			}
			if k, err := r.KeyByHash(ctx, "hd2"); err != nil || k.Demo {
				t.Fatalf("the key that is not a demo key: %+v %v", k, err)
			}
			if _, err := r.KeyByHash(ctx, "hd0"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a revoked demo key: %v", err)
			}
			if err := r.AddDataset(ctx, DatasetRecord{Name: "visits", Spec: []byte(`{}`), CSV: "x\n", Created: now, Demo: true}); err != nil {
				t.Fatal(err)
			}
			if ds, err := r.Datasets(ctx); err != nil || len(ds) != 3 || !ds[2].Demo || ds[1].Demo {
				t.Fatalf("demo datasets: %+v %v", ds, err)
			}
			if _, err := r.Answer(ctx, "pay", "k"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Answer: %v", err)
			}
		})
	}
}

// TestMigrateLegacy: a database whose service tables an earlier dpkit made (versions in
// server_migrations) is adopted at its version, migrated, and fenced: server_migrations
// then says 100, above what an older dpkit reads, so that it refuses the database.
func TestMigrateLegacy(t *testing.T) {
	ctx := context.Background()
	for name, newDB := range databases(t) {
		t.Run(name, func(t *testing.T) {
			db := newDB(t)
			if db.Dialect == sqldb.SQLite {
				if _, err := db.SQL.Exec("PRAGMA application_id = 1685089132"); err != nil { // 0x64706b6c, as the ledger marked it
					t.Fatal(err)
				}
			}
			// Schema version 1 as dpkit wrote it.
			if _, err := db.SQL.ExecContext(ctx, migrations[0].SQL+`;
				CREATE TABLE server_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL);
				INSERT INTO server_migrations VALUES (1, 0);
				INSERT INTO server_datasets (name, spec, csv, created_at) VALUES ('old', '{}', 'a', 0)`); err != nil {
				t.Fatal(err)
			}
			r, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := r.Datasets(ctx)
			if err != nil || len(ds) != 1 || ds[0].Name != "old" || ds[0].Origin != "" {
				t.Fatalf("datasets: %+v %v", ds, err)
			}
			var v, fence int
			if err := db.SQL.QueryRow("SELECT version FROM dpkit_schema WHERE component = 'server'").Scan(&v); err != nil || v != SchemaVersion {
				t.Fatalf("version %d, %v", v, err)
			}
			if err := db.SQL.QueryRow("SELECT max(version) FROM server_migrations").Scan(&fence); err != nil || fence != 100 {
				t.Fatalf("server_migrations max %d, %v", fence, err)
			}
			// A registry migrated by a newer dpkit is refused.
			if _, err := db.SQL.Exec("UPDATE dpkit_schema SET version = 99 WHERE component = 'server'"); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(ctx, db); !errors.Is(err, sqldb.ErrNewer) {
				t.Fatalf("newer: %v", err)
			}
		})
	}
}
