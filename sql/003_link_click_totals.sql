-- All-time click totals per link, kept by the importer in the same
-- transaction as the rollups, so the links list can show and sort by clicks
-- without adding up a link's daily rollups (docs/rollups.md).

CREATE TABLE link_click_totals (
    link_id      bigint PRIMARY KEY,
    clicks       bigint NOT NULL,
    human_clicks bigint NOT NULL,
    CONSTRAINT link_click_totals_counts CHECK (0 <= human_clicks AND human_clicks <= clicks)
);

CREATE INDEX link_click_totals_clicks ON link_click_totals (clicks);

INSERT INTO link_click_totals (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks) FROM click_rollup_day GROUP BY link_id;
