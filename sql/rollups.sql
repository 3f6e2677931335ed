-- What reports read: clicks counted by link and hour or day, by dimension,
-- and in all. docs/rollups.md says what they count; every statement that
-- writes them is in dashboard/clicks/rollups.py.
-- Applied by dashboard/clicks/migrations/0001_squashed_0002_catch_up.py on a
-- new database, after clicks.sql.

-- Unique visitors are HyperLogLog sketches (the `hll` extension, packaged
-- as postgresql-15-hll). CREATE EXTENSION needs a superuser: `make run`, the
-- tests and the compose file's postgres image create it before migrations
-- run as the application's role, which is not one.
CREATE EXTENSION IF NOT EXISTS hll;

-- One row per link and UTC hour (day). The human_* columns leave bots out.
-- visitors is what the sketch estimates, kept at most clicks. A sketch has
-- 2^12 registers of 5 bits (rollups.HLL).
CREATE TABLE click_rollup_hour (
    link_id              bigint      NOT NULL,
    bucket               timestamptz NOT NULL,
    clicks               bigint      NOT NULL,
    human_clicks         bigint      NOT NULL,
    visitors             bigint      NOT NULL,
    human_visitors       bigint      NOT NULL,
    visitor_sketch       hll         NOT NULL DEFAULT hll_empty(12, 5),
    human_visitor_sketch hll         NOT NULL DEFAULT hll_empty(12, 5),
    PRIMARY KEY (link_id, bucket),
    -- Estimates from two sketches need not be ordered as the sets are:
    -- human_visitors may exceed visitors by the error margin.
    CONSTRAINT click_rollup_hour_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_hour_aligned CHECK (date_trunc('hour', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
) WITH (fillfactor = 80);

CREATE TABLE click_rollup_day (
    LIKE click_rollup_hour INCLUDING DEFAULTS,
    PRIMARY KEY (link_id, bucket),
    CONSTRAINT click_rollup_day_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_day_aligned CHECK (date_trunc('day', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
) WITH (fillfactor = 80);

-- The same per link and six UTC hours (from 00, 06, 12 and 18 UTC), for the
-- hours folded as the day rows are. A local day of a zone whose days are not
-- UTC days is three such blocks and the hours of the block its midnight
-- falls in, rather than 24 hours (docs/rollups.md, "Reading").
CREATE TABLE click_rollup_6h (
    LIKE click_rollup_hour INCLUDING DEFAULTS,
    PRIMARY KEY (link_id, bucket),
    CONSTRAINT click_rollup_6h_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_6h_aligned CHECK (date_bin('6 hours', bucket, timestamptz '1970-01-01 00:00+00') = bucket)
) WITH (fillfactor = 80);

-- Clicks per value of one dimension, per link and bucket.
CREATE TABLE click_breakdown_hour (
    link_id      bigint      NOT NULL,
    bucket       timestamptz NOT NULL,
    dimension    text        NOT NULL,
    value        text        NOT NULL,
    clicks       bigint      NOT NULL,
    human_clicks bigint      NOT NULL,
    PRIMARY KEY (link_id, bucket, dimension, value),
    CONSTRAINT click_breakdown_hour_dimension CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule')),
    CONSTRAINT click_breakdown_hour_counts CHECK (0 <= human_clicks AND human_clicks <= clicks)
) WITH (fillfactor = 80);

CREATE TABLE click_breakdown_day (
    LIKE click_breakdown_hour,
    PRIMARY KEY (link_id, bucket, dimension, value),
    CONSTRAINT click_breakdown_day_dimension CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule')),
    CONSTRAINT click_breakdown_day_counts CHECK (0 <= human_clicks AND human_clicks <= clicks)
) WITH (fillfactor = 80);

-- The same per link and UTC month, for the days the fold has gone past
-- whole: a year's breakdowns read some twelve months' rows rather than 365
-- days' (docs/rollups.md, "Readers").
CREATE TABLE click_breakdown_month (
    LIKE click_breakdown_hour,
    PRIMARY KEY (link_id, bucket, dimension, value),
    CONSTRAINT click_breakdown_month_dimension CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule')),
    CONSTRAINT click_breakdown_month_counts CHECK (0 <= human_clicks AND human_clicks <= clicks),
    CONSTRAINT click_breakdown_month_aligned CHECK (date_trunc('month', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
) WITH (fillfactor = 80);

-- The day fold reads the hour rows of a time range; BRIN suits rows that
-- arrive in time order, and costs the importer next to nothing.
CREATE INDEX click_rollup_hour_bucket ON click_rollup_hour USING brin (bucket);
CREATE INDEX click_breakdown_hour_bucket ON click_breakdown_hour USING brin (bucket);

-- All-time clicks of each link that has any, for the links list to show and sort by.
CREATE TABLE link_click_totals (
    link_id      bigint PRIMARY KEY,
    clicks       bigint NOT NULL,
    human_clicks bigint NOT NULL,
    CONSTRAINT link_click_totals_counts CHECK (0 <= human_clicks AND human_clicks <= clicks)
) WITH (fillfactor = 80);

CREATE INDEX link_click_totals_clicks ON link_click_totals (clicks);

-- Every hour before folded_before is in the day tables and click_rollup_6h, and every day
-- before its day in click_breakdown_month (docs/rollups.md, "Writing").
CREATE TABLE click_day_fold (
    only_row      boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    folded_before timestamptz NOT NULL,
    CONSTRAINT click_day_fold_aligned CHECK (
        date_trunc('hour', folded_before AT TIME ZONE 'UTC') = folded_before AT TIME ZONE 'UTC')
);

INSERT INTO click_day_fold (folded_before) VALUES (timestamptz '1970-01-01 00:00+00');
