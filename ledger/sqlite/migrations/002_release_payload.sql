-- dpkit ledger schema, version 2 (SQLite): an optional opaque payload recorded with each
-- release in the transaction that records it (e.g. the answer the release published).
ALTER TABLE dpkit_releases ADD COLUMN payload BLOB;
