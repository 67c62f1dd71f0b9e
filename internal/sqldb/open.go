package sqldb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/dpkit/dpkit"
)

// Dialect is the kind of database.
type Dialect int

// Dialects.
const (
	SQLite   Dialect = iota + 1 // a SQLite file (modernc.org/sqlite)
	Postgres                    // a PostgreSQL database (pgx)
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// ApplicationID marks a SQLite file as a dpkit database (PRAGMA application_id; "dpkl").
const ApplicationID = 0x64706b6c

// Errors of Open and Migrate; match them with errors.Is.
var (
	// ErrForeign: the database belongs to another application, or is corrupted.
	ErrForeign = errors.New("not a dpkit database")
	// ErrMissing: the database or the component is not there, and Create was not set.
	ErrMissing = errors.New("no dpkit data there")
	// ErrNewer: the database was migrated by a newer dpkit.
	ErrNewer = errors.New("written by a newer dpkit")
)

// Options tunes Open. The zero value opens an existing database.
type Options struct {
	// Create allows a new SQLite file (a missing or empty file). PostgreSQL databases
	// exist beforehand; whether a component may create its tables is Schema.Create.
	Create bool
	// BusyTimeout is how long a SQLite transaction waits for another process's write
	// lock before failing; 0 means 30 s.
	BusyTimeout time.Duration
	// MaxConns bounds the pool's connections; 0 means 16 (a query of dpkit serve reads
	// the ledger on two connections at once, and the writer of its spends holds one).
	MaxConns int
	// AppName is PostgreSQL's application_name when the URL sets none; "" means "dpkit".
	AppName string
}

// DB is an open database: one pool that every component of the process shares. It is
// safe for concurrent use.
type DB struct {
	// SQL is the pool as a *sql.DB. Queries use $1, $2, … placeholders in both dialects
	// (SQLite reads $N as the N-th argument).
	SQL *sql.DB
	// Pool is the PostgreSQL pool that SQL draws its connections from (nil for SQLite),
	// for pgx features such as pipelined batches.
	Pool    *pgxpool.Pool
	Dialect Dialect
	// Name is the file path, or the URL without its password: for messages.
	Name string
}

// IsPostgres reports whether dsn names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens the database dsn: a postgres:// URL (tables in the first schema of its
// search_path) or the path of a SQLite file. A SQLite file that is not a SQLite database,
// or that belongs to another application, is refused with ErrForeign before anything is
// written to it.
func Open(ctx context.Context, dsn string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	if IsPostgres(dsn) {
		return openPostgres(ctx, dsn, opts)
	}
	return openSQLite(ctx, dsn, opts)
}

// Close closes the pool.
func (db *DB) Close() error {
	err := db.SQL.Close()
	if db.Pool != nil {
		db.Pool.Close()
	}
	return err
}

// maxConns is Options.MaxConns with its default.
func (o *Options) maxConns() int {
	if o.MaxConns > 0 {
		return o.MaxConns
	}
	return 16
}

// header is the first 16 bytes of every SQLite database file.
var header = []byte("SQLite format 3\x00")

func openSQLite(ctx context.Context, file string, opts *Options) (*DB, error) {
	if file == "" || strings.ContainsAny(file, "?#") {
		return nil, &dpkit.ParamError{Pkg: "sqldb", Name: "db", Value: file, Want: "a file path without '?' or '#', or a postgres:// URL"}
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
	if !fresh {
		// Identify the file through a connection that changes nothing (the pool below
		// switches the file to WAL mode).
		if err := probe(ctx, base); err != nil {
			return nil, err
		}
	}
	db := &DB{Dialect: SQLite, Name: file}
	db.SQL, err = sql.Open("sqlite", base+"&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1")
	if err != nil {
		return nil, err
	}
	db.SQL.SetMaxOpenConns(opts.maxConns())
	db.SQL.SetConnMaxIdleTime(time.Minute)
	if err := db.SQL.PingContext(ctx); err != nil {
		db.SQL.Close()
		return nil, db.Classify(err)
	}
	return db, nil
}

// checkFile reports whether file is missing or empty (a new database), and rejects a
// file that is not SQLite before the driver touches it.
func checkFile(file string, create bool) (fresh bool, err error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return false, fmt.Errorf("%s: %w", file, fs.ErrNotExist)
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
	case n == 0 && err == io.EOF:
		if !create {
			return false, fmt.Errorf("%w: %s is empty", ErrMissing, file)
		}
		return true, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return false, err
	case n < len(header) || !bytes.Equal(buf, header):
		return false, fmt.Errorf("%w: %s is not a SQLite database", ErrForeign, file)
	}
	return false, nil
}

// probe refuses a SQLite file of another application: one whose application_id is
// neither 0 nor ApplicationID, or which has tables but no application_id.
func probe(ctx context.Context, dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := checkApplication(ctx, db); err != nil {
		return classify(strings.SplitN(dsn, "?", 2)[0], err)
	}
	return nil
}

// querier is what the checks need of a *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// checkApplication returns ErrForeign unless the SQLite database is a dpkit database or
// empty, and reports whether it is marked as dpkit's.
func checkApplication(ctx context.Context, q querier) error {
	var app, tables int
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return err
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return err
	}
	switch {
	case app == ApplicationID, app == 0 && tables == 0:
		return nil
	case app == 0:
		return fmt.Errorf("%w: a SQLite database of another application (%d tables, no dpkit application_id)", ErrForeign, tables)
	}
	return fmt.Errorf("%w: a SQLite database of another application (application_id %d)", ErrForeign, app)
}

// Translate maps the errors of Open and Migrate to a component's own errors, keeping
// their detail: ErrForeign and ErrMissing become notOurs (ErrMissing's message ends with
// missingHint, e.g. " (create the ledger first)"), ErrNewer becomes newer. Other errors
// are returned as they are.
func Translate(err error, notOurs, newer error, missingHint string) error {
	for _, m := range []struct{ from, to error }{{ErrForeign, notOurs}, {ErrMissing, notOurs}, {ErrNewer, newer}} {
		if errors.Is(err, m.from) {
			msg := strings.TrimPrefix(err.Error(), m.from.Error()+": ")
			if m.from == ErrMissing {
				msg += missingHint
			}
			return fmt.Errorf("%w: %s", m.to, msg)
		}
	}
	return err
}

// Classify turns SQLite's "not a database" and "corrupt" errors into ErrForeign naming the
// file; other errors are returned as they are.
func (db *DB) Classify(err error) error {
	if err == nil || db.Dialect != SQLite {
		return err
	}
	return classify(db.Name, err)
}

func classify(file string, err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) {
		switch e.Code() & 0xff {
		case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
			return fmt.Errorf("%w: %s: %v", ErrForeign, file, err)
		}
	}
	return err
}

func openPostgres(ctx context.Context, url string, opts *Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &dpkit.ParamError{Pkg: "sqldb", Name: "db", Value: Redact(url), Want: "a PostgreSQL URL postgres://user@host:port/database?…: " + RedactIn(err.Error(), url)}
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["synchronous_commit"] = "on"
	if rp["application_name"] == "" {
		rp["application_name"] = opts.AppName
		if opts.AppName == "" {
			rp["application_name"] = "dpkit"
		}
	}
	db := &DB{Dialect: Postgres, Name: Redact(url)}
	cfg.MaxConns = int32(opts.maxConns())
	cfg.MinConns = 0
	db.Pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqldb: %s: %s", db.Name, RedactIn(err.Error(), url))
	}
	if err := db.Pool.Ping(ctx); err != nil {
		db.Pool.Close()
		return nil, fmt.Errorf("sqldb: connect to %s: %s", db.Name, RedactIn(err.Error(), url))
	}
	db.SQL = stdlib.OpenDBFromPool(db.Pool)
	return db, nil
}

// Redact hides the password of a postgres:// URL (for messages); other strings are
// returned unchanged.
func Redact(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	scheme := strings.Index(dsn, "://") + 3
	at := strings.LastIndexByte(dsn, '@')
	if at < scheme {
		return dsn
	}
	user := dsn[scheme:at]
	if i := strings.IndexByte(user, ':'); i >= 0 {
		return dsn[:scheme] + user[:i] + ":***" + dsn[at:]
	}
	return dsn
}

// RedactIn replaces the URL url by its redacted form in msg (an error message that may
// quote it), and hides its password where msg quotes it alone.
func RedactIn(msg, url string) string {
	r := Redact(url)
	if r == url {
		return msg
	}
	msg = strings.ReplaceAll(msg, url, r)
	scheme := strings.Index(url, "://") + 3
	at := strings.LastIndexByte(url, '@')
	if i := strings.IndexByte(url[scheme:at], ':'); i >= 0 {
		if pw := url[scheme+i+1 : at]; pw != "" {
			msg = strings.ReplaceAll(msg, pw, "***")
		}
	}
	return msg
}
