package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/storetest"
)

var harness = storetest.Harness{
	Open: func(ctx context.Context, loc string, create bool) (ledger.Store, error) {
		return Open(ctx, loc, &Options{Create: create})
	},
	NewLocation: func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") },
	Preload: func(ctx context.Context, s ledger.Store, chain []string, rels []ledger.Release, decide ledger.Decide) error {
		st := s.(*Store)
		tx, err := st.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, r := range rels {
			if _, _, err := spendTx(ctx, tx, chain, r, decide); err != nil {
				return err
			}
		}
		return tx.Commit()
	},
}

func TestMain(m *testing.M) { storetest.Main(m, harness) }

func TestContract(t *testing.T) { storetest.Run(t, harness) }

func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness) }

// TestNotALedger: files that are not dpkit ledgers give a clear error matching
// ledger.ErrNotLedger (or fs.ErrNotExist), never a panic, and are left unchanged.
func TestNotALedger(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A foreign SQLite database.
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreignBefore, _ := os.ReadFile(foreign)

	// A real ledger whose pages are then overwritten with garbage.
	corrupt := filepath.Join(dir, "corrupt.db")
	s, err := Open(ctx, corrupt, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "a", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, _ := os.ReadFile(corrupt)
	for i := 100; i < len(data); i++ {
		data[i] = byte(i * 7)
	}
	os.WriteFile(corrupt, data, 0o600)
	os.Remove(corrupt + "-wal")
	os.Remove(corrupt + "-shm")

	cases := []struct {
		name, path string
		create     bool
		want       error
	}{
		{"text file", write("notes.txt", []byte("hello, this is not a database\n")), true, ledger.ErrNotLedger},
		{"random bytes", write("random.db", []byte(strings.Repeat("\x13\x37\xde\xad", 2048))), true, ledger.ErrNotLedger},
		{"truncated header", write("short.db", []byte("SQLite fo")), true, ledger.ErrNotLedger},
		{"header then garbage", write("garbage.db", append([]byte("SQLite format 3\x00"), []byte(strings.Repeat("x", 5000))...)), true, ledger.ErrNotLedger},
		{"foreign sqlite", foreign, true, ledger.ErrNotLedger},
		{"corrupted ledger", corrupt, false, ledger.ErrNotLedger},
		{"missing without create", filepath.Join(dir, "missing.db"), false, os.ErrNotExist},
		{"empty without create", write("empty.db", nil), false, ledger.ErrNotLedger},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(ctx, tc.path, &Options{Create: tc.create})
			if err == nil {
				// Corruption may only show when the data is read.
				l := ledger.New(s)
				_, err = l.Status(ctx, "a")
				if err == nil {
					_, err = l.Budgets(ctx)
				}
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want an error matching %v", err, tc.want)
			}
			t.Logf("%s: %v", tc.name, err)
		})
	}
	if after, _ := os.ReadFile(foreign); string(after) != string(foreignBefore) {
		t.Error("opening a foreign database changed it")
	}
}

// TestSchemaVersion: a ledger written by a newer schema is refused — recorded in
// dpkit_schema, or (a file of the earlier format) in user_version.
func TestSchemaVersion(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, tamper string }{
		{"dpkit_schema", "UPDATE dpkit_schema SET version = 99 WHERE component = 'ledger'"},
		{"user_version", "DELETE FROM dpkit_schema; PRAGMA user_version = 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "l.db")
			s, err := Open(ctx, p, &Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, _ := sql.Open("sqlite", p)
			if _, err := db.Exec(tc.tamper); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if _, err := Open(ctx, p, nil); !errors.Is(err, ledger.ErrSchemaVersion) || !strings.Contains(err.Error(), "upgrade dpkit") {
				t.Fatalf("got %v, want ErrSchemaVersion saying to upgrade", err)
			}
		})
	}
}

// TestAppendOnly: the release log cannot be altered in place, and tampering with the
// statistics is caught by Audit.
func TestAppendOnly(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, p, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "a", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "a", Cost: dpkit.Budget{Epsilon: 0.5}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"UPDATE dpkit_releases SET epsilon = 0", "DELETE FROM dpkit_releases"} {
		if _, err := s.db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger to abort", q, err)
		}
	}
	if _, err := s.db.Exec("UPDATE dpkit_budgets SET sum_epsilon = '1/4'"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Audit(ctx, "a"); !errors.Is(err, ledger.ErrAudit) {
		t.Errorf("audit after tampering: %v, want ErrAudit", err)
	}
}
