-- Day rollups and day breakdowns are folded from the hour tables once an
-- hour has closed, instead of being upserted with every batch: a day row is
-- then written about once an hour rather than once a batch, which halves
-- what the importer's transactions write (docs/rollups.md). Applied by
-- dashboard/clicks/migrations/0007_day_fold.py.
--
-- `folded_before`: every hour before it is in the day tables. The importer
-- writes a batch's clicks of such hours (late clicks) to the day tables
-- itself, and only those; the fold (clicks.services.click_days_fold) adds
-- the hours from `folded_before` to the end of a closed hour and moves it on,
-- in one transaction. Readers combine the day tables with the hour rows from
-- `folded_before` on, so they never see a difference.
CREATE TABLE click_day_fold (
    only_row      boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    folded_before timestamptz NOT NULL,
    CONSTRAINT click_day_fold_aligned CHECK (
        date_trunc('hour', folded_before AT TIME ZONE 'UTC') = folded_before AT TIME ZONE 'UTC')
);

-- Everything imported so far is in the day tables already.
INSERT INTO click_day_fold (folded_before)
SELECT coalesce(max(bucket) + interval '1 hour', timestamptz '1970-01-01 00:00+00') FROM click_rollup_hour;

-- The fold reads the hour rows of a time range: BRIN indexes suit rows
-- that arrive in time order, and cost the importer next to nothing.
CREATE INDEX click_rollup_hour_bucket ON click_rollup_hour USING brin (bucket);
CREATE INDEX click_breakdown_hour_bucket ON click_breakdown_hour USING brin (bucket);
