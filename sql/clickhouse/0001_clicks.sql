-- The click store on ClickHouse (docs/scale-out.md, "ClickHouse"): raw
-- clicks and orphan visits, and the hourly rollups, on every node of the
-- cluster CLICKHOUSE_CLUSTER. Applied by `manage.py migrate_clicks` to each
-- node in turn (CLICKHOUSE_URLS), never ON CLUSTER: 18.16 crashes on a
-- distributed statement while it has no ZooKeeper session.
--
-- Kept to what both Debian 12's ClickHouse 18.16 and a current one (26.x)
-- accept; dashboard/clicks/tests/test_clickhouse_schema.py runs it in chdb.
-- 18.16 has no LowCardinality, DateTime64, Bool, IPv4/IPv6, TTL or CHECK:
-- times are whole seconds (DateTime) beside their milliseconds, flags
-- UInt8, addresses text.
--
-- {shard} and {replica} are the server's macros (its <macros>); {cluster}
-- is CLICKHOUSE_CLUSTER, put in by migrate_clicks. Tables named *_local
-- hold a node's share; the table of the same name without it is the
-- Distributed table over the cluster's, which the store writes and reads.

-- A redirect the edge served, as PostgreSQL's `clicks` has it (sql/clicks.sql),
-- and the visitor hash the importer computes (docs/rollups.md, "Visitors"),
-- which the hourly rollups count. A link's clicks live on one shard, sorted
-- by time: a report reads one range of one shard. A retried insert of the
-- same rows is dropped whole by the replicated table's block deduplication.
CREATE TABLE IF NOT EXISTS clicks_local (
    click_id      UUID,
    occurred_at   DateTime('UTC'),
    occurred_ms   UInt16,            -- the milliseconds of occurred_at
    link_id       Int64,
    user_agent_id Int64,
    is_bot        UInt8,
    slug          String,            -- as asked for, which the link may since have changed
    ip            Nullable(String),  -- as CLICK_IP_PRIVACY keeps it: anonymised, whole, or not at all
    country       String,            -- ISO 3166 alpha-2, or 'unknown'
    browser       String,
    os            String,
    device        String,            -- desktop, mobile, tablet, bot, unknown
    referer       String,
    referer_host  String,            -- '' for no Referer, 'unknown' for one without a host
    rule          Nullable(String),  -- what served it: rule '1'..'20', split 'ab1'..'ab10', NULL the link's url
    import_id     Nullable(Int64),   -- the import that brought it from another shortener; NULL: served here
    visitor_hash  Int64              -- the anonymised network's and the user agent's hashes XORed
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/slingshot/clicks_local', '{replica}')
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (link_id, occurred_at, click_id);

CREATE TABLE IF NOT EXISTS clicks AS clicks_local
ENGINE = Distributed({cluster}, currentDatabase(), clicks_local, link_id);

-- A visit to a slug without a link that redirects it (sql/clicks.sql,
-- orphan_visits), sharded by slug: a slug's visits live on one shard.
CREATE TABLE IF NOT EXISTS orphan_visits_local (
    click_id    UUID,
    occurred_at DateTime('UTC'),
    occurred_ms UInt16,
    is_bot      UInt8,
    slug        String,
    ip          Nullable(String),
    country     String,
    user_agent  String,
    referer     String,
    kind        Enum8('unknown' = 1, 'disabled' = 2, 'scheduled' = 3, 'expired' = 4, 'limit' = 5,
                      'password' = 6, 'listed' = 7, 'blocked' = 8),
    domain      String,             -- its domain's host; '' the default domain
    import_id   Nullable(Int64)
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/slingshot/orphan_visits_local', '{replica}')
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (slug, occurred_at, click_id);

CREATE TABLE IF NOT EXISTS orphan_visits AS orphan_visits_local
ENGINE = Distributed({cluster}, currentDatabase(), orphan_visits_local, sipHash64(slug));

-- Clicks per link, UTC hour and bot or not, with a sketch of their
-- visitors: bots are the rows with is_bot = 1, humans those with 0, and a
-- bucket's visitors the union of both rows' sketches (uniqCombinedMerge).
-- Every column outside the sort key is an aggregate state, as a current
-- ClickHouse requires of an AggregatingMergeTree. Written only by the view
-- below, on the node that stores the clicks, so a link's rollups live on
-- its clicks' shard.
CREATE TABLE IF NOT EXISTS click_rollup_hour_local (
    link_id  Int64,
    bucket   DateTime('UTC'),
    is_bot   UInt8,
    clicks   AggregateFunction(count),
    visitors AggregateFunction(uniqCombined, Int64)
) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/slingshot/click_rollup_hour_local', '{replica}')
PARTITION BY toYYYYMM(bucket)
ORDER BY (link_id, bucket, is_bot);

CREATE MATERIALIZED VIEW IF NOT EXISTS click_rollup_hour_mv TO click_rollup_hour_local AS
SELECT link_id, toStartOfHour(occurred_at) AS bucket, is_bot,
       countState() AS clicks, uniqCombinedState(visitor_hash) AS visitors
FROM clicks_local
GROUP BY link_id, bucket, is_bot;

CREATE TABLE IF NOT EXISTS click_rollup_hour AS click_rollup_hour_local
ENGINE = Distributed({cluster}, currentDatabase(), click_rollup_hour_local, link_id);
