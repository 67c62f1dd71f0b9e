package datasource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/sqldb"
	"github.com/dpkit/dpkit/query"
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
// database and its name, "schema.table" or "table" (taken literally, case-sensitive).
type Table struct {
	URL  string `json:"url"`
	Name string `json:"name"`
}

// MaxSnapshotBytes bounds the CSV text of a table snapshot (256 MiB); a larger table is
// refused (register a CSV file by "path" instead).
const MaxSnapshotBytes = 256 << 20

// pgConnectTimeout bounds connecting to the table's database.
const pgConnectTimeout = 15 * time.Second

// pgTypes lists, for each declared column type, the PostgreSQL base types (pg_type.typname)
// a table column may have, and how to say it. Values are read as PostgreSQL's text output
// (col::text) and parsed by the CSV loader: integers exactly, float4/float8 and numeric
// rounded to the nearest float64 (numeric beyond the float64 range is clamped to the
// declared bounds, as in CSV).
var pgTypes = map[query.Type]struct {
	names map[string]bool
	want  string
}{
	query.Int:    {set("int2", "int4", "int8"), "smallint, integer or bigint"},
	query.Float:  {set("int2", "int4", "int8", "float4", "float8", "numeric"), "smallint, integer, bigint, real, double precision or numeric"},
	query.String: {set("text", "varchar", "bpchar", "name", "citext", "uuid", "bool", "int2", "int4", "int8"), "text, varchar, char, name, citext, uuid, boolean or an integer type"},
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// parseTableName splits "schema.table" or "table" into the parts of a quoted identifier.
// Each part is taken literally (case-sensitive, as a quoted identifier): a table created
// as CREATE TABLE Pay is named "pay".
func parseTableName(name string) (pgx.Identifier, error) {
	parts := strings.Split(name, ".")
	bad := len(parts) > 2 || !utf8.ValidString(name)
	for _, p := range parts {
		bad = bad || p == "" || len(p) > 63 || strings.ContainsRune(p, 0)
	}
	if bad {
		return nil, &dpkit.ParamError{Pkg: "datasource", Name: "table.name", Value: name, Want: `"schema.table" or "table" (names of 1 to 63 bytes, taken literally: case-sensitive, no quotes needed)`}
	}
	return pgx.Identifier(parts), nil
}

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
	ident, err := parseTableName(src.Name)
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
// of a type that can be read as the declared one, and returns the select expressions
// (quoted column names cast to text), in the order of schema. A declared name matches a
// table column of the same name, or else the only one equal to it ignoring case.
func tableColumns(ctx context.Context, tx pgx.Tx, table string, schema query.Schema) ([]string, error) {
	var kind string
	err := tx.QueryRow(ctx, `SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, table).Scan(&kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &dpkit.ParamError{Pkg: "datasource", Name: "table.name", Value: table, Want: "an existing table or view (names are case-sensitive; without a schema, the URL's search_path applies)"}
	}
	if err != nil {
		return nil, pgError(table, err)
	}
	switch kind {
	case "r", "p", "v", "m", "f": // table, partitioned table, view, materialized view, foreign table
	default:
		return nil, &dpkit.ParamError{Pkg: "datasource", Name: "table.name", Value: table, Want: "a table or view (not an index, sequence or type)"}
	}
	rows, err := tx.Query(ctx, `SELECT a.attname::text, bt.typname::text, format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, table)
	if err != nil {
		return nil, pgError(table, err)
	}
	type pgColumn struct{ name, typ, format string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgColumn, error) {
		var c pgColumn
		return c, r.Scan(&c.name, &c.typ, &c.format)
	})
	if err != nil {
		return nil, pgError(table, err)
	}
	exprs := make([]string, len(schema.Columns))
	for i, decl := range schema.Columns {
		field := fmt.Sprintf("columns[%s]", decl.Name)
		var match []pgColumn
		for _, c := range cols {
			if c.name == decl.Name {
				match = []pgColumn{c}
				break
			}
			if strings.EqualFold(c.name, decl.Name) {
				match = append(match, c)
			}
		}
		switch {
		case len(match) == 0:
			return nil, &dpkit.ParamError{Pkg: "datasource", Name: field, Value: decl.Name, Want: "a column of table " + table}
		case len(match) > 1:
			return nil, &dpkit.ParamError{Pkg: "datasource", Name: field, Value: decl.Name, Want: fmt.Sprintf("one column of table %s (%q and %q differ only in case: declare the exact name)", table, match[0].name, match[1].name)}
		}
		c := match[0]
		if allowed := pgTypes[decl.Type]; !allowed.names[c.typ] {
			return nil, &dpkit.ParamError{Pkg: "datasource", Name: field, Value: "PostgreSQL type " + c.format,
				Want: fmt.Sprintf("a column of type %s to be read as %s", allowed.want, decl.Type)}
		}
		exprs[i] = pgx.Identifier{c.name}.Sanitize() + "::text"
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
