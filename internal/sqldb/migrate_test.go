package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/pgtest"
)

// widgets is a component with three migrations, the second of which adds a column.
var widgets = MustLoad(fstest.MapFS{
	"m/001_init.sql":  {Data: []byte("-- widgets\nCREATE TABLE widgets (id INTEGER PRIMARY KEY);\nCREATE TABLE parts (w INTEGER);")},
	"m/002_name.sql":  {Data: []byte("ALTER TABLE widgets ADD COLUMN name TEXT;")},
	"m/003_index.sql": {Data: []byte("CREATE INDEX widgets_name ON widgets (name);")},
}, "m/*.sql")

func widgetSchema(create bool) Schema {
	return Schema{Component: "widgets", Migrations: widgets, Tables: []string{"widgets", "parts"}, Create: create}
}

// locations returns the databases the tests run on: a fresh SQLite file, and a fresh
// PostgreSQL schema when the test server is there.
func locations(t *testing.T) map[string]func(t *testing.T) string {
	out := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") },
	}
	if os.Getenv("DPKIT_TEST_POSTGRES") != "" || os.Getenv("DPKIT_REQUIRE_POSTGRES") == "1" {
		out["postgres"] = func(t *testing.T) string { return pgtest.Schema(t, "dpkit_sqldb_test_") }
	}
	return out
}

func mustOpen(t *testing.T, dsn string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// markDpkit marks a SQLite file as dpkit's, as an earlier dpkit did (a file of another
// application is refused before its components are looked at).
func markDpkit(t *testing.T, db *DB) {
	t.Helper()
	if db.Dialect == SQLite {
		if _, err := db.SQL.Exec(fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			t.Fatal(err)
		}
	}
}

func version(t *testing.T, db *DB, component string) int {
	t.Helper()
	var v int
	if err := db.SQL.QueryRow("SELECT version FROM dpkit_schema WHERE component = $1", component).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrate: a fresh database gets every migration once, also when four openers race
// (each with its own pool, as four processes would); reopening applies nothing; a
// newer version is refused; an older one is brought up to date.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	for name, loc := range locations(t) {
		t.Run(name, func(t *testing.T) {
			dsn := loc(t)
			var wg sync.WaitGroup
			befores := make([]int, 4)
			errs := make([]error, 4)
			for i := range 4 {
				wg.Go(func() {
					db, err := Open(ctx, dsn, &Options{Create: true})
					if err != nil {
						errs[i] = err
						return
					}
					defer db.Close()
					befores[i], errs[i] = db.Migrate(ctx, widgetSchema(true))
				})
			}
			wg.Wait()
			fresh := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("opener %d: %v", i, err)
				}
				if befores[i] == 0 {
					fresh++
				} else if befores[i] != 3 {
					t.Fatalf("opener %d saw version %d", i, befores[i])
				}
			}
			if fresh != 1 {
				t.Fatalf("%d openers found a fresh database, want exactly 1 (%v)", fresh, befores)
			}
			db := mustOpen(t, dsn)
			if v := version(t, db, "widgets"); v != 3 {
				t.Fatalf("version %d", v)
			}
			if _, err := db.SQL.ExecContext(ctx, "INSERT INTO widgets (id, name) VALUES (1, 'a')"); err != nil {
				t.Fatal(err)
			}
			// Another component in the same database has its own version.
			other := Schema{Component: "other", Migrations: widgets[:1], Create: true}
			other.Migrations = MustLoad(fstest.MapFS{"m/001_x.sql": {Data: []byte("CREATE TABLE other_x (a INTEGER);")}}, "m/*.sql")
			if before, err := db.Migrate(ctx, other); err != nil || before != 0 || version(t, db, "other") != 1 || version(t, db, "widgets") != 3 {
				t.Fatalf("second component: %d %v", before, err)
			}
			// An older database: version 2 recorded, the index missing.
			if _, err := db.SQL.ExecContext(ctx, "DROP INDEX widgets_name; UPDATE dpkit_schema SET version = 2 WHERE component = 'widgets'"); err != nil {
				t.Fatal(err)
			}
			if before, err := db.Migrate(ctx, widgetSchema(false)); err != nil || before != 2 || version(t, db, "widgets") != 3 {
				t.Fatalf("from version 2: %d %v", before, err)
			}
			// A newer one is refused, and left as it is.
			if _, err := db.SQL.ExecContext(ctx, "UPDATE dpkit_schema SET version = 9 WHERE component = 'widgets'"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Migrate(ctx, widgetSchema(true)); !errors.Is(err, ErrNewer) || !strings.Contains(err.Error(), "upgrade dpkit") {
				t.Fatalf("newer: %v", err)
			}
			if v := version(t, db, "widgets"); v != 9 {
				t.Fatalf("a refused migration changed the version to %d", v)
			}
		})
	}
}

// TestMigrateRefuses: a database holding a component's tables without a record of it is
// another application's, and one lacking the component is refused without Create; in
// both cases nothing is written.
func TestMigrateRefuses(t *testing.T) {
	ctx := context.Background()
	for name, loc := range locations(t) {
		t.Run(name, func(t *testing.T) {
			db := mustOpen(t, loc(t))
			if _, err := db.Migrate(ctx, widgetSchema(false)); !errors.Is(err, ErrMissing) {
				t.Fatalf("no component, no Create: %v", err)
			}
			var tx *sql.Tx
			tx, err := db.SQL.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			has, err := db.HasTable(ctx, tx, "dpkit_schema")
			tx.Rollback()
			if err != nil || has {
				t.Fatalf("a refused migration created dpkit_schema (%v)", err)
			}
			markDpkit(t, db)
			if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE parts (x TEXT)"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Migrate(ctx, widgetSchema(true)); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "parts") {
				t.Fatalf("foreign table: %v", err)
			}
		})
	}
}

// TestMigrateLegacy: a component's version recorded an earlier way is read once through
// Schema.Legacy; the migrations above it run, and from then on dpkit_schema holds it.
func TestMigrateLegacy(t *testing.T) {
	ctx := context.Background()
	for name, loc := range locations(t) {
		t.Run(name, func(t *testing.T) {
			db := mustOpen(t, loc(t))
			markDpkit(t, db)
			if _, err := db.SQL.ExecContext(ctx, widgets[0].SQL+"CREATE TABLE old_versions (v INTEGER);INSERT INTO old_versions VALUES (1);"); err != nil {
				t.Fatal(err)
			}
			calls := 0
			s := widgetSchema(false)
			s.Legacy = func(ctx context.Context, tx *sql.Tx) (int, error) {
				calls++
				var v int
				err := tx.QueryRowContext(ctx, "SELECT v FROM old_versions").Scan(&v)
				return v, err
			}
			if before, err := db.Migrate(ctx, s); err != nil || before != 1 || version(t, db, "widgets") != 3 {
				t.Fatalf("legacy version 1: %d %v", before, err)
			}
			if _, err := db.Migrate(ctx, s); err != nil || calls != 1 {
				t.Fatalf("reopening: %v; Legacy called %d times, want once", err, calls)
			}
			// A legacy record that is not dpkit's aborts, writing nothing.
			db2 := mustOpen(t, loc(t))
			bad := widgetSchema(true)
			bad.Legacy = func(context.Context, *sql.Tx) (int, error) { return 0, fmt.Errorf("%w: a stranger", ErrForeign) }
			if _, err := db2.Migrate(ctx, bad); !errors.Is(err, ErrForeign) {
				t.Fatalf("foreign legacy record: %v", err)
			}
		})
	}
}

// TestOpenSQLiteFiles: files that are not dpkit SQLite databases are refused before
// anything is written to them.
func TestOpenSQLiteFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	foreign := filepath.Join(dir, "foreign.db")
	fdb, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fdb.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	marked := filepath.Join(dir, "marked.db")
	if fdb, err = sql.Open("sqlite", marked); err != nil {
		t.Fatal(err)
	}
	if _, err := fdb.Exec("PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	before, _ := os.ReadFile(foreign)
	for _, tc := range []struct {
		name, path string
		create     bool
		want       error
	}{
		{"text", write("notes.txt", []byte("not a database\n")), true, ErrForeign},
		{"truncated header", write("short.db", []byte("SQLite fo")), true, ErrForeign},
		{"foreign tables", foreign, true, ErrForeign},
		{"foreign application_id", marked, true, ErrForeign},
		{"missing", filepath.Join(dir, "missing.db"), false, fs.ErrNotExist},
		{"empty", write("empty.db", nil), false, ErrMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(ctx, tc.path, &Options{Create: tc.create})
			if err == nil {
				db.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if after, _ := os.ReadFile(foreign); string(after) != string(before) {
		t.Fatal("opening a foreign database changed it")
	}
	var pe *dpkit.ParamError
	for _, bad := range []string{"", "x.db?mode=ro", "x.db#frag"} {
		if _, err := Open(ctx, bad, &Options{Create: true}); !errors.As(err, &pe) || pe.Name != "db" || pe.Pkg != "sqldb" {
			t.Fatalf("Open(%q): %v, want a *dpkit.ParamError for db", bad, err)
		}
	}
}

// TestOpenSettings: every connection of a SQLite pool commits with synchronous=FULL in
// WAL mode, so that no component of the process commits less durably than another.
func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, filepath.Join(t.TempDir(), "s.db"))
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		c, err := db.SQL.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		var sync int
		var mode string
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
			t.Fatalf("connection %d: synchronous = %d (%v), want 2 (FULL)", i, sync, err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("connection %d: journal_mode = %q (%v), want wal", i, mode, err)
		}
	}
}

// TestOpenPostgres: a malformed URL is a *dpkit.ParamError, an unreachable server an
// error that does not show the password; the pool's connections commit synchronously.
func TestOpenPostgres(t *testing.T) {
	ctx := context.Background()
	var pe *dpkit.ParamError
	if _, err := Open(ctx, "postgres://[::1", nil); !errors.As(err, &pe) || pe.Name != "db" {
		t.Fatalf("malformed URL: %v", err)
	}
	_, err := Open(ctx, "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=2", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "u:***@") {
		t.Fatalf("unreachable: %v (want an error that hides the password)", err)
	}
	db := mustOpen(t, pgtest.Schema(t, "dpkit_sqldb_test_"))
	var v string
	if err := db.SQL.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
		t.Fatalf("synchronous_commit = %q, %v", v, err)
	}
	if db.Pool == nil || db.Dialect != Postgres {
		t.Fatalf("db: %+v", db)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/d?x=1": "postgres://u:***@h:5432/d?x=1",
		"postgresql://u@h/d":           "postgresql://u@h/d",
		"postgres://h/d":               "postgres://h/d",
		"/var/lib/dpkit.db":            "/var/lib/dpkit.db",
		"postgres://u:p@ss@h/d":        "postgres://u:***@h/d",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := RedactIn(`cannot parse "postgres://u:s3cret@h/d": bad`, "postgres://u:s3cret@h/d"); strings.Contains(got, "s3cret") {
		t.Errorf("RedactIn: %q", got)
	}
}
