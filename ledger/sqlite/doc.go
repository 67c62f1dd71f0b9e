// Package sqlite is the embedded, default storage backend of package ledger: one
// SQLite file (modernc.org/sqlite, pure Go), in WAL mode with synchronous=FULL so that a
// spend is durable once Spend returns, and BEGIN IMMEDIATE transactions with a busy
// timeout so that several processes may share the file safely. Concurrent spends of one
// process are group-committed: recorded in one transaction (each in its own savepoint,
// decided in order) and acknowledged after its single commit (see Store).
//
// The file is opened, and the schema (migrations/NNN_*.sql, embedded) migrated, by
// package internal/sqldb: a dpkit file carries PRAGMA application_id = ApplicationID, and
// the ledger's schema version is its row of the table dpkit_schema (ledgers of schema 1
// and 2 recorded it as PRAGMA user_version, which is read once and then set to 100 so
// that older dpkit refuse the file). Open gives the ledger a database of its own; New
// puts it in a database that other components of the process share (dpkit serve keeps
// its registry of datasets and keys in the same file, through the same connection pool).
// Opening a file that is not a ledger (another SQLite database, or not a SQLite file at
// all) fails with an error matching ledger.ErrNotLedger, one written by a newer schema
// with ledger.ErrSchemaVersion.
package sqlite
