package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/migrate"
	"github.com/dpkit/dpkit/ledger"
)

// Application is the value of dpkit_ledger_meta's "application" row.
const Application = "dpkit-ledger"

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the schema's versioned migrations, migrations/NNN_*.sql.
var migrations = migrate.MustLoad(migrationFS, "migrations/*.sql")

// SchemaVersion is the schema version this package writes (the highest migration).
var SchemaVersion = migrations.Latest()

// Options tunes Open. The zero value opens an existing ledger.
type Options struct {
	// Create makes a new ledger when the schema holds none.
	Create bool
	// MaxConns bounds the open connections; 0 means 8.
	MaxConns int
}

// Store is a ledger.Store in a PostgreSQL database. It is safe for concurrent use.
type Store struct {
	cfg  *pgx.ConnConfig
	idle chan *pgx.Conn
	sem  chan struct{} // one token per open connection
}

var _ ledger.Store = (*Store)(nil)

// Open connects to the ledger at url (postgres://… or postgresql://…), migrating an
// older schema.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, &dpkit.ParamError{Name: "url", Value: redact(url), Want: "a PostgreSQL URL postgres://user@host:port/database?…: " + err.Error()}
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "dpkit-ledger"
	}
	n := opts.MaxConns
	if n <= 0 {
		n = 8
	}
	s := &Store{cfg: cfg, idle: make(chan *pgx.Conn, n), sem: make(chan struct{}, n)}
	err = s.with(ctx, func(c *pgx.Conn) error { return prepare(ctx, c, opts.Create) })
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// redact hides a password in a URL for error messages.
func redact(url string) string {
	if i, j := strings.Index(url, "://"), strings.LastIndex(url, "@"); i >= 0 && j > i {
		if k := strings.Index(url[i+3:j], ":"); k >= 0 {
			return url[:i+3+k] + ":***" + url[j:]
		}
	}
	return url
}

// acquire returns an idle connection or dials a new one, up to the limit.
func (s *Store) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case c := <-s.idle:
		return c, nil
	default:
	}
	select {
	case c := <-s.idle:
		return c, nil
	case s.sem <- struct{}{}:
		c, err := pgx.ConnectConfig(ctx, s.cfg)
		if err != nil {
			<-s.sem
			return nil, fmt.Errorf("ledger/postgres: connect: %w", err)
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release returns c to the pool, or closes it if it is broken or mid-transaction.
func (s *Store) release(c *pgx.Conn) {
	if c.IsClosed() || c.PgConn().TxStatus() != 'I' {
		c.Close(context.Background())
		<-s.sem
		return
	}
	select {
	case s.idle <- c:
	default:
		c.Close(context.Background())
		<-s.sem
	}
}

// with runs fn on a pooled connection.
func (s *Store) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer s.release(c)
	return fn(c)
}

// Close closes the idle connections; connections in use close when released.
func (s *Store) Close() error {
	for {
		select {
		case c := <-s.idle:
			c.Close(context.Background())
			<-s.sem
		default:
			return nil
		}
	}
}

// prepare checks that the schema holds a dpkit ledger of a known version, creating or
// migrating it as allowed, under an advisory lock so that processes do not race.
func prepare(ctx context.Context, c *pgx.Conn, create bool) error {
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('dpkit_ledger_migrate'))"); err != nil {
			return err
		}
		var meta, budgets, releases *string
		if err := tx.QueryRow(ctx, "SELECT to_regclass('dpkit_ledger_meta')::text, to_regclass('dpkit_budgets')::text, to_regclass('dpkit_releases')::text").
			Scan(&meta, &budgets, &releases); err != nil {
			return err
		}
		version := 0
		switch {
		case meta == nil && (budgets != nil || releases != nil):
			return fmt.Errorf("%w: the schema has dpkit_budgets or dpkit_releases tables but no dpkit_ledger_meta", ledger.ErrNotLedger)
		case meta == nil && !create:
			return fmt.Errorf("%w: no dpkit ledger in this database schema (create the ledger first)", ledger.ErrNotLedger)
		case meta != nil:
			rows, err := tx.Query(ctx, "SELECT name, value FROM dpkit_ledger_meta")
			if err != nil {
				return fmt.Errorf("%w: unreadable dpkit_ledger_meta: %v", ledger.ErrNotLedger, err)
			}
			kv, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
				var p [2]string
				return p, r.Scan(&p[0], &p[1])
			})
			if err != nil {
				return fmt.Errorf("%w: unreadable dpkit_ledger_meta: %v", ledger.ErrNotLedger, err)
			}
			m := map[string]string{}
			for _, p := range kv {
				m[p[0]] = p[1]
			}
			if m["application"] != Application {
				return fmt.Errorf("%w: dpkit_ledger_meta names application %q", ledger.ErrNotLedger, m["application"])
			}
			v, err := strconv.Atoi(m["schema_version"])
			if err != nil || v < 1 {
				return fmt.Errorf("%w: malformed schema_version %q", ledger.ErrNotLedger, m["schema_version"])
			}
			if v > SchemaVersion {
				return fmt.Errorf("%w: the ledger has schema version %d; this dpkit reads up to %d (upgrade dpkit)", ledger.ErrSchemaVersion, v, SchemaVersion)
			}
			version = v
		}
		err := migrations.Apply(version, func(m migrate.Migration) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO dpkit_ledger_meta (name, value) VALUES ('application', $1), ('schema_version', $2)
				ON CONFLICT (name) DO UPDATE SET value = excluded.value`, Application, strconv.Itoa(m.Version))
			return err
		})
		if err != nil {
			return fmt.Errorf("ledger/postgres: %w", err)
		}
		return nil
	})
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

// Spend implements ledger.Store: one transaction that locks the chain's budget rows
// (root first) with SELECT … FOR UPDATE, and commits synchronously before returning.
func (s *Store) Spend(ctx context.Context, chain []string, rel ledger.Release, decide ledger.Decide) (got ledger.Release, replayed bool, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			got, replayed, err = spendTx(ctx, tx, chain, rel, decide)
			return err
		})
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
		got, err := ledger.ScanRelease(tx.QueryRow(ctx, "SELECT "+ledger.ReleaseColumns+" FROM dpkit_releases WHERE budget_id = $1 AND idem_key = $2", rel.Budget, rel.Key))
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
	if err := tx.QueryRow(ctx, `INSERT INTO dpkit_releases
		(budget_id, root_id, epsilon, delta, mechanism, analyst, idem_key, time_us, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq`,
		rel.Budget, chain[0], rel.Cost.Epsilon, rel.Cost.Delta, rel.Mechanism, rel.Analyst, key, rel.Time.UnixMicro(), payload).Scan(&rel.Seq); err != nil {
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
func (s *Store) Releases(ctx context.Context, id string, after int64, limit int) (out []ledger.Release, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		var parent string
		err := c.QueryRow(ctx, "SELECT coalesce(parent, '') FROM dpkit_budgets WHERE id = $1", id).Scan(&parent)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", ledger.ErrUnknownBudget, id)
		}
		if err != nil {
			return err
		}
		column := "root_id"
		if parent != "" {
			column = "budget_id"
		}
		var lim *int
		if limit > 0 {
			lim = &limit
		}
		rows, err := c.Query(ctx, "SELECT "+ledger.ReleaseColumns+" FROM dpkit_releases WHERE "+column+" = $1 AND seq > $2 ORDER BY seq LIMIT $3", id, after, lim)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Release, error) { return ledger.ScanRelease(r) })
		return err
	})
	return out, err
}
