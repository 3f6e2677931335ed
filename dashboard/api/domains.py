"""/api/v1/domains: the hosts the edge serves links on, added and changed by staff."""

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from links import domains
from links.models import Domain
from links.validation import normalise_target

from .exceptions import Conflict, as_api_error
from .fields import StrictCharField, StrictJSONMixin
from .permissions import StaffWrites


@extend_schema_field(
    {
        "type": "string",
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
        "maxLength": settings.LINK_URL_MAX_LENGTH,
    }
)
class OptionalTargetURLField(StrictCharField):
    """A redirect of a domain, or empty for none; normalised as targets are."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        return normalise_target(value) if value else value


class DomainSerializer(StrictJSONMixin, serializers.ModelSerializer):
    host = StrictCharField(
        max_length=253,
        help_text="A host name such as go.example.com (IDN allowed, kept as punycode), without scheme or port.",
    )
    root_url = OptionalTargetURLField(
        required=False,
        allow_blank=True,
        help_text="Where `/` on this domain redirects; empty: a 404 (the default domain: EDGE_ROOT_URL).",
    )
    not_found_url = OptionalTargetURLField(
        required=False,
        allow_blank=True,
        help_text="Where unknown and disabled slugs on this domain redirect; empty: a 404 "
        "(the default domain: EDGE_NOT_FOUND_URL).",
    )
    expired_url = OptionalTargetURLField(
        required=False,
        allow_blank=True,
        help_text="Where links of this domain that expired or had all their visits redirect, unless a link "
        "has its own expired_url; empty: a 410 page.",
    )
    is_default = serializers.BooleanField(read_only=True, help_text="The host of EDGE_BASE_URL.")
    link_count = serializers.IntegerField(read_only=True, default=0, help_text="Links on this domain.")

    class Meta:
        model = Domain
        fields = [
            "host",
            "root_url",
            "not_found_url",
            "expired_url",
            "https_redirect",
            "apple_app_site_association",
            "assetlinks",
            "is_default",
            "link_count",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        extra_kwargs = {
            "https_redirect": {"help_text": "Plain HTTP requests are redirected to HTTPS (308)."},
            "apple_app_site_association": {
                "help_text": "Served at /.well-known/apple-app-site-association (Apple's documented shape); "
                "null: none (a 404)."
            },
            "assetlinks": {
                "help_text": "Served at /.well-known/assetlinks.json (Digital Asset Links statements); null: none."
            },
        }


class DomainUpdateSerializer(DomainSerializer):
    class Meta(DomainSerializer.Meta):
        read_only_fields = ["host", "created_at"]


@extend_schema_view(
    list=extend_schema(summary="The domains", description="Every signed-in person may read them, to choose one."),
    retrieve=extend_schema(summary="One domain"),
    create=extend_schema(
        summary="Add a domain (staff)",
        responses={201: DomainSerializer},
        examples=[OpenApiExample("A short domain", request_only=True, value={"host": "go.example.com"})],
    ),
    partial_update=extend_schema(
        summary="Change a domain's redirects (staff)",
        request=DomainUpdateSerializer,
        responses={200: DomainSerializer},
    ),
    destroy=extend_schema(
        summary="Remove a domain (staff)",
        description="Refused with 409 while links use it, and for the default domain.",
        responses={204: None, 409: None},
    ),
)
class DomainViewSet(viewsets.ModelViewSet):
    serializer_class = DomainSerializer
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
        serializer = DomainSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            domain = domains.domain_create(**serializer.validated_data)
        except DjangoValidationError as exc:
            detail = exc.message_dict
            if any(error.code == "unique" for error in exc.error_dict.get("host", [])):
                raise Conflict(detail) from None
            raise as_api_error(exc) from None
        return Response(DomainSerializer(self.get_queryset().get(pk=domain.pk)).data, status=201)

    def partial_update(self, request, *args, **kwargs):
        domain = self.get_object()
        serializer = DomainUpdateSerializer(domain, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            domains.domain_update(domain=domain, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(DomainSerializer(self.get_queryset().get(pk=domain.pk)).data)

    def destroy(self, request, *args, **kwargs):
        try:
            domains.domain_delete(domain=self.get_object())
        except domains.DomainInUse as exc:
            raise Conflict({"detail": str(exc)}) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
