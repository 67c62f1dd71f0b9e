-- dpkit query service, schema version 5: datasets that read a live PostgreSQL table —
-- queried inside that database at each query, never copied — keep the URL of its database
-- (with its credentials, as given) and the table's name. Both are NULL for the others.

ALTER TABLE server_datasets ADD COLUMN live_url TEXT;
ALTER TABLE server_datasets ADD COLUMN live_table TEXT;
