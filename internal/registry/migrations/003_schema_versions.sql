-- dpkit query service, schema version 3: from this version on, the schema versions of the
-- components sharing the database (the ledger, the query service) are recorded in the
-- table dpkit_schema (internal/sqldb). server_migrations, where the service recorded its
-- versions before, gets a row above every version an older dpkit reads, so that an older
-- dpkit refuses the database ("upgrade dpkit") instead of misreading it.
CREATE TABLE IF NOT EXISTS server_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL);
INSERT INTO server_migrations (version, applied_at) VALUES (100, 0) ON CONFLICT DO NOTHING;
