-- dpkit ledger schema, version 5 (SQLite): each release's number among the releases of
-- its top-level budget (1, 2, …; for a dataset's budget, the dataset's release number,
-- which says nothing of other budgets' activity as seq does), set when the release is
-- recorded, and filled in here for the releases recorded before. The append-only
-- trigger is lifted for this one UPDATE, in the migration's transaction.
ALTER TABLE dpkit_releases ADD COLUMN number INTEGER;
DROP TRIGGER dpkit_releases_no_update;
UPDATE dpkit_releases SET number = n.number
    FROM (SELECT seq, row_number() OVER (PARTITION BY root_id ORDER BY seq) AS number FROM dpkit_releases) AS n
    WHERE dpkit_releases.seq = n.seq;
CREATE TRIGGER dpkit_releases_no_update BEFORE UPDATE ON dpkit_releases
BEGIN SELECT RAISE(ABORT, 'dpkit ledger releases are append-only'); END;
CREATE INDEX dpkit_releases_root_number ON dpkit_releases (root_id, number);
CREATE INDEX dpkit_releases_root_analyst ON dpkit_releases (root_id, analyst, seq);
