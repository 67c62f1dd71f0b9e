package pushdown

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/query"
)

// Source names a live table: the URL of its PostgreSQL database and its name,
// "schema.table" or "table" (taken literally, case-sensitive).
type Source struct {
	URL  string
	Name string
}

// Options are the knobs of a live table; the zero value means the defaults.
type Options struct {
	// StatementTimeout bounds each query's statement (PostgreSQL's statement_timeout,
	// set in its transaction); 0 means DefaultStatementTimeout, < 0 none.
	StatementTimeout time.Duration
	// MaxConns bounds the connections to the database; 0 means DefaultMaxConns.
	MaxConns int32
	// AppName is the application_name of the connections; "" means "dpkit-live".
	AppName string
}

// Defaults of Options.
const (
	DefaultStatementTimeout = 5 * time.Minute
	DefaultMaxConns         = 4
)

// connectTimeout bounds connecting to the database.
const connectTimeout = 15 * time.Second

// Errors of Table.Execute (matched with errors.Is; the error says more).
var (
	// ErrTimeout: the statement ran out of its statement timeout.
	ErrTimeout = errors.New("pushdown: the statement did not finish within its timeout")
	// ErrUnavailable: the database cannot be reached, the connection was lost, or the
	// database lacked resources to compute the statement.
	ErrUnavailable = errors.New("pushdown: the database is unavailable")
	// ErrPermission: the database refused to read the table.
	ErrPermission = errors.New("pushdown: the database refused to read the table")
	// ErrSchemaChanged: the table no longer has a declared column, or not of a type
	// that can be read as declared.
	ErrSchemaChanged = errors.New("pushdown: the table no longer matches its declaration")
)

// Table is a live table: a query.Executor that runs plans on schema inside the database.
// It is safe for concurrent use; Close releases its connections.
type Table struct {
	pool    *pgxpool.Pool
	name    pgx.Identifier
	table   string // quoted name
	schema  query.Schema
	columns []query.SQLColumn // as found at Open
	timeout time.Duration
	origin  string
}

var _ query.Executor = (*Table)(nil)

// Open opens the live table src of the given schema: it connects (a pool of at most
// MaxConns connections), and checks, in one READ ONLY transaction, that the table has
// the declared columns with types that can be read as declared (Columns), and that they
// can be read (a SELECT of them with LIMIT 0). Every problem is a *dpkit.ParamError
// naming the field ("table.url", "table.name", "columns[NAME]",
// "privacy_unit.column"), the password never in it; a cancelled ctx is ctx.Err().
func Open(ctx context.Context, src Source, schema query.Schema, opt Options) (*Table, error) {
	if err := schema.Validate(); err != nil {
		return nil, err
	}
	if u := schema.Unit; u != nil {
		for _, c := range schema.Columns {
			if strings.EqualFold(c.Name, u.Column) && c.Type == query.Float {
				return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "privacy_unit.column", Value: u.Column, Want: "an int or string column (a live table's units are identified inside the database)"}
			}
		}
	}
	if !sqldb.IsPostgres(src.URL) {
		scheme, _, _ := strings.Cut(src.URL, ":") // not the rest, which may hold a password
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.url", Value: scheme + ":…", Want: "a PostgreSQL URL postgres://user@host:port/database?…"}
	}
	cfg, err := pgxpool.ParseConfig(src.URL)
	if err != nil {
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.url", Value: sqldb.Redact(src.URL), Want: "a PostgreSQL URL postgres://user@host:port/database?…: " + sqldb.RedactIn(err.Error(), src.URL)}
	}
	name, err := ParseName(src.Name)
	if err != nil {
		return nil, err
	}
	app := opt.AppName
	if app == "" {
		app = "dpkit-live"
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	cfg.ConnConfig.ConnectTimeout = connectTimeout
	cfg.MaxConns = opt.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	cc := cfg.ConnConfig
	t := &Table{name: name, table: name.Sanitize(), schema: schema, timeout: opt.StatementTimeout,
		origin: fmt.Sprintf("postgres table %s of postgres://%s@%s:%d/%s (live)", name.Sanitize(), cc.User, cc.Host, cc.Port, cc.Database)}
	if t.timeout == 0 {
		t.timeout = DefaultStatementTimeout
	}
	if t.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.url", Value: sqldb.Redact(src.URL), Want: "a PostgreSQL URL: " + sqldb.RedactIn(err.Error(), src.URL)}
	}
	if err := t.open(ctx, src.URL); err != nil {
		t.pool.Close()
		return nil, err
	}
	return t, nil
}

// open checks the table at Open.
func (t *Table) open(ctx context.Context, url string) error {
	err := t.read(ctx, func(tx pgx.Tx) error {
		cols, err := Columns(ctx, tx, t.table, t.schema)
		if err != nil {
			return err
		}
		t.columns = cols
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = pgx.Identifier{c.Name}.Sanitize()
		}
		rows, err := tx.Query(ctx, "SELECT "+strings.Join(names, ", ")+" FROM "+t.table+" LIMIT 0")
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
	var pe *dpkit.ParamError
	switch {
	case err == nil, errors.As(err, &pe), ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	case errors.Is(err, ErrUnavailable):
		return &dpkit.ParamError{Pkg: "pushdown", Name: "table.url", Value: sqldb.Redact(url), Want: "a reachable PostgreSQL database: " + sqldb.RedactIn(err.Error(), url)}
	}
	return &dpkit.ParamError{Pkg: "pushdown", Name: "table.name", Value: t.table, Want: "a table readable as declared, but reading it failed: " + sqldb.RedactIn(err.Error(), url)}
}

// Close closes the table's connections.
func (t *Table) Close() { t.pool.Close() }

// Origin describes the table without credentials, e.g. `postgres table "hr"."pay" of
// postgres://dpkit@db:5432/prod (live)`.
func (t *Table) Origin() string { return t.origin }

// Columns returns the database columns of the schema's columns, as found at Open.
func (t *Table) Columns() []query.SQLColumn { return slices.Clone(t.columns) }

// read runs f in a READ ONLY transaction with the statement timeout, and classifies its
// error (see Execute).
func (t *Table) read(ctx context.Context, f func(pgx.Tx) error) error {
	conn, err := t.pool.Acquire(ctx)
	if err != nil {
		return classify(ctx, err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify(ctx, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // read only: nothing to commit
	}()
	if t.timeout > 0 {
		ms := max(t.timeout.Milliseconds(), 1)
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+strconv.FormatInt(ms, 10)); err != nil {
			return classify(ctx, err)
		}
	}
	err = f(tx)
	var pe *dpkit.ParamError
	var pass *passError
	if errors.As(err, &pe) || errors.As(err, &pass) || errors.Is(err, ErrSchemaChanged) {
		return err
	}
	return classify(ctx, err)
}

// passError carries an error that is not the database's (emit's, or a result row that
// cannot be read) through read unclassified.
type passError struct{ err error }

func (e *passError) Error() string { return e.err.Error() }
func (e *passError) Unwrap() error { return e.err }

// Execute implements query.Executor: it compiles p (query.Plan.Compile) for the table,
// checks in a READ ONLY transaction that the declared columns still exist with the
// types found at Open (else ErrSchemaChanged), runs the statement under the statement
// timeout and emits each result row's group as it arrives. Errors: a cancelled ctx is
// ctx.Err(); otherwise ErrTimeout, ErrUnavailable, ErrPermission, ErrSchemaChanged (each
// wrapped with what the database said), a plan that cannot run inside the database (a
// *query.Error or *dpkit.ParamError from Compile), or emit's error.
func (t *Table) Execute(ctx context.Context, p *query.Plan, seed query.Seed, emit func(*query.GroupExact) error) error {
	st, err := p.Compile(query.SQLTable{Name: t.name, Columns: t.columns}, seed)
	if err != nil {
		return err
	}
	err = t.read(ctx, func(tx pgx.Tx) error {
		if err := t.check(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, st.SQL, st.Args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]*string, st.Columns())
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			g, err := st.Decode(vals)
			if err != nil {
				return &passError{err}
			}
			if err := emit(g); err != nil {
				return &passError{err}
			}
		}
		return rows.Err()
	})
	var pass *passError
	if errors.As(err, &pass) {
		return pass.err
	}
	return err
}

// check compares the catalog with what Open found.
func (t *Table) check(ctx context.Context, tx pgx.Tx) error {
	cols, err := Columns(ctx, tx, t.table, t.schema)
	var pe *dpkit.ParamError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s: want %s", ErrSchemaChanged, pe.Name, pe.Want)
	}
	if err != nil {
		return err
	}
	for i, c := range cols {
		if c != t.columns[i] {
			return fmt.Errorf("%w: column %s was %s at registration, it is now %s %s", ErrSchemaChanged, t.schema.Columns[i].Name, t.columns[i].Type, c.Name, c.Type)
		}
	}
	return nil
}

// classify returns the error of the database as one of the package's errors, wrapped
// with its message; ctx's error if ctx ended.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		var qe *query.Error
		if errors.As(err, &qe) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err) // no answer from the database: a network or connection failure
	}
	switch code := pe.Code; {
	case code == "57014": // query_canceled: the statement timeout
		return fmt.Errorf("%w: %s", ErrTimeout, pe.Message)
	case code == "42501": // insufficient_privilege
		return fmt.Errorf("%w: %s", ErrPermission, pe.Message)
	case code == "42703", code == "42P01", code == "3F000", code == "42804", code == "42883", code == "42846", code == "22P02":
		// undefined column, table or schema; a type that no longer fits the statement
		return fmt.Errorf("%w: %s", ErrSchemaChanged, pe.Message)
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57P"), strings.HasPrefix(code, "53"):
		// connection exception, the server shutting down, insufficient resources
		return fmt.Errorf("%w: %s", ErrUnavailable, pe.Message)
	}
	return fmt.Errorf("pushdown: the database failed: %s (SQLSTATE %s)", pe.Message, pe.Code)
}
