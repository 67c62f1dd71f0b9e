package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/migrate"
	"github.com/dpkit/dpkit/ledger"
)

// ApplicationID marks a SQLite file as a dpkit ledger (PRAGMA application_id; "dpkl").
const ApplicationID = 0x64706b6c

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the schema's versioned migrations, migrations/NNN_*.sql.
var migrations = migrate.MustLoad(migrationFS, "migrations/*.sql")

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = migrations.Latest()

// Options tunes Open. The zero value opens an existing ledger.
type Options struct {
	// Create makes a new ledger when the file does not exist or is empty.
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
	db   *sql.DB
	path string
	mu   sync.Mutex // serialises this process's write transactions (others wait on the file lock)

	qmu     sync.Mutex   // guards queue and closed
	queue   []*spendCall // spends waiting for the writer, in arrival order
	closed  bool
	wake    chan struct{} // capacity 1: the queue may be non-empty
	stopped chan struct{} // closed when the writer has exited
	once    sync.Once
	stmts   map[string]*sql.Stmt // spendQueries, prepared
}

// MaxBatch is the largest number of spends the writer records in one transaction.
const MaxBatch = 256

// spendCall is one Spend waiting for the writer.
type spendCall struct {
	chain    []string
	rel      ledger.Release
	decide   ledger.Decide
	ctx      context.Context
	got      ledger.Release
	replayed bool
	err      error
	done     chan struct{}
}

var _ ledger.Store = (*Store)(nil)

// header is the first 16 bytes of every SQLite database file.
var header = []byte("SQLite format 3\x00")

// Open opens the ledger in the SQLite file at path (migrating an older schema).
func Open(ctx context.Context, file string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if file == "" || strings.ContainsAny(file, "?#") {
		return nil, &dpkit.ParamError{Name: "path", Value: file, Want: "a file path without '?' or '#'"}
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 30 * time.Second
	}
	fresh, err := checkFile(file, opts.Create)
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s?_busy_timeout=%d&_txlock=immediate", file, busy.Milliseconds())
	if err := prepare(ctx, base, fresh); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", base+"&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, classify(file, err)
	}
	s := &Store{db: db, path: file, wake: make(chan struct{}, 1), stopped: make(chan struct{}), stmts: map[string]*sql.Stmt{}}
	for _, q := range spendQueries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			db.Close()
			return nil, classify(file, err)
		}
		s.stmts[q] = st
	}
	go s.writer()
	return s, nil
}

// checkFile reports whether file is missing or empty (a new ledger), and rejects a
// file that is not SQLite before the driver touches it.
func checkFile(file string, create bool) (fresh bool, err error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return false, fmt.Errorf("ledger/sqlite: %s: %w (create the ledger first)", file, fs.ErrNotExist)
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, len(header))
	n, err := io.ReadFull(f, buf)
	switch {
	case n == 0 && (err == io.EOF):
		if !create {
			return false, fmt.Errorf("%w: %s is empty (create the ledger first)", ledger.ErrNotLedger, file)
		}
		return true, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return false, err
	case n < len(header) || !bytes.Equal(buf, header):
		return false, fmt.Errorf("%w: %s is not a SQLite database", ledger.ErrNotLedger, file)
	}
	return false, nil
}

// prepare checks that the file is a dpkit ledger of a known schema version, creating
// or migrating it as allowed, without changing a foreign file.
func prepare(ctx context.Context, dsn string, fresh bool) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return classify(dsn, err)
	}
	defer conn.Close()
	app, version, tables, err := identify(ctx, conn)
	if err != nil {
		return classify(dsn, err)
	}
	switch {
	case app == ApplicationID && version > SchemaVersion:
		return fmt.Errorf("%w: the ledger has schema version %d; this dpkit reads up to %d (upgrade dpkit)", ledger.ErrSchemaVersion, version, SchemaVersion)
	case app == ApplicationID && version == SchemaVersion:
		return nil
	case app == ApplicationID:
		// an older schema: migrate below
	case app == 0 && tables == 0 && version == 0 && fresh:
		if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
			return classify(dsn, err)
		}
	case app == 0 && tables == 0 && version == 0:
		return fmt.Errorf("%w: the database is empty (create the ledger first)", ledger.ErrNotLedger)
	default:
		return fmt.Errorf("%w: a SQLite database of another application (application_id %d, %d tables)", ledger.ErrNotLedger, app, tables)
	}
	return upgrade(ctx, conn)
}

func identify(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (app, version, tables int, err error) {
	if err = q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return
	}
	if err = q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return
	}
	err = q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables)
	return
}

// upgrade applies the migrations above the file's version in one IMMEDIATE
// transaction (so that two processes creating one ledger do not race).
func upgrade(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	app, version, tables, err := identify(ctx, tx)
	if err != nil {
		return err
	}
	if app != ApplicationID && (app != 0 || tables != 0) {
		return fmt.Errorf("%w: a SQLite database of another application", ledger.ErrNotLedger)
	}
	err = migrations.Apply(version, func(m migrate.Migration) error {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", ApplicationID, m.Version))
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger/sqlite: %w", err)
	}
	return tx.Commit()
}

// classify turns SQLite's "not a database" and "malformed" errors into ErrNotLedger.
func classify(where string, err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
			return fmt.Errorf("%w: %s: %v", ledger.ErrNotLedger, strings.SplitN(where, "?", 2)[0], err)
		}
	}
	return err
}

// Close waits for the spends already queued to be committed, then closes the
// database. Spends after Close fail.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.qmu.Lock()
		s.closed = true
		s.qmu.Unlock()
		s.notify()
		<-s.stopped
	})
	return s.db.Close()
}

// notify wakes the writer.
func (s *Store) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
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
		(budget_id, root_id, epsilon, delta, mechanism, analyst, idem_key, time_us, payload)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
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

// Spend implements ledger.Store. The spend joins the queue of the writer goroutine,
// which records it in a BEGIN IMMEDIATE transaction (possibly shared with other
// spends of this process, each in its own savepoint and decided in turn), committed
// with synchronous=FULL before Spend returns. If ctx ends while the spend waits,
// Spend returns ctx.Err(); the spend is then skipped if it has not started, and
// otherwise may still be recorded (as after a crash: retry with its key to learn).
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	c := &spendCall{chain: chain, rel: rel, decide: decide, ctx: ctx, done: make(chan struct{})}
	s.qmu.Lock()
	if s.closed {
		s.qmu.Unlock()
		return ledger.Release{}, false, fmt.Errorf("ledger/sqlite: %s: the store is closed", s.path)
	}
	s.queue = append(s.queue, c)
	s.qmu.Unlock()
	s.notify()
	select {
	case <-c.done:
	case <-ctx.Done():
		return ledger.Release{}, false, ctx.Err()
	}
	if c.err != nil {
		return ledger.Release{}, false, s.classify(c.err)
	}
	return c.got, c.replayed, nil
}

// writer records the queued spends, a batch at a time, until the store is closed and
// the queue is empty.
func (s *Store) writer() {
	defer close(s.stopped)
	for {
		s.qmu.Lock()
		n := min(len(s.queue), MaxBatch)
		batch := make([]*spendCall, n)
		copy(batch, s.queue)
		s.queue = append(s.queue[:0], s.queue[n:]...)
		closed := s.closed
		s.qmu.Unlock()
		switch {
		case n > 0:
			s.commit(batch)
		case closed:
			return
		default:
			<-s.wake
		}
	}
}

// commit records batch in one transaction and acknowledges each spend after the
// commit (or fails every spend of the batch that did not fail on its own).
func (s *Store) commit(batch []*spendCall) {
	live := make([]*spendCall, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	s.mu.Lock()
	err := s.runBatch(live)
	s.mu.Unlock()
	for _, c := range live {
		if err != nil && c.err == nil {
			c.got, c.replayed, c.err = ledger.Release{}, false, err
		}
		close(c.done)
	}
}

// runBatch does the transaction of commit. The statements do not use the callers'
// contexts: interrupting one statement would roll back the whole transaction.
func (s *Store) runBatch(calls []*spendCall) error {
	ctx := context.Background()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	tx := preparedTx{sqlTx, s.stmts}
	if len(calls) == 1 { // no savepoint needed: a failure rolls back the transaction
		c := calls[0]
		c.got, c.replayed, c.err = spendTx(ctx, tx, c.chain, c.rel, c.decide)
		if c.err != nil {
			return nil
		}
		return sqlTx.Commit()
	}
	for _, c := range calls {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT spend"); err != nil {
			return err
		}
		c.got, c.replayed, c.err = spendTx(ctx, tx, c.chain, c.rel, c.decide)
		if c.err != nil {
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
	if err := tx.QueryRowContext(ctx, qInsertRelease,
		rel.Budget, chain[0], rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro(), payload).Scan(&rel.Seq); err != nil {
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
func (s *Store) Releases(ctx context.Context, id string, after int64, limit int) ([]ledger.Release, error) {
	var parent string
	err := s.db.QueryRowContext(ctx, "SELECT coalesce(parent, '') FROM dpkit_budgets WHERE id = ?", id).Scan(&parent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	if err != nil {
		return nil, s.classify(err)
	}
	column := "root_id"
	if parent != "" {
		column = "budget_id"
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+ledger.ReleaseColumns+" FROM dpkit_releases WHERE "+column+" = ? AND seq > ? ORDER BY seq LIMIT ?", id, after, limit)
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

func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	return classify(s.path, err)
}

// String describes the store.
func (s *Store) String() string { return "sqlite:" + strconv.Quote(s.path) }
