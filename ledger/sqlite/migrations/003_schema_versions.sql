-- dpkit ledger schema, version 3 (SQLite): from this version on, the schema versions of
-- the components sharing the file (the ledger, the query service) are recorded in the
-- table dpkit_schema (internal/sqldb). user_version, which recorded the ledger's version
-- before, is set above every version an older dpkit reads, so that an older dpkit refuses
-- the file ("upgrade dpkit") instead of misreading it.
PRAGMA user_version = 100;
