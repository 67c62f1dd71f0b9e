package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The SQL backends (ledger/sqlite, ledger/postgres) share one table layout; these are
// the column lists they select and the functions that read a selected row back.
const (
	// DefinitionColumns selects a budget definition, for ScanDefinition.
	DefinitionColumns = "id, coalesce(parent, ''), total_epsilon, total_delta, policy, created_us"
	// ReleaseColumns selects a release, for ScanRelease.
	ReleaseColumns = "seq, number, budget_id, epsilon, delta, mechanism, analyst, coalesce(idem_key, ''), time_us, payload"
)

// Scanner is a selected row (*sql.Row, *sql.Rows, pgx.Row, pgx.Rows).
type Scanner interface{ Scan(dest ...any) error }

// ScanDefinition reads a row selected with DefinitionColumns. A policy that does not
// decode is ErrNotLedger.
func ScanDefinition(sc Scanner) (Definition, error) {
	var d Definition
	var policy string
	var created int64
	if err := sc.Scan(&d.ID, &d.Parent, &d.Total.Epsilon, &d.Total.Delta, &policy, &created); err != nil {
		return d, err
	}
	dec := json.NewDecoder(strings.NewReader(policy))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d.Policy); err != nil {
		return d, fmt.Errorf("%w: budget %q has a malformed policy: %v", ErrNotLedger, d.ID, err)
	}
	d.Created = time.UnixMicro(created).UTC()
	return d, nil
}

// ReleasesQuery is the query of Store.Releases for budget id (sub tells whether it is an
// analyst sub-budget: its own releases; otherwise those on it and its sub-budgets) and
// filter f, with its arguments ($1, $2, … placeholders, which SQLite reads too).
func ReleasesQuery(id string, sub bool, f ReleaseFilter) (string, []any) {
	column := "root_id"
	if sub {
		column = "budget_id"
	}
	q := "SELECT " + ReleaseColumns + " FROM dpkit_releases WHERE " + column + " = $1 AND seq > $2 AND number > $3"
	args := []any{id, f.After, f.AfterNumber}
	if f.Analyst != "" {
		args = append(args, f.Analyst)
		q += fmt.Sprintf(" AND analyst = $%d", len(args))
	}
	q += " ORDER BY seq"
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	return q, args
}

// ScanRelease reads a row selected with ReleaseColumns (an empty payload reads as nil).
func ScanRelease(sc Scanner) (Release, error) {
	var r Release
	var us int64
	err := sc.Scan(&r.Seq, &r.Number, &r.Budget, &r.Cost.Epsilon, &r.Cost.Delta, &r.Mechanism, &r.Analyst, &r.Key, &us, &r.Payload)
	r.Time = time.UnixMicro(us).UTC()
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r, err
}
