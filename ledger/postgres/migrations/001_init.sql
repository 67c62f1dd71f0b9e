-- dpkit ledger schema, version 1 (PostgreSQL). Created in the first schema of the
-- connection's search_path. The migrator records the version in dpkit_ledger_meta.
CREATE TABLE dpkit_ledger_meta (
    name  text PRIMARY KEY,
    value text NOT NULL
);

-- Budgets: the immutable definition and the sufficient statistics, updated in the
-- transaction that records each release (under SELECT ... FOR UPDATE of the row).
-- Sums are exact rationals ("n" or "n/d").
CREATE TABLE dpkit_budgets (
    id             text             PRIMARY KEY,
    parent         text             REFERENCES dpkit_budgets (id),
    total_epsilon  double precision NOT NULL,
    total_delta    double precision NOT NULL,
    policy         text             NOT NULL,
    created_us     bigint           NOT NULL,
    release_count  bigint           NOT NULL DEFAULT 0,
    sum_epsilon    text             NOT NULL DEFAULT '0',
    sum_delta      text             NOT NULL DEFAULT '0',
    sum_epsilon_sq text             NOT NULL DEFAULT '0'
);

-- Releases: append-only. root_id is the top-level budget (equal to budget_id for a
-- release spent on a top-level budget).
CREATE TABLE dpkit_releases (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    budget_id text             NOT NULL REFERENCES dpkit_budgets (id),
    root_id   text             NOT NULL REFERENCES dpkit_budgets (id),
    epsilon   double precision NOT NULL,
    delta     double precision NOT NULL,
    mechanism text             NOT NULL,
    analyst   text             NOT NULL,
    idem_key  text,
    time_us   bigint           NOT NULL,
    UNIQUE (budget_id, idem_key)
);

CREATE INDEX dpkit_releases_root ON dpkit_releases (root_id, seq);
CREATE INDEX dpkit_releases_budget ON dpkit_releases (budget_id, seq);

CREATE FUNCTION dpkit_releases_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'dpkit ledger releases are append-only';
END
$$;

CREATE TRIGGER dpkit_releases_no_change BEFORE UPDATE OR DELETE ON dpkit_releases
    FOR EACH ROW EXECUTE FUNCTION dpkit_releases_append_only();
