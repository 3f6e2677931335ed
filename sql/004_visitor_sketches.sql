-- Unique visitors as HyperLogLog sketches (the `hll` extension, Debian and
-- PGDG package postgresql-15-hll) instead of per-visitor sets: a click no
-- longer costs an index entry per bucket, and adding the same visitor twice
-- changes nothing, so a redelivered batch cannot count anyone twice.
-- Applied by dashboard/clicks/migrations/0006_visitor_sketches.py.
--
-- CREATE EXTENSION needs a superuser: `make run`, the tests and the compose
-- file's postgres image create it before migrations run (the application
-- role is not a superuser); IF NOT EXISTS makes this line a no-op then.
CREATE EXTENSION IF NOT EXISTS hll;

-- 2^12 registers of 5 bits: exact up to 320 visitors (the sketch keeps the
-- hashes themselves), then a standard error of 1.6%; at most 2.5 kB a row.
-- The integer columns stay what reports read, kept from the sketches by the
-- importer; rows from before this migration keep their counts.
ALTER TABLE click_rollup_hour
    ADD COLUMN visitor_sketch       hll NOT NULL DEFAULT hll_empty(12, 5),
    ADD COLUMN human_visitor_sketch hll NOT NULL DEFAULT hll_empty(12, 5),
    -- Estimates of two sketches need not be ordered like the sets are.
    DROP CONSTRAINT click_rollup_hour_counts,
    ADD CONSTRAINT click_rollup_hour_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks);
ALTER TABLE click_rollup_day
    ADD COLUMN visitor_sketch       hll NOT NULL DEFAULT hll_empty(12, 5),
    ADD COLUMN human_visitor_sketch hll NOT NULL DEFAULT hll_empty(12, 5),
    DROP CONSTRAINT click_rollup_day_counts,
    ADD CONSTRAINT click_rollup_day_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks);

DROP TABLE click_visitors_hour, click_visitors_day;

-- Every batch updates rows of these tables in place; free room on each page
-- lets PostgreSQL do it as a HOT update, without new index entries.
ALTER TABLE click_rollup_hour SET (fillfactor = 80);
ALTER TABLE click_rollup_day SET (fillfactor = 80);
ALTER TABLE click_breakdown_hour SET (fillfactor = 80);
ALTER TABLE click_breakdown_day SET (fillfactor = 80);
ALTER TABLE link_click_totals SET (fillfactor = 80);
