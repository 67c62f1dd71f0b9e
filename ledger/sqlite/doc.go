// Package sqlite is the embedded, default storage backend of package ledger: one
// SQLite file (modernc.org/sqlite, pure Go), in WAL mode with synchronous=FULL so that a
// spend is durable once Spend returns, and BEGIN IMMEDIATE transactions with a busy
// timeout so that several processes may share the file safely. Concurrent spends of one
// process are group-committed: recorded in one transaction (each in its own savepoint,
// decided in order) and acknowledged after its single commit (see Store).
//
// The schema is versioned in migrations/NNN_*.sql (embedded); a dpkit ledger file
// carries PRAGMA application_id = ApplicationID and PRAGMA user_version = its schema
// version. Opening a file that is not a ledger (another SQLite database, or not a
// SQLite file at all) fails with an error matching ledger.ErrNotLedger, one written by a
// newer schema with ledger.ErrSchemaVersion.
package sqlite
