-- dpkit query service, schema version 2: where a dataset's data came from, when they are
-- a snapshot taken at registration (a PostgreSQL table): a description without
-- credentials, e.g. postgres table "public"."pay" of postgres://dpkit@db:5432/prod. The
-- snapshot itself is the dataset's csv text.

ALTER TABLE server_datasets ADD COLUMN origin TEXT;
