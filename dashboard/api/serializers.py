import copy

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from clicks.models import Click
from clicks.selectors import INTERVALS, stats_range
from links.domains import domain_for_host
from links.models import Domain, Link
from links.selectors import LinkState, link_state
from links.slugs import PATTERN as SLUG_PATTERN
from links.slugs import validate_slug
from links.validation import normalise_target, validate_target_url

from .fields import StrictCharField, StrictJSONMixin
from .models import ApiToken

LINK_EXAMPLE = {
    "url": "https://example.com/spring-sale?ref=newsletter",
    "slug": "spring",
    "title": "Spring sale",
    "description": "The newsletter's link to the spring sale.",
    "tags": ["newsletter", "sale"],
    "redirect_status": 302,
    "valid_since": "2027-03-20T00:00:00Z",
    "expires_at": "2027-06-01T00:00:00Z",
    "max_visits": 10000,
    "forward_query": True,
    "crawlable": False,
    "is_active": True,
}


class FieldsOnceMixin:
    """A ModelSerializer works its fields out of the model for every instance,
    though they depend only on the class: work them out once per class, and
    give each instance its own copy (fields are bound to their serializer)."""

    def get_fields(self):
        cls = type(self)
        if "_fields_once" not in cls.__dict__:
            cls._fields_once = super().get_fields()
        return copy.deepcopy(cls._fields_once)


@extend_schema_field(
    {
        "type": "string",
        "format": "uri",
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
        "maxLength": settings.LINK_URL_MAX_LENGTH,
    }
)
class TargetURLField(StrictCharField):
    """A link's target; links.validation.normalise_target has the rules."""


class DomainHostField(StrictCharField):
    """A domain by its host (any case, IDN or punycode): one of /api/v1/domains."""

    default_error_messages = {"no_domain": "No such domain: {host}. The domains are at /api/v1/domains."}

    def to_internal_value(self, data):
        # The value is a Domain row: its length is checked here, before the lookup.
        host = super().to_internal_value(data)
        if len(host) > 253:
            self.fail("max_length", max_length=253)
        try:
            return domain_for_host(host)
        except Domain.DoesNotExist:
            self.fail("no_domain", host=host)

    def to_representation(self, value):
        return value.host


class LinkSerializer(FieldsOnceMixin, StrictJSONMixin, serializers.ModelSerializer):
    domain = DomainHostField(
        required=False,
        help_text="The host of one of the domains (/api/v1/domains) the link is served on; the default domain "
        "(the host of EDGE_BASE_URL) when left out. A slug is unique per domain.",
    )
    url = TargetURLField(
        validators=[validate_target_url],
        help_text="Absolute http or https URL the short link "
        "redirects to; kept as links.validation.normalise_target writes it (ASCII).",
    )
    short_url = serializers.SerializerMethodField()
    password = StrictCharField(
        write_only=True,
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=128,
        trim_whitespace=False,
        help_text="Write-only. Visitors must type it before they are sent on; kept only as a salted hash. "
        "null or an empty string removes it.",
    )
    has_password = serializers.BooleanField(read_only=True, help_text="Whether the link asks for a password.")
    state = serializers.SerializerMethodField(
        help_text="What the edge does with the link now: active, scheduled (before valid_since: 404), expired, "
        "limit reached (max_visits redirects served: 410) or disabled (404)."
    )
    clicks = serializers.IntegerField(read_only=True, default=0, help_text="Every recorded click.")
    human_clicks = serializers.IntegerField(read_only=True, default=0, help_text="Clicks not flagged as bots.")

    class Meta:
        model = Link
        fields = [
            "url",
            "domain",
            "slug",
            "short_url",
            "title",
            "description",
            "tags",
            "redirect_status",
            "valid_since",
            "expires_at",
            "max_visits",
            "forward_query",
            "crawlable",
            "password",
            "has_password",
            "is_active",
            "state",
            "clicks",
            "human_clicks",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        # A slug taken on its domain is the service's 409 (links.services),
        # not a 400 from a validator DRF would make of link_domain_slug.
        validators = []
        extra_kwargs = {
            "slug": {"required": False, "validators": [validate_slug], "help_text": "Generated when left out."},
            "tags": {"help_text": "Up to 20 tags of 1 to 50 letters, digits, '.', '-' or '_'."},
            "valid_since": {"help_text": "Before it the short URL answers 404, as if the link did not exist."},
            "expires_at": {"help_text": "From it on the short URL answers 410 Gone."},
            "max_visits": {"help_text": "After this many redirects the short URL answers 410 Gone; null: no limit."},
            "crawlable": {"help_text": "Allowed to search engines in the short domain's robots.txt."},
        }

    def get_short_url(self, link: Link) -> str:
        return link.short_url

    @extend_schema_field(serializers.ChoiceField(choices=[state.value for state in LinkState]))
    def get_state(self, link: Link) -> str:
        """With the visit counts the view read for the page (context `visits`,
        links.selectors.link_visits), else as far as PostgreSQL tells."""
        return link_state(link, visits=(self.context.get("visits") or {}).get(link.pk))


@extend_schema_serializer(examples=[OpenApiExample("A campaign link", value=LINK_EXAMPLE, request_only=True)])
class LinkCreateSerializer(LinkSerializer):
    pass


class LinkUpdateSerializer(LinkSerializer):
    url = TargetURLField(
        required=False, validators=[validate_target_url], help_text=LinkSerializer._declared_fields["url"].help_text
    )


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
    is_default = serializers.BooleanField(read_only=True, help_text="The host of EDGE_BASE_URL.")
    link_count = serializers.IntegerField(read_only=True, default=0, help_text="Links on this domain.")

    class Meta:
        model = Domain
        fields = ["host", "root_url", "not_found_url", "https_redirect", "is_default", "link_count", "created_at"]
        read_only_fields = ["created_at"]
        extra_kwargs = {"https_redirect": {"help_text": "Plain HTTP requests are redirected to HTTPS (308)."}}


class DomainUpdateSerializer(DomainSerializer):
    class Meta(DomainSerializer.Meta):
        read_only_fields = ["host", "created_at"]


class BulkCreateSerializer(serializers.Serializer):
    links = serializers.ListField(
        child=serializers.DictField(),
        min_length=1,
        max_length=settings.API_BULK_MAX,
        help_text=f"Up to {settings.API_BULK_MAX} links, each as for creating one.",
    )


class BulkItemResultSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    status = serializers.IntegerField(help_text="201 created, 400 invalid, 409 slug taken.")
    link = LinkSerializer(required=False)
    errors = serializers.DictField(required=False)


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = BulkItemResultSerializer(many=True)


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


ORDERING_FIELDS = ["created_at", "clicks"]
_ORDER_KEY = f"-?(?:{'|'.join(ORDERING_FIELDS)})"


@extend_schema_field({"type": "string", "pattern": f"^{_ORDER_KEY}(?:,{_ORDER_KEY})*$"})
class LinkOrderingField(serializers.CharField):
    """Fields to sort links by, separated by commas, each with '-' for descending."""

    FIELDS = ORDERING_FIELDS

    def to_internal_value(self, data):
        keys = super().to_internal_value(data).split(",")
        unknown = [key for key in keys if key.removeprefix("-") not in self.FIELDS]
        if unknown:
            raise serializers.ValidationError(
                f"Cannot order by {', '.join(unknown)}: use {' or '.join(self.FIELDS)}, '-' first for descending."
            )
        return keys


class QueryParameters(serializers.Serializer):
    """Query parameters, which are strings: one given empty is a 400 unless
    the parameter may be blank, as its schema says (leave it out instead)."""

    def to_internal_value(self, data):
        empty = [
            name
            for name, value in data.items()
            if value == "" and name in self.fields and not getattr(self.fields[name], "allow_blank", False)
        ]
        if empty:
            raise serializers.ValidationError({name: ["Leave the parameter out rather than empty."] for name in empty})
        return super().to_internal_value(data)


# A domain's host in a query: as /api/v1/domains lists it (IDN as punycode), any case.
HOST_PATTERN = r"^[A-Za-z0-9._-]+$"


class LinkDomainQuerySerializer(QueryParameters):
    domain = serializers.RegexField(
        HOST_PATTERN,
        required=False,
        max_length=253,
        help_text="The link's domain (a host of /api/v1/domains); the default domain when left out.",
    )


class LinkQuerySerializer(QueryParameters):
    """The query parameters of the link list, as links.selectors.link_search
    takes them."""

    search = serializers.CharField(
        source="query",
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        help_text="Words that must each appear in the slug, title or target URL (case aside), separated by "
        "spaces or commas; a phrase in quotes is one word.",
    )
    domain = serializers.RegexField(
        HOST_PATTERN, required=False, max_length=253, help_text="Links on this domain (a host of /api/v1/domains)."
    )
    tag = serializers.CharField(required=False, help_text="Links with this tag, case aside.")

    def validate_domain(self, host: str) -> Domain:
        try:
            return domain_for_host(host)
        except Domain.DoesNotExist:
            raise serializers.ValidationError("No such domain.") from None

    is_active = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Only active links (true) or disabled ones (false).",
    )
    created_after = serializers.DateTimeField(required=False, help_text="Created at or after this time.")
    created_before = serializers.DateTimeField(required=False, help_text="Created before this time.")
    ordering = LinkOrderingField(
        required=False,
        default="-created_at",
        trim_whitespace=False,
        help_text="Which field to use when ordering the results: created_at or clicks, '-' first for descending "
        "(default -created_at); several separated by commas.",
    )


class TimeRangeSerializer(QueryParameters):
    """`from` and `to` query parameters (Python keywords, hence get_fields).
    Times come out in UTC (USE_TZ), whatever offset they were given with."""

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(required=False, help_text="From this time (inclusive).")
        fields["to"] = serializers.DateTimeField(required=False, help_text="Up to this time (exclusive).")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] >= attrs["to"]:
            raise serializers.ValidationError({"to": "Must be after 'from'."})
        return attrs


@extend_schema_field({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})
class AddressField(serializers.IPAddressField):
    pass


class ClickQuerySerializer(TimeRangeSerializer):
    link = serializers.RegexField(rf"^{SLUG_PATTERN}$", required=False, help_text="Slug of one of your links.")
    ip = AddressField(
        required=False,
        help_text="An IPv4 or IPv6 address: clicks from it, or from its network where addresses are stored anonymised.",
    )


class StatsQuerySerializer(TimeRangeSerializer):
    """The range of a stats request; its defaults and limits are
    clicks.selectors.stats_range's, and `validated_data` is its StatsRange."""

    interval = serializers.ChoiceField(choices=list(INTERVALS), default="day")
    include_bots = serializers.BooleanField(default=False, help_text="Count clicks flagged as bots too.")

    def validate(self, attrs):
        # stats_range's ValidationError names the parameters; DRF answers it as a 400.
        return stats_range(
            start=attrs.get("from"), end=attrs.get("to"), interval=attrs["interval"], include_bots=attrs["include_bots"]
        )


class StatsPointSerializer(serializers.Serializer):
    bucket = serializers.DateTimeField(help_text="Start of the UTC hour or day.")
    clicks = serializers.IntegerField()
    visitors = serializers.IntegerField(help_text="Distinct visitors (anonymised address and user agent).")


class BreakdownItemSerializer(serializers.Serializer):
    value = serializers.CharField()
    clicks = serializers.IntegerField()


class BreakdownsSerializer(serializers.Serializer):
    referer_host = BreakdownItemSerializer(many=True)
    browser = BreakdownItemSerializer(many=True)
    os = BreakdownItemSerializer(many=True)
    device = BreakdownItemSerializer(many=True)
    country = BreakdownItemSerializer(many=True)


class StatsSerializer(serializers.Serializer):
    slug = serializers.CharField()
    interval = serializers.CharField()
    include_bots = serializers.BooleanField()
    clicks = serializers.IntegerField(help_text="Clicks in the range.")
    series = StatsPointSerializer(many=True)
    breakdowns = BreakdownsSerializer()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


class TokenSerializer(StrictJSONMixin, serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "scope", "created_at", "expires_at", "last_used_at", "revoked_at"]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. Shown only in this response.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
