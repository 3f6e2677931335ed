-- Enriched clicks, orphan visits, and the rollups reports read (docs/rollups.md).
-- Applied by dashboard/clicks/migrations/0003_enrichment_orphans_rollups.py.
-- Everything here is written by the importer (dashboard/clicks/importer.py) in
-- the same transaction as the raw clicks it counts.

-- Enrichment of a raw click, computed once at import. Constant defaults make
-- these metadata-only changes; rows imported before have the defaults.
ALTER TABLE clicks
    ADD COLUMN is_bot       boolean NOT NULL DEFAULT false,
    ADD COLUMN browser      text    NOT NULL DEFAULT 'unknown',
    ADD COLUMN os           text    NOT NULL DEFAULT 'unknown',
    ADD COLUMN device       text    NOT NULL DEFAULT 'unknown',
    ADD COLUMN country      text    NOT NULL DEFAULT 'unknown',
    ADD COLUMN referer_host text    NOT NULL DEFAULT '';

-- Visits to a well-formed slug that has no link (the edge marks them
-- `orphan`), with the slug asked for. Partitioned like `clicks` so the same
-- retention drops them.
CREATE TABLE orphan_visits (
    click_id    uuid        NOT NULL,
    occurred_at timestamptz NOT NULL,
    slug        text        NOT NULL,
    ip          inet,
    user_agent  text        NOT NULL DEFAULT '',
    referer     text        NOT NULL DEFAULT '',
    is_bot      boolean     NOT NULL DEFAULT false,
    country     text        NOT NULL DEFAULT 'unknown',
    PRIMARY KEY (click_id, occurred_at)
) PARTITION BY RANGE (occurred_at);

CREATE INDEX orphan_visits_slug_time ON orphan_visits (slug, occurred_at);

-- Month partitions of any table partitioned by occurred_at, named
-- <table>_yYYYYmMM (the names 001 gave the click partitions).
CREATE FUNCTION slingshot_ensure_month_partitions(parent text, from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    month_start timestamp := date_trunc('month', from_ts AT TIME ZONE 'UTC');
    created     integer := 0;
    part_name   text;
BEGIN
    FOR i IN 0..months_ahead LOOP
        part_name := format('%s_y%sm%s', parent, to_char(month_start, 'YYYY'), to_char(month_start, 'MM'));
        IF to_regclass(part_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                part_name, parent,
                month_start AT TIME ZONE 'UTC',
                (month_start + interval '1 month') AT TIME ZONE 'UTC'
            );
            created := created + 1;
        END IF;
        month_start := month_start + interval '1 month';
    END LOOP;
    RETURN created;
END;
$$;

-- From now on the click partitions come with their orphan-visit partitions.
CREATE OR REPLACE FUNCTION slingshot_ensure_click_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE sql
AS $$
    SELECT slingshot_ensure_month_partitions('clicks', from_ts, months_ahead)
         + slingshot_ensure_month_partitions('orphan_visits', from_ts, months_ahead);
$$;

-- Drops the raw partitions (clicks and orphan visits) of months that ended
-- at or before `before`; returns their names. Rollups are not touched.
CREATE FUNCTION slingshot_drop_click_partitions(before timestamptz)
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.relname,
               to_timestamp(substring(c.relname from '_y(\d{4}m\d{2})$'), 'YYYY"m"MM') AT TIME ZONE 'UTC' AS month_start
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent IN ('clicks'::regclass, 'orphan_visits'::regclass)
          AND c.relname ~ '_y\d{4}m\d{2}$'
        ORDER BY 1
    LOOP
        IF (part.month_start AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC' <= before THEN
            EXECUTE format('DROP TABLE %I', part.relname);
            RETURN NEXT part.relname;
        END IF;
    END LOOP;
END;
$$;

SELECT slingshot_ensure_click_partitions(now() - interval '1 month', 3);

-- Rollups: one row per link and UTC hour (day). Only clicks of existing
-- links are counted. `visitors` counts distinct visitors (see the visitor
-- sets below) first seen in the bucket; the human_* columns leave bots out.
CREATE TABLE click_rollup_hour (
    link_id        bigint      NOT NULL,
    bucket         timestamptz NOT NULL,
    clicks         bigint      NOT NULL,
    human_clicks   bigint      NOT NULL,
    visitors       bigint      NOT NULL,
    human_visitors bigint      NOT NULL,
    PRIMARY KEY (link_id, bucket),
    CONSTRAINT click_rollup_hour_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= human_visitors AND human_visitors <= visitors AND visitors <= clicks
        AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_hour_aligned CHECK (date_trunc('hour', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
);

CREATE TABLE click_rollup_day (LIKE click_rollup_hour INCLUDING DEFAULTS);
ALTER TABLE click_rollup_day
    ADD PRIMARY KEY (link_id, bucket),
    ADD CONSTRAINT click_rollup_day_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= human_visitors AND human_visitors <= visitors AND visitors <= clicks
        AND human_visitors <= human_clicks),
    ADD CONSTRAINT click_rollup_day_aligned CHECK (date_trunc('day', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC');

-- Breakdowns: clicks per value of one dimension, per link and bucket. Every
-- counted click adds one to exactly one value of each dimension.
CREATE TABLE click_breakdown_hour (
    link_id      bigint      NOT NULL,
    bucket       timestamptz NOT NULL,
    dimension    text        NOT NULL,
    value        text        NOT NULL,
    clicks       bigint      NOT NULL,
    human_clicks bigint      NOT NULL,
    PRIMARY KEY (link_id, bucket, dimension, value),
    CONSTRAINT click_breakdown_hour_dimension CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country')),
    CONSTRAINT click_breakdown_hour_counts CHECK (0 <= human_clicks AND human_clicks <= clicks)
);

CREATE TABLE click_breakdown_day (LIKE click_breakdown_hour INCLUDING DEFAULTS);
ALTER TABLE click_breakdown_day
    ADD PRIMARY KEY (link_id, bucket, dimension, value),
    ADD CONSTRAINT click_breakdown_day_dimension CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country')),
    ADD CONSTRAINT click_breakdown_day_counts CHECK (0 <= human_clicks AND human_clicks <= clicks);

-- Visitor sets: who has been counted in a bucket already. A visitor is
-- hashtextextended(anonymised address || ' ' || user agent, 0). The importer
-- prunes buckets older than CLICK_VISITOR_WINDOW_DAYS; a click arriving later
-- than that for an old bucket may count its visitor a second time.
CREATE TABLE click_visitors_hour (
    link_id bigint      NOT NULL,
    bucket  timestamptz NOT NULL,
    visitor bigint      NOT NULL,
    is_bot  boolean     NOT NULL,
    PRIMARY KEY (link_id, bucket, visitor)
);

CREATE TABLE click_visitors_day (LIKE click_visitors_hour INCLUDING DEFAULTS);
ALTER TABLE click_visitors_day ADD PRIMARY KEY (link_id, bucket, visitor);

CREATE INDEX click_visitors_hour_bucket ON click_visitors_hour (bucket);
CREATE INDEX click_visitors_day_bucket ON click_visitors_day (bucket);
