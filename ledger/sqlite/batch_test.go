package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/mechanism"
)

// TestGroupCommit starts 48 spends at once on a budget that fits 8 (basic filter,
// ε = 1, cost 0.125: exactly 8), with 12 idempotency keys shared by 4 spends each,
// plus store-level spends that fail inside the writer's transaction (an unknown budget,
// a decide error). Whatever the batching: exactly 8 keys are recorded, each once; every
// spend of a recorded key gets the same release (one original, the others replays);
// every spend of another key is refused; the failing spends fail alone; Audit passes.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "l.db"), &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "g", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		key string
		rc  ledger.Receipt
		err error
	}
	results := make(chan result, 48)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			<-start
			key := fmt.Sprintf("k%d", i%12)
			rc, err := l.Spend(ctx, ledger.Request{Budget: "g", Cost: dpkit.Budget{Epsilon: 0.125}, Key: key, Payload: []byte(key)})
			results <- result{key, rc, err}
		})
	}
	errDecide := errors.New("decide says no")
	var storeErrs [8]error
	for i := range storeErrs {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				_, _, storeErrs[i] = s.Spend(ctx, []string{"nope"}, ledger.Release{Budget: "nope"}, func(st []ledger.Stats) ([]ledger.Stats, error) { return st, nil })
			} else {
				_, _, storeErrs[i] = s.Spend(ctx, []string{"g"}, ledger.Release{Budget: "g"}, func([]ledger.Stats) ([]ledger.Stats, error) { return nil, errDecide })
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	for i, err := range storeErrs {
		if i%2 == 0 && !errors.Is(err, ledger.ErrUnknownBudget) || i%2 == 1 && !errors.Is(err, errDecide) {
			t.Errorf("failing store spend %d: %v", i, err)
		}
	}
	seqOf := map[string]int64{}
	originals := 0
	var refused []string
	for r := range results {
		switch {
		case errors.Is(r.err, ledger.ErrBudgetExceeded):
			refused = append(refused, r.key)
			continue
		case r.err != nil:
			t.Fatalf("key %s: %v", r.key, r.err)
		}
		if string(r.rc.Release.Payload) != r.key || r.rc.Release.Key != r.key {
			t.Errorf("key %s: receipt %+v", r.key, r.rc.Release)
		}
		if !r.rc.Replayed {
			originals++
		}
		if seq, ok := seqOf[r.key]; ok && seq != r.rc.Release.Seq {
			t.Errorf("key %s recorded twice: seq %d and %d", r.key, seq, r.rc.Release.Seq)
		}
		seqOf[r.key] = r.rc.Release.Seq
	}
	if originals != 8 || len(seqOf) != 8 {
		t.Fatalf("%d original releases over %d keys, want 8 and 8", originals, len(seqOf))
	}
	for _, k := range refused {
		if _, ok := seqOf[k]; ok {
			t.Errorf("key %s was refused once and recorded once", k)
		}
	}
	hist, err := l.History(ctx, "g", 0, 0)
	if err != nil || len(hist) != 8 {
		t.Fatalf("history: %d releases, %v", len(hist), err)
	}
	if a, err := l.Audit(ctx, "g"); err != nil || a.Releases != 8 {
		t.Fatalf("audit: %+v %v", a, err)
	}
}

// TestCloseDrains: spends queued when Close is called complete (recorded and
// acknowledged); a spend after Close fails.
func TestCloseDrains(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, p, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "c", Total: dpkit.Budget{Epsilon: 100}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for range 32 {
		wg.Go(func() {
			if _, err := l.Spend(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.5}}); err == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			}
		})
	}
	s.Close()
	wg.Wait()
	if _, err := l.Spend(ctx, ledger.Request{Budget: "c", Cost: dpkit.Budget{Epsilon: 0.5}}); err == nil {
		t.Fatal("spend after Close succeeded")
	}
	s2, err := Open(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	st, err := ledger.New(s2).Status(ctx, "c")
	if err != nil || st.Releases != int64(acked) {
		t.Fatalf("after Close: %d releases recorded, %d acknowledged (%v)", st.Releases, acked, err)
	}
}

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
