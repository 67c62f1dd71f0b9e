package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/ledger"
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
	// Preload commits every 1000 releases: within one transaction each update of the
	// budget row adds a row version that later statements must step over (quadratic).
	Preload: func(ctx context.Context, s ledger.Store, chain []string, rels []ledger.Release, decide ledger.Decide) error {
		return s.(*Store).with(ctx, func(c *pgx.Conn) error {
			for len(rels) > 0 {
				n := min(len(rels), 1000)
				err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
					for _, r := range rels[:n] {
						if _, _, err := spendTx(ctx, tx, chain, r, decide); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				rels = rels[n:]
			}
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
