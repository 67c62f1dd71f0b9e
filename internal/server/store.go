package server

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/dpkit/dpkit/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the service's versioned migrations, migrations/NNN_*.sql.
var migrations = migrate.MustLoad(migrationFS, "migrations/*.sql")

// Errors of the Store.
var (
	ErrNotFound = errors.New("server: not found")
	ErrExists   = errors.New("server: already exists")
)

// Store keeps what the service knows besides the ledger: datasets (schema and data),
// API keys (hashed) and grants — and, read-only for releases recorded by an earlier
// dpkit, the answers they released (answers are now the payloads of their ledger
// releases). Its tables live in the same
// database as the ledger's (a SQLite file or a PostgreSQL database), created by the
// versioned migrations in migrations/. It is safe for concurrent use.
type Store struct {
	db       *sql.DB
	postgres bool
}

// IsPostgres reports whether dsn names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// OpenStore opens (creating if needed) the store in dsn, a SQLite file path or a
// postgres:// URL, and applies the migrations it has not seen yet.
func OpenStore(ctx context.Context, dsn string) (*Store, error) {
	s := &Store{postgres: IsPostgres(dsn)}
	var err error
	if s.postgres {
		s.db, err = openPostgres(dsn)
	} else {
		if dsn == "" {
			return nil, errors.New("server: empty database path")
		}
		// WAL lets the ledger's connections and ours share the file; the busy timeout
		// waits out the ledger's write transactions instead of failing; migrations take
		// the write lock at BEGIN (_txlock=immediate) so that processes opening together
		// do not race. synchronous=NORMAL: a commit here (dataset, key, grant) survives a
		// crash of the process at once, and a power loss once the next ledger commit
		// (synchronous=FULL) syncs the WAL, which holds our earlier frames too. Answers
		// are not written here: they are recorded in the ledger with their release.
		s.db, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate")
		if err == nil {
			s.db.SetMaxOpenConns(4)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", redact(dsn), err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("server: database %s: %w", redact(dsn), err)
	}
	return s, nil
}

// redact hides the password of a postgres:// URL in messages.
func redact(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	at := strings.LastIndexByte(dsn, '@')
	scheme := strings.Index(dsn, "://") + 3
	if at < scheme {
		return dsn
	}
	user := dsn[scheme:at]
	if i := strings.IndexByte(user, ':'); i >= 0 {
		user = user[:i] + ":***"
	}
	return dsn[:scheme] + user + dsn[at:]
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// q rewrites the ? placeholders of query for PostgreSQL ($1, $2, …). No query of this
// file has a ? inside a string literal.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// migrationLock is the PostgreSQL advisory lock key under which the service migrates
// its tables, so that several processes starting at once do not race.
const migrationLock = "dpkit_server_migrate"

// execer is what migrate needs of a database or a connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// migrate applies, in order and each in its own transaction, the migrations whose
// version (the number before "_" in the file name) is above the recorded one. On
// PostgreSQL it holds an advisory lock meanwhile (processes sharing the database may
// start together); on SQLite each migration is a BEGIN IMMEDIATE transaction that
// checks the recorded version again.
func (s *Store) migrate(ctx context.Context) error {
	var db execer = s.db
	if s.postgres {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, migrationLock); err != nil {
			return fmt.Errorf("lock for migrations: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, migrationLock)
		db = conn
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS server_migrations (
		version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create server_migrations: %w", err)
	}
	if err := migrations.Apply(0, func(m migrate.Migration) error { return s.apply(ctx, db, m) }); err != nil {
		return err
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM server_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > migrations.Latest() {
		return fmt.Errorf("schema version %d is newer than this dpkit (%d): upgrade dpkit", current, migrations.Latest())
	}
	return nil
}

// apply runs migration m, statement by statement, in a transaction of its own unless its
// version is already recorded (by another process that migrated meanwhile), and records
// it in that transaction.
func (s *Store) apply(ctx context.Context, db execer, m migrate.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM server_migrations WHERE version = ?`), m.Version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range m.Statements() {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO server_migrations (version, applied_at) VALUES (?, ?)`), m.Version, time.Now().UnixNano()); err != nil {
		return err
	}
	return tx.Commit()
}

// DatasetRecord is a registered dataset as stored: its specification (JSON) and its data,
// either CSV text (given inline, or the snapshot of a PostgreSQL table) or a server-side
// path.
type DatasetRecord struct {
	Name    string
	Spec    []byte
	CSV     string // the CSV text; Datasets leaves it empty (see DatasetCSV)
	Path    string
	Origin  string // for a snapshot: the table and database it was read from, without credentials
	Created time.Time
}

// isUniqueViolation reports whether err is a primary-key or unique-constraint violation.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || // SQLite
		strings.Contains(msg, "SQLSTATE 23505") || // PostgreSQL unique_violation
		strings.Contains(msg, "constraint failed: PRIMARY KEY")
}

// AddDataset records d; ErrExists if a dataset of that name exists.
func (s *Store) AddDataset(ctx context.Context, d DatasetRecord) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO server_datasets (name, spec, csv, path, origin, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		d.Name, string(d.Spec), nullString(d.CSV), nullString(d.Path), nullString(d.Origin), d.Created.UnixNano())
	if isUniqueViolation(err) {
		return fmt.Errorf("dataset %q: %w", d.Name, ErrExists)
	}
	return err
}

// Datasets returns every dataset, by name, without its CSV text (which may be large:
// read it with DatasetCSV when the table is loaded).
func (s *Store) Datasets(ctx context.Context) ([]DatasetRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, spec, path, origin, created_at FROM server_datasets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DatasetRecord
	for rows.Next() {
		var d DatasetRecord
		var spec string
		var path, origin sql.NullString
		var created int64
		if err := rows.Scan(&d.Name, &spec, &path, &origin, &created); err != nil {
			return nil, err
		}
		d.Spec, d.Path, d.Origin, d.Created = []byte(spec), path.String, origin.String, time.Unix(0, created).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

// DatasetCSV returns the CSV text of dataset name ("" for a dataset registered by path);
// ErrNotFound if there is no such dataset.
func (s *Store) DatasetCSV(ctx context.Context, name string) (string, error) {
	var text sql.NullString
	err := s.db.QueryRowContext(ctx, s.q(`SELECT csv FROM server_datasets WHERE name = ?`), name).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("dataset %q: %w", name, ErrNotFound)
	}
	return text.String, err
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// Role is what an API key may do.
type Role string

// Roles.
const (
	Admin   Role = "admin"   // registers datasets, manages keys and grants; sees every dataset
	Analyst Role = "analyst" // queries the datasets granted to it; never sees rows
)

// KeyRecord is a stored API key (its hash, never the secret).
type KeyRecord struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
	Revoked bool      `json:"revoked,omitempty"`
}

// AddKey records a key with the given SHA-256 hash (hex).
func (s *Store) AddKey(ctx context.Context, k KeyRecord, hash string) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO server_keys (id, hash, name, role, created_at) VALUES (?, ?, ?, ?, ?)`),
		k.ID, hash, k.Name, string(k.Role), k.Created.UnixNano())
	if isUniqueViolation(err) {
		return fmt.Errorf("key %q: %w", k.ID, ErrExists)
	}
	return err
}

// KeyByHash returns the valid (not revoked) key whose secret hashes to hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (KeyRecord, error) {
	var k KeyRecord
	var role string
	var created int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, name, role, created_at FROM server_keys WHERE hash = ? AND revoked_at IS NULL`), hash).
		Scan(&k.ID, &k.Name, &role, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return k, ErrNotFound
	}
	k.Role, k.Created = Role(role), time.Unix(0, created).UTC()
	return k, err
}

// Keys lists every key, revoked ones included, by creation time.
func (s *Store) Keys(ctx context.Context) ([]KeyRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, role, created_at, revoked_at FROM server_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []KeyRecord
	for rows.Next() {
		var k KeyRecord
		var role string
		var created int64
		var revoked sql.NullInt64
		if err := rows.Scan(&k.ID, &k.Name, &role, &created, &revoked); err != nil {
			return nil, err
		}
		k.Role, k.Created, k.Revoked = Role(role), time.Unix(0, created).UTC(), revoked.Valid
		out = append(out, k)
	}
	return out, rows.Err()
}

// CountKeys returns the number of valid keys with the given role.
func (s *Store) CountKeys(ctx context.Context, role Role) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM server_keys WHERE role = ? AND revoked_at IS NULL`), string(role)).Scan(&n)
	return n, err
}

// RevokeKey marks key id revoked; ErrNotFound if there is no valid key with that id.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE server_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`), time.Now().UnixNano(), id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("key %q: %w", id, ErrNotFound)
	}
	return nil
}

// Grant lets key id query dataset (idempotent).
func (s *Store) Grant(ctx context.Context, id, dataset string) error {
	var stmt string
	if s.postgres {
		stmt = `INSERT INTO server_grants (key_id, dataset) VALUES (?, ?) ON CONFLICT DO NOTHING`
	} else {
		stmt = `INSERT OR IGNORE INTO server_grants (key_id, dataset) VALUES (?, ?)`
	}
	_, err := s.db.ExecContext(ctx, s.q(stmt), id, dataset)
	return err
}

// Revoke removes the grant of dataset to key id (idempotent).
func (s *Store) Revoke(ctx context.Context, id, dataset string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM server_grants WHERE key_id = ? AND dataset = ?`), id, dataset)
	return err
}

// Grants returns the datasets granted to key id.
func (s *Store) Grants(ctx context.Context, id string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT dataset FROM server_grants WHERE key_id = ?`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out[d] = true
	}
	return out, rows.Err()
}

// Granted reports whether key id may query dataset.
func (s *Store) Granted(ctx context.Context, id, dataset string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM server_grants WHERE key_id = ? AND dataset = ?`), id, dataset).Scan(&n)
	return n > 0, err
}

// AnswerRecord is a released answer.
type AnswerRecord struct {
	Dataset    string
	ReleaseKey string
	KeyID      string
	SQL        string
	Response   []byte
	Created    time.Time
}

// PutAnswer records a as the answer of its release unless one is recorded already, and
// returns the recorded one. The service no longer calls it (answers are recorded in the
// ledger with their release); it remains for tests of databases written by an earlier
// dpkit.
func (s *Store) PutAnswer(ctx context.Context, a AnswerRecord) (AnswerRecord, error) {
	var stmt string
	if s.postgres {
		stmt = `INSERT INTO server_answers (dataset, release_key, key_id, sql_text, response, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	} else {
		stmt = `INSERT OR IGNORE INTO server_answers (dataset, release_key, key_id, sql_text, response, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	}
	if _, err := s.db.ExecContext(ctx, s.q(stmt), a.Dataset, a.ReleaseKey, a.KeyID, a.SQL, string(a.Response), a.Created.UnixNano()); err != nil {
		return AnswerRecord{}, err
	}
	return s.Answer(ctx, a.Dataset, a.ReleaseKey)
}

// Answer returns the answer recorded for a release, or ErrNotFound.
func (s *Store) Answer(ctx context.Context, dataset, releaseKey string) (AnswerRecord, error) {
	a := AnswerRecord{Dataset: dataset, ReleaseKey: releaseKey}
	var resp string
	var created int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT key_id, sql_text, response, created_at FROM server_answers WHERE dataset = ? AND release_key = ?`), dataset, releaseKey).
		Scan(&a.KeyID, &a.SQL, &resp, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotFound
	}
	a.Response, a.Created = []byte(resp), time.Unix(0, created).UTC()
	return a, err
}

// Answers returns the answers released on dataset, oldest first.
func (s *Store) Answers(ctx context.Context, dataset string) ([]AnswerRecord, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT release_key, key_id, sql_text, response, created_at FROM server_answers WHERE dataset = ? ORDER BY created_at, release_key`), dataset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AnswerRecord
	for rows.Next() {
		a := AnswerRecord{Dataset: dataset}
		var resp string
		var created int64
		if err := rows.Scan(&a.ReleaseKey, &a.KeyID, &a.SQL, &resp, &created); err != nil {
			return nil, err
		}
		a.Response, a.Created = []byte(resp), time.Unix(0, created).UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}
