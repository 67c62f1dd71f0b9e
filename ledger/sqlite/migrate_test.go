package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// TestMigrateV1: a version-1 ledger (before release payloads) is migrated on open: its
// releases keep their content with no payload, and new spends record one.
func TestMigrateV1(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, p, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "m", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "m", Cost: dpkit.Budget{Epsilon: 0.25}, Key: k, Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 4, Sensitivity: 1})}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// Back to schema 1 as dpkit wrote it: the table as migration 001 made it, the
	// version in user_version, no dpkit_schema.
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DROP INDEX dpkit_releases_root_number; DROP INDEX dpkit_releases_root_analyst; ALTER TABLE dpkit_releases DROP COLUMN number; ALTER TABLE dpkit_releases DROP COLUMN payload; DROP TABLE dpkit_schema; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err = Open(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version, fence int
	if err := s.db.QueryRow("SELECT version FROM dpkit_schema WHERE component = 'ledger'").Scan(&version); err != nil || version != SchemaVersion || SchemaVersion < 3 {
		t.Fatalf("dpkit_schema version %d after migration (SchemaVersion %d), %v", version, SchemaVersion, err)
	}
	// Older dpkit (which read user_version, up to 2) now refuse the file.
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&fence); err != nil || fence != 100 {
		t.Fatalf("user_version %d after migration, %v; want 100", fence, err)
	}
	l = ledger.New(s)
	rc, err := l.Spend(ctx, ledger.Request{Budget: "m", Cost: dpkit.Budget{Epsilon: 0.25}, Key: "c", Payload: []byte("answer")})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := l.Spend(ctx, ledger.Request{Budget: "m", Cost: dpkit.Budget{Epsilon: 0.25}, Key: "a", Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 4, Sensitivity: 1})}); err != nil || !again.Replayed || again.Release.Payload != nil {
		t.Fatalf("replay of a version-1 release: %+v %v", again, err)
	}
	hist, err := l.History(ctx, "m", 0, 0)
	if err != nil || len(hist) != 3 || hist[0].Key != "a" || hist[0].Payload != nil || string(hist[2].Payload) != "answer" || hist[2].Seq != rc.Release.Seq {
		t.Fatalf("history after migration: %+v %v", hist, err)
	}
	for i, r := range hist { // numbered by migration 004 (1, 2), then by the spend (3)
		if r.Number != int64(i+1) {
			t.Fatalf("release %d has number %d after migration", i, r.Number)
		}
	}
	if _, err := l.Audit(ctx, "m"); err != nil {
		t.Fatal(err)
	}
}
