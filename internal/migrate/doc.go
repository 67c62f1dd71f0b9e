// Package migrate holds what dpkit's three sets of versioned SQL migrations share: the
// embedded ledger migrations of ledger/sqlite and ledger/postgres, and the service's
// tables of internal/server.
//
// A migration is a file NNN_description.sql, NNN being its version; the versions of a
// set are 1, 2, …, n, and the schema version a package writes is n (List.Latest). Each
// package keeps its own embed.FS (go:embed reaches only files below the package) and its
// own way of recording the version it has reached (PRAGMA user_version, a meta table, a
// migrations table) and of serialising processes that migrate together (BEGIN IMMEDIATE,
// an advisory lock); this package lists the files, picks those above the recorded
// version and applies them in order through a function the package gives.
package migrate
