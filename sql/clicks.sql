-- Raw clicks, orphan visits and the user agents they were made with. The
-- importer (dashboard/clicks/importer.py) writes them; nothing else does
-- (the visits imports bring from other shorteners go through its store
-- step too, dashboard/importers/history.py). Applied by
-- dashboard/clicks/migrations/0001_squashed_0002_catch_up.py on a new
-- database, with rollups.sql; import_id by 0003_import_id,
-- click_deletions_hour by 0006_click_deletions_hour, its kinds of a
-- team's retention by 0008_purged_kinds, clickhouse_batches by
-- 0009_clickhouse_batches, clickhouse_moves by 0010_clickhouse_moves,
-- clickhouse_deletions by 0011_clickhouse_deletions.

-- A redirect the edge served, with what the importer learnt about it
-- (dashboard/clicks/enrichment.py). Partitioned by month (UTC), so that
-- CLICK_RETENTION_MONTHS drops whole months.
--
-- The primary key holds the click id, and is what makes the import exactly
-- once: a click delivered twice has the same id and time. click_id leads,
-- so the ids of one edge worker (a fixed prefix and a counter) land next to
-- each other in the index. A click belongs to the link that served it, and
-- goes when that link is deleted (links.services.link_delete).
CREATE TABLE clicks (
    click_id      uuid        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    link_id       bigint      NOT NULL,
    user_agent_id bigint      NOT NULL,
    is_bot        boolean     NOT NULL,
    slug          text        NOT NULL,  -- as asked for, which the link may since have changed
    ip            inet,                  -- as CLICK_IP_PRIVACY keeps it: anonymised, whole, or not at all
    country       text        NOT NULL,  -- ISO 3166 alpha-2, or 'unknown'
    browser       text        NOT NULL,
    os            text        NOT NULL,
    device        text        NOT NULL,  -- desktop, mobile, tablet, bot, unknown
    referer       text        NOT NULL,
    referer_host  text        NOT NULL,  -- '' for no Referer, 'unknown' for one without a host
    rule          text,                  -- what served it: rule '1'..'20', split 'ab1'..'ab10', NULL the link's url
    import_id     bigint,                -- the import that brought it from another shortener; NULL: served here
    PRIMARY KEY (click_id, occurred_at)
) PARTITION BY RANGE (occurred_at);

CREATE INDEX clicks_link_time ON clicks (link_id, occurred_at);
-- The imported clicks of a range of hours, which the accounting leaves out
-- (dashboard/clicks/accounting.py): the edges never served them.
CREATE INDEX clicks_imported_time ON clicks (occurred_at) WHERE import_id IS NOT NULL;

-- A visit to a well-formed slug that has no link, or whose link does not
-- redirect it (the edge records no link for it), with the slug asked for,
-- on which domain, and what the edge found (docs/contract.md, the kinds). Partitioned like `clicks` so the
-- same retention drops them.
CREATE TABLE orphan_visits (
    click_id    uuid        NOT NULL,
    occurred_at timestamptz NOT NULL,
    is_bot      boolean     NOT NULL,
    slug        text        NOT NULL,
    ip          inet,
    country     text        NOT NULL,
    user_agent  text        NOT NULL,
    referer     text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('unknown', 'disabled', 'scheduled', 'expired', 'limit', 'password', 'listed', 'blocked')),
    domain      text        NOT NULL,  -- its domain's host; '' the default domain (and every older record)
    import_id   bigint,                -- as in clicks
    PRIMARY KEY (click_id, occurred_at)
) PARTITION BY RANGE (occurred_at);

CREATE INDEX orphan_visits_slug_time ON orphan_visits (slug, occurred_at);

-- What was deleted of the clicks and orphan visits the edges served, per
-- UTC hour they were served in, so that the accounting can tell them from
-- clicks gone missing (dashboard/clicks/accounting.py: served = stored +
-- deleted). Added to in the transaction of each deletion, from what it
-- deleted (dashboard/clicks/deletions.py); the visits imports brought from
-- other shorteners are left out, as the accounting leaves them out.
-- `kind`: a link's stored clicks deleted (`click`, its visits or the link
-- itself), clicks of a deleted link that reached the importer after it
-- (`dropped`), orphan visits deleted (`orphan`), clicks of a team's hour
-- rollups purged past its retention (`purged`, dashboard/clicks/retention.py;
-- imported ones included, as the rollups count them), and imported visits
-- whose raw clicks a purge took (`imported`: what the accounting no longer
-- finds among the raw clicks to take from the rollups, which count them;
-- taken from the rollups, or from `purged` once those went too). Kept as
-- long as the rollups; a row is an hour and a kind, so it stays small.
CREATE TABLE click_deletions_hour (
    bucket timestamptz NOT NULL,
    kind   text        NOT NULL,
    visits bigint      NOT NULL,
    PRIMARY KEY (bucket, kind),
    CONSTRAINT click_deletions_hour_kind CHECK (kind IN ('click', 'dropped', 'orphan', 'purged', 'imported')),
    CONSTRAINT click_deletions_hour_visits CHECK (visits > 0),
    CONSTRAINT click_deletions_hour_aligned CHECK (date_trunc('hour', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
);

-- Each user agent once, referenced from clicks by its id, which is a 64-bit
-- hash of it (clicks.enrichment.AgentFacts.agent_hash): the importer knows
-- an agent's id without asking, and adds the agents new to it with each
-- batch. The user agent is about half the bytes of a click, and a few
-- thousand agents make most of the traffic. Never pruned: retention drops
-- click partitions, not agents.
CREATE TABLE user_agents (
    id         bigint PRIMARY KEY,
    user_agent text   NOT NULL
);

-- The month partitions of a table partitioned by occurred_at that cover
-- [from_ts, from_ts + months_ahead months], named <table>_yYYYYmMM, if
-- missing; returns how many it created. Safe to call often.
CREATE FUNCTION slingshot_ensure_month_partitions(parent text, from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    month_start timestamp := date_trunc('month', from_ts AT TIME ZONE 'UTC');
    created     integer := 0;
    part_name   text;
BEGIN
    -- Importers starting together would race to create the same partition.
    PERFORM pg_advisory_xact_lock(hashtext('slingshot partitions of ' || parent));
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

-- The partitions of both raw tables.
CREATE FUNCTION slingshot_ensure_click_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE sql
AS $$
    SELECT slingshot_ensure_month_partitions('clicks', from_ts, months_ahead)
         + slingshot_ensure_month_partitions('orphan_visits', from_ts, months_ahead);
$$;

-- Drops the partitions of both raw tables for months that ended at or
-- before `before`; returns their names. Rollups are not touched.
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

-- With CLICK_STORE=clickhouse, the batches whose clicks were added to
-- link_click_totals (dashboard/clicks/clickhouse_import.py), by their
-- store and first stream entry: a batch sent again after a crash between
-- its COMMIT and its acknowledgement adds them once. A consumer's rows go
-- in its next batch's transaction (its earlier batches are acknowledged by
-- then); those of a consumer gone for good, after a day.
CREATE TABLE clickhouse_batches (
    store       text        NOT NULL,
    first_entry text        NOT NULL,
    consumer    text        NOT NULL,
    stored_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, first_entry)
);

-- How far `manage.py move_clicks` has moved each table's rows to the
-- ClickHouse cluster (dashboard/clicks/clickhouse_move.py): the rows a
-- chunk, fixed when the move begins, and the sort key of the last row
-- moved (clicks: link, time, id; orphan visits: slug, time, id, as JSON),
-- moved in the transaction that deletes them here.
CREATE TABLE clickhouse_moves (
    table_name text        PRIMARY KEY CHECK (table_name IN ('clicks', 'orphan_visits')),
    chunk_rows integer     NOT NULL CHECK (chunk_rows > 0),
    after_key  jsonb,
    moved      bigint      NOT NULL DEFAULT 0,
    moved_at   timestamptz NOT NULL DEFAULT now()
);

-- Visits deleted while clicks are stored in ClickHouse
-- (dashboard/clicks/clickhouse_deletions.py): the moment, in milliseconds
-- since 1970, before which the cluster's clicks of a link, or its orphan
-- visits (link_id 0), are left out of every read; only ever moved forward.
CREATE TABLE clickhouse_deletions (
    link_id    bigint      PRIMARY KEY CHECK (link_id >= 0),
    before_ms  bigint      NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now()
);
