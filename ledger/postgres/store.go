package postgres

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/ledger"
)

// Application is the value of dpkit_ledger_meta's "application" row, where ledgers of
// schema 1 and 2 recorded their version.
const Application = "dpkit-ledger"

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the schema's versioned migrations, migrations/NNN_*.sql.
var migrations = sqldb.MustLoad(migrationFS, "migrations/*.sql")

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = migrations.Latest()

// Options tunes Open. The zero value opens an existing ledger.
type Options struct {
	// Create makes a new ledger when the schema holds none.
	Create bool
	// MaxConns bounds the open connections (Open only); 0 means 8.
	MaxConns int
}

// Store is a ledger.Store in a PostgreSQL database. It is safe for concurrent use.
type Store struct {
	db   *sqldb.DB
	pool *pgxpool.Pool // db.Pool
	own  bool          // Close closes db (Open), or leaves it to its owner (New)
}

var _ ledger.Store = (*Store)(nil)

// Open connects to the ledger at url (postgres://… or postgresql://…), migrating an
// older schema, with a connection pool of its own; Close closes it.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if !sqldb.IsPostgres(url) {
		return nil, &dpkit.ParamError{Pkg: "ledger/postgres", Name: "db", Value: sqldb.Redact(url), Want: "a PostgreSQL URL postgres://user@host:port/database?…"}
	}
	db, err := sqldb.Open(ctx, url, &sqldb.Options{MaxConns: opts.MaxConns, AppName: "dpkit-ledger"})
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// New opens the ledger in db, a PostgreSQL database opened by sqldb.Open whose pool other
// components of the process share (dpkit serve keeps its registry there): creating the
// ledger's tables if opts.Create allows it, migrating an older schema, under an
// advisory lock so that processes do not race. Close leaves db open.
func New(ctx context.Context, db *sqldb.DB, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if db.Dialect != sqldb.Postgres {
		return nil, fmt.Errorf("ledger/postgres: %s is a %s database", db.Name, db.Dialect)
	}
	_, err := db.Migrate(ctx, sqldb.Schema{
		Component: "ledger", Migrations: migrations, Create: opts.Create,
		Tables: []string{"dpkit_budgets", "dpkit_releases"},
		Legacy: legacyVersion,
		Steps:  map[int]func(context.Context, *sql.Tx) error{4: migrateMechanisms},
	})
	if err != nil {
		return nil, translate(err)
	}
	return &Store{db: db, pool: db.Pool}, nil
}

// migrateMechanisms is the data step of migration 4: mechanism texts become descriptors
// (ledger.MigrateMechanisms), then the append-only trigger its SQL disabled is enabled.
func migrateMechanisms(ctx context.Context, tx *sql.Tx) error {
	if err := ledger.MigrateMechanisms(ctx, tx); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "ALTER TABLE dpkit_releases ENABLE TRIGGER dpkit_releases_no_change")
	return err
}

// legacyVersion is the ledger's version as dpkit recorded it before dpkit_schema: the
// "schema_version" row of dpkit_ledger_meta, whose "application" row must say
// Application.
func legacyVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var exists bool
	if err := tx.QueryRowContext(ctx, "SELECT to_regclass('dpkit_ledger_meta') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT name, value FROM dpkit_ledger_meta")
	if err != nil {
		return 0, fmt.Errorf("%w: unreadable dpkit_ledger_meta: %v", sqldb.ErrForeign, err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return 0, fmt.Errorf("%w: unreadable dpkit_ledger_meta: %v", sqldb.ErrForeign, err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("%w: unreadable dpkit_ledger_meta: %v", sqldb.ErrForeign, err)
	}
	if m["application"] != Application {
		return 0, fmt.Errorf("%w: dpkit_ledger_meta names application %q", sqldb.ErrForeign, m["application"])
	}
	v, err := strconv.Atoi(m["schema_version"])
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%w: malformed schema_version %q in dpkit_ledger_meta", sqldb.ErrForeign, m["schema_version"])
	}
	return v, nil
}

// translate maps sqldb's errors to the ledger's: a foreign schema or one without a
// ledger is ErrNotLedger, a newer schema ErrSchemaVersion.
func translate(err error) error {
	for _, m := range []struct{ from, to error }{
		{sqldb.ErrForeign, ledger.ErrNotLedger},
		{sqldb.ErrMissing, ledger.ErrNotLedger},
		{sqldb.ErrNewer, ledger.ErrSchemaVersion},
	} {
		if errors.Is(err, m.from) {
			msg := strings.TrimPrefix(err.Error(), m.from.Error()+": ")
			if m.from == sqldb.ErrMissing {
				msg += " (create the ledger first)"
			}
			return fmt.Errorf("%w: %s", m.to, msg)
		}
	}
	return err
}

// with runs fn on a pooled connection.
func (s *Store) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("ledger/postgres: %w", err)
	}
	defer c.Release()
	return fn(c.Conn())
}

// Close closes the pool if Open made it; connections in use close when released.
func (s *Store) Close() error {
	if s.own {
		return s.db.Close()
	}
	return nil
}

// Create implements ledger.Store.
func (s *Store) Create(ctx context.Context, def ledger.Definition) error {
	policy, err := json.Marshal(def.Policy)
	if err != nil {
		return err
	}
	var parent *string
	if def.Parent != "" {
		parent = &def.Parent
	}
	z := ledger.ZeroStats().Encode()
	return s.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `INSERT INTO dpkit_budgets
			(id, parent, total_epsilon, total_delta, policy, created_us, release_count, sum_epsilon, sum_delta, sum_epsilon_sq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
			def.ID, parent, def.Total.Epsilon, def.Total.Delta, string(policy), def.Created.UnixMicro(),
			z.Count, z.SumEpsilon, z.SumDelta, z.SumEpsilonSq)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %q", ledger.ErrBudgetExists, def.ID)
		}
		return nil
	})
}

// Definition implements ledger.Store.
func (s *Store) Definition(ctx context.Context, id string) (d ledger.Definition, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		d, err = ledger.ScanDefinition(c.QueryRow(ctx, "SELECT "+ledger.DefinitionColumns+" FROM dpkit_budgets WHERE id = $1", id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
		}
		return err
	})
	return d, err
}

// Definitions implements ledger.Store.
func (s *Store) Definitions(ctx context.Context) (out []ledger.Definition, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, "SELECT "+ledger.DefinitionColumns+" FROM dpkit_budgets ORDER BY id COLLATE \"C\"")
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Definition, error) { return ledger.ScanDefinition(r) })
		return err
	})
	return out, err
}

func stats(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string, lock bool) (ledger.Stats, error) {
	query := "SELECT release_count, sum_epsilon, sum_delta, sum_epsilon_sq FROM dpkit_budgets WHERE id = $1"
	if lock {
		query += " FOR UPDATE"
	}
	var e ledger.EncodedStats
	err := q.QueryRow(ctx, query, id).Scan(&e.Count, &e.SumEpsilon, &e.SumDelta, &e.SumEpsilonSq)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Stats{}, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	if err != nil {
		return ledger.Stats{}, err
	}
	return e.Decode()
}

// Stats implements ledger.Store.
func (s *Store) Stats(ctx context.Context, id string) (st ledger.Stats, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		st, err = stats(ctx, c, id, false)
		return err
	})
	return st, err
}

// qReleaseByKey selects the release recorded on a budget with an idempotency key.
const qReleaseByKey = "SELECT " + ledger.ReleaseColumns + " FROM dpkit_releases WHERE budget_id = $1 AND idem_key = $2"

// Spend implements ledger.Store: one transaction that locks the chain's budget rows
// (root first) with SELECT … FOR UPDATE, and commits synchronously before returning.
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (got ledger.Release, replayed bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		got, replayed, err = spendTx(ctx, tx, chain, rel, decide)
		return err
	})
	if err != nil {
		return ledger.Release{}, false, err
	}
	return got, replayed, nil
}

// spendTx does the work of Spend inside tx (also used by the tests to preload a
// large history in one transaction).
func spendTx(ctx context.Context, tx pgx.Tx, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	if len(chain) == 0 || chain[len(chain)-1] != rel.Budget {
		return ledger.Release{}, false, fmt.Errorf("ledger/postgres: chain %q does not end with budget %q", chain, rel.Budget)
	}
	cur := make([]ledger.Stats, len(chain))
	for i, id := range chain { // root first: every spend locks in the same order
		st, err := stats(ctx, tx, id, true)
		if err != nil {
			return ledger.Release{}, false, err
		}
		cur[i] = st
	}
	if rel.Key != "" {
		got, err := ledger.ScanRelease(tx.QueryRow(ctx, qReleaseByKey, rel.Budget, rel.Key))
		if err == nil {
			return got, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return ledger.Release{}, false, err
		}
	}
	next, err := decide(cur)
	if err != nil {
		return ledger.Release{}, false, err
	}
	var key *string
	if rel.Key != "" {
		key = &rel.Key
	}
	var payload []byte // nil: NULL
	if len(rel.Payload) > 0 {
		payload = rel.Payload
	} else {
		rel.Payload = nil
	}
	rel.Number = next[0].Count
	if err := tx.QueryRow(ctx, `INSERT INTO dpkit_releases
		(budget_id, root_id, number, epsilon, delta, mechanism, analyst, idem_key, time_us, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq`,
		rel.Budget, chain[0], rel.Number, rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro(), payload).Scan(&rel.Seq); err != nil {
		return ledger.Release{}, false, err
	}
	for i, id := range chain {
		e := next[i].Encode()
		if _, err := tx.Exec(ctx, `UPDATE dpkit_budgets SET release_count = $1, sum_epsilon = $2, sum_delta = $3, sum_epsilon_sq = $4 WHERE id = $5`,
			e.Count, e.SumEpsilon, e.SumDelta, e.SumEpsilonSq, id); err != nil {
			return ledger.Release{}, false, err
		}
	}
	return rel, false, nil
}

// Releases implements ledger.Store.
func (s *Store) Releases(ctx context.Context, id string, f ledger.ReleaseFilter) (out []ledger.Release, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		var parent string
		err := c.QueryRow(ctx, "SELECT coalesce(parent, '') FROM dpkit_budgets WHERE id = $1", id).Scan(&parent)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
		}
		if err != nil {
			return err
		}
		q, args := ledger.ReleasesQuery(id, parent != "", f)
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Release, error) { return ledger.ScanRelease(r) })
		return err
	})
	return out, err
}

// Release implements ledger.Store.
func (s *Store) Release(ctx context.Context, budget, key string) (rel ledger.Release, found bool, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		rel, err = ledger.ScanRelease(c.QueryRow(ctx, qReleaseByKey, budget, key))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Release{}, false, nil
	}
	return rel, err == nil, err
}
