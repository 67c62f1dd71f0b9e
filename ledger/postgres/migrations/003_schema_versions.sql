-- dpkit ledger schema, version 3 (PostgreSQL): from this version on, the schema versions
-- of the components sharing the database (the ledger, the query service) are recorded in
-- the table dpkit_schema (internal/sqldb). dpkit_ledger_meta, which recorded the ledger's
-- version before, says a version above every one an older dpkit reads, so that an older
-- dpkit refuses the database ("upgrade dpkit") instead of misreading it.
INSERT INTO dpkit_ledger_meta (name, value) VALUES ('application', 'dpkit-ledger'), ('schema_version', '100')
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;
