-- dpkit query service, schema version 1: datasets, API keys, grants and released answers
-- (package internal/registry; before version 3, the tables of internal/server).
-- Portable SQL (SQLite and PostgreSQL). The ledger keeps its own tables in the same
-- database; every table here is prefixed "server_".

CREATE TABLE server_datasets (
    name       TEXT PRIMARY KEY,
    spec       TEXT NOT NULL,    -- JSON: columns, privacy unit, budget, policy
    csv        TEXT,             -- the CSV text, when registered inline
    path       TEXT,             -- a server-side CSV file, when registered by path
    created_at BIGINT NOT NULL   -- Unix nanoseconds
);

CREATE TABLE server_keys (
    id         TEXT PRIMARY KEY,  -- public identifier, e.g. "k_3f9a…"
    hash       TEXT NOT NULL UNIQUE, -- hex SHA-256 of the secret key
    name       TEXT NOT NULL,
    role       TEXT NOT NULL,     -- "admin" or "analyst"
    created_at BIGINT NOT NULL,
    revoked_at BIGINT             -- NULL while the key is valid
);

CREATE TABLE server_grants (
    key_id  TEXT NOT NULL REFERENCES server_keys(id),
    dataset TEXT NOT NULL REFERENCES server_datasets(name),
    PRIMARY KEY (key_id, dataset)
);

-- One row per release: the answer that left (or may leave) the service, so that a retry
-- with the same idempotency key returns the same noisy answer instead of a fresh one.
CREATE TABLE server_answers (
    dataset    TEXT NOT NULL,
    release_key TEXT NOT NULL,    -- the idempotency key as given to the ledger
    key_id     TEXT NOT NULL,
    sql_text   TEXT NOT NULL,
    response   TEXT NOT NULL,     -- JSON of the query response
    created_at BIGINT NOT NULL,
    PRIMARY KEY (dataset, release_key)
);
