"""/api/v1/clicks: raw clicks, a page at a time or every one as a file (clicks/export.py)."""

from datetime import datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer

from clicks import export, visits
from clicks import selectors as clicks_selectors
from clicks.models import Click
from links.slugs import PATTERN as SLUG_PATTERN

from .common import HOST_PATTERN, TimeRangeSerializer


class ClickSerializer(serializers.ModelSerializer):
    user_agent = serializers.CharField(source="agent.user_agent", read_only=True)

    class Meta:
        model = Click
        fields = [
            "click_id",
            "occurred_at",
            "slug",
            "ip",
            "user_agent",
            "referer",
            "referer_host",
            "browser",
            "os",
            "device",
            "country",
            "is_bot",
        ]


@extend_schema_field({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})
class AddressField(serializers.IPAddressField):
    pass


class ClickQuerySerializer(TimeRangeSerializer):
    link = serializers.RegexField(rf"^{SLUG_PATTERN}$", required=False, help_text="Slug of one of your links.")
    domain = serializers.RegexField(
        HOST_PATTERN,
        required=False,
        max_length=253,
        help_text="The domain of `link` (a host of /api/v1/domains); the default domain when left out.",
    )
    ip = AddressField(
        required=False,
        help_text="An IPv4 or IPv6 address: clicks from it, or from its network where addresses are stored anonymised.",
    )
    format = serializers.ChoiceField(
        choices=["json", "csv", "jsonl"],
        required=False,
        help_text="json (the default): a page of clicks; csv or jsonl: every click of the filter, as a file.",
    )


class ClickCursorPagination(CursorPagination):
    ordering = clicks_selectors.PAGE_ORDER
    page_size = 100

    def decode_cursor(self, request):
        """DRF's cursor, whose position must be a moment with its offset
        (what encode_cursor wrote): any other is an invalid cursor's 404, as
        an undecodable one is, not an error of the query it would reach."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            try:
                moment = datetime.fromisoformat(cursor.position)
            except ValueError:
                moment = None
            if moment is None or moment.utcoffset() is None:
                raise NotFound(self.invalid_cursor_message)
        return cursor


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
    serializer_class = ClickSerializer
    pagination_class = ClickCursorPagination
    renderer_classes = [JSONRenderer, CsvRenderer, JsonLinesRenderer]

    @extend_schema(
        summary="Raw clicks",
        description="Newest first (clicks of the same moment by click id), cursor-paginated. Filter by `ip` to "
        "see every date and user agent seen from an address (matched the way addresses are stored: anonymised "
        "by default). With `format=csv` or `format=jsonl`, every click of the filter as a file, oldest first "
        "and unpaginated, streamed (CSV cells that would start a formula are behind a quote).",
        parameters=[ClickQuerySerializer],
        responses={
            (200, "application/json"): ClickSerializer(many=True),
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/jsonl"): OpenApiTypes.STR,
        },
    )
    def list(self, request, *args, **kwargs):
        kind = request.accepted_renderer.format
        if kind not in export.FORMATS:
            return super().list(request, *args, **kwargs)
        return export.export_response(self.click_filter(), kind, name="clicks")

    def handle_exception(self, exc):
        # Errors are JSON whatever the format asked for.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    def get_queryset(self):
        return visits.selected_clicks(self.click_filter())

    def click_filter(self) -> clicks_selectors.ClickFilter:
        query = ClickQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        return clicks_selectors.clicks_filter(
            self.request.user,
            slug=params.get("link"),
            host=params.get("domain"),
            ip=params.get("ip"),
            start=params.get("from"),
            end=params.get("to"),
        )
