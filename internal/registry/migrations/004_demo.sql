-- dpkit query service, schema version 4: datasets and keys made by "dpkit serve --demo"
-- are marked as such (a --demo start revokes the demo keys of earlier starts, and
-- --demo --reset starts over only on a database that holds demo datasets alone).
ALTER TABLE server_datasets ADD COLUMN demo BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE server_keys ADD COLUMN demo BOOLEAN NOT NULL DEFAULT FALSE;
