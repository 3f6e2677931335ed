"""The serializers of /api/v1/links (api/links.py): a link's options as
links/fields.py declares them, and the list's query."""

import functools

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from health.models import LinkHealth, Reason
from health.selectors import not_checked_yet
from links import rules as link_rules
from links.domains import domain_for_host
from links.fields import OPTION_NAMES, OPTIONS
from links.models import Domain, Link
from links.selectors import LinkState, link_state
from links.slugs import validate_slug
from links.utm import UTM_PARAMETERS, utm_of, with_utm
from links.validation import validate_target_url
from slingshot.text import shown

from .common import HOST_PATTERN, TARGET_URL_SCHEMA, FieldsOnceMixin, TargetURLField, TeamQuerySerializer
from .fields import StrictCharField, StrictIntegerField, StrictJSONMixin

LINK_EXAMPLE = {option.name: option.example for option in OPTIONS if option.example is not None}


TEAM_HELP = (
    "The id of the team the link belongs to; left out, the token's team (a signed-in session's: your personal team)."
)


_QUERY_TEXT = {"type": "string", "pattern": "^[!-~]+$", "maxLength": link_rules.MAX_QUERY_TEXT}


RULE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url", "conditions"],
    "properties": {
        "url": TARGET_URL_SCHEMA,
        "conditions": {
            "type": "array",
            "minItems": 1,
            "maxItems": link_rules.MAX_CONDITIONS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["type"],
                "description": "device: one of " + ", ".join(link_rules.DEVICES) + "; language: a tag such as en "
                "(which also matches en-GB) or en-GB, against Accept-Language (q=0 excluded); country: an ISO 3166 "
                "alpha-2 code of the visitor's address; query: `key` present in the query string, and equal to "
                "`value` if given; ip: the visitor's address is the address, in the CIDR range (IPv4 or IPv6) or "
                "matches the wildcard (192.168.1.*); browser: one of " + ", ".join(link_rules.BROWSERS) + "; "
                "before, after: the request's time is before or after the ISO 8601 moment, kept as UTC "
                "(2030-01-31T23:59:59Z).",
                "properties": {
                    "type": {"type": "string", "enum": list(link_rules.CONDITION_TYPES)},
                    "value": {**_QUERY_TEXT, "nullable": True},
                    "key": {**_QUERY_TEXT, "nullable": True},
                },
            },
        },
    },
}


SPLIT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["url", "weight"],
    "properties": {
        "url": TARGET_URL_SCHEMA,
        "weight": {"type": "integer", "minimum": 1, "maximum": link_rules.MAX_WEIGHT},
    },
}


class _CheckedJSONField(serializers.JSONField):
    """A JSON value checked, and normalised, by one of links.rules' validators."""

    check = None

    def to_internal_value(self, data):
        try:
            return type(self).check(data)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


@extend_schema_field({"type": "array", "maxItems": link_rules.MAX_RULES, "items": RULE_SCHEMA})
class RulesField(_CheckedJSONField):
    check = link_rules.validate_rules


@extend_schema_field({"type": "array", "maxItems": link_rules.MAX_SPLIT, "items": SPLIT_SCHEMA})
class SplitField(_CheckedJSONField):
    check = link_rules.validate_split


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
            self.fail("no_domain", host=shown(host))

    def to_representation(self, value):
        return value.host


class LinkHealthSerializer(serializers.ModelSerializer):
    """The last check of the link's destination (health/): `manage.py
    check_links`, every LINK_HEALTH_HOURS."""

    class Meta:
        model = LinkHealth
        fields = ["status", "reason", "http_status", "detail", "broken_since", "checked_at"]
        read_only_fields = fields
        extra_kwargs = {
            "reason": {"help_text": f"Why it is broken: {', '.join(Reason.values)}; empty while it works."},
            "http_status": {"help_text": "The status of the last answer, if one came (after the redirects)."},
            "detail": {"help_text": "What the check found, in a sentence."},
            "broken_since": {"help_text": "The first check of the run of broken ones it is in; null while it works."},
        }


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
    preview_image = serializers.SerializerMethodField(
        help_text="The image uploaded for the preview (PUT /links/{slug}/preview-image), where the edge serves it "
        "on the link's domain; it stands before preview_image_url. null: none."
    )
    state = serializers.SerializerMethodField(
        help_text="What the edge does with the link now: active, scheduled (not valid yet: 404), expired, "
        "limit reached (every visit it was made for served: 410) or disabled (404)."
    )
    team = StrictIntegerField(source="team_id", required=False, min_value=1, help_text=TEAM_HELP)
    clicks = serializers.IntegerField(read_only=True, default=0, help_text="Every recorded click.")
    human_clicks = serializers.IntegerField(read_only=True, default=0, help_text="Clicks not flagged as bots.")
    health = LinkHealthSerializer(
        read_only=True,
        allow_null=True,
        help_text="The last check of the destination: broken (with the reason and since when) or ok; null "
        "before its first check.",
    )
    rules = RulesField(
        required=False,
        help_text=f"Up to {link_rules.MAX_RULES} redirect rules, in order: a visitor goes to the url of the first "
        "rule whose conditions all hold, else to the split's or the link's url.",
    )
    split = SplitField(
        required=False,
        help_text=f"An A/B split: {link_rules.MIN_SPLIT} to {link_rules.MAX_SPLIT} destinations with weights, or "
        "none (empty). Used when no rule matched; each visitor always gets the same destination.",
    )

    # The destination's UTM parameters: given, each set into the url's query
    # (empty: taken out of it); read back from it.
    utm_source, utm_medium, utm_campaign, utm_term, utm_content = (
        StrictCharField(
            required=False,
            allow_blank=True,
            max_length=200,
            help_text=f"The url's {name} parameter: set into its query when given (empty takes it out), read "
            "back from it.",
        )
        for name in UTM_PARAMETERS
    )

    class Meta:
        model = Link
        # The options (links/fields.py) with the url's UTM parameters, the
        # domain's short URL and the team after the slug; then what a link
        # has that no one sets.
        fields = [
            "url",
            *UTM_PARAMETERS,
            *OPTION_NAMES[1 : OPTION_NAMES.index("slug") + 1],
            "short_url",
            "team",
            *OPTION_NAMES[OPTION_NAMES.index("slug") + 1 :],
            "preview_image",
            "has_password",
            "state",
            "health",
            "clicks",
            "human_clicks",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        # A slug taken on its domain is the service's 409 (links.services),
        # not a 400 from a validator DRF would make of link_domain_slug.
        validators = []
        extra_kwargs = {"slug": {"required": False, "validators": [validate_slug]}}

    def get_preview_image(self, link: Link) -> str | None:
        path = link.preview_image_path
        return f"{link.domain.base_url()}{path}" if path else None

    def get_short_url(self, link: Link) -> str:
        return link.short_url

    def to_representation(self, link: Link) -> dict:
        data = super().to_representation(link)
        data.update(utm_of(link.url))
        return data

    def validate(self, attrs: dict) -> dict:
        """The UTM parameters given, set into the url given, or the link's."""
        utm = {name: attrs.pop(name) for name in UTM_PARAMETERS if name in attrs}
        if utm:
            url = attrs.get("url") or (self.instance.url if self.instance is not None else None)
            if url is None:
                raise serializers.ValidationError({"url": ["This field is required."]})
            attrs["url"] = with_utm(url, utm, remove_empty=True)
        return super().validate(attrs)

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


class LinkDomainQuerySerializer(TeamQuerySerializer):
    domain = serializers.RegexField(
        HOST_PATTERN,
        required=False,
        max_length=253,
        help_text="The link's domain (a host of /api/v1/domains); the default domain when left out.",
    )


class LinkQuerySerializer(TeamQuerySerializer):
    """The query parameters of the link list, as clicks.selectors.link_search
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
    broken = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Only links whose destination the last check found broken (true), or the others (false).",
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


@functools.cache
def _new_link_output() -> LinkSerializer:
    """One serializer per process writes every new link out: its fields are
    bound once, and writing a link changes none of them."""
    return LinkSerializer()


def new_link_data(link: Link) -> dict:
    link.clicks = link.human_clicks = 0  # a new link id has no clicks yet
    not_checked_yet(link)
    return _new_link_output().to_representation(link)
