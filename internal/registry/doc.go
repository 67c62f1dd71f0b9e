// Package registry is the query service's persistence besides the ledger: the datasets
// it serves (their specification and data, or where the data live), its API keys (stored
// only hashed) and which keys may query which dataset. Released answers are not kept
// here: they are the payloads of their releases in the ledger, recorded in the
// transaction that charges the budget; the table server_answers, where an earlier dpkit
// kept them, is only read (Answer, Answers).
//
// The tables (prefixed server_) live in the same database as the ledger's, opened once by
// package sqldb, and are migrated by it (migrations/NNN_*.sql, portable SQL for SQLite
// and PostgreSQL). Every query uses bound parameters.
package registry
