"""/api/v1/links/{slug}/stats: a link's report (clicks/reports.py)."""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from clicks.calendar import INTERVALS, stats_range, zone_name, zone_named
from clicks.reports import range_stats
from clicks.rollups import DIMENSIONS

from .common import TimeRangeSerializer, TimeZoneField
from .link_serializers import LinkDomainQuerySerializer
from .times import iso

FILTER_HELP = {
    "referer_host": "Only clicks from this referrer host; empty for direct visits.",
    "browser": "Only clicks with this browser family, e.g. Chrome.",
    "os": "Only clicks with this operating system family, e.g. Android.",
    "device": "Only clicks from this device class.",
    "country": "Only clicks from this country (ISO 3166 alpha-2, or unknown).",
    "rule": "Only clicks served by this redirect rule (1 to 20) or split destination (ab1 to ab10).",
}


class StatsQuerySerializer(TimeRangeSerializer):
    """The range of a stats request; its defaults and limits are
    clicks.calendar.stats_range's, and `validated_data` is its StatsRange."""

    interval = serializers.ChoiceField(choices=list(INTERVALS), default="day")
    include_bots = serializers.BooleanField(default=False, help_text="Count clicks flagged as bots too.")
    tz = TimeZoneField(
        required=False,
        default="UTC",
        help_text="Days, weeks and months are this zone's; hours are UTC hours, given in it (docs/rollups.md).",
    )
    referer_host = serializers.CharField(
        required=False, allow_blank=True, max_length=1024, help_text=FILTER_HELP["referer_host"]
    )
    browser = serializers.CharField(required=False, max_length=128, help_text=FILTER_HELP["browser"])
    os = serializers.CharField(required=False, max_length=128, help_text=FILTER_HELP["os"])
    device = serializers.ChoiceField(
        choices=["desktop", "mobile", "tablet", "bot", "unknown"], required=False, help_text=FILTER_HELP["device"]
    )
    country = serializers.CharField(required=False, max_length=16, help_text=FILTER_HELP["country"])
    rule = serializers.RegexField(r"^(?:[1-9][0-9]?|ab(?:[1-9]|10))$", required=False, help_text=FILTER_HELP["rule"])

    def validate(self, attrs):
        # stats_range's ValidationError names the parameters; DRF answers it as a 400.
        return stats_range(
            start=attrs.get("from"),
            end=attrs.get("to"),
            interval=attrs["interval"],
            include_bots=attrs["include_bots"],
            zone=zone_named(attrs["tz"]) if isinstance(attrs["tz"], str) else attrs["tz"],  # the default is a name
            filters={dimension: attrs[dimension] for dimension in DIMENSIONS if dimension in attrs},
        )


class StatsPointSerializer(serializers.Serializer):
    bucket = serializers.DateTimeField(help_text="Start of the hour, day, week or month, in the zone asked for.")
    clicks = serializers.IntegerField()
    visitors = serializers.IntegerField(
        allow_null=True, help_text="Distinct visitors (anonymised address and user agent); null under filters."
    )


class TotalsSerializer(serializers.Serializer):
    clicks = serializers.IntegerField(help_text="Clicks in the range (bots left out unless include_bots).")
    visitors = serializers.IntegerField(
        allow_null=True, help_text="Distinct visitors in the range; null under filters."
    )
    bots = serializers.IntegerField(help_text="Clicks by bots in the range.")


class BreakdownItemSerializer(serializers.Serializer):
    value = serializers.CharField()
    clicks = serializers.IntegerField()


class BreakdownsSerializer(serializers.Serializer):
    referer_host = BreakdownItemSerializer(many=True)
    browser = BreakdownItemSerializer(many=True)
    os = BreakdownItemSerializer(many=True)
    device = BreakdownItemSerializer(many=True)
    country = BreakdownItemSerializer(many=True)
    rule = BreakdownItemSerializer(
        many=True,
        help_text="Clicks per redirect rule that served them: the rule's number (1 to 20) or the split's "
        "destination (ab1 to ab10). The link's other clicks went to its own url.",
    )


class FiltersSerializer(serializers.Serializer):
    referer_host = serializers.CharField(required=False)
    browser = serializers.CharField(required=False)
    os = serializers.CharField(required=False)
    device = serializers.CharField(required=False)
    country = serializers.CharField(required=False)
    rule = serializers.CharField(required=False)


class StatsSerializer(serializers.Serializer):
    """What the stats endpoint answers; it writes the body itself (LinkStatsMixin.stats),
    and this documents it."""

    slug = serializers.CharField()
    interval = serializers.CharField()
    include_bots = serializers.BooleanField()
    tz = serializers.CharField()
    filters = FiltersSerializer()
    clicks = serializers.IntegerField(help_text="Clicks in the range.")
    totals = TotalsSerializer()
    previous = TotalsSerializer(help_text="The totals of the period as long as the range (up to now) just before it.")
    series = StatsPointSerializer(many=True, help_text="Buckets with clicks only, oldest first.")
    breakdowns = BreakdownsSerializer()
    breakdowns_sample = serializers.IntegerField(
        allow_null=True,
        help_text="Under filters, the breakdowns count the latest matching clicks, this many of them; "
        "null when they count every click.",
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


class LinkStatsMixin:
    """The stats action of LinkViewSet (api/links.py): `get_object` is the link's."""

    @extend_schema(
        summary="Click statistics of a link",
        parameters=[StatsQuerySerializer, LinkDomainQuerySerializer],
        responses={200: StatsSerializer},
        description="A time series by hour, day, week or month and breakdowns by referrer host, browser, OS, "
        "device class, country and redirect rule, with the totals of the range and of the period as long just "
        "before it, from the importer's rollups (docs/rollups.md). Bots are left out unless `include_bots=true`. "
        "Days, weeks (from Monday) and months are those of `tz`. Filters (`browser=Chrome`...) keep only "
        "the clicks with those values: one filter is answered from the rollups, several from the raw "
        "clicks (a 400 when that would take too long), and under filters the breakdowns count the latest "
        "matching clicks (`breakdowns_sample`). Defaults: the last 30 days by day, or the last 48 hours by hour.",
        examples=[
            OpenApiExample(
                "Two days",
                response_only=True,
                value={
                    "slug": "spring",
                    "interval": "day",
                    "include_bots": False,
                    "tz": "UTC",
                    "filters": {},
                    "from": "2026-11-20T00:00:00Z",
                    "to": "2026-11-22T00:00:00Z",
                    "clicks": 42,
                    "totals": {"clicks": 42, "visitors": 28, "bots": 5},
                    "previous": {"clicks": 30, "visitors": 20, "bots": 2},
                    "series": [
                        {"bucket": "2026-11-20T00:00:00Z", "clicks": 30, "visitors": 21},
                        {"bucket": "2026-11-21T00:00:00Z", "clicks": 12, "visitors": 9},
                    ],
                    "breakdowns": {
                        "referer_host": [{"value": "news.example.org", "clicks": 25}],
                        "browser": [{"value": "Chrome", "clicks": 30}, {"value": "Safari", "clicks": 12}],
                        "os": [{"value": "Android", "clicks": 22}],
                        "device": [{"value": "mobile", "clicks": 28}],
                        "country": [{"value": "DE", "clicks": 40}, {"value": "unknown", "clicks": 2}],
                        "rule": [{"value": "1", "clicks": 12}],
                    },
                    "breakdowns_sample": None,
                },
            )
        ],
    )
    @action(detail=True, methods=["get"])
    def stats(self, request, slug=None):  # ?domain= as for the link
        link = self.get_object()
        query = StatsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        span = query.validated_data
        stats = range_stats(span, link_ids=[link.pk])
        # Written out here rather than by StatsSerializer, which documents it:
        # DRF's fields cost more than the query for a series of 2,000 points.
        body = {
            "slug": link.slug,
            "interval": span.interval,
            "include_bots": span.include_bots,
            "tz": zone_name(span.zone),
            "filters": dict(span.filters),
            "from": iso(span.start, span.zone),
            "to": iso(span.end, span.zone),
            "clicks": stats.clicks,
            "totals": vars(stats.totals),
            "previous": vars(stats.previous),
            "series": [
                {"bucket": iso(point.bucket), "clicks": point.clicks, "visitors": point.visitors}
                for point in stats.series
            ],
            "breakdowns": {
                dimension: [{"value": value, "clicks": clicks} for value, clicks in items]
                for dimension, items in stats.breakdowns.items()
            },
            "breakdowns_sample": stats.sample,
        }
        return Response(body)
