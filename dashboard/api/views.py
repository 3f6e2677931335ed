from contextlib import suppress
from datetime import datetime, timedelta, timezone

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from clicks import export
from clicks.accounting import accounts
from clicks.selectors import ReportTooLarge, range_stats, zone_name
from clicks.selectors import orphan_visits as orphan_visits_report
from links import domains, selectors, services, slugs
from links.models import Domain, Link
from links.redis import RedisUnavailable, quick_call
from slingshot.db import reports_db
from teams import access
from teams import selectors as team_selectors
from teams import services as team_services
from teams.models import AuditEntry, Membership, Role, Team

from . import serializers
from . import services as token_services
from .exceptions import Conflict, Unavailable, as_api_error, encodable
from .models import ApiToken
from .permissions import SeesOperations, SignedInSession, StaffWrites

BULK_STATUS = {
    services.Outcome.CREATED: 201,
    services.Outcome.INVALID: 400,
    services.Outcome.SLUG_TAKEN: 409,
    services.Outcome.FORBIDDEN: 403,
}
NO_SUCH_TEAM = "No team with this id among yours."


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
@permission_classes([AllowAny])
def not_found(request, *args, **kwargs):
    raise NotFound()


def readable_team(request, team_id: int | None) -> int | None:
    """A team id from a query parameter: a team the request may read
    (teams/access.py), or a 404 as for a missing one."""
    if team_id is not None and access.role_in(request.user, team_id) is None:
        raise NotFound(NO_SUCH_TEAM)
    return team_id


def team_from_body(request, data: dict) -> dict:
    """The `team` of a link's body as the services take it: a Team the
    request may read, or a 400 on the field. Whether the role allows the
    change there is the service's to check (a 403)."""
    if "team_id" not in data:
        return data
    data = dict(data)
    team = access.teams_of(request.user).filter(pk=data.pop("team_id")).first()
    if team is None:
        raise ValidationError({"team": [NO_SUCH_TEAM]})
    return {**data, "team": team}


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
        description="The links of your teams (a token's: of its team), paginated; search in slug, title and target.",
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
        user = self.request.user
        if self.action == "list":
            query = serializers.LinkQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            arguments = dict(query.validated_data)
            arguments["team"] = readable_team(self.request, arguments.get("team"))
            return selectors.link_search(user=user, **arguments).using(reports_db(user))
        links = selectors.with_role(selectors.links_visible_to(user), user)
        if self.action in ("retrieve", "stats"):
            query = serializers.LinkDomainQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if "team" in query.validated_data:
                links = links.filter(team_id=query.validated_data["team"])
        return selectors.with_click_totals(links)

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
            link = services.link_create(owner=request.user, **team_from_body(request, serializer.validated_data))
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(_new_link_data(link), status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        link = self.get_object()
        serializer = serializers.LinkUpdateSerializer(link, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            services.link_update(link=link, actor=request.user, **team_from_body(request, serializer.validated_data))
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return self._output(link)

    def perform_destroy(self, instance):
        services.link_delete(link=instance, actor=self.request.user)

    @extend_schema(
        summary="Click statistics of a link",
        parameters=[serializers.StatsQuerySerializer, serializers.LinkDomainQuerySerializer],
        responses={200: serializers.StatsSerializer},
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
        query = serializers.StatsQuerySerializer(data=request.query_params)
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
        "Each result says 201, 400 (with a message per field), 403 (your role in its team does not let you "
        "create links) or 409 (slug taken).",
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
            try:
                item.is_valid(raise_exception=True)
                items.append(team_from_body(request, item.validated_data))
                indexes.append(index)
            except ValidationError as exc:
                results[index].update(status=400, errors=encodable(exc.detail))
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
        clicks = self.get_queryset().using(reports_db()).order_by("occurred_at").iterator(chunk_size=export.CHUNK)
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
            host=params.get("domain"),
            ip=params.get("ip"),
            start=params.get("from"),
            end=params.get("to"),
        )


@extend_schema_view(
    list=extend_schema(
        summary="Your API tokens",
        description="Yours, and every token of the teams you administer.",
        parameters=[serializers.TeamQuerySerializer],
    ),
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
        tokens = token_services.tokens_managed_by(self.request.user).filter(revoked_at__isnull=True)
        if self.action == "list":
            query = serializers.TeamQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if "team" in query.validated_data:
                tokens = tokens.filter(team_id=readable_team(self.request, query.validated_data["team"]))
        return tokens.select_related("user").order_by("-created_at", "-id")

    @extend_schema(
        summary="Create a token",
        responses={201: serializers.TokenCreatedSerializer},
        description="The token is in this response only; it cannot be shown again. It reaches one team "
        "(`team`, one of yours; by default your personal team), with no more than your role there: a "
        "viewer's token is read-only.",
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
        token, raw = token_services.token_create(
            user=request.user, **team_from_body(request, serializer.validated_data)
        )
        token.token = raw
        return Response(serializers.TokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a token",
        description="Yours, or, as an admin of its team, anyone's. The token stops working at once, and is gone "
        "from the API; the dashboard's tokens page lists it as revoked.",
    )
    def destroy(self, request, *args, **kwargs):
        token_services.token_revoke(token=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionToCreate(SignedInSession):
    message = "Teams are created from a signed-in session, not with a token (a token reaches its own team only)."


@extend_schema_view(
    list=extend_schema(
        summary="Your teams", description="The teams you are a member of (a token's: its team), with your role."
    ),
    retrieve=extend_schema(summary="One team"),
    create=extend_schema(summary="Create a team", description="You become its admin. From a signed-in session."),
    partial_update=extend_schema(
        summary="Rename a team",
        description="An admin's to do, a personal team's included. `name` as when creating a team; the rename "
        "is in the audit log.",
    ),
    destroy=extend_schema(
        summary="Delete a team",
        description="An admin's to do. Its memberships, API tokens (refused at once) and CSV imports go with "
        "it, and so does its audit log. A personal team, and a team that still has links, are not deleted (409): "
        "move or delete its links first.",
    ),
)
class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.TeamSerializer
    queryset = Team.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    pagination_class = None  # a person's teams are few

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), SessionToCreate()]
        return super().get_permissions()

    def get_queryset(self):
        user = self.request.user
        if self.action == "list":
            return team_selectors.teams_belonging_to(user)
        return team_selectors.teams_for(user)

    def create(self, request, *args, **kwargs):
        serializer = serializers.TeamSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        team = team_services.team_create(actor=request.user, name=serializer.validated_data["name"])
        return Response(
            serializers.TeamSerializer(team_selectors.team_for(request.user, team.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def partial_update(self, request, *args, **kwargs):
        team = self.get_object()
        body = serializers.TeamSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        # Without a name nothing changes, but the role is checked all the same.
        team_services.team_rename(actor=request.user, team=team, name=body.validated_data.get("name", team.name))
        return Response(serializers.TeamSerializer(team_selectors.team_for(request.user, team.pk)).data)

    def destroy(self, request, *args, **kwargs):
        team_services.team_delete(actor=request.user, team=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


USERNAME_PATTERN = r"[\w.@+-]{1,150}"


@extend_schema_view(
    list=extend_schema(summary="The members of a team", description="For any member of the team."),
    retrieve=extend_schema(summary="One member of a team"),
    create=extend_schema(
        summary="Add a member",
        request=serializers.MemberCreateSerializer,
        responses={201: serializers.MemberSerializer},
        description="An admin's to do. `username` names an active person.",
    ),
    partial_update=extend_schema(
        summary="Change a member's role",
        request=serializers.MemberUpdateSerializer,
        responses={200: serializers.MemberSerializer},
        description="An admin's to do. A team keeps at least one admin, and a personal team its person.",
    ),
    destroy=extend_schema(
        summary="Remove a member",
        description="An admin's to do, or the member's own (leaving). Their tokens for the team are revoked.",
    ),
)
class MemberViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.MemberSerializer
    queryset = Membership.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    lookup_field = "username"
    lookup_value_regex = USERNAME_PATTERN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def team(self) -> Team:
        try:
            return team_selectors.team_for(self.request.user, self.kwargs["team_id"])
        except Team.DoesNotExist:
            raise NotFound(NO_SUCH_TEAM) from None

    def get_queryset(self):
        return team_selectors.team_members(self.team())

    def get_object(self):
        try:
            return team_selectors.member_of(self.team(), self.kwargs["username"])
        except Membership.DoesNotExist:
            raise NotFound("No such member of this team.") from None

    def create(self, request, *args, **kwargs):
        body = serializers.MemberCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = team_services.member_add(actor=request.user, team=self.team(), **body.validated_data)
        return Response(serializers.MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        membership = self.get_object()
        body = serializers.MemberUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = team_services.member_change(actor=request.user, membership=membership, **body.validated_data)
        return Response(serializers.MemberSerializer(membership).data)

    def perform_destroy(self, instance):
        team_services.member_remove(actor=self.request.user, membership=instance)


class AuditCursorPagination(CursorPagination):
    ordering = "-id"
    page_size = 100


@extend_schema_view(
    list=extend_schema(
        summary="The audit log",
        description="Who created, changed, disabled or deleted which link, and who changed a membership or a "
        "token, when; newest first, cursor-paginated. The entries of the teams you administer (a token's: of "
        "its team, for an admin's write token); `team` asks for one of them: a viewer's or an editor's is a 403.",
        parameters=[serializers.AuditQuerySerializer],
    )
)
class AuditViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.AuditEntrySerializer
    pagination_class = AuditCursorPagination
    queryset = AuditEntry.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows

    def get_queryset(self):
        query = serializers.AuditQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        if "team" in params:
            access.require(
                self.request.user, readable_team(self.request, params["team"]), Role.ADMIN, to="read the audit log"
            )
            teams = [params["team"]]
        else:
            teams = access.team_ids(self.request.user, Role.ADMIN)
        return team_selectors.audit_entries(team_ids=teams, action=params.get("action"), slug=params.get("link"))


@extend_schema(
    summary="Orphan visits",
    description="Visits to paths that are no link (a slug nobody created or one deleted, or a link disabled, "
    "scheduled, expired or past its limit, or a view of a link's password page) over the last `days` days, counted by domain and path and by referrer host, bots "
    "counted apart; `domain` reads one domain alone, `kind` one kind. For staff and superusers.",
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
    domain = query.validated_data.get("domain")
    try:
        found = orphan_visits_report(
            start=start, end=end, include_bots=include_bots, domain=domain, kind=query.validated_data.get("kind")
        )
    except ReportTooLarge as exc:
        raise as_api_error(exc) from None
    body = {
        "visits": found.visits,
        "bots": found.bots,
        "by_path": [
            {"domain": host, "path": path, "kind": kind, "visits": n, "bots": bots}
            for host, path, kind, n, bots in found.by_path
        ],
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
    "(docs/operations.md); none for an hour no edge counted in. For staff and superusers.",
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
                "counted": hour.counted,
                "partly_counted": hour.partly_counted,
                "lasting": hour.lasting,
            }
            for hour in hours
        ],
        "lasting": sum(1 for hour in hours if hour.lasting),
    }
    return Response(body)
