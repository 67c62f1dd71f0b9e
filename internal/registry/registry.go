package registry

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/dpkit/dpkit/internal/sqldb"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the registry's versioned migrations, migrations/NNN_*.sql.
var migrations = sqldb.MustLoad(migrationFS, "migrations/*.sql")

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = migrations.Latest()

// Errors of the Registry; match them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// Registry is the service's datasets, keys and grants in db. It is safe for concurrent
// use.
type Registry struct {
	db *sqldb.DB
}

// Open opens the registry in db, creating or migrating its tables.
func Open(ctx context.Context, db *sqldb.DB) (*Registry, error) {
	_, err := db.Migrate(ctx, sqldb.Schema{
		Component: "server", Migrations: migrations, Create: true,
		Tables: []string{"server_datasets", "server_keys", "server_grants"},
		Legacy: func(ctx context.Context, tx *sql.Tx) (int, error) { return legacyVersion(ctx, db, tx) },
	})
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &Registry{db: db}, nil
}

// legacyVersion is the registry's version as dpkit recorded it before dpkit_schema: the
// highest version in server_migrations.
func legacyVersion(ctx context.Context, db *sqldb.DB, tx *sql.Tx) (int, error) {
	if ok, err := db.HasTable(ctx, tx, "server_migrations"); err != nil || !ok {
		return 0, err
	}
	var v int
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM server_migrations`).Scan(&v)
	return v, err
}

// Ping checks that the database answers.
func (r *Registry) Ping(ctx context.Context) error { return r.db.SQL.PingContext(ctx) }

// DatasetRecord is a registered dataset as stored: its specification (JSON) and its
// data, either CSV text (given inline, or the snapshot of a PostgreSQL table) or a path
// on the server.
type DatasetRecord struct {
	Name   string
	Spec   []byte
	CSV    string // the CSV text; Datasets leaves it empty (see DatasetCSV)
	Path   string
	Origin string // for a snapshot or a live table: the table and database, without credentials
	// LiveURL and LiveTable name the live PostgreSQL table a dataset reads at each query
	// (its database's URL, credentials included, and the table's name); "" otherwise.
	LiveURL, LiveTable string
	Created            time.Time
	Demo               bool // registered by "dpkit serve --demo"
}

// AddDataset records d; ErrExists if a dataset of that name exists.
func (r *Registry) AddDataset(ctx context.Context, d DatasetRecord) error {
	res, err := r.db.SQL.ExecContext(ctx, `INSERT INTO server_datasets (name, spec, csv, path, origin, created_at, demo, live_url, live_table)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		d.Name, string(d.Spec), nullString(d.CSV), nullString(d.Path), nullString(d.Origin), d.Created.UnixNano(), d.Demo,
		nullString(d.LiveURL), nullString(d.LiveTable))
	return inserted(res, err, "dataset", d.Name)
}

// inserted turns the result of an INSERT … ON CONFLICT DO NOTHING into ErrExists when no
// row was inserted.
func inserted(res sql.Result, err error, what, name string) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%s %q: %w", what, name, ErrExists)
	}
	return nil
}

// Datasets returns every dataset, by name, without its CSV text (which may be large:
// read it with DatasetCSV when the table is loaded).
func (r *Registry) Datasets(ctx context.Context) ([]DatasetRecord, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT name, spec, path, origin, created_at, demo, live_url, live_table FROM server_datasets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DatasetRecord
	for rows.Next() {
		var d DatasetRecord
		var spec string
		var path, origin, liveURL, liveTable sql.NullString
		var created int64
		if err := rows.Scan(&d.Name, &spec, &path, &origin, &created, &d.Demo, &liveURL, &liveTable); err != nil {
			return nil, err
		}
		d.Spec, d.Path, d.Origin, d.Created = []byte(spec), path.String, origin.String, time.Unix(0, created).UTC()
		d.LiveURL, d.LiveTable = liveURL.String, liveTable.String
		out = append(out, d)
	}
	return out, rows.Err()
}

// DatasetCSV returns the CSV text of dataset name ("" for a dataset registered by path);
// ErrNotFound if there is no such dataset.
func (r *Registry) DatasetCSV(ctx context.Context, name string) (string, error) {
	var text sql.NullString
	err := r.db.SQL.QueryRowContext(ctx, `SELECT csv FROM server_datasets WHERE name = $1`, name).Scan(&text)
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
	ID      string
	Name    string
	Role    Role
	Created time.Time
	Revoked bool
	Demo    bool // minted by "dpkit serve --demo"
}

// AddKey records a key with the given SHA-256 hash (hex); ErrExists if its id or hash
// is taken.
func (r *Registry) AddKey(ctx context.Context, k KeyRecord, hash string) error {
	res, err := r.db.SQL.ExecContext(ctx, `INSERT INTO server_keys (id, hash, name, role, created_at, demo) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		k.ID, hash, k.Name, string(k.Role), k.Created.UnixNano(), k.Demo)
	return inserted(res, err, "key", k.ID)
}

// KeyByHash returns the valid (not revoked) key whose secret hashes to hash.
func (r *Registry) KeyByHash(ctx context.Context, hash string) (KeyRecord, error) {
	var k KeyRecord
	var role string
	var created int64
	err := r.db.SQL.QueryRowContext(ctx, `SELECT id, name, role, created_at, demo FROM server_keys WHERE hash = $1 AND revoked_at IS NULL`, hash).
		Scan(&k.ID, &k.Name, &role, &created, &k.Demo)
	if errors.Is(err, sql.ErrNoRows) {
		return k, ErrNotFound
	}
	k.Role, k.Created = Role(role), time.Unix(0, created).UTC()
	return k, err
}

// Keys lists every key, revoked ones included, by creation time.
func (r *Registry) Keys(ctx context.Context) ([]KeyRecord, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT id, name, role, created_at, revoked_at, demo FROM server_keys ORDER BY created_at, id`)
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
		if err := rows.Scan(&k.ID, &k.Name, &role, &created, &revoked, &k.Demo); err != nil {
			return nil, err
		}
		k.Role, k.Created, k.Revoked = Role(role), time.Unix(0, created).UTC(), revoked.Valid
		out = append(out, k)
	}
	return out, rows.Err()
}

// KeyValid reports whether key id exists and is not revoked.
func (r *Registry) KeyValid(ctx context.Context, id string) (bool, error) {
	var n int
	err := r.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM server_keys WHERE id = $1 AND revoked_at IS NULL`, id).Scan(&n)
	return n > 0, err
}

// CountKeys returns the number of valid keys with the given role.
func (r *Registry) CountKeys(ctx context.Context, role Role) (int, error) {
	var n int
	err := r.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM server_keys WHERE role = $1 AND revoked_at IS NULL`, string(role)).Scan(&n)
	return n, err
}

// RevokeKey marks key id revoked; ErrNotFound if there is no valid key with that id.
func (r *Registry) RevokeKey(ctx context.Context, id string) error {
	res, err := r.db.SQL.ExecContext(ctx, `UPDATE server_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, time.Now().UnixNano(), id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("key %q: %w", id, ErrNotFound)
	}
	return nil
}

// RevokeDemoKeys revokes every valid demo key and returns how many there were.
func (r *Registry) RevokeDemoKeys(ctx context.Context) (int64, error) {
	res, err := r.db.SQL.ExecContext(ctx, `UPDATE server_keys SET revoked_at = $1 WHERE demo AND revoked_at IS NULL`, time.Now().UnixNano())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Grant lets key id query dataset (idempotent).
func (r *Registry) Grant(ctx context.Context, id, dataset string) error {
	_, err := r.db.SQL.ExecContext(ctx, `INSERT INTO server_grants (key_id, dataset) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, dataset)
	return err
}

// Revoke removes the grant of dataset to key id (idempotent).
func (r *Registry) Revoke(ctx context.Context, id, dataset string) error {
	_, err := r.db.SQL.ExecContext(ctx, `DELETE FROM server_grants WHERE key_id = $1 AND dataset = $2`, id, dataset)
	return err
}

// Grants returns the datasets granted to key id.
func (r *Registry) Grants(ctx context.Context, id string) (map[string]bool, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT dataset FROM server_grants WHERE key_id = $1`, id)
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

// AllGrants returns the datasets granted to each key, by key id.
func (r *Registry) AllGrants(ctx context.Context) (map[string][]string, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT key_id, dataset FROM server_grants ORDER BY key_id, dataset`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var k, d string
		if err := rows.Scan(&k, &d); err != nil {
			return nil, err
		}
		out[k] = append(out[k], d)
	}
	return out, rows.Err()
}

// Granted reports whether key id may query dataset.
func (r *Registry) Granted(ctx context.Context, id, dataset string) (bool, error) {
	var n int
	err := r.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM server_grants WHERE key_id = $1 AND dataset = $2`, id, dataset).Scan(&n)
	return n > 0, err
}

// AnswerRecord is an answer an earlier dpkit stored beside its release.
type AnswerRecord struct {
	Dataset    string
	ReleaseKey string
	KeyID      string
	SQL        string
	Response   []byte
	Created    time.Time
}

// Answer returns the answer an earlier dpkit recorded for a release, or ErrNotFound.
func (r *Registry) Answer(ctx context.Context, dataset, releaseKey string) (AnswerRecord, error) {
	a := AnswerRecord{Dataset: dataset, ReleaseKey: releaseKey}
	var resp string
	var created int64
	err := r.db.SQL.QueryRowContext(ctx, `SELECT key_id, sql_text, response, created_at FROM server_answers WHERE dataset = $1 AND release_key = $2`, dataset, releaseKey).
		Scan(&a.KeyID, &a.SQL, &resp, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotFound
	}
	a.Response, a.Created = []byte(resp), time.Unix(0, created).UTC()
	return a, err
}

// Answers returns the answers an earlier dpkit recorded for releases of dataset, oldest
// first.
func (r *Registry) Answers(ctx context.Context, dataset string) ([]AnswerRecord, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT release_key, key_id, sql_text, response, created_at FROM server_answers WHERE dataset = $1 ORDER BY created_at, release_key`, dataset)
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
