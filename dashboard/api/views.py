from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from clicks.selectors import link_stats
from links import domains, selectors, services, slugs
from links.models import Domain, Link

from . import serializers
from . import services as token_services
from .exceptions import Conflict, as_api_error
from .models import ApiToken
from .permissions import SignedInSession, StaffWrites

BULK_STATUS = {services.Outcome.CREATED: 201, services.Outcome.INVALID: 400, services.Outcome.SLUG_TAKEN: 409}


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
@permission_classes([AllowAny])
def not_found(request, *args, **kwargs):
    raise NotFound()


def _new_link_data(link: Link) -> dict:
    link.clicks = link.human_clicks = 0  # a new link id has no clicks yet
    return serializers.LinkSerializer(link).data


@extend_schema_view(
    list=extend_schema(
        summary="List your links",
        description="Paginated; search in slug, title and target.",
        parameters=[serializers.LinkQuerySerializer],
    ),
    retrieve=extend_schema(summary="One link", parameters=[serializers.LinkDomainQuerySerializer]),
    create=extend_schema(
        summary="Create a link",
        request=serializers.LinkCreateSerializer,
        responses={201: serializers.LinkSerializer, 400: None, 409: None},
    ),
    partial_update=extend_schema(
        summary="Change a link",
        request=serializers.LinkUpdateSerializer,
        responses={200: serializers.LinkSerializer},
        parameters=[serializers.LinkDomainQuerySerializer],
    ),
    destroy=extend_schema(summary="Delete a link", parameters=[serializers.LinkDomainQuerySerializer]),
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

    def get_object(self):
        """The link of the slug on the domain that `?domain=` names (the
        default domain without it)."""
        query = serializers.LinkDomainQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        try:
            domain = domains.domain_for_host(query.validated_data.get("domain"))
        except Domain.DoesNotExist:
            raise NotFound("No such domain.") from None
        link = self.get_queryset().filter(domain=domain, slug=self.kwargs["slug"]).first()
        if link is None:
            raise NotFound()
        return link

    def _output(self, link: Link, status_code=status.HTTP_200_OK) -> Response:
        link = self.get_queryset().get(pk=link.pk)
        return Response(self._data(link), status=status_code)

    @staticmethod
    def _data(link: Link) -> dict:
        """The link as the API answers it, its state with its visit count."""
        return serializers.LinkSerializer(link, context={"visits": selectors.link_visits([link])}).data

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        visits = selectors.link_visits(page)  # one round trip for the page's limited links
        return self.get_paginated_response(serializers.LinkSerializer(page, many=True, context={"visits": visits}).data)

    def retrieve(self, request, *args, **kwargs):
        return Response(self._data(self.get_object()))

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
        parameters=[serializers.StatsQuerySerializer, serializers.LinkDomainQuerySerializer],
        responses={200: serializers.StatsSerializer},
        description="A time series by UTC hour or day and breakdowns by referrer host, browser, OS, device "
        "class and country, from the importer's rollups. Bots are left out unless `include_bots=true`. "
        "Defaults: the last 30 days by day, or the last 48 hours by hour.",
        examples=[
            OpenApiExample(
                "Two days",
                response_only=True,
                value={
                    "slug": "spring",
                    "interval": "day",
                    "include_bots": False,
                    "from": "2026-11-20T00:00:00Z",
                    "to": "2026-11-22T00:00:00Z",
                    "clicks": 42,
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
                },
            )
        ],
    )
    @action(detail=True, methods=["get"])
    def stats(self, request, slug=None):  # ?domain= as for the link
        link = self.get_object()
        query = serializers.StatsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        span = query.validated_data
        stats = link_stats(
            link_ids=[link.pk], start=span.start, end=span.end, interval=span.interval, include_bots=span.include_bots
        )
        body = {
            "slug": link.slug,
            "interval": span.interval,
            "include_bots": span.include_bots,
            "from": span.start,
            "to": span.end,
            "clicks": stats.clicks,
            "series": [vars(point) for point in stats.series],
            "breakdowns": {
                dimension: [{"value": value, "clicks": clicks} for value, clicks in items]
                for dimension, items in stats.breakdowns.items()
            },
        }
        return Response(serializers.StatsSerializer(body).data)

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


@extend_schema_view(
    list=extend_schema(summary="The domains", description="Every signed-in person may read them, to choose one."),
    retrieve=extend_schema(summary="One domain"),
    create=extend_schema(
        summary="Add a domain (staff)",
        responses={201: serializers.DomainSerializer},
        examples=[OpenApiExample("A short domain", request_only=True, value={"host": "go.example.com"})],
    ),
    partial_update=extend_schema(
        summary="Change a domain's redirects (staff)",
        request=serializers.DomainUpdateSerializer,
        responses={200: serializers.DomainSerializer},
    ),
    destroy=extend_schema(
        summary="Remove a domain (staff)",
        description="Refused with 409 while links use it, and for the default domain.",
        responses={204: None, 409: None},
    ),
)
class DomainViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.DomainSerializer
    permission_classes = [IsAuthenticated, StaffWrites]
    pagination_class = None  # a handful, listed whole
    queryset = Domain.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    lookup_field = "host"
    lookup_value_regex = r"[^/]{1,253}"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return domains.domain_list()

    def get_object(self):
        try:
            domain = domains.domain_for_host(self.kwargs["host"])
        except Domain.DoesNotExist:
            raise NotFound() from None
        return self.get_queryset().get(pk=domain.pk)

    def create(self, request, *args, **kwargs):
        serializer = serializers.DomainSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            domain = domains.domain_create(**serializer.validated_data)
        except DjangoValidationError as exc:
            detail = exc.message_dict
            if any(error.code == "unique" for error in exc.error_dict.get("host", [])):
                raise Conflict(detail) from None
            raise as_api_error(exc) from None
        return Response(serializers.DomainSerializer(self.get_queryset().get(pk=domain.pk)).data, status=201)

    def partial_update(self, request, *args, **kwargs):
        domain = self.get_object()
        serializer = serializers.DomainUpdateSerializer(domain, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            domains.domain_update(domain=domain, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(serializers.DomainSerializer(self.get_queryset().get(pk=domain.pk)).data)

    def destroy(self, request, *args, **kwargs):
        try:
            domains.domain_delete(domain=self.get_object())
        except domains.DomainInUse as exc:
            raise Conflict({"detail": str(exc)}) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClickCursorPagination(CursorPagination):
    ordering = "-occurred_at"
    page_size = 100


class ClickViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.ClickSerializer
    pagination_class = ClickCursorPagination

    @extend_schema(
        summary="Raw clicks",
        description="Newest first, cursor-paginated. Filter by `ip` to see every date and user agent seen "
        "from an address (matched the way addresses are stored: anonymised by default).",
        parameters=[serializers.ClickQuerySerializer],
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

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
