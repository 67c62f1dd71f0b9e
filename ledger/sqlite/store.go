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
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
)

// ApplicationID marks a SQLite file as a dpkit ledger (PRAGMA application_id; "dpkl").
const ApplicationID = 0x64706b6c

//go:embed migrations/*.sql
var migrations embed.FS

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = len(migrationFiles())

func migrationFiles() []string {
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	sort.Strings(names)
	return names
}

// Options tunes Open. The zero value opens an existing ledger.
type Options struct {
	// Create makes a new ledger when the file does not exist or is empty.
	Create bool
	// BusyTimeout is how long a transaction waits for another process's lock before
	// failing; 0 means 30 s.
	BusyTimeout time.Duration
}

// Store is a ledger.Store in one SQLite file. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	mu   sync.Mutex // serialises this process's write transactions (others wait on the file lock)
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
	return &Store{db: db, path: file}, nil
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
	return migrate(ctx, conn)
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

// migrate applies the migrations above the file's version in one IMMEDIATE
// transaction (so that two processes creating one ledger do not race).
func migrate(ctx context.Context, conn *sql.Conn) error {
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
	for i, name := range migrationFiles() {
		if i+1 <= version {
			continue
		}
		text, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(text)); err != nil {
			return fmt.Errorf("ledger/sqlite: migration %s: %w", path.Base(name), err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", ApplicationID, i+1)); err != nil {
			return err
		}
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

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

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

const defColumns = "id, coalesce(parent, ''), total_epsilon, total_delta, policy, created_us"

func scanDefinition(sc interface{ Scan(...any) error }) (ledger.Definition, error) {
	var d ledger.Definition
	var policy string
	var created int64
	if err := sc.Scan(&d.ID, &d.Parent, &d.Total.Epsilon, &d.Total.Delta, &policy, &created); err != nil {
		return d, err
	}
	dec := json.NewDecoder(strings.NewReader(policy))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d.Policy); err != nil {
		return d, fmt.Errorf("%w: budget %q has a malformed policy: %v", ledger.ErrNotLedger, d.ID, err)
	}
	d.Created = time.UnixMicro(created).UTC()
	return d, nil
}

// Definition implements ledger.Store.
func (s *Store) Definition(ctx context.Context, id string) (ledger.Definition, error) {
	d, err := scanDefinition(s.db.QueryRowContext(ctx, "SELECT "+defColumns+" FROM dpkit_budgets WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
	}
	return d, s.classify(err)
}

// Definitions implements ledger.Store.
func (s *Store) Definitions(ctx context.Context) ([]ledger.Definition, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+defColumns+" FROM dpkit_budgets ORDER BY id")
	if err != nil {
		return nil, s.classify(err)
	}
	defer rows.Close()
	var out []ledger.Definition
	for rows.Next() {
		d, err := scanDefinition(rows)
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

func stats(ctx context.Context, q querier, id string) (ledger.Stats, error) {
	var e ledger.EncodedStats
	err := q.QueryRowContext(ctx, "SELECT release_count, sum_epsilon, sum_delta, sum_epsilon_sq FROM dpkit_budgets WHERE id = ?", id).
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

const releaseColumns = "seq, budget_id, epsilon, delta, mechanism, analyst, coalesce(idem_key, ''), time_us"

func scanRelease(sc interface{ Scan(...any) error }) (ledger.Release, error) {
	var r ledger.Release
	var us int64
	err := sc.Scan(&r.Seq, &r.Budget, &r.Cost.Epsilon, &r.Cost.Delta, &r.Mechanism, &r.Analyst, &r.Key, &us)
	r.Time = time.UnixMicro(us).UTC()
	return r, err
}

// Spend implements ledger.Store: one BEGIN IMMEDIATE transaction, committed with
// synchronous=FULL before it returns.
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return ledger.Release{}, false, s.classify(err)
	}
	defer tx.Rollback()
	got, replayed, err := spendTx(ctx, tx, chain, rel, decide)
	if err != nil || replayed {
		return got, replayed, s.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return ledger.Release{}, false, s.classify(err)
	}
	return got, false, nil
}

// spendTx does the work of Spend inside tx (also used by the tests to preload a
// large history in one transaction).
func spendTx(ctx context.Context, tx *sql.Tx, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	if len(chain) == 0 || chain[len(chain)-1] != rel.Budget {
		return ledger.Release{}, false, fmt.Errorf("ledger/sqlite: chain %q does not end with budget %q", chain, rel.Budget)
	}
	if rel.Key != "" {
		got, err := scanRelease(tx.QueryRowContext(ctx, "SELECT "+releaseColumns+" FROM dpkit_releases WHERE budget_id = ? AND idem_key = ?", rel.Budget, rel.Key))
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
	var key any
	if rel.Key != "" {
		key = rel.Key
	}
	if err := tx.QueryRowContext(ctx, `INSERT INTO dpkit_releases
		(budget_id, root_id, epsilon, delta, mechanism, analyst, idem_key, time_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
		rel.Budget, chain[0], rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro()).Scan(&rel.Seq); err != nil {
		return ledger.Release{}, false, err
	}
	for i, id := range chain {
		e := next[i].Encode()
		if _, err := tx.ExecContext(ctx, `UPDATE dpkit_budgets SET release_count = ?, sum_epsilon = ?, sum_delta = ?, sum_epsilon_sq = ? WHERE id = ?`,
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
	rows, err := s.db.QueryContext(ctx, "SELECT "+releaseColumns+" FROM dpkit_releases WHERE "+column+" = ? AND seq > ? ORDER BY seq LIMIT ?", id, after, limit)
	if err != nil {
		return nil, s.classify(err)
	}
	defer rows.Close()
	var out []ledger.Release
	for rows.Next() {
		r, err := scanRelease(rows)
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
