package pushdown

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/query"
)

// Types lists, for each declared column type, the PostgreSQL base types (pg_type.typname)
// a table column may have, and how to say them: an int column is read as bigint, a
// float column as double precision (numeric rounded to the nearest float64), a string
// column as its text.
var Types = map[query.Type]struct {
	Names map[string]bool
	Want  string
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

// ParseName splits "schema.table" or "table" into the parts of a quoted identifier. Each
// part is taken literally (case-sensitive, as a quoted identifier): a table created as
// CREATE TABLE Pay is named "pay". A bad name is a *dpkit.ParamError for "table.name".
func ParseName(name string) (pgx.Identifier, error) {
	parts := strings.Split(name, ".")
	bad := len(parts) > 2 || !utf8.ValidString(name)
	for _, p := range parts {
		bad = bad || p == "" || len(p) > 63 || strings.ContainsRune(p, 0)
	}
	if bad {
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.name", Value: name, Want: `"schema.table" or "table" (names of 1 to 63 bytes, taken literally: case-sensitive, no quotes needed)`}
	}
	return pgx.Identifier(parts), nil
}

// Columns checks in the catalog, in tx, that table (quoted) exists and has every column
// of schema, of a type that can be read as the declared one, and returns them in the
// order of schema with their names and base types. A declared name matches a table
// column of the same name, or else the only one equal to it ignoring case. Problems are
// *dpkit.ParamError values naming "table.name" or "columns[NAME]"; a failure of the
// database is returned as is.
func Columns(ctx context.Context, tx pgx.Tx, table string, schema query.Schema) ([]query.SQLColumn, error) {
	var kind string
	err := tx.QueryRow(ctx, `SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, table).Scan(&kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.name", Value: table, Want: "an existing table or view (names are case-sensitive; without a schema, the URL's search_path applies)"}
	}
	if err != nil {
		return nil, err
	}
	switch kind {
	case "r", "p", "v", "m", "f": // table, partitioned table, view, materialized view, foreign table
	default:
		return nil, &dpkit.ParamError{Pkg: "pushdown", Name: "table.name", Value: table, Want: "a table or view (not an index, sequence or type)"}
	}
	rows, err := tx.Query(ctx, `SELECT a.attname::text, bt.typname::text, format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, table)
	if err != nil {
		return nil, err
	}
	type pgColumn struct{ name, typ, format string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgColumn, error) {
		var c pgColumn
		return c, r.Scan(&c.name, &c.typ, &c.format)
	})
	if err != nil {
		return nil, err
	}
	out := make([]query.SQLColumn, len(schema.Columns))
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
			return nil, &dpkit.ParamError{Pkg: "pushdown", Name: field, Value: decl.Name, Want: "a column of table " + table}
		case len(match) > 1:
			return nil, &dpkit.ParamError{Pkg: "pushdown", Name: field, Value: decl.Name, Want: fmt.Sprintf("one column of table %s (%q and %q differ only in case: declare the exact name)", table, match[0].name, match[1].name)}
		}
		c := match[0]
		if allowed := Types[decl.Type]; !allowed.Names[c.typ] {
			return nil, &dpkit.ParamError{Pkg: "pushdown", Name: field, Value: "PostgreSQL type " + c.format,
				Want: fmt.Sprintf("a column of type %s to be read as %s", allowed.Want, decl.Type)}
		}
		out[i] = query.SQLColumn{Name: c.name, Type: c.typ}
	}
	return out, nil
}
