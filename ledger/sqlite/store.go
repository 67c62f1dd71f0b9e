package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/internal/groupcommit"
)

// ApplicationID marks a SQLite file as a dpkit database (PRAGMA application_id; "dpkl").
const ApplicationID = sqldb.ApplicationID

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the schema's versioned migrations, migrations/NNN_*.sql.
var migrations = sqldb.MustLoad(migrationFS, "migrations/*.sql")

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = migrations.Latest()

// Options tunes Open. The zero value opens an existing ledger.
type Options struct {
	// Create makes a new ledger when the file does not exist or is empty, or (New) when
	// the database holds no ledger yet.
	Create bool
	// BusyTimeout is how long a transaction waits for another process's lock before
	// failing; 0 means 30 s.
	BusyTimeout time.Duration
}

// Store is a ledger.Store in one SQLite file. It is safe for concurrent use.
//
// Spends are group-committed: concurrent Spend calls of one process queue for a single
// writer goroutine, which records up to MaxBatch of them in one transaction — each in
// its own savepoint, decided in queue order against the statistics left by the ones
// before it — and commits once (one fsync), then acknowledges each. A Spend returns
// only after the transaction holding its release has committed.
type Store struct {
	sdb   *sqldb.DB
	db    *sql.DB // sdb.SQL
	own   bool    // Close closes sdb (Open), or leaves it to its owner (New)
	path  string
	mu    sync.Mutex // serialises this process's write transactions (others wait on the file lock)
	spend *groupcommit.Queue
	stmts map[string]*sql.Stmt // spendQueries, prepared
}

// MaxBatch is the largest number of spends the writer records in one transaction.
const MaxBatch = groupcommit.MaxBatch

var _ ledger.Store = (*Store)(nil)

// Open opens the ledger in the SQLite file at path (migrating an older schema), in a
// database of its own; Close closes it.
func Open(ctx context.Context, file string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	db, err := sqldb.Open(ctx, file, &sqldb.Options{Create: opts.Create, BusyTimeout: opts.BusyTimeout})
	if err != nil {
		return nil, translate(err)
	}
	s, err := New(ctx, db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// New opens the ledger in db, a SQLite database opened by sqldb.Open that other
// components of the process share (dpkit serve keeps its registry there): creating the
// ledger's tables if opts.Create allows it, migrating an older schema. Close leaves db
// open.
func New(ctx context.Context, db *sqldb.DB, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if db.Dialect != sqldb.SQLite {
		return nil, fmt.Errorf("ledger/sqlite: %s is a %s database", db.Name, db.Dialect)
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
	s := &Store{sdb: db, db: db.SQL, path: db.Name, stmts: map[string]*sql.Stmt{}}
	for _, q := range spendQueries {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			s.closeStmts()
			return nil, s.classify(err)
		}
		s.stmts[q] = st
	}
	s.spend = groupcommit.New(s.commit)
	return s, nil
}

// migrateMechanisms is the data step of migration 4: mechanism texts become descriptors
// (ledger.MigrateMechanisms), then the append-only trigger its SQL dropped is re-created.
func migrateMechanisms(ctx context.Context, tx *sql.Tx) error {
	if err := ledger.MigrateMechanisms(ctx, tx); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `CREATE TRIGGER dpkit_releases_no_update BEFORE UPDATE ON dpkit_releases
BEGIN SELECT RAISE(ABORT, 'dpkit ledger releases are append-only'); END`)
	return err
}

// legacyVersion is the ledger's version as dpkit recorded it before dpkit_schema:
// PRAGMA user_version of a file marked with ApplicationID (sqldb has checked the mark).
func legacyVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var v int
	err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// translate maps sqldb's errors to the ledger's: a foreign, corrupted or empty database
// is ErrNotLedger, a newer schema ErrSchemaVersion.
func translate(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ledger/sqlite: %w (create the ledger first)", err)
	}
	return sqldb.Translate(err, ledger.ErrNotLedger, ledger.ErrSchemaVersion, " (create the ledger first)")
}

// Close waits for the spends already queued to be committed, then closes the
// database. Spends after Close fail.
func (s *Store) Close() error {
	s.spend.Close()
	s.closeStmts()
	if s.own {
		return s.sdb.Close()
	}
	return nil
}

// closeStmts closes the prepared statements.
func (s *Store) closeStmts() {
	for q, st := range s.stmts {
		st.Close()
		delete(s.stmts, q)
	}
}

// Create implements ledger.Store.
func (s *Store) Create(ctx context.Context, def ledger.Definition) error {
	policy, err := json.Marshal(def.Policy)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.classify(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM dpkit_budgets WHERE id = ?", def.ID).Scan(&n); err != nil {
		return s.classify(err)
	}
	if n > 0 {
		return fmt.Errorf("%w: %q", ledger.ErrBudgetExists, def.ID)
	}
	var parent any
	if def.Parent != "" {
		parent = def.Parent
	}
	z := ledger.ZeroStats().Encode()
	if _, err := tx.ExecContext(ctx, `INSERT INTO dpkit_budgets
		(id, parent, total_epsilon, total_delta, policy, created_us, release_count, sum_epsilon, sum_delta, sum_epsilon_sq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		def.ID, parent, def.Total.Epsilon, def.Total.Delta, string(policy), def.Created.UnixMicro(),
		z.Count, z.SumEpsilon, z.SumDelta, z.SumEpsilonSq); err != nil {
		return s.classify(err)
	}
	return s.classify(tx.Commit())
}

// Definition implements ledger.Store.
func (s *Store) Definition(ctx context.Context, id string) (ledger.Definition, error) {
	d, err := ledger.ScanDefinition(s.db.QueryRowContext(ctx, "SELECT "+ledger.DefinitionColumns+" FROM dpkit_budgets WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	return d, s.classify(err)
}

// Definitions implements ledger.Store.
func (s *Store) Definitions(ctx context.Context) ([]ledger.Definition, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+ledger.DefinitionColumns+" FROM dpkit_budgets ORDER BY id")
	if err != nil {
		return nil, s.classify(err)
	}
	defer rows.Close()
	var out []ledger.Definition
	for rows.Next() {
		d, err := ledger.ScanDefinition(rows)
		if err != nil {
			return nil, s.classify(err)
		}
		out = append(out, d)
	}
	return out, s.classify(rows.Err())
}

type querier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// The statements of a spend, prepared once per connection (see preparedTx).
const (
	qStats         = "SELECT release_count, sum_epsilon, sum_delta, sum_epsilon_sq FROM dpkit_budgets WHERE id = ?"
	qReleaseByKey  = "SELECT " + ledger.ReleaseColumns + " FROM dpkit_releases WHERE budget_id = ? AND idem_key = ?"
	qInsertRelease = `INSERT INTO dpkit_releases
		(budget_id, root_id, number, epsilon, delta, mechanism, analyst, idem_key, time_us, payload)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	qUpdateStats = `UPDATE dpkit_budgets SET release_count = ?, sum_epsilon = ?, sum_delta = ?, sum_epsilon_sq = ? WHERE id = ?`
)

// spendQueries are the statements prepared at Open.
var spendQueries = []string{qStats, qReleaseByKey, qInsertRelease, qUpdateStats, "SAVEPOINT spend", "ROLLBACK TO spend", "RELEASE spend"}

// txq is what spendTx needs of a transaction.
type txq interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// preparedTx runs the statements prepared at Open in tx (database/sql prepares each
// once per connection and reuses it), others as given.
type preparedTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := p.stmts[query]; ok {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := p.stmts[query]; ok {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func stats(ctx context.Context, q querier, id string) (ledger.Stats, error) {
	var e ledger.EncodedStats
	err := q.QueryRowContext(ctx, qStats, id).
		Scan(&e.Count, &e.SumEpsilon, &e.SumDelta, &e.SumEpsilonSq)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Stats{}, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	if err != nil {
		return ledger.Stats{}, err
	}
	return e.Decode()
}

// Stats implements ledger.Store.
func (s *Store) Stats(ctx context.Context, id string) (ledger.Stats, error) {
	st, err := stats(ctx, s.db, id)
	return st, s.classify(err)
}

// Spend implements ledger.Store. The spend joins the queue of the writer goroutine
// (package groupcommit), which records it in a BEGIN IMMEDIATE transaction (possibly
// shared with other spends of this process, each in its own savepoint and decided in
// turn), committed with synchronous=FULL before Spend returns. If ctx ends while the
// spend waits, Spend returns ctx.Err(); the spend is then skipped if it has not started,
// and otherwise may still be recorded (as after a crash: retry with its key to learn).
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	got, replayed, err := s.spend.Spend(ctx, chain, rel, decide)
	if errors.Is(err, groupcommit.ErrClosed) {
		return ledger.Release{}, false, fmt.Errorf("ledger/sqlite: %s: %w", s.path, err)
	}
	return got, replayed, s.classify(err)
}

// commit records a batch of spends in one transaction (groupcommit.Commit).
func (s *Store) commit(calls []*groupcommit.Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runBatch(calls)
}

// runBatch does the transaction of commit. The statements do not use the callers'
// contexts: interrupting one statement would roll back the whole transaction.
func (s *Store) runBatch(calls []*groupcommit.Call) error {
	ctx := context.Background()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	tx := preparedTx{sqlTx, s.stmts}
	if len(calls) == 1 { // no savepoint needed: a failure rolls back the transaction
		c := calls[0]
		c.Got, c.Replayed, c.Err = spendTx(ctx, tx, c.Chain, c.Rel, c.Decide)
		if c.Err != nil {
			return nil
		}
		return sqlTx.Commit()
	}
	for _, c := range calls {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT spend"); err != nil {
			return err
		}
		c.Got, c.Replayed, c.Err = spendTx(ctx, tx, c.Chain, c.Rel, c.Decide)
		if c.Err != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO spend"); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE spend"); err != nil {
			return err
		}
	}
	return sqlTx.Commit()
}

// spendTx does the work of Spend inside tx (also used by the tests to preload a
// large history in one transaction).
func spendTx(ctx context.Context, tx txq, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	if len(chain) == 0 || chain[len(chain)-1] != rel.Budget {
		return ledger.Release{}, false, fmt.Errorf("ledger/sqlite: chain %q does not end with budget %q", chain, rel.Budget)
	}
	if rel.Key != "" {
		got, err := ledger.ScanRelease(tx.QueryRowContext(ctx, qReleaseByKey, rel.Budget, rel.Key))
		if err == nil {
			return got, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return ledger.Release{}, false, err
		}
	}
	cur := make([]ledger.Stats, len(chain))
	for i, id := range chain {
		st, err := stats(ctx, tx, id)
		if err != nil {
			return ledger.Release{}, false, err
		}
		cur[i] = st
	}
	next, err := decide(cur)
	if err != nil {
		return ledger.Release{}, false, err
	}
	var key, payload any
	if rel.Key != "" {
		key = rel.Key
	}
	if len(rel.Payload) > 0 {
		payload = rel.Payload
	} else {
		rel.Payload = nil
	}
	rel.Number = next[0].Count
	if err := tx.QueryRowContext(ctx, qInsertRelease,
		rel.Budget, chain[0], rel.Number, rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro(), payload).Scan(&rel.Seq); err != nil {
		return ledger.Release{}, false, err
	}
	for i, id := range chain {
		e := next[i].Encode()
		if _, err := tx.ExecContext(ctx, qUpdateStats,
			e.Count, e.SumEpsilon, e.SumDelta, e.SumEpsilonSq, id); err != nil {
			return ledger.Release{}, false, err
		}
	}
	return rel, false, nil
}

// Releases implements ledger.Store.
func (s *Store) Releases(ctx context.Context, id string, f ledger.ReleaseFilter) ([]ledger.Release, error) {
	var parent string
	err := s.db.QueryRowContext(ctx, "SELECT coalesce(parent, '') FROM dpkit_budgets WHERE id = ?", id).Scan(&parent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	if err != nil {
		return nil, s.classify(err)
	}
	q, args := ledger.ReleasesQuery(id, parent != "", f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.classify(err)
	}
	defer rows.Close()
	var out []ledger.Release
	for rows.Next() {
		r, err := ledger.ScanRelease(rows)
		if err != nil {
			return nil, s.classify(err)
		}
		out = append(out, r)
	}
	return out, s.classify(rows.Err())
}

// Release implements ledger.Store.
func (s *Store) Release(ctx context.Context, budget, key string) (ledger.Release, bool, error) {
	r, err := ledger.ScanRelease(s.db.QueryRowContext(ctx, qReleaseByKey, budget, key))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Release{}, false, nil
	}
	if err != nil {
		return ledger.Release{}, false, s.classify(err)
	}
	return r, true, nil
}

func (s *Store) classify(err error) error {
	return translate(s.sdb.Classify(err))
}

// String describes the store.
func (s *Store) String() string { return "sqlite:" + strconv.Quote(s.path) }
