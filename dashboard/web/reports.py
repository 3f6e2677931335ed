"""How the pages show a report (clicks.reports.link_stats): the date
presets, the bucket a range reads well in, the chart and its table, the
totals against the period before, and breakdown rows with their share,
country names and flags, each a link that filters the report by its value."""

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import cache
from urllib.parse import urlencode

from babel import Locale
from django.http import QueryDict

from clicks.calendar import bucket_start, next_bucket
from clicks.report_queries import Point, Totals
from clicks.reports import LinkStats
from clicks.rollups import DIMENSIONS

PRESETS = {
    "today": "Today",
    "7d": "Last 7 days",
    "30d": "Last 30 days",
    "90d": "Last 90 days",
    "12m": "Last 12 months",
    "all": "All time",
}
DEFAULT_PRESET = "30d"
PRESET_DAYS = {"7d": 7, "30d": 30, "90d": 90}
DIMENSION_TITLES = {
    "referer_host": ("Referrers", "Referrer"),
    "browser": ("Browsers", "Browser"),
    "os": ("Operating systems", "OS"),
    "device": ("Devices", "Device"),
    "country": ("Countries", "Country"),
    "rule": ("Redirect rules", "Rule"),
}
# The longest range each interval reads well in: about 24 to 100 buckets.
AUTO_INTERVALS = [(timedelta(days=2), "hour"), (timedelta(days=92), "day"), (timedelta(days=400), "week")]


def preset_range(
    preset: str, *, now: datetime, zone: tzinfo, since: datetime | None = None
) -> tuple[datetime, datetime]:
    """[start, end) of a preset in `zone`: whole local days up to the end of
    today; `all` from the day of `since` (a link's creation)."""
    today = bucket_start(now, "day", zone)
    tomorrow = next_bucket(today, "day", zone)
    if preset == "today":
        return today, tomorrow
    if preset in PRESET_DAYS:
        first = today.date() - timedelta(days=PRESET_DAYS[preset] - 1)
    elif preset == "12m":
        month = bucket_start(now, "month", zone).date()
        for _ in range(11):
            month = (month - timedelta(days=1)).replace(day=1)
        first = month
    else:
        first = (since or now).astimezone(zone).date()
    return datetime.combine(first, datetime.min.time(), tzinfo=zone), tomorrow


def auto_interval(start: datetime, end: datetime) -> str:
    for longest, interval in AUTO_INTERVALS:
        if end - start <= longest:
            return interval
    return "month"


# --- values as people read them ---------------------------------------------------


@cache
def _territories() -> dict[str, str]:
    return dict(Locale("en").territories)


def flag(code: str) -> str:
    """The flag emoji of an ISO 3166 alpha-2 code: its two regional indicator symbols."""
    if len(code) != 2 or not code.isascii() or not code.isalpha():
        return ""
    return "".join(chr(0x1F1E6 + ord(letter) - ord("A")) for letter in code.upper())


def country_name(code: str) -> str:
    if code == "unknown":
        return "Unknown"
    return _territories().get(code.upper(), code)


def value_label(dimension: str, value: str) -> str:
    if dimension == "referer_host":
        return {"": "Direct (no referrer)", "unknown": "Unknown referrer"}.get(value, value)
    if dimension == "country":
        return country_name(value)
    if dimension == "rule":  # links.rules' labels: a rule's number, or ab and a split destination's
        return f"Split destination {value[2:]}" if value.startswith("ab") else f"Rule {value}"
    if value == "unknown":
        return "Unknown"
    return value.capitalize() if dimension == "device" else value


# --- the parts of a report page ---------------------------------------------------


@dataclass(frozen=True)
class BreakdownRow:
    value: str
    label: str
    flag: str
    clicks: int
    percent: float
    href: str  # the report filtered by this value, or without the filter when it is on
    active: bool


@dataclass(frozen=True)
class Breakdown:
    dimension: str
    title: str
    rows: list[BreakdownRow]


@dataclass(frozen=True)
class ActiveFilter:
    dimension: str
    value: str
    name: str
    label: str
    remove_href: str


def href(query: QueryDict, **changes: str | None) -> str:
    """`query` with some parameters set, or removed (None)."""
    query = query.copy()
    for name, value in changes.items():
        query.pop(name, None)
        if value is not None:
            query[name] = value
    encoded = query.urlencode()
    return "?" + encoded if encoded else "?"


def breakdowns(stats: LinkStats, filters: dict[str, str], query: QueryDict) -> list[Breakdown]:
    """Each dimension's rows, with its share of the clicks counted (the
    sample's, under filters); a row's link adds its value to the filters,
    or takes it away when it is one of them."""
    counted = stats.sample if stats.sample is not None else stats.totals.clicks
    found = []
    for dimension in DIMENSIONS:
        if dimension == "rule" and not stats.breakdowns[dimension] and "rule" not in filters:
            continue  # a link without rules
        rows = []
        for value, clicks in stats.breakdowns[dimension]:
            active = filters.get(dimension) == value
            rows.append(
                BreakdownRow(
                    value=value,
                    label=value_label(dimension, value),
                    flag=flag(value) if dimension == "country" else "",
                    clicks=clicks,
                    percent=100 * clicks / counted if counted else 0.0,
                    href=href(query, **{dimension: None if active else value}),
                    active=active,
                )
            )
        found.append(Breakdown(dimension=dimension, title=DIMENSION_TITLES[dimension][0], rows=rows))
    return found


def active_filters(filters: dict[str, str], query: QueryDict) -> list[ActiveFilter]:
    return [
        ActiveFilter(
            dimension=dimension,
            value=value,
            name=DIMENSION_TITLES[dimension][1],
            label=(flag(value) + " " if dimension == "country" else "") + value_label(dimension, value),
            remove_href=href(query, **{dimension: None}),
        )
        for dimension, value in filters.items()
    ]


_LABELS = {"hour": "%a %d %b %H:%M", "day": "%a %d %b", "week": "Week of %d %b", "month": "%b %Y"}


def bucket_label(bucket: datetime, interval: str, *, with_year: bool = False) -> str:
    label = bucket.strftime(_LABELS[interval])
    return f"{label} {bucket.year}" if with_year and interval != "month" else label


def chart(
    series: list[Point], *, start: datetime, end: datetime, interval: str, zone: tzinfo, now: datetime, label: str
) -> dict:
    """A bar for every bucket of [start, end) up to now, the empty ones too
    (the series holds only buckets with clicks). `data` is what app.js
    draws (`visitors` None under filters); `rows` is the same as a table,
    the chart's alternative for screen readers."""
    by_bucket = {point.bucket: point for point in series}
    with_year = start.astimezone(zone).year != (end - timedelta(seconds=1)).astimezone(zone).year
    filtered = any(point.visitors is None for point in series)
    data = {"labels": [], "clicks": [], "visitors": None if filtered else []}
    bucket = bucket_start(start, interval, zone)
    while bucket < end and (bucket <= now or not data["labels"]):
        point = by_bucket.get(bucket)
        data["labels"].append(bucket_label(bucket, interval, with_year=with_year))
        data["clicks"].append(point.clicks if point else 0)
        if not filtered:
            data["visitors"].append(point.visitors if point else 0)
        bucket = next_bucket(bucket, interval, zone)
    rows = list(zip(data["labels"], data["clicks"], data["visitors"] or [None] * len(data["labels"]), strict=True))
    return {"label": label, "interval": interval, "data": data, "rows": rows, "visitors": not filtered}


@dataclass(frozen=True)
class Change:
    current: int | None
    previous: int | None
    percent: float | None  # None: nothing to compare with

    @property
    def direction(self) -> str:
        if self.percent is None or self.percent == 0:
            return "flat"
        return "up" if self.percent > 0 else "down"


def change(current: int | None, previous: int | None) -> Change:
    if current is None or previous is None or previous == 0:
        return Change(current, previous, None)
    return Change(current, previous, 100 * (current - previous) / previous)


def totals_changes(totals: Totals, previous: Totals | None) -> dict[str, Change]:
    previous = previous or Totals(clicks=None, visitors=None, bots=None)
    return {name: change(getattr(totals, name), getattr(previous, name)) for name in ("clicks", "visitors", "bots")}


def export_url(base: str, *, start: datetime, end: datetime, include_bots: bool, filters: dict, kind: str) -> str:
    """The export of the raw clicks of this report (web/report_views.py link_clicks_export)."""
    params = {"from": start.isoformat(), "to": end.isoformat(), "format": kind}
    if include_bots:
        params["include_bots"] = "true"
    params.update(filters)
    return f"{base}?{urlencode(params)}"
