-- dpkit ledger schema, version 5 (PostgreSQL): each release's number among the releases
-- of its top-level budget (1, 2, …; for a dataset's budget, the dataset's release
-- number, which says nothing of other budgets' activity as seq does), set when the
-- release is recorded, and filled in here for the releases recorded before. The
-- append-only trigger is disabled for this one UPDATE, in the migration's transaction.
ALTER TABLE dpkit_releases ADD COLUMN number bigint;
ALTER TABLE dpkit_releases DISABLE TRIGGER dpkit_releases_no_change;
UPDATE dpkit_releases r SET number = n.number
    FROM (SELECT seq, row_number() OVER (PARTITION BY root_id ORDER BY seq) AS number FROM dpkit_releases) n
    WHERE r.seq = n.seq;
ALTER TABLE dpkit_releases ENABLE TRIGGER dpkit_releases_no_change;
CREATE INDEX dpkit_releases_root_number ON dpkit_releases (root_id, number);
CREATE INDEX dpkit_releases_root_analyst ON dpkit_releases (root_id, analyst, seq);
