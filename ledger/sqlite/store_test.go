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
	"github.com/dpkit/dpkit/mechanism"
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

// TestMigrateMechanismDescriptors: a schema-3 ledger, whose mechanisms are the command
// line's text or free text, is migrated on open (schema 4, ledger.MigrateMechanisms):
// release texts become typed descriptors or notes, a plan's mechanism texts become
// descriptors that still account the plan, and the log stays append-only.
func TestMigrateMechanismDescriptors(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, p, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	gauss := mechanism.Describe(mechanism.GaussianNoise{Sigma: 40, Sensitivity: 1})
	plan := ledger.Policy{Kind: ledger.Plan, Plan: []dpkit.Budget{{Epsilon: 1, Delta: 1e-9}, {Epsilon: 1}, {Epsilon: 1, Delta: 1e-9}},
		PlanMechanisms: []mechanism.Descriptor{gauss, {}, gauss}}
	if _, err := l.Create(ctx, ledger.Spec{ID: "p", Total: dpkit.Budget{Epsilon: 3, Delta: 1e-6}, Policy: plan}); err != nil {
		t.Fatal(err)
	}
	for i, m := range []mechanism.Descriptor{gauss, {}} {
		if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan.Plan[i], Mechanism: m}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// Back to schema 3 as dpkit wrote it: texts in the mechanism column and the policy.
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DROP TRIGGER dpkit_releases_no_update",
		"UPDATE dpkit_releases SET mechanism = 'gaussian:sigma=40,sensitivity=1' WHERE seq = 1",
		"UPDATE dpkit_releases SET mechanism = 'discrete laplace:scale=2' WHERE seq = 2",
		`UPDATE dpkit_budgets SET policy = '{"kind":"plan","plan":[{"epsilon":1,"delta":1e-9},{"epsilon":1,"delta":0},{"epsilon":1,"delta":1e-9}],"plan_mechanisms":["gaussian:sigma=40,sensitivity=1","","gaussian:sensitivity=1,sigma=40"]}'`,
		"CREATE TRIGGER dpkit_releases_no_update BEFORE UPDATE ON dpkit_releases BEGIN SELECT RAISE(ABORT, 'dpkit ledger releases are append-only'); END",
		// Schema 5 added the release numbers.
		"DROP INDEX dpkit_releases_root_number",
		"DROP INDEX dpkit_releases_root_analyst",
		"ALTER TABLE dpkit_releases DROP COLUMN number",
		"UPDATE dpkit_schema SET version = 3 WHERE component = 'ledger'",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err = Open(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l = ledger.New(s)
	hist, err := l.History(ctx, "p", 0, 0)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history: %v %v", hist, err)
	}
	if !hist[0].Mechanism.Equal(gauss) || !hist[1].Mechanism.Equal(mechanism.Describe(mechanism.Text{Text: "discrete laplace:scale=2"})) {
		t.Errorf("migrated mechanisms: %s, %s", hist[0].Mechanism, hist[1].Mechanism)
	}
	def, err := l.Definition(ctx, "p")
	if err != nil || len(def.Policy.PlanMechanisms) != 3 || !def.Policy.PlanMechanisms[0].Equal(gauss) || !def.Policy.PlanMechanisms[1].IsZero() || !def.Policy.PlanMechanisms[2].Equal(gauss) {
		t.Fatalf("migrated plan: %+v %v", def.Policy, err)
	}
	// The plan still accounts and checks its third slot.
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan.Plan[2], Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 1, Sensitivity: 1})}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("a Laplace release in the Gaussian slot: %v", err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan.Plan[2], Mechanism: gauss}); err != nil {
		t.Error(err)
	}
	if _, err := l.Audit(ctx, "p"); err != nil {
		t.Error(err)
	}
	if _, err := s.db.Exec("UPDATE dpkit_releases SET epsilon = 0"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("after the migration the log is not append-only: %v", err)
	}
}
