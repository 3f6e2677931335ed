import copy

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiExample, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from clicks.models import Click
from clicks.rollups import DIMENSIONS
from clicks.selectors import INTERVALS, orphan_domain, stats_range, time_zones, zone_named
from links import rules as link_rules
from links.domains import domain_for_host
from links.models import Domain, Link
from links.selectors import LinkState, link_state
from links.slugs import PATTERN as SLUG_PATTERN
from links.slugs import validate_slug
from links.validation import normalise_target, validate_target_url
from slingshot.contract import ORPHAN_KINDS
from slingshot.text import shown
from teams.models import Action, AuditEntry, Membership, Role, Team

from .fields import StrictCharField, StrictChoiceField, StrictIntegerField, StrictJSONMixin
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
    "rules": [
        {"url": "https://apps.apple.com/app/id1", "conditions": [{"type": "device", "value": "ios"}]},
        {
            "url": "https://example.de/fruehling",
            "conditions": [{"type": "language", "value": "de"}, {"type": "country", "value": "DE"}],
        },
    ],
    "split": [],
}
TEAM_HELP = (
    "The id of the team the link belongs to; left out, the token's team (a signed-in session's: your personal team)."
)


class FieldsOnceMixin:
    """A ModelSerializer works its fields out of the model for every instance,
    though they depend only on the class: work them out once per class, and
    give each instance its own copy (fields are bound to their serializer)."""

    def get_fields(self):
        cls = type(self)
        if "_fields_once" not in cls.__dict__:
            cls._fields_once = super().get_fields()
        return copy.deepcopy(cls._fields_once)


TARGET_URL_SCHEMA = {
    "type": "string",
    "format": "uri",
    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
    "maxLength": settings.LINK_URL_MAX_LENGTH,
}


@extend_schema_field(TARGET_URL_SCHEMA)
class TargetURLField(StrictCharField):
    """A link's target; links.validation.normalise_target has the rules."""


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
                "`value` if given.",
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
    team = StrictIntegerField(source="team_id", required=False, min_value=1, help_text=TEAM_HELP)
    clicks = serializers.IntegerField(read_only=True, default=0, help_text="Every recorded click.")
    human_clicks = serializers.IntegerField(read_only=True, default=0, help_text="Clicks not flagged as bots.")
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

    class Meta:
        model = Link
        fields = [
            "url",
            "domain",
            "slug",
            "short_url",
            "team",
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
            "rules",
            "split",
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


class TeamQuerySerializer(QueryParameters):
    team = serializers.IntegerField(
        required=False, min_value=1, help_text="Only in this team (its id); a team not among yours is a 404."
    )


# A domain's host in a query: as /api/v1/domains lists it (IDN as punycode), any case.
HOST_PATTERN = r"^[A-Za-z0-9._-]+$"


class LinkDomainQuerySerializer(TeamQuerySerializer):
    domain = serializers.RegexField(
        HOST_PATTERN,
        required=False,
        max_length=253,
        help_text="The link's domain (a host of /api/v1/domains); the default domain when left out.",
    )


class LinkQuerySerializer(TeamQuerySerializer):
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


@extend_schema_field({"type": "string", "enum": ["UTC", *sorted(time_zones() - {"UTC"})]})
class TimeZoneField(serializers.CharField):
    """An IANA time zone name; its value is the zone."""

    default_error_messages = {"invalid": "Not a time zone name: use an IANA name such as Europe/Berlin."}

    def to_internal_value(self, data):
        try:
            return zone_named(super().to_internal_value(data))
        except ValueError:
            self.fail("invalid")


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
    clicks.selectors.stats_range's, and `validated_data` is its StatsRange."""

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
    """What the stats endpoint answers; it writes the body itself (api/views.py),
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


class TokenSerializer(StrictJSONMixin, serializers.ModelSerializer):
    team = StrictIntegerField(
        source="team_id",
        required=False,
        min_value=1,
        help_text="The one team the token reaches (its id): one of yours; left out, your personal team.",
    )
    username = serializers.CharField(source="user.username", read_only=True, help_text="Whose token it is.")

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "scope",
            "team",
            "username",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. Shown only in this response.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


class TeamSerializer(StrictJSONMixin, serializers.ModelSerializer):
    personal = serializers.SerializerMethodField(help_text="Whether it is someone's personal team.")
    role = serializers.ChoiceField(choices=Role.choices, read_only=True, help_text="Your role in it.")

    class Meta:
        model = Team
        fields = ["id", "name", "personal", "role", "created_at"]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {"name": {"min_length": 1}}

    def get_personal(self, team: Team) -> bool:
        return team.personal_for_id is not None


class MemberSerializer(StrictJSONMixin, serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
        read_only_fields = ["created_at"]


class MemberCreateSerializer(StrictJSONMixin, serializers.Serializer):
    username = StrictCharField(max_length=150, help_text="The user name of an active person.")
    role = StrictChoiceField(choices=Role.choices)


class MemberUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    role = StrictChoiceField(choices=Role.choices)


class AuditEntrySerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id")
    actor = serializers.CharField(source="actor_name", help_text="The user name of who did it; empty for the system.")
    action = serializers.ChoiceField(choices=Action.values)
    changes = serializers.DictField(
        child=serializers.ListField(allow_null=True), help_text="Each field changed, as [before, after]."
    )

    class Meta:
        model = AuditEntry
        fields = ["id", "team", "actor", "action", "link_id", "slug", "subject", "changes", "created_at"]


class AuditQuerySerializer(TeamQuerySerializer):
    action = serializers.ChoiceField(choices=Action.values, required=False)
    link = serializers.RegexField(rf"^{SLUG_PATTERN}$", required=False, help_text="Entries of the link with this slug.")


class OrphanQuerySerializer(QueryParameters):
    days = serializers.IntegerField(
        required=False, min_value=1, max_value=90, default=7, help_text="The last this many days, today included."
    )
    include_bots = serializers.BooleanField(required=False, default=True, help_text="Count visits by bots.")
    domain = serializers.CharField(
        required=False, help_text="Only the visits on the domain of this host (the default domain's host included)."
    )
    kind = serializers.ChoiceField(choices=ORPHAN_KINDS, required=False, help_text="Only the visits of this kind.")

    def validate_domain(self, value: str) -> str:
        """As orphan_visits names the domain: '' for the default one."""
        try:
            return orphan_domain(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class AccountingQuerySerializer(QueryParameters):
    days = serializers.IntegerField(
        required=False, min_value=1, max_value=8, default=1, help_text="The last this many days (the edge keeps 8)."
    )


class OrphanCountSerializer(serializers.Serializer):
    visits = serializers.IntegerField()
    bots = serializers.IntegerField()


class OrphanPathSerializer(OrphanCountSerializer):
    domain = serializers.CharField(help_text="The host of the domain it was asked on; empty for the default domain.")
    path = serializers.CharField(help_text="The slug asked for, without the leading slash.")
    kind = serializers.ChoiceField(
        choices=ORPHAN_KINDS,
        help_text="What the edge found: no link (unknown), or a link disabled, scheduled (before its "
        "valid_since), expired, past its max_visits (limit), or a view of its password page (password).",
    )


class OrphanReferrerSerializer(OrphanCountSerializer):
    referer_host = serializers.CharField(help_text="Empty for visits without a referrer.")


class OrphanVisitsSerializer(serializers.Serializer):
    visits = serializers.IntegerField()
    bots = serializers.IntegerField()
    by_path = OrphanPathSerializer(many=True)
    by_referrer = OrphanReferrerSerializer(many=True)
    include_bots = serializers.BooleanField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class HourAccountSerializer(serializers.Serializer):
    hour = serializers.DateTimeField(help_text="The UTC hour's start.")
    served_redirects = serializers.IntegerField()
    served_orphans = serializers.IntegerField()
    stored_clicks = serializers.IntegerField()
    stored_orphans = serializers.IntegerField()
    difference = serializers.IntegerField(
        allow_null=True, help_text="Served minus stored; null when no edge counted anything in the hour."
    )
    settled = serializers.BooleanField(help_text="Ended more than ACCOUNTING_GRACE_MINUTES ago.")
    counted = serializers.BooleanField(
        help_text="Some edge counted what it served in the hour: false before the edges counted "
        "(an older version) or past the 8 days the counts are kept."
    )
    partly_counted = serializers.BooleanField(
        help_text="The first hour counted, with more stored than served: the edges began counting within it."
    )
    lasting = serializers.BooleanField(
        help_text="Settled, counted, and a difference that means clicks went missing or were removed."
    )


class AccountingSerializer(serializers.Serializer):
    hours = HourAccountSerializer(many=True, help_text="Newest first.")
    lasting = serializers.IntegerField(help_text="Hours whose difference is lasting.")
