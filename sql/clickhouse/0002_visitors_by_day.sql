-- Each link's visitors per UTC day and bot or not, as sketches
-- (uniqCombinedState of the visitor hash), beside the hourly rollup of
-- 0001: a report of a year reads a link's 366 days of sketches rather than
-- its 8,760 hours' where whole UTC days will do (its totals; its series by
-- day, week or month in UTC), and the hours only at the range's ends
-- (dashboard/clicks/clickhouse_reports.py). Its clicks stay the hourly
-- rollup's, which costs a report little to read.
--
-- Only sketches, and a union of sketches counts a visitor once however
-- often it is added: the view and the fill below may both add a day's
-- visitors (the clicks stored while this file is applied, or the fill
-- run on both replicas of a shard), and the count is the same.
CREATE TABLE IF NOT EXISTS click_visitors_day_local (
    link_id  Int64,
    day      Date,
    is_bot   UInt8,
    visitors AggregateFunction(uniqCombined, Int64)
) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/slingshot/click_visitors_day_local', '{replica}')
PARTITION BY toYYYYMM(day)
ORDER BY (link_id, day, is_bot);

CREATE MATERIALIZED VIEW IF NOT EXISTS click_visitors_day_mv TO click_visitors_day_local AS
SELECT link_id, toDate(occurred_at) AS day, is_bot, uniqCombinedState(visitor_hash) AS visitors
FROM clicks_local
GROUP BY link_id, day, is_bot;

CREATE TABLE IF NOT EXISTS click_visitors_day AS click_visitors_day_local
ENGINE = Distributed({cluster}, currentDatabase(), click_visitors_day_local, link_id);

-- The days of the clicks stored before this file, from the hourly rollup.
INSERT INTO click_visitors_day_local
SELECT link_id, toDate(bucket) AS day, is_bot, uniqCombinedMergeState(visitors)
FROM click_rollup_hour_local
GROUP BY link_id, day, is_bot;
