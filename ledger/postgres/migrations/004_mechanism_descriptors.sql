-- dpkit ledger schema, version 4 (PostgreSQL): mechanisms are recorded as typed,
-- versioned JSON descriptors (package mechanism) instead of the command line's
-- KIND:key=value text. The rows are converted by the Go step of this version
-- (ledger.MigrateMechanisms, in this transaction), which needs the append-only trigger
-- disabled for its UPDATE; the step enables it again.
ALTER TABLE dpkit_releases DISABLE TRIGGER dpkit_releases_no_change;
