"""Clicks by the UTM campaign and source of where they were sent: each
click of a link counts under the campaign of the target that served it
(a rule's or a split destination's, by the `rule` breakdown; else the
link's own url), as that target reads now (links.utm.utm_of). App
targets' clicks, which carry no rule, count under the link's own url.
Two queries of the rollups over the range, whatever the number of links
(of the cluster's hourly rollup and raw clicks with CLICK_STORE=clickhouse)."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from django.db.models import QuerySet

from links.models import Link
from links.rules import served_by
from links.utm import utm_of

from .calendar import hour_ceil
from .clickhouse_clicks import using_clickhouse
from .clickhouse_visits import clicks_per_link, clicks_per_rule
from .report_queries import reports_connection
from .report_spans import span_sql, spans


@dataclass(frozen=True)
class CampaignRow:
    campaign: str  # utm_campaign, or "" for targets without one
    source: str  # utm_source, or ""
    clicks: int
    links: int  # the links with clicks under it


def _per_link(ids: list[int], start: datetime, end: datetime, counted: str) -> dict[int, int]:
    parts, params = [], []
    for span in spans(start, end):
        sql, span_params = span_sql("click_rollup", span, ids)
        parts.append(f"SELECT link_id, {counted} AS clicks {sql}")
        params += span_params
    if not parts:
        return {}
    with reports_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT link_id, sum(clicks)::bigint FROM ({' UNION ALL '.join(parts)}) parts "
            "GROUP BY link_id HAVING sum(clicks) > 0",
            params,
        )
        return dict(cursor.fetchall())


def _per_rule(ids: list[int], start: datetime, end: datetime, counted: str) -> dict[int, dict[str, int]]:
    parts, params = [], []
    for span in spans(start, end, months=True):
        sql, span_params = span_sql("click_breakdown", span, ids, " AND dimension = 'rule'")
        parts.append(f"SELECT link_id, value, {counted} AS clicks {sql}")
        params += span_params
    found: dict[int, dict[str, int]] = defaultdict(dict)
    if not parts:
        return found
    with reports_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT link_id, value, sum(clicks)::bigint FROM ({' UNION ALL '.join(parts)}) parts "
            "GROUP BY link_id, value HAVING sum(clicks) > 0",
            params,
        )
        for link_id, value, clicks in cursor.fetchall():
            found[link_id][value] = clicks
    return found


def whole_hours(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """[start, end) rounded out to whole UTC hours: the range the rollups count."""
    return start.astimezone(UTC).replace(minute=0, second=0, microsecond=0), hour_ceil(end)


def campaign_clicks(
    links: QuerySet[Link], *, start: datetime, end: datetime, include_bots: bool = False
) -> list[CampaignRow]:
    """The clicks of `links` in [start, end) (rounded out to whole UTC
    hours) by campaign and source, most clicks first; bots left out unless
    include_bots. Of each link only what says where its clicks went is read."""
    by_id = {link.pk: link for link in links.select_related(None).only("pk", "url", "rules", "split")}
    start, end = whole_hours(start, end)
    counted = "clicks" if include_bots else "human_clicks"
    per_link, per_rule_of = (
        (partial(clicks_per_link, include_bots=include_bots), partial(clicks_per_rule, include_bots=include_bots))
        if using_clickhouse()
        else (partial(_per_link, counted=counted), partial(_per_rule, counted=counted))
    )
    totals = per_link(list(by_id), start, end)
    with_rules = [pk for pk in totals if by_id[pk].rules or by_id[pk].split]
    per_rule = per_rule_of(with_rules, start, end) if with_rules else {}
    clicks: dict[tuple[str, str], int] = defaultdict(int)
    links_of: dict[tuple[str, str], set[int]] = defaultdict(set)

    def count(pk: int, url: str, n: int) -> None:
        if n > 0:
            utm = utm_of(url)
            key = (utm["utm_campaign"], utm["utm_source"])
            clicks[key] += n
            links_of[key].add(pk)

    for pk, total in totals.items():
        link = by_id[pk]
        ruled = per_rule.get(pk, {})
        for served in served_by(rules=link.rules, split=link.split, url=link.url) if ruled else ():
            if served.label:
                count(pk, served.url, ruled.get(served.label, 0))
        count(pk, link.url, total - sum(ruled.values()))
    rows = [
        CampaignRow(campaign, source, n, len(links_of[(campaign, source)])) for (campaign, source), n in clicks.items()
    ]
    return sorted(rows, key=lambda row: (-row.clicks, row.campaign, row.source))
