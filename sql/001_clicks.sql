-- Raw clicks, one row per redirect the edge served, range-partitioned by
-- month (UTC). Applied by dashboard/clicks/migrations/0001_clicks.py.
--
-- The primary key (click_id, occurred_at) is what makes the import exactly
-- once: a click delivered twice has the same id and time, and the importer
-- inserts with ON CONFLICT DO NOTHING. click_id leads, so ids from one edge
-- worker (a fixed prefix and a counter) land next to each other in the index.

CREATE TABLE clicks (
    click_id    uuid        NOT NULL,
    occurred_at timestamptz NOT NULL,
    link_id     bigint,
    slug        text        NOT NULL,
    ip          inet,
    user_agent  text        NOT NULL DEFAULT '',
    referer     text        NOT NULL DEFAULT '',
    PRIMARY KEY (click_id, occurred_at)
) PARTITION BY RANGE (occurred_at);

CREATE INDEX clicks_link_time ON clicks (link_id, occurred_at);

-- Creates the monthly partitions that cover [from_ts, from_ts + months_ahead
-- months], if missing, and returns how many it created. Safe to call often.
CREATE FUNCTION slingshot_ensure_click_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    month_start timestamp := date_trunc('month', from_ts AT TIME ZONE 'UTC');
    created     integer := 0;
    part_name   text;
BEGIN
    FOR i IN 0..months_ahead LOOP
        part_name := format('clicks_y%sm%s', to_char(month_start, 'YYYY'), to_char(month_start, 'MM'));
        IF to_regclass(part_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF clicks FOR VALUES FROM (%L) TO (%L)',
                part_name,
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

SELECT slingshot_ensure_click_partitions(now() - interval '1 month', 3);
