from contextlib import suppress
from datetime import datetime, timedelta, timezone

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from clicks import export
from clicks.accounting import accounts
from clicks.selectors import ReportTooLarge, link_stats, zone_name
from clicks.selectors import orphan_visits as orphan_visits_report
from links import selectors, services, slugs
from links.models import Link
from links.redis import RedisUnavailable, quick_call

from . import serializers
from . import services as token_services
from .exceptions import Unavailable, as_api_error
from .models import ApiToken
from .permissions import SeesOperations, SignedInSession

BULK_STATUS = {services.Outcome.CREATED: 201, services.Outcome.INVALID: 400, services.Outcome.SLUG_TAKEN: 409}


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
@permission_classes([AllowAny])
def not_found(request, *args, **kwargs):
    raise NotFound()


def _iso(moment, zone=None) -> str:
    """A time as DRF's DateTimeField writes it (UTC as Z), in `zone` if it can be."""
    with suppress(OverflowError):  # at the ends of the calendar, as it is
        moment = moment.astimezone(zone) if zone else moment
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _new_link_data(link: Link) -> dict:
    link.clicks = link.human_clicks = 0  # a new link id has no clicks yet
    return serializers.LinkSerializer(link).data


@extend_schema_view(
    list=extend_schema(
        summary="List your links",
        description="Paginated; search in slug, title and target.",
        parameters=[serializers.LinkQuerySerializer],
    ),
    retrieve=extend_schema(summary="One link"),
    create=extend_schema(
        summary="Create a link",
        request=serializers.LinkCreateSerializer,
        responses={201: serializers.LinkSerializer, 400: None, 409: None},
    ),
    partial_update=extend_schema(
        summary="Change a link", request=serializers.LinkUpdateSerializer, responses={200: serializers.LinkSerializer}
    ),
    destroy=extend_schema(summary="Delete a link"),
)
class LinkViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.LinkSerializer
    queryset = Link.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    lookup_field = "slug"
    lookup_value_regex = slugs.PATTERN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        if self.action == "list":
            query = serializers.LinkQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            return selectors.link_search(user=self.request.user, **query.validated_data)
        return selectors.with_click_totals(selectors.links_visible_to(self.request.user))

    def _output(self, link: Link, status_code=status.HTTP_200_OK) -> Response:
        link = self.get_queryset().get(pk=link.pk)
        return Response(serializers.LinkSerializer(link).data, status=status_code)

    def create(self, request, *args, **kwargs):
        serializer = serializers.LinkCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            link = services.link_create(owner=request.user, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(_new_link_data(link), status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        link = self.get_object()
        serializer = serializers.LinkUpdateSerializer(link, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            services.link_update(link=link, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return self._output(link)

    def perform_destroy(self, instance):
        services.link_delete(link=instance)

    @extend_schema(
        summary="Click statistics of a link",
        parameters=[serializers.StatsQuerySerializer],
        responses={200: serializers.StatsSerializer},
        description="A time series by hour, day, week or month and breakdowns by referrer host, browser, OS, "
        "device class and country, with the totals of the range and of the period as long just before it, "
        "from the importer's rollups (docs/rollups.md). Bots are left out unless `include_bots=true`. "
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
                    },
                    "breakdowns_sample": None,
                },
            )
        ],
    )
    @action(detail=True, methods=["get"])
    def stats(self, request, slug=None):
        link = self.get_object()
        query = serializers.StatsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        span = query.validated_data
        stats = link_stats(
            link_ids=[link.pk],
            start=span.start,
            end=span.end,
            interval=span.interval,
            include_bots=span.include_bots,
            zone=span.zone,
            filters=span.filters,
            compare=True,
        )
        # Written out here rather than by StatsSerializer, which documents it:
        # DRF's fields cost more than the query for a series of 2,000 points.
        body = {
            "slug": link.slug,
            "interval": span.interval,
            "include_bots": span.include_bots,
            "tz": zone_name(span.zone),
            "filters": dict(span.filters),
            "from": _iso(span.start, span.zone),
            "to": _iso(span.end, span.zone),
            "clicks": stats.clicks,
            "totals": vars(stats.totals),
            "previous": vars(stats.previous),
            "series": [
                {"bucket": _iso(point.bucket), "clicks": point.clicks, "visitors": point.visitors}
                for point in stats.series
            ],
            "breakdowns": {
                dimension: [{"value": value, "clicks": clicks} for value, clicks in items]
                for dimension, items in stats.breakdowns.items()
            },
            "breakdowns_sample": stats.sample,
        }
        return Response(body)

    @extend_schema(
        summary="Create up to 1,000 links",
        request=serializers.BulkCreateSerializer,
        responses={200: serializers.BulkResultSerializer},
        description="Each link is created on its own: one invalid item does not stop the others. "
        "Each result says 201, 400 (with a message per field) or 409 (slug taken).",
        examples=[
            OpenApiExample(
                "Two links",
                value={"links": [{"url": "https://example.com/a"}, {"url": "https://example.com/b", "slug": "b"}]},
                request_only=True,
            )
        ],
    )
    @action(detail=False, methods=["post"])
    def bulk(self, request):
        body = serializers.BulkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        links = body.validated_data["links"]
        results: list[dict] = [{"index": index} for index in range(len(links))]
        items, indexes = [], []
        for index, data in enumerate(links):
            item = serializers.LinkCreateSerializer(data=data)
            if item.is_valid():
                items.append(item.validated_data)
                indexes.append(index)
            else:
                results[index].update(status=400, errors=item.errors)
        for index, result in zip(indexes, services.link_bulk_create(owner=request.user, items=items), strict=True):
            if result.link:
                results[index].update(status=201, link=_new_link_data(result.link))
            else:
                results[index].update(status=BULK_STATUS[result.outcome], errors=result.errors)
        created = sum(result["status"] == 201 for result in results)
        return Response({"created": created, "failed": len(results) - created, "results": results})


class ClickCursorPagination(CursorPagination):
    ordering = "-occurred_at"
    page_size = 100


class ClickExportRenderer(BaseRenderer):
    """Names an export format for DRF's `format` parameter; ClickViewSet.list
    streams the file itself (clicks/export.py), so this renders nothing else."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        raise NotImplementedError("exports are streamed by ClickViewSet.list")


class CsvRenderer(ClickExportRenderer):
    media_type, format = "text/csv", "csv"


class JsonLinesRenderer(ClickExportRenderer):
    media_type, format = "application/jsonl", "jsonl"


class ClickViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.ClickSerializer
    pagination_class = ClickCursorPagination
    renderer_classes = [JSONRenderer, CsvRenderer, JsonLinesRenderer]

    @extend_schema(
        summary="Raw clicks",
        description="Newest first, cursor-paginated. Filter by `ip` to see every date and user agent seen "
        "from an address (matched the way addresses are stored: anonymised by default). With `format=csv` "
        "or `format=jsonl`, every click of the filter as a file, oldest first and unpaginated, streamed "
        "(CSV cells that would start a formula are behind a quote).",
        parameters=[serializers.ClickQuerySerializer],
        responses={
            (200, "application/json"): serializers.ClickSerializer(many=True),
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/jsonl"): OpenApiTypes.STR,
        },
    )
    def list(self, request, *args, **kwargs):
        kind = request.accepted_renderer.format
        if kind not in export.FORMATS:
            return super().list(request, *args, **kwargs)
        clicks = self.get_queryset().order_by("occurred_at").iterator(chunk_size=export.CHUNK)
        response = StreamingHttpResponse(export.export_lines(clicks, kind), content_type=export.FORMATS[kind])
        response["Content-Disposition"] = f'attachment; filename="clicks.{kind}"'
        return response

    def handle_exception(self, exc):
        # Errors are JSON whatever the format asked for.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    def get_queryset(self):
        query = serializers.ClickQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        return selectors.clicks_visible_to(
            self.request.user,
            slug=params.get("link"),
            ip=params.get("ip"),
            start=params.get("from"),
            end=params.get("to"),
        )


@extend_schema_view(
    list=extend_schema(summary="Your API tokens"),
    retrieve=extend_schema(summary="One API token"),
)
class TokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.TokenSerializer
    permission_classes = [IsAuthenticated, SignedInSession]
    queryset = ApiToken.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows

    def get_queryset(self):
        """A revoked token is gone from the API; the dashboard's tokens page still lists it."""
        return ApiToken.objects.filter(user=self.request.user, revoked_at__isnull=True)

    @extend_schema(
        summary="Create a token",
        responses={201: serializers.TokenCreatedSerializer},
        description="The token is in this response only; it cannot be shown again.",
        examples=[
            OpenApiExample(
                "A read-only token for a dashboard",
                request_only=True,
                value={"name": "grafana", "scope": "read", "expires_at": "2027-01-01T00:00:00Z"},
            )
        ],
    )
    def create(self, request, *args, **kwargs):
        serializer = serializers.TokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, raw = token_services.token_create(user=request.user, **serializer.validated_data)
        token.token = raw
        return Response(serializers.TokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a token",
        description="The token stops working at once, and is gone from the "
        "API; the dashboard's tokens page lists it as revoked.",
    )
    def destroy(self, request, *args, **kwargs):
        token_services.token_revoke(token=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    summary="Orphan visits",
    description="Visits to paths that are no link (a slug nobody created, or one deleted) over the last "
    "`days` days, counted by path and by referrer host, bots counted apart. For staff and superusers.",
    parameters=[serializers.OrphanQuerySerializer],
    responses={200: serializers.OrphanVisitsSerializer},
)
@api_view(["GET"])
@permission_classes([IsAuthenticated, SeesOperations])
def orphan_visits(request):
    query = serializers.OrphanQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    end = datetime.now(timezone.utc)
    start = end - timedelta(days=query.validated_data["days"])
    include_bots = query.validated_data["include_bots"]
    try:
        found = orphan_visits_report(start=start, end=end, include_bots=include_bots)
    except ReportTooLarge as exc:
        raise as_api_error(exc) from None
    body = {
        "visits": found.visits,
        "bots": found.bots,
        "by_path": [{"path": path, "visits": n, "bots": bots} for path, n, bots in found.by_path],
        "by_referrer": [{"referer_host": host, "visits": n, "bots": bots} for host, n, bots in found.by_referrer],
        "include_bots": include_bots,
        "start": _iso(start),
        "end": _iso(end),
    }
    return Response(body)


@extend_schema(
    summary="Every click accounted for",
    description="Per UTC hour, newest first: the redirects and orphan visits the edges served as clicks, "
    "the clicks and orphan visits stored, and the difference, zero once the importer has caught up "
    "(docs/operations.md). For staff and superusers.",
    parameters=[serializers.AccountingQuerySerializer],
    responses={200: serializers.AccountingSerializer},
)
@api_view(["GET"])
@permission_classes([IsAuthenticated, SeesOperations])
def accounting(request):
    query = serializers.AccountingQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    now = datetime.now(timezone.utc)
    start = now - timedelta(days=query.validated_data["days"])
    try:
        hours = quick_call(lambda client: accounts(client=client, start=start, end=now, now=now), what="accounting")
    except RedisUnavailable as exc:
        raise Unavailable(str(exc)) from None
    body = {
        "hours": [
            {
                "hour": _iso(hour.hour),
                "served_redirects": hour.served_redirects,
                "served_orphans": hour.served_orphans,
                "stored_clicks": hour.stored_clicks,
                "stored_orphans": hour.stored_orphans,
                "difference": hour.difference,
                "settled": hour.settled,
            }
            for hour in hours
        ],
        "lasting": sum(1 for hour in hours if hour.settled and hour.difference),
    }
    return Response(body)
