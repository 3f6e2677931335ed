"""/api/v1/links: a team's links, made, read, changed and deleted through
links.services, with the options links/fields.py declares."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from clicks import selectors as clicks_selectors
from health import selectors as health_selectors
from links import domains, selectors, services, slugs
from links.fields import LinkFields
from links.limits import admit_creation
from links.models import Domain, Link
from slingshot.db import reports_db

from .bulk import LinkBulkMixin
from .common import readable_team, team_from_body
from .exceptions import as_api_error
from .link_preview_images import LinkPreviewImageMixin
from .link_serializers import (
    LinkCreateSerializer,
    LinkDomainQuerySerializer,
    LinkQuerySerializer,
    LinkSerializer,
    LinkUpdateSerializer,
    new_link_data,
)
from .stats import LinkStatsMixin


@extend_schema_view(
    list=extend_schema(
        summary="List your links",
        description="The links of your teams (a token's: of its team), paginated; search in slug, title and target.",
        parameters=[LinkQuerySerializer],
    ),
    retrieve=extend_schema(summary="One link", parameters=[LinkDomainQuerySerializer]),
    create=extend_schema(
        summary="Create a link",
        request=LinkCreateSerializer,
        responses={201: LinkSerializer, 400: None, 409: None},
    ),
    partial_update=extend_schema(
        summary="Change a link",
        request=LinkUpdateSerializer,
        responses={200: LinkSerializer},
        parameters=[LinkDomainQuerySerializer],
    ),
    destroy=extend_schema(summary="Delete a link", parameters=[LinkDomainQuerySerializer]),
)
class LinkViewSet(
    LinkStatsMixin,
    LinkPreviewImageMixin,
    LinkBulkMixin,
    viewsets.ModelViewSet,
):
    serializer_class = LinkSerializer
    queryset = Link.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    lookup_field = "slug"
    lookup_value_regex = slugs.PATTERN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        user = self.request.user
        if self.action == "list":
            query = LinkQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            arguments = dict(query.validated_data)
            arguments["team"] = readable_team(self.request, arguments.get("team"))
            broken = arguments.pop("broken", None)
            links = clicks_selectors.link_search(user=user, **arguments).using(reports_db(user))
            if broken is not None:
                links = health_selectors.broken_only(links, broken)
            return health_selectors.with_health(links)
        links = health_selectors.with_health(selectors.with_role(selectors.links_visible_to(user), user))
        if self.action in ("retrieve", "stats"):
            query = LinkDomainQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if "team" in query.validated_data:
                links = links.filter(team_id=query.validated_data["team"])
        return clicks_selectors.with_click_totals(links)

    def get_object(self):
        """The link of the slug on the domain that `?domain=` names (the
        default domain without it)."""
        query = LinkDomainQuerySerializer(data=self.request.query_params)
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
        return LinkSerializer(link, context={"visits": selectors.link_visits([link])}).data

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        visits = selectors.link_visits(page)  # one round trip for the page's limited links
        return self.get_paginated_response(LinkSerializer(page, many=True, context={"visits": visits}).data)

    def retrieve(self, request, *args, **kwargs):
        return Response(self._data(self.get_object()))

    def create(self, request, *args, **kwargs):
        serializer = LinkCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = team_from_body(request, serializer.validated_data)
        team = values.pop("team", None)
        admit_creation(owner=request.user, team=team, token=request.auth)
        try:
            link = services.link_create(owner=request.user, fields=LinkFields(**values), team=team)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(new_link_data(link), status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        link = self.get_object()
        serializer = LinkUpdateSerializer(link, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            services.link_update(link=link, actor=request.user, **team_from_body(request, serializer.validated_data))
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return self._output(link)

    def perform_destroy(self, instance):
        services.link_delete(link=instance, actor=self.request.user)
