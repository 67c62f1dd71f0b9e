package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/internal/groupcommit"
	"github.com/dpkit/dpkit/ledger/storetest"
	"github.com/dpkit/dpkit/mechanism"
)

// newSchema creates a fresh schema and returns a URL selecting it (see package pgtest).
func newSchema(t testing.TB) string { return pgtest.Schema(t, "dpkit_test_") }

var harness = storetest.Harness{
	Open: func(ctx context.Context, loc string, create bool) (ledger.Store, error) {
		return Open(ctx, loc, &Options{Create: create})
	},
	NewLocation: newSchema,
	// Preload records the releases through the group commit's transaction, a full batch
	// at a time.
	Preload: func(ctx context.Context, s ledger.Store, chain []string, rels []ledger.Release, decide ledger.Decide) error {
		st := s.(*Store)
		for len(rels) > 0 {
			n := min(len(rels), groupcommit.MaxBatch)
			calls := make([]*groupcommit.Call, n)
			for i, r := range rels[:n] {
				calls[i] = &groupcommit.Call{Chain: chain, Rel: r, Decide: decide}
			}
			if err := st.commit(calls); err != nil {
				return err
			}
			for _, c := range calls {
				if c.Err != nil {
					return c.Err
				}
			}
			rels = rels[n:]
		}
		return st.with(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, "VACUUM ANALYZE dpkit_budgets")
			return err
		})
	},
}

func TestMain(m *testing.M) { storetest.Main(m, harness) }

func TestContract(t *testing.T) { storetest.Run(t, harness) }

func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness) }

// TestNotALedger: schemas that do not hold a dpkit ledger give clear errors.
func TestNotALedger(t *testing.T) {
	ctx := context.Background()
	exec := func(loc, q string) {
		c, err := pgx.Connect(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		setup string
		want  error
	}{
		{"empty schema without create", "", ledger.ErrNotLedger},
		{"foreign meta", "CREATE TABLE dpkit_ledger_meta (name text PRIMARY KEY, value text NOT NULL); INSERT INTO dpkit_ledger_meta VALUES ('application', 'other')", ledger.ErrNotLedger},
		{"foreign budgets table", "CREATE TABLE dpkit_budgets (x int)", ledger.ErrNotLedger},
		{"garbage meta", "CREATE TABLE dpkit_ledger_meta (a int)", ledger.ErrNotLedger},
		{"newer schema (earlier format)", "CREATE TABLE dpkit_ledger_meta (name text PRIMARY KEY, value text NOT NULL); INSERT INTO dpkit_ledger_meta VALUES ('application', 'dpkit-ledger'), ('schema_version', '99')", ledger.ErrSchemaVersion},
		{"newer schema", "CREATE TABLE dpkit_schema (component text PRIMARY KEY, version int NOT NULL, updated_us bigint NOT NULL); INSERT INTO dpkit_schema VALUES ('ledger', 99, 0)", ledger.ErrSchemaVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loc := newSchema(t)
			if tc.setup != "" {
				exec(loc, tc.setup)
			}
			create := tc.setup != ""
			s, err := Open(ctx, loc, &Options{Create: create})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want an error matching %v", err, tc.want)
			}
			t.Logf("%v", err)
		})
	}
	var pe *dpkit.ParamError
	if _, err := Open(ctx, "postgres://[::1", nil); !errors.As(err, &pe) {
		t.Errorf("malformed URL: %v, want a *dpkit.ParamError", err)
	}
	if _, err := Open(ctx, "postgres://u:secret@127.0.0.1:1/x?connect_timeout=2", nil); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable server: %v (want an error that hides the password)", err)
	}
}

// TestAppendOnly: the release log cannot be altered in place, and tampering with the
// statistics is caught by Audit.
func TestAppendOnly(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	s, err := Open(ctx, loc, &Options{Create: true})
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
	c, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{"UPDATE dpkit_releases SET epsilon = 0", "DELETE FROM dpkit_releases"} {
		if _, err := c.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only trigger to abort", q, err)
		}
	}
	if _, err := c.Exec(ctx, "UPDATE dpkit_budgets SET sum_epsilon = '1/4'"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Audit(ctx, "a"); !errors.Is(err, ledger.ErrAudit) {
		t.Errorf("audit after tampering: %v, want ErrAudit", err)
	}
}

// TestMigrateV1: a version-1 ledger (before release payloads) is migrated on open: its
// releases keep their content with no payload, and new spends record one.
func TestMigrateV1(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	s, err := Open(ctx, loc, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "m", Total: dpkit.Budget{Epsilon: 1}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "m", Cost: dpkit.Budget{Epsilon: 0.25}, Key: "a", Mechanism: mechanism.Describe(mechanism.LaplaceNoise{Scale: 4, Sensitivity: 1})}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// Back to schema 1 as dpkit wrote it: the version in dpkit_ledger_meta, no dpkit_schema.
	if _, err := c.Exec(ctx, "DROP INDEX dpkit_releases_root_analyst; ALTER TABLE dpkit_releases DROP COLUMN number; ALTER TABLE dpkit_releases DROP COLUMN payload; DROP TABLE dpkit_schema; UPDATE dpkit_ledger_meta SET value = '1' WHERE name = 'schema_version'"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := c.QueryRow(ctx, "SELECT version FROM dpkit_schema WHERE component = 'ledger'").Scan(&version); err != nil || version != SchemaVersion || SchemaVersion < 3 {
		t.Fatalf("dpkit_schema version %d after migration (SchemaVersion %d), %v", version, SchemaVersion, err)
	}
	// Older dpkit (which read dpkit_ledger_meta, up to 2) now refuse the database.
	var fence string
	if err := c.QueryRow(ctx, "SELECT value FROM dpkit_ledger_meta WHERE name = 'schema_version'").Scan(&fence); err != nil || fence != "100" {
		t.Fatalf("dpkit_ledger_meta schema_version %q after migration, %v; want 100", fence, err)
	}
	l = ledger.New(s)
	if _, err := l.Spend(ctx, ledger.Request{Budget: "m", Cost: dpkit.Budget{Epsilon: 0.25}, Key: "b", Payload: []byte("answer")}); err != nil {
		t.Fatal(err)
	}
	hist, err := l.History(ctx, "m", 0, 0)
	if err != nil || len(hist) != 2 || hist[0].Payload != nil || string(hist[1].Payload) != "answer" || hist[0].Number != 1 || hist[1].Number != 2 {
		t.Fatalf("history after migration: %+v %v", hist, err)
	}
}

// TestMigrateMechanismDescriptors: a schema-3 ledger whose mechanisms are the command
// line's text or free text is migrated on open (schema 4, ledger.MigrateMechanisms);
// the log stays append-only.
func TestMigrateMechanismDescriptors(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	s, err := Open(ctx, loc, &Options{Create: true})
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
	c, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		"ALTER TABLE dpkit_releases DISABLE TRIGGER dpkit_releases_no_change",
		"UPDATE dpkit_releases SET mechanism = 'gaussian:sigma=40,sensitivity=1' WHERE budget_id = 'p' AND seq = (SELECT min(seq) FROM dpkit_releases)",
		"UPDATE dpkit_releases SET mechanism = 'discrete laplace:scale=2' WHERE mechanism = ''",
		`UPDATE dpkit_budgets SET policy = '{"kind":"plan","plan":[{"epsilon":1,"delta":1e-9},{"epsilon":1,"delta":0},{"epsilon":1,"delta":1e-9}],"plan_mechanisms":["gaussian:sigma=40,sensitivity=1","","gaussian:sensitivity=1,sigma=40"]}'`,
		"ALTER TABLE dpkit_releases ENABLE TRIGGER dpkit_releases_no_change",
		// Schema 5 added the release numbers.
		"DROP INDEX dpkit_releases_root_analyst",
		"ALTER TABLE dpkit_releases DROP COLUMN number",
		"UPDATE dpkit_schema SET version = 3 WHERE component = 'ledger'",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err = Open(ctx, loc, nil)
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
	if err != nil || len(def.Policy.PlanMechanisms) != 3 || !def.Policy.PlanMechanisms[2].Equal(gauss) || !def.Policy.PlanMechanisms[1].IsZero() {
		t.Fatalf("migrated plan: %+v %v", def.Policy, err)
	}
	if _, err := l.Spend(ctx, ledger.Request{Budget: "p", Cost: plan.Plan[2], Mechanism: gauss}); err != nil {
		t.Error(err)
	}
	if _, err := c.Exec(ctx, "UPDATE dpkit_releases SET epsilon = 0"); err == nil {
		t.Error("after the migration the log is not append-only")
	}
}

// TestBatchRollback: when a statement of a group-committed batch fails, the whole batch
// is rolled back — every spend of it fails, nothing is recorded, the statistics are
// unchanged — and the next spends are recorded normally (the failed transaction's
// connection does not come back to the pool in a transaction).
func TestBatchRollback(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	s, err := Open(ctx, loc, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := ledger.New(s)
	if _, err := l.Create(ctx, ledger.Spec{ID: "b", Total: dpkit.Budget{Epsilon: 10}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "ALTER TABLE dpkit_releases ADD CONSTRAINT no_mallory CHECK (analyst <> 'mallory')"); err != nil {
		t.Fatal(err)
	}
	calls := make([]*groupcommit.Call, 3)
	for i, analyst := range []string{"ann", "mallory", "bo"} {
		calls[i] = &groupcommit.Call{Chain: []string{"b"}, Rel: ledger.Release{Budget: "b", Cost: dpkit.Budget{Epsilon: 1}, Analyst: analyst},
			Decide: func(st []ledger.Stats) ([]ledger.Stats, error) {
				return []ledger.Stats{st[0].Add(dpkit.Budget{Epsilon: 1})}, nil
			}}
	}
	if err := s.commit(calls); err == nil || !strings.Contains(err.Error(), "no_mallory") {
		t.Fatalf("a batch with a failing insert: %v", err)
	}
	if st, err := l.Status(ctx, "b"); err != nil || st.Releases != 0 {
		t.Fatalf("after the failed batch: %+v %v", st, err)
	}
	for range 2 * 8 { // more spends than the pool has connections
		if _, err := l.Spend(ctx, ledger.Request{Budget: "b", Cost: dpkit.Budget{Epsilon: 0.5}, Analyst: "ann"}); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := l.Audit(ctx, "b"); err != nil || a.Releases != 16 {
		t.Fatalf("audit: %+v %v", a, err)
	}
	// The same through the fast path (the store's statistics are cached now).
	fast := s.fastBatches.Load()
	for _, c := range calls {
		c.Got, c.Replayed, c.Err = ledger.Release{}, false, nil
	}
	if err := s.commit(calls); err == nil || !strings.Contains(err.Error(), "no_mallory") {
		t.Fatalf("a failing batch on the fast path: %v", err)
	}
	for range 2 { // the failure dropped the cache: locked, then fast again
		if _, err := l.Spend(ctx, ledger.Request{Budget: "b", Cost: dpkit.Budget{Epsilon: 0.5}, Analyst: "ann"}); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := l.Audit(ctx, "b"); err != nil || a.Releases != 18 || s.fastBatches.Load() != fast+1 {
		t.Fatalf("after a failed fast batch: %+v %v (fast batches %d → %d)", a, err, fast, s.fastBatches.Load())
	}
}

// TestStaleCache: two stores (as two processes would have) spend in turn on one budget,
// so that each one's cached statistics are always out of date: every batch then goes the
// locked way, and the ledger stays exact — numbers 1, 2, …, the capacity refused beyond,
// a key recorded through one store replayed through the other (also once the budget is
// exhausted), Audit passing.
func TestStaleCache(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	var ls [2]*ledger.Ledger
	for i := range ls {
		s, err := Open(ctx, loc, &Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ls[i] = ledger.New(s)
	}
	if _, err := ls[0].Create(ctx, ledger.Spec{ID: "x", Total: dpkit.Budget{Epsilon: 10}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		r, err := ls[i%2].Spend(ctx, ledger.Request{Budget: "x", Cost: dpkit.Budget{Epsilon: 1}, Key: fmt.Sprint("k", i)})
		if err != nil || r.Release.Number != int64(i+1) {
			t.Fatalf("spend %d through store %d: %+v %v", i, i%2, r, err)
		}
	}
	for i := range 2 {
		if _, err := ls[i].Spend(ctx, ledger.Request{Budget: "x", Cost: dpkit.Budget{Epsilon: 1}, Key: "over"}); !errors.Is(err, ledger.ErrBudgetExceeded) {
			t.Fatalf("past the capacity through store %d: %v", i, err)
		}
		// k0 was recorded through store 0, k1 through store 1: each replays through the other.
		r, err := ls[1-i].Spend(ctx, ledger.Request{Budget: "x", Cost: dpkit.Budget{Epsilon: 1}, Key: fmt.Sprint("k", i)})
		if err != nil || !r.Replayed || r.Release.Number != int64(i+1) {
			t.Fatalf("replay of k%d through store %d: %+v %v", i, 1-i, r, err)
		}
	}
	if a, err := ls[0].Audit(ctx, "x"); err != nil || a.Releases != 10 {
		t.Fatalf("audit: %+v %v", a, err)
	}
}

// TestFastPath: once a store has read a budget's statistics, its next batches on that
// budget commit in one round trip (the fast path), while another store's spends make it
// take the locked path again.
func TestFastPath(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, loc, &Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	l, other := ledger.New(stores[0]), ledger.New(stores[1])
	if _, err := l.Create(ctx, ledger.Spec{ID: "f", Total: dpkit.Budget{Epsilon: 100}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	spend := func(l *ledger.Ledger) {
		t.Helper()
		if _, err := l.Spend(ctx, ledger.Request{Budget: "f", Cost: dpkit.Budget{Epsilon: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		spend(l)
	}
	if f, k := stores[0].fastBatches.Load(), stores[0].lockedBatches.Load(); f != 4 || k != 1 {
		t.Fatalf("5 spends: %d fast and %d locked batches, want 4 and 1", f, k)
	}
	spend(other) // store 0's cache is out of date now
	spend(l)     // the fast path fails, nothing is recorded, the locked path records it
	spend(l)
	if f, k := stores[0].fastBatches.Load(), stores[0].lockedBatches.Load(); f != 5 || k != 2 {
		t.Fatalf("after the other store's spend: %d fast and %d locked batches, want 5 and 2", f, k)
	}
	if a, err := l.Audit(ctx, "f"); err != nil || a.Releases != 8 {
		t.Fatalf("audit: %+v %v", a, err)
	}
}
