// Package sqldb is the one SQL database a dpkit process keeps its state in: a SQLite
// file or a PostgreSQL database, opened once with one connection pool, and the versioned
// schemas of the components that keep their tables there — the budget ledger
// (ledger/sqlite, ledger/postgres) and the query service's registry of datasets, keys and
// grants (internal/registry) — migrated by one implementation under one lock.
//
// # One pool, one durability setting
//
// Open returns a DB holding a *sql.DB that every component uses (for PostgreSQL, a view of
// a pgxpool.Pool, which the ledger also uses directly for pipelined statements), so that
// "dpkit serve" opens one pool per database, not one per component. A SQLite file is
// opened in WAL mode with synchronous=FULL for every connection: a ledger commit must be
// durable before its release's answer may leave (docs/design.md, key idea 4), and the
// registry's writes (a dataset, a key, a grant) are rare enough that a weaker setting would
// save nothing measurable; one setting also means that no connection of the pool commits
// less durably than another. PostgreSQL connections run with synchronous_commit = on.
//
// # Migrations
//
// A component's schema is a set of files NNN_description.sql (versions 1, 2, …, n without
// gaps; List) and Migrate brings the database to version n: in one transaction that
// excludes every other process migrating the same database (SQLite: BEGIN IMMEDIATE;
// PostgreSQL: pg_advisory_xact_lock), it reads the component's version from the table
// dpkit_schema, applies the migrations above it and records the new version. A database
// that records a version above n was written by a newer dpkit and is refused (ErrNewer); a
// database that holds a component's tables but no record of its version belongs to
// another application (ErrForeign) and is never written to. Databases written before
// dpkit_schema existed recorded versions their own ways (PRAGMA user_version, the table
// dpkit_ledger_meta, the table server_migrations); a component reads its old record once
// through Schema.Legacy, and its next migration makes older dpkit binaries refuse the
// database instead of misreading it.
package sqldb
