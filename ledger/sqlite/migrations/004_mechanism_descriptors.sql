-- dpkit ledger schema, version 4 (SQLite): mechanisms are recorded as typed, versioned
-- JSON descriptors (package mechanism) instead of the command line's KIND:key=value text.
-- The rows are converted by the Go step of this version (ledger.MigrateMechanisms, in
-- this transaction), which needs the append-only trigger lifted for its UPDATE; the step
-- re-creates it.
DROP TRIGGER dpkit_releases_no_update;
