package postgres

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/internal/groupcommit"
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
	// MaxConns bounds the open connections (Open only); 0 means 16.
	MaxConns int
}

// Store is a ledger.Store in a PostgreSQL database. It is safe for concurrent use.
type Store struct {
	db    *sqldb.DB
	pool  *pgxpool.Pool // db.Pool
	own   bool          // Close closes db (Open), or leaves it to its owner (New)
	spend *groupcommit.Queue

	cacheMu sync.Mutex
	cache   map[string]ledger.Stats // statistics this process last read or wrote, for commit's fast path

	fastBatches, lockedBatches atomic.Int64 // batches committed each way (for tests)
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
	s := &Store{db: db, pool: db.Pool, cache: map[string]ledger.Stats{}}
	s.spend = groupcommit.New(s.commit)
	return s, nil
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
	return sqldb.Translate(err, ledger.ErrNotLedger, ledger.ErrSchemaVersion, " (create the ledger first)")
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

// Close waits for the spends already queued to be committed, then closes the pool if
// Open made it; spends after Close fail.
func (s *Store) Close() error {
	s.spend.Close()
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

// Stats implements ledger.Store.
func (s *Store) Stats(ctx context.Context, id string) (st ledger.Stats, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		var e ledger.EncodedStats
		err := c.QueryRow(ctx, "SELECT release_count, sum_epsilon, sum_delta, sum_epsilon_sq FROM dpkit_budgets WHERE id = $1", id).
			Scan(&e.Count, &e.SumEpsilon, &e.SumDelta, &e.SumEpsilonSq)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
		}
		if err != nil {
			return err
		}
		st, err = e.Decode()
		return err
	})
	return st, err
}

// qReleaseByKey selects the release recorded on a budget with an idempotency key.
const qReleaseByKey = "SELECT " + ledger.ReleaseColumns + " FROM dpkit_releases WHERE budget_id = $1 AND idem_key = $2"

// Spend implements ledger.Store. Spends of this process are group-committed (package
// groupcommit): they queue for one writer, which records up to groupcommit.MaxBatch of
// them in one transaction (see commit) and commits once, synchronously, before each
// Spend returns. If ctx ends while the spend waits, Spend returns ctx.Err(); the spend is
// then skipped if its batch has not started, and otherwise may still be recorded (as
// after a crash: retry with its key to learn).
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (ledger.Release, bool, error) {
	got, replayed, err := s.spend.Spend(ctx, chain, rel, decide)
	if errors.Is(err, groupcommit.ErrClosed) {
		return ledger.Release{}, false, fmt.Errorf("ledger/postgres: %s: %w", s.db.Name, err)
	}
	return got, replayed, err
}

// commit records a batch of spends in one transaction. Measured first (docs/benchmarks.md):
// a spend's time went into its round trips — six of them, four while the budget's row was
// locked — and the commit's WAL flush, not into the database's work; so a batch, whatever
// its size, costs one round trip when the store's cached statistics are current (fast)
// and two otherwise (locked), plus one flush.
func (s *Store) commit(calls []*groupcommit.Call) error {
	ctx := context.Background()
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("ledger/postgres: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	if stats, ok := s.cached(calls); ok {
		err := s.fast(ctx, conn, calls, stats)
		if !errors.Is(err, errStale) {
			return err
		}
		for _, c := range calls { // start over: the locked path decides them again
			c.Got, c.Replayed, c.Err = ledger.Release{}, false, nil
		}
	}
	return s.locked(ctx, conn, calls)
}

// errStale is the fast path's failure when the cached statistics were not current (or a
// key was recorded already): nothing was recorded, and the batch goes the locked way.
var errStale = errors.New("ledger/postgres: cached statistics not current")

// cached returns a copy of the cached statistics of every budget the calls' chains name,
// and false if one of them is not cached.
func (s *Store) cached(calls []*groupcommit.Call) (map[string]ledger.Stats, bool) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	out := map[string]ledger.Stats{}
	for _, c := range calls {
		for _, id := range c.Chain {
			st, ok := s.cache[id]
			if !ok {
				return nil, false
			}
			out[id] = st
		}
	}
	return out, true
}

// remember caches the statistics of the given budgets (forget = true drops them).
func (s *Store) remember(stats map[string]ledger.Stats, ids []string, forget bool) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for _, id := range ids {
		if forget {
			delete(s.cache, id)
		} else {
			s.cache[id] = stats[id]
		}
	}
}

// fast records a batch decided against the cached statistics in one pipelined round
// trip: BEGIN; for each budget whose statistics change, in id order, an UPDATE guarded by
// the cached release_count — every release increments the count of each budget of its
// chain, so an equal count means equal statistics, and the UPDATE holds the row's lock
// from then on — which fails the statement (division by zero) if the row changed;
// INSERT of each release (a key recorded already breaks its unique constraint); COMMIT.
// Either failure rolls the whole transaction back and is errStale. Replays of keys
// recorded before are found by the locked path only (this one does not read), and so
// are refusals: a spend refused against the cache might be the replay of a key recorded
// meanwhile, so a batch with a refusal is errStale before anything is sent.
func (s *Store) fast(ctx context.Context, conn *pgx.Conn, calls []*groupcommit.Call, stats map[string]ledger.Stats) error {
	old := maps.Clone(stats)
	accepted, replays, dirty := decideBatch(calls, stats, nil)
	for _, c := range calls {
		if c.Err != nil {
			return errStale
		}
	}
	sort.Strings(dirty)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, id := range dirty {
		e := stats[id].Encode()
		b.Queue(`WITH u AS (UPDATE dpkit_budgets SET release_count = $1, sum_epsilon = $2, sum_delta = $3, sum_epsilon_sq = $4
			WHERE id = $5 AND release_count = $6 RETURNING 1) SELECT 1 / count(*) FROM u`,
			e.Count, e.SumEpsilon, e.SumDelta, e.SumEpsilonSq, id, old[id].Count)
	}
	queueInserts(b, accepted)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	err := readBatch(br, 1, len(dirty), accepted)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "22012" || pe.Code == "23505" || pe.Code == "40P01") { // division_by_zero, unique_violation, deadlock_detected
		s.remember(nil, dirty, true)
		rollback(ctx, conn)
		return errStale
	}
	if err != nil {
		s.remember(nil, dirty, true)
		rollback(ctx, conn)
		return err
	}
	s.remember(stats, dirty, false)
	for _, r := range replays {
		r.call.Got = r.of.Got // with the Seq readBatch read
	}
	s.fastBatches.Add(1)
	return nil
}

// locked records a batch in two round trips. The first, pipelined, begins the
// transaction, locks the budget rows of every chain of the batch with SELECT … FOR
// UPDATE, in id order (so that two processes' batches never wait for each other in a
// cycle), reading their statistics, and reads the releases recorded under the batch's
// idempotency keys (no other process can record one meanwhile: a spend on a budget holds
// that budget's lock). Then each spend is decided in queue order against the statistics
// the ones before it left — a recorded key is a replay, a key recorded earlier in the
// batch a replay of that release, a refusal fails that spend alone — and the second
// round trip writes the new releases and statistics and commits. A failure anywhere
// rolls the whole batch back. The statistics it read and wrote are cached for the fast
// path.
func (s *Store) locked(ctx context.Context, conn *pgx.Conn, calls []*groupcommit.Call) error {
	stats, recorded, err := lockBatch(ctx, conn, calls)
	if err == nil {
		read := slices.Collect(maps.Keys(stats))
		accepted, replays, dirty := decideBatch(calls, stats, recorded)
		if err = writeBatch(ctx, conn, accepted, dirty, stats); err == nil {
			s.remember(stats, read, false)
			for _, r := range replays {
				r.call.Got = r.of.Got // with the Seq writeBatch read
			}
			s.lockedBatches.Add(1)
			return nil
		}
	}
	rollback(ctx, conn)
	return err
}

// rollback ends a transaction left open by a failure (the pool would discard the
// connection otherwise).
func rollback(ctx context.Context, conn *pgx.Conn) {
	if !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(ctx, "ROLLBACK")
	}
}

// replay is a call whose key was recorded earlier in the same batch by the call of.
type replay struct{ call, of *groupcommit.Call }

// batchKey is a release's idempotency key on its budget.
type batchKey struct{ budget, key string }

// lockBatch begins a transaction on conn, locks and reads the statistics of every budget
// the calls' chains name, and reads the releases recorded under their idempotency keys,
// in one round trip.
func lockBatch(ctx context.Context, conn *pgx.Conn, calls []*groupcommit.Call) (map[string]ledger.Stats, map[batchKey]ledger.Release, error) {
	ids := map[string]bool{}
	var budgets, keys []string
	for _, c := range calls {
		for _, id := range c.Chain {
			ids[id] = true
		}
		if c.Rel.Key != "" {
			budgets, keys = append(budgets, c.Rel.Budget), append(keys, c.Rel.Key)
		}
	}
	idList := make([]string, 0, len(ids))
	for id := range ids {
		idList = append(idList, id)
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT id, release_count, sum_epsilon, sum_delta, sum_epsilon_sq FROM dpkit_budgets
		WHERE id = ANY($1) ORDER BY id COLLATE "C" FOR UPDATE`, idList)
	b.Queue("SELECT "+ledger.ReleaseColumns+` FROM dpkit_releases
		WHERE (budget_id, idem_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, budgets, keys)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	stats := map[string]ledger.Stats{}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var id string
		var e ledger.EncodedStats
		if err := rows.Scan(&id, &e.Count, &e.SumEpsilon, &e.SumDelta, &e.SumEpsilonSq); err != nil {
			return nil, nil, err
		}
		if stats[id], err = e.Decode(); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	recorded := map[batchKey]ledger.Release{}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		r, err := ledger.ScanRelease(rows)
		if err != nil {
			return nil, nil, err
		}
		recorded[batchKey{r.Budget, r.Key}] = r
	}
	return stats, recorded, rows.Err()
}

// decideBatch decides each call in order against stats (which it updates), and returns
// the calls whose releases are to be recorded and the budgets whose statistics changed.
// Calls refused, failed or replaying a recorded release get their outcome here; a call
// replaying a release accepted earlier in the batch is returned in replays, to get that
// release once it is recorded.
func decideBatch(calls []*groupcommit.Call, stats map[string]ledger.Stats, recorded map[batchKey]ledger.Release) (accepted []*groupcommit.Call, replays []replay, dirty []string) {
	inBatch := map[batchKey]*groupcommit.Call{}
	changed := map[string]bool{}
	for _, c := range calls {
		rel, chain := c.Rel, c.Chain
		if len(chain) == 0 || chain[len(chain)-1] != rel.Budget {
			c.Err = fmt.Errorf("ledger/postgres: chain %q does not end with budget %q", chain, rel.Budget)
			continue
		}
		k := batchKey{rel.Budget, rel.Key}
		if rel.Key != "" {
			if got, ok := recorded[k]; ok {
				c.Got, c.Replayed = got, true
				continue
			}
			if first, ok := inBatch[k]; ok {
				c.Replayed = true
				replays = append(replays, replay{c, first})
				continue
			}
		}
		cur := make([]ledger.Stats, len(chain))
		for i, id := range chain {
			st, ok := stats[id]
			if !ok {
				c.Err = fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
				break
			}
			cur[i] = st
		}
		if c.Err != nil {
			continue
		}
		next, err := c.Decide(cur)
		if err != nil {
			c.Err = err
			continue
		}
		for i, id := range chain {
			stats[id] = next[i]
			if !changed[id] {
				changed[id] = true
				dirty = append(dirty, id)
			}
		}
		rel.Number = next[0].Count
		if len(rel.Payload) == 0 {
			rel.Payload = nil
		}
		c.Got = rel
		accepted = append(accepted, c)
		if rel.Key != "" {
			inBatch[k] = c
		}
	}
	return accepted, replays, dirty
}

// writeBatch records the accepted releases (setting their Seq) and the new statistics
// of the dirty budgets, and commits, in one pipelined round trip.
func writeBatch(ctx context.Context, conn *pgx.Conn, accepted []*groupcommit.Call, dirty []string, stats map[string]ledger.Stats) error {
	b := &pgx.Batch{}
	queueInserts(b, accepted)
	for _, id := range dirty {
		e := stats[id].Encode()
		b.Queue(`UPDATE dpkit_budgets SET release_count = $1, sum_epsilon = $2, sum_delta = $3, sum_epsilon_sq = $4 WHERE id = $5`,
			e.Count, e.SumEpsilon, e.SumDelta, e.SumEpsilonSq, id)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	err := readBatch(br, 0, 0, accepted)
	for range dirty {
		if err == nil {
			_, err = br.Exec()
		}
	}
	if err == nil {
		err = commitTag(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// queueInserts queues the INSERT of each accepted release.
func queueInserts(b *pgx.Batch, accepted []*groupcommit.Call) {
	for _, c := range accepted {
		rel := c.Got
		var key *string
		if rel.Key != "" {
			key = &rel.Key
		}
		b.Queue(`INSERT INTO dpkit_releases
			(budget_id, root_id, number, epsilon, delta, mechanism, analyst, idem_key, time_us, payload)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq`,
			rel.Budget, c.Chain[0], rel.Number, rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro(), rel.Payload)
	}
}

// readBatch reads the results of a batch queued as: execs statements whose results do
// not matter (BEGIN), queries guarded statements answering one row each, the inserts of
// accepted (setting their Seq) and, when execs > 0 (the fast path), the COMMIT.
func readBatch(br pgx.BatchResults, execs, queries int, accepted []*groupcommit.Call) error {
	for range execs {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	for range queries {
		var one int
		if err := br.QueryRow().Scan(&one); err != nil {
			return err
		}
	}
	for _, c := range accepted {
		if err := br.QueryRow().Scan(&c.Got.Seq); err != nil {
			return err
		}
	}
	if execs > 0 {
		return commitTag(br)
	}
	return nil
}

// commitTag reads the result of the batch's COMMIT: COMMIT of an aborted transaction
// answers ROLLBACK.
func commitTag(br pgx.BatchResults) error {
	tag, err := br.Exec()
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("ledger/postgres: the batch's transaction was rolled back (%s)", tag)
	}
	return nil
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
