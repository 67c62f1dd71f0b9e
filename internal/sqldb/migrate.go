package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one versioned migration file.
type Migration struct {
	Version int    // the number before "_" in the file name, from 1
	Name    string // the file's base name, e.g. "001_init.sql"
	SQL     string // the file's text: one or more statements
}

// List is a set of migrations ordered by version: List[i].Version == i+1.
type List []Migration

// Load reads the migrations whose paths match pattern in fsys (e.g. "migrations/*.sql"),
// ordered by version. Every name must start with a version number followed by "_", and
// the versions must be exactly 1, 2, …, n: a gap or a repeat is an error, so that the
// schema version of a database is the number of migrations applied to it.
func Load(fsys fs.FS, pattern string) (List, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("sqldb: %w", err)
	}
	l := make(List, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("sqldb: migration %s: the name must start with a version number ≥ 1 and \"_\"", base)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("sqldb: %w", err)
		}
		l = append(l, Migration{Version: v, Name: base, SQL: string(text)})
	}
	sort.SliceStable(l, func(i, j int) bool { return l[i].Version < l[j].Version })
	for i, m := range l {
		if m.Version != i+1 {
			return nil, fmt.Errorf("sqldb: migration %s has version %d, want %d (versions are 1, 2, … without gaps or repeats)", m.Name, m.Version, i+1)
		}
	}
	return l, nil
}

// MustLoad is Load for migrations embedded in the binary: it panics if they are
// malformed, a defect of the build that every test of the embedding package reveals
// (like regexp.MustCompile), never a consequence of input.
func MustLoad(fsys fs.FS, pattern string) List {
	l, err := Load(fsys, pattern)
	if err != nil {
		panic(err)
	}
	return l
}

// Latest returns the schema version the list brings a database to: its highest version,
// 0 for an empty list.
func (l List) Latest() int { return len(l) }

// Schema is one component's tables in the database.
type Schema struct {
	// Component names the schema in dpkit_schema ("ledger", "server").
	Component string
	// Migrations bring the component from version 0 to Migrations.Latest().
	Migrations List
	// Tables are tables the component creates. A database that has one of them but no
	// record of the component's version belongs to another application.
	Tables []string
	// Create allows creating the component's tables in a database that lacks them;
	// otherwise such a database is ErrMissing.
	Create bool
	// Legacy, if set, returns the version an earlier dpkit recorded its own way (0 if
	// none), read when dpkit_schema has no row for the component. An error aborts the
	// migration (wrap ErrForeign for a record that is not dpkit's).
	Legacy func(ctx context.Context, tx *sql.Tx) (int, error)
	// Steps are Go steps of migrations, by version, run in the migration transaction
	// right after that version's SQL: data migrations SQL cannot express (e.g. the
	// ledger's conversion of mechanism texts to descriptors). An error aborts the
	// migration.
	Steps map[int]func(ctx context.Context, tx *sql.Tx) error
}

// migrateLock is the PostgreSQL advisory lock under which every component migrates.
const migrateLock = "dpkit_migrate"

// versionTable records each component's schema version (portable SQL).
const versionTable = `CREATE TABLE IF NOT EXISTS dpkit_schema (
	component  TEXT PRIMARY KEY,
	version    INTEGER NOT NULL,
	updated_us BIGINT NOT NULL)`

// Migrate brings the component's tables to s.Migrations.Latest() in one transaction that
// excludes every other process migrating this database, and returns the version the
// database had before. It refuses a database of another application (ErrForeign), one
// that lacks the component when s.Create is false (ErrMissing; nothing is written), and
// one migrated by a newer dpkit (ErrNewer).
func (db *DB) Migrate(ctx context.Context, s Schema) (before int, err error) {
	tx, err := db.SQL.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE (the pool's _txlock)
	if err != nil {
		return 0, db.Classify(err)
	}
	defer tx.Rollback()
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", migrateLock); err != nil {
			return 0, fmt.Errorf("sqldb: lock for migrations: %w", err)
		}
	} else if err := checkApplication(ctx, tx); err != nil {
		return 0, db.Classify(err)
	}
	before, err = db.version(ctx, tx, s)
	if err != nil {
		return 0, db.Classify(err)
	}
	if latest := s.Migrations.Latest(); before > latest {
		return before, fmt.Errorf("%w: %s: the %s schema has version %d; this dpkit reads up to %d (upgrade dpkit)", ErrNewer, db.Name, s.Component, before, latest)
	}
	for _, m := range s.Migrations[before:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return before, fmt.Errorf("sqldb: %s: %s migration %s: %w", db.Name, s.Component, m.Name, db.Classify(err))
		}
		if step := s.Steps[m.Version]; step != nil {
			if err := step(ctx, tx); err != nil {
				return before, fmt.Errorf("sqldb: %s: %s migration %s (data step): %w", db.Name, s.Component, m.Name, db.Classify(err))
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dpkit_schema (component, version, updated_us) VALUES ($1, $2, $3)
			ON CONFLICT (component) DO UPDATE SET version = excluded.version, updated_us = excluded.updated_us`,
			s.Component, m.Version, time.Now().UnixMicro()); err != nil {
			return before, db.Classify(err)
		}
	}
	if db.Dialect == SQLite {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return before, db.Classify(err)
		}
	}
	if before == s.Migrations.Latest() {
		return before, nil // nothing written: the deferred rollback ends the transaction
	}
	return before, db.Classify(tx.Commit())
}

// version returns the component's recorded version, from dpkit_schema or its legacy
// record, checking that a database without a record holds none of its tables.
func (db *DB) version(ctx context.Context, tx *sql.Tx, s Schema) (int, error) {
	if _, err := tx.ExecContext(ctx, versionTable); err != nil {
		return 0, err
	}
	var v int
	err := tx.QueryRowContext(ctx, "SELECT version FROM dpkit_schema WHERE component = $1", s.Component).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if s.Legacy != nil {
		if v, err = s.Legacy(ctx, tx); err != nil || v > 0 {
			return v, err
		}
	}
	for _, t := range s.Tables {
		ok, err := db.HasTable(ctx, tx, t)
		if err != nil {
			return 0, err
		}
		if ok {
			return 0, fmt.Errorf("%w: %s has a table %s but no record of dpkit's %s schema", ErrForeign, db.Name, t, s.Component)
		}
	}
	if !s.Create {
		return 0, fmt.Errorf("%w: %s holds no dpkit %s", ErrMissing, db.Name, s.Component)
	}
	return 0, nil
}

// HasTable reports whether the database has a table of that name (PostgreSQL: one the
// search path finds), for Schema.Legacy.
func (db *DB) HasTable(ctx context.Context, tx *sql.Tx, name string) (bool, error) {
	var n int
	var err error
	if db.Dialect == Postgres {
		err = tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT to_regclass($1) AS r) t WHERE r IS NOT NULL", name).Scan(&n)
	} else {
		err = tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = $1", name).Scan(&n)
	}
	return n > 0, err
}
