package datasource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/query/pushdown"
)

// A dataset registered from a PostgreSQL table is a snapshot: the declared columns are
// read once, at registration, in one read-only REPEATABLE READ transaction, and written as
// CSV text — the snapshot — which is loaded by the same loader as a dataset registered
// with "csv" and stored with the dataset as its CSV text. Every later load (after a
// restart, in another process sharing the database) reads those same bytes, so the
// dataset a budget protects never changes, and the URL (with its credentials) is not
// kept; only a description without credentials (DatasetRecord.Origin) is.
//
// Nothing the request supplies reaches PostgreSQL as SQL: the table and column names are
// quoted identifiers (pgx.Identifier.Sanitize), the catalog lookups bind them as
// parameters, and the one query built from them selects the declared columns only.
//
// One limit of the CSV round trip: a "\r\n" inside a string value becomes "\n" (the CSV
// reader's rule), in the snapshot and therefore in every answer alike.

// Table names a PostgreSQL table (or view) to register as a dataset: the URL of its
// database and its name, "schema.table" or "table" (taken literally, case-sensitive), and
// how the dataset reads it: Mode "snapshot" (or "", the default: Snapshot, once) or
// "live" (inside the database at every query, package query/pushdown).
type Table struct {
	URL  string `json:"url"`
	Name string `json:"name"`
	Mode string `json:"mode,omitempty"`
}

// Modes of a Table.
const (
	ModeSnapshot = "snapshot"
	ModeLive     = "live"
)

// MaxSnapshotBytes bounds the CSV text of a table snapshot (256 MiB); a larger table is
// refused (register a CSV file by "path" instead).
const MaxSnapshotBytes = 256 << 20

// pgConnectTimeout bounds connecting to the table's database.
const pgConnectTimeout = 15 * time.Second

// Snapshot reads the declared columns of the table src names into CSV text (header
// first, the columns of schema in order) and returns it with a description of the source
// without credentials. Every problem with the request or the table is a
// *dpkit.ParamError naming the field; a cancelled ctx is ctx.Err().
func Snapshot(ctx context.Context, src Table, schema query.Schema) (csvText, origin string, err error) {
	if !sqldb.IsPostgres(src.URL) {
		scheme, _, _ := strings.Cut(src.URL, ":") // not the rest, which may hold a password
		return "", "", &dpkit.ParamError{Pkg: "datasource", Name: "table.url", Value: scheme + ":…", Want: "a PostgreSQL URL postgres://user@host:port/database?…"}
	}
	cfg, err := pgx.ParseConfig(src.URL)
	if err != nil {
		return "", "", &dpkit.ParamError{Pkg: "datasource", Name: "table.url", Value: sqldb.Redact(src.URL), Want: "a PostgreSQL URL postgres://user@host:port/database?…: " + sqldb.RedactIn(err.Error(), src.URL)}
	}
	ident, err := pushdown.ParseName(src.Name)
	if err != nil {
		return "", "", err
	}
	table := ident.Sanitize()
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "dpkit-serve-import"
	}
	origin = fmt.Sprintf("postgres table %s of postgres://%s@%s:%d/%s", table, cfg.User, cfg.Host, cfg.Port, cfg.Database)

	cctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return "", "", &dpkit.ParamError{Pkg: "datasource", Name: "table.url", Value: sqldb.Redact(src.URL), Want: "a reachable PostgreSQL database: " + sqldb.RedactIn(err.Error(), src.URL)}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.Close(cctx) // which ends the read-only transaction: there is nothing to commit
	}()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return "", "", pgError(origin, err)
	}

	exprs, err := tableColumns(ctx, tx, table, schema)
	if err != nil {
		return "", "", err
	}
	rows, err := tx.Query(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+table)
	if err != nil {
		return "", "", pgError(origin, err)
	}
	defer rows.Close()
	var b strings.Builder
	for i, c := range schema.Columns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.Name) // a query identifier: nothing to quote
	}
	b.WriteByte('\n')
	for rows.Next() {
		for i, v := range rows.RawValues() { // col::text: the text itself, NULL as nil
			c := &schema.Columns[i]
			switch {
			case v == nil && c.Type != query.String:
				return "", "", badData(origin, "its column %q has a NULL value; a numeric column (declared %s) needs a value in every row", c.Name, c.Type)
			case c.Type == query.Float && (string(v) == "NaN" || string(v) == "Infinity" || string(v) == "-Infinity"):
				return "", "", badData(origin, "its column %q has a value %s; a float column needs finite numbers", c.Name, v)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if c.Type == query.String {
				// Always quoted, so that an empty value (or a NULL, read as "") in a
				// one-column row is not an empty line, which CSV readers skip.
				b.WriteByte('"')
				b.WriteString(strings.ReplaceAll(string(v), `"`, `""`))
				b.WriteByte('"')
			} else {
				b.Write(v) // PostgreSQL's text of a number: digits, sign, '.', 'e'
			}
		}
		b.WriteByte('\n')
		if b.Len() > MaxSnapshotBytes {
			return "", "", badData(origin, "the snapshot is larger than %d bytes as CSV: register a CSV file by \"path\" instead", MaxSnapshotBytes)
		}
	}
	if err := rows.Err(); err != nil {
		return "", "", pgError(origin, err)
	}
	return b.String(), origin, nil
}

// tableColumns checks in the catalog that table exists and has every column of schema,
// of a type that can be read as the declared one (pushdown.Columns), and returns the
// select expressions (quoted column names cast to text), in the order of schema.
func tableColumns(ctx context.Context, tx pgx.Tx, table string, schema query.Schema) ([]string, error) {
	cols, err := pushdown.Columns(ctx, tx, table, schema)
	var pe *dpkit.ParamError
	if errors.As(err, &pe) {
		return nil, err
	}
	if err != nil {
		return nil, pgError(table, err)
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = pgx.Identifier{c.Name}.Sanitize() + "::text"
	}
	return exprs, nil
}

// pgError reports a PostgreSQL error while reading the table (permission denied, say)
// as a problem with "table.name".
func pgError(where string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return badData(where, "reading it failed: %v", err)
}

// badData reports a table whose content or access the dataset's declaration cannot
// accept, as a problem with "table.name".
func badData(table, format string, args ...any) error {
	return &dpkit.ParamError{Pkg: "datasource", Name: "table.name", Value: table, Want: "a table readable as declared, but " + fmt.Sprintf(format, args...)}
}
