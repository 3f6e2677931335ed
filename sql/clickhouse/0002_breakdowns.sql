-- Each link's clicks per UTC month, bot or not, dimension and value: what
-- the stats page's breakdowns add up for the whole months of its range
-- (clicks/clickhouse_reports.py), the days at either end read from the raw
-- clicks, rather than a year's raw clicks. By month rather than by hour:
-- most links have a click or none in an hour, and a row a dimension of
-- every click would make this table larger than the clicks; a month of a
-- link's clicks shares its few browsers, countries and referrers.
--
-- A click is counted here when its row says so (in_breakdowns = 1, as the
-- importers write every click from this version on); the clicks stored
-- before, whose rows read 0 (the type's own default: 18.16 fails a read
-- that evaluates a DEFAULT expression beside a constant 0, "Column '0'
-- already exists"), stay in clicks_local alone and the reports count
-- them there. So each click is counted once, in one place or the other,
-- without a backfill racing the importers that keep writing while this is
-- applied.
--
-- migrate_clicks skips an ADD COLUMN IF NOT EXISTS whose column a node has
-- (18.16 has no IF NOT EXISTS there; a replicated ALTER reaches the other
-- replica of the shard itself).
ALTER TABLE clicks_local ADD COLUMN IF NOT EXISTS in_breakdowns UInt8;

ALTER TABLE clicks ADD COLUMN IF NOT EXISTS in_breakdowns UInt8;

-- Written only by the view below, on the node that stores the clicks, so a
-- link's breakdowns live on its clicks' shard; a retried insert of the
-- same rows is dropped whole here too. `clicks` is summed when parts merge
-- (read with sum(): parts not merged yet hold several rows of a key); a
-- signed count, so a correction could be a row of its own.
CREATE TABLE IF NOT EXISTS click_breakdown_month_local (
    link_id   Int64,
    month     Date,              -- the first day of the click's UTC month
    is_bot    UInt8,
    dimension String,            -- clicks.rollups.DIMENSIONS
    value     String,            -- a click no rule served has no 'rule' row
    clicks    Int64
) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/slingshot/click_breakdown_month_local', '{replica}')
PARTITION BY toYear(month)
ORDER BY (link_id, month, is_bot, dimension, value);

CREATE MATERIALIZED VIEW IF NOT EXISTS click_breakdown_month_mv TO click_breakdown_month_local AS
SELECT link_id, toStartOfMonth(occurred_at) AS month, is_bot, pair.1 AS dimension, pair.2 AS value,
       toInt64(count()) AS clicks
FROM clicks_local
ARRAY JOIN [('referer_host', referer_host), ('browser', browser), ('os', os), ('device', device),
            ('country', country), ('rule', ifNull(rule, ''))] AS pair
WHERE in_breakdowns = 1 AND NOT (pair.1 = 'rule' AND rule IS NULL)
GROUP BY link_id, month, is_bot, dimension, value;

CREATE TABLE IF NOT EXISTS click_breakdown_month AS click_breakdown_month_local
ENGINE = Distributed({cluster}, currentDatabase(), click_breakdown_month_local, link_id);
