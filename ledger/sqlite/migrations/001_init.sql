-- dpkit ledger schema, version 1 (SQLite).
-- Budgets: the immutable definition and the sufficient statistics, updated in the
-- transaction that records each release. Sums are exact rationals ("n" or "n/d").
CREATE TABLE dpkit_budgets (
    id             TEXT    PRIMARY KEY,
    parent         TEXT    REFERENCES dpkit_budgets (id),
    total_epsilon  REAL    NOT NULL,
    total_delta    REAL    NOT NULL,
    policy         TEXT    NOT NULL,
    created_us     INTEGER NOT NULL,
    release_count  INTEGER NOT NULL DEFAULT 0,
    sum_epsilon    TEXT    NOT NULL DEFAULT '0',
    sum_delta      TEXT    NOT NULL DEFAULT '0',
    sum_epsilon_sq TEXT    NOT NULL DEFAULT '0'
) STRICT;

-- Releases: append-only. root_id is the top-level budget (equal to budget_id for a
-- release spent on a top-level budget).
CREATE TABLE dpkit_releases (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    budget_id TEXT    NOT NULL REFERENCES dpkit_budgets (id),
    root_id   TEXT    NOT NULL REFERENCES dpkit_budgets (id),
    epsilon   REAL    NOT NULL,
    delta     REAL    NOT NULL,
    mechanism TEXT    NOT NULL,
    analyst   TEXT    NOT NULL,
    idem_key  TEXT,
    time_us   INTEGER NOT NULL,
    UNIQUE (budget_id, idem_key)
) STRICT;

CREATE INDEX dpkit_releases_root ON dpkit_releases (root_id, seq);
CREATE INDEX dpkit_releases_budget ON dpkit_releases (budget_id, seq);

CREATE TRIGGER dpkit_releases_no_update BEFORE UPDATE ON dpkit_releases
BEGIN SELECT RAISE(ABORT, 'dpkit ledger releases are append-only'); END;
CREATE TRIGGER dpkit_releases_no_delete BEFORE DELETE ON dpkit_releases
BEGIN SELECT RAISE(ABORT, 'dpkit ledger releases are append-only'); END;
