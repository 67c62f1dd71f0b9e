// Package postgres is the shared storage backend of package ledger: a PostgreSQL
// database (driver github.com/jackc/pgx/v5) that several dpkit processes may use at
// once. Every spend is one transaction that locks the top-level budget's row (and the
// analyst sub-budget's) with SELECT … FOR UPDATE before it reads the statistics, so two
// servers cannot both spend the last of a budget; commits are synchronous
// (synchronous_commit = on is set on every connection).
//
// The tables live in the first schema of the connection's search_path (set it in the
// URL, e.g. postgres://host/db?search_path=ledger). The schema is versioned in
// migrations/NNN_*.sql (embedded) and recorded in the table dpkit_ledger_meta; a
// database whose tables are not a dpkit ledger fails with ledger.ErrNotLedger, one
// written by a newer schema with ledger.ErrSchemaVersion.
package postgres
