from contextlib import suppress
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from . import rules as link_rules
from . import slugs
from .app_files import validate_apple_app_site_association, validate_assetlinks
from .utm import UTM_PARAMETERS
from .validation import (
    REDIRECT_STATUSES,
    default_host,
    normalise_target,
    storable_offset,
    validate_domain_host,
    validate_tags,
    validate_target_url,
)


class Domain(models.Model):
    """A host name the edge serves short links on. The default domain is
    the host of EDGE_BASE_URL (links.domains.default_domain makes its row);
    a request whose Host the edge does not know is served as the default
    domain's. Its table is in sql/links.sql."""

    host = models.CharField(max_length=253, unique=True, validators=[validate_domain_host])
    # Where the edge redirects `/` and unknown slugs; empty: a 404 (for the
    # default domain, EDGE_ROOT_URL and EDGE_NOT_FOUND_URL).
    root_url = models.TextField("root redirect", blank=True, validators=[validate_target_url])
    not_found_url = models.TextField("not-found redirect", blank=True, validators=[validate_target_url])
    # Where a link of the domain that has expired or used its visits sends
    # its visitors, unless the link has its own (Link.expired_url); empty:
    # the 410 page.
    expired_url = models.TextField(
        "expired redirect", blank=True, default="", db_default="", validators=[validate_target_url]
    )
    # Plain HTTP requests redirected to HTTPS (308) by the edge.
    https_redirect = models.BooleanField("redirect HTTP to HTTPS", default=False)
    # The app-link files the edge serves at /.well-known/ (links/app_files.py);
    # None: a 404 there.
    apple_app_site_association = models.JSONField(
        "apple-app-site-association", null=True, blank=True, validators=[validate_apple_app_site_association]
    )
    assetlinks = models.JSONField("assetlinks.json", null=True, blank=True, validators=[validate_assetlinks])
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["host"]

    def __str__(self) -> str:
        return self.host

    @property
    def is_default(self) -> bool:
        return self.host == default_host()

    def base_url(self) -> str:
        """Where the edge serves this domain's links: EDGE_BASE_URL for the
        default domain; for the others the host, with EDGE_BASE_URL's
        scheme and port (one edge serves them all)."""
        if self.is_default:
            return settings.EDGE_BASE_URL.rstrip("/")
        base = urlsplit(settings.EDGE_BASE_URL)
        return f"{base.scheme}://{self.host}" + (f":{base.port}" if base.port else "")

    def clean(self) -> None:
        with suppress(ValidationError):  # the fields' own validators have said why
            self.host = validate_domain_host(self.host)
            for name in ("root_url", "not_found_url", "expired_url"):
                if getattr(self, name):
                    setattr(self, name, normalise_target(getattr(self, name)))


class LowerTags(models.Func):
    """A link's tags in lower case: lower_tags(), an SQL function of
    migration 0003, which the tag filter's index is made of."""

    function = "lower_tags"
    output_field = ArrayField(models.TextField())


# A link's destinations beside `url`, `rules` and `split`, each one URL or
# empty: normalised and screened as `url` is (Link.clean, links/flags.py).
OTHER_TARGETS = ("ios_url", "android_url", "expired_url")
# The path under which the edge serves links' uploaded preview images.
PREVIEW_IMAGE_PREFIX = "/_preview/"

# Why a link is stopped by the staff (Link.blocked_for); '' while it is not.
BLOCKED_FOR = [("link", "the link"), ("team", "its team's suspension"), ("owner", "its owner's suspension")]


class Link(models.Model):
    """A short link; its table is in sql/links.sql."""

    # A slug is unique per domain (link_domain_slug), which serves the domain's foreign key too.
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="links", db_index=False)
    slug = models.CharField(
        max_length=slugs.MAX_LENGTH,
        validators=[slugs.validate_slug],
        help_text="The part of the short URL after the domain; generated when left out.",
    )
    url = models.TextField(
        "target URL",
        validators=[validate_target_url],
        help_text="The absolute http or https URL the short link redirects to.",
    )
    # The team the link belongs to, with its clicks and reports; indexed by
    # link_team_created, which starts with it.
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="links", db_index=False)
    # Who created it; the link stays with its team when that person goes.
    # Indexed by link_owner_created, which starts with it.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="links",
        db_index=False,
        verbose_name="created by",
    )
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(max_length=2000, blank=True)
    tags = ArrayField(
        models.CharField(max_length=50),
        default=list,
        blank=True,
        size=20,
        validators=[validate_tags],
        help_text="Up to 20 tags of 1 to 50 letters, digits, '.', '-' or '_'.",
    )
    redirect_status = models.PositiveSmallIntegerField(
        choices=[(status, str(status)) for status in REDIRECT_STATUSES], default=302
    )
    # Before valid_since the edge answers as if the link did not exist; from
    # expires_at on, and after max_visits redirects, 410 Gone.
    valid_since = models.DateTimeField(
        null=True, blank=True, help_text="Before it the short URL answers as if the link did not exist (404)."
    )
    expires_at = models.DateTimeField(null=True, blank=True, help_text="From it on the short URL answers 410 Gone.")
    max_visits = models.PositiveIntegerField(
        "visit limit",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="After this many redirects the short URL answers 410 Gone; empty: no limit.",
    )
    forward_query = models.BooleanField(
        "forward query string", default=False, help_text="The visitor's query parameters are added to the target."
    )
    # Listed as allowed in the domain's /robots.txt; every other link is disallowed.
    crawlable = models.BooleanField(
        default=False, help_text="Allowed to search engines in the short domain's robots.txt; other links are not."
    )
    # A salted hash (links.unlocking.hash_password), or empty: the visitor
    # types the password on the edge's password page.
    password = models.CharField(max_length=128, blank=True)
    # Redirect rules and an A/B split (links/rules.py), evaluated by the edge.
    rules = models.JSONField(default=list, blank=True, validators=[link_rules.check_rules])
    split = models.JSONField(default=list, blank=True, validators=[link_rules.check_split])
    # Where an iPhone's or iPad's visitor, and an Android device's, go
    # instead of `url` (an app link or the app's store page), after the
    # rules and before the split; empty: `url`.
    ios_url = models.TextField("iOS URL", blank=True, default="", db_default="", validators=[validate_target_url])
    android_url = models.TextField(
        "Android URL", blank=True, default="", db_default="", validators=[validate_target_url]
    )
    # Where a visitor goes once the link has expired or used its visits,
    # instead of the 410 page (its domain's expired_url when empty).
    expired_url = models.TextField(
        "after it expires",
        blank=True,
        default="",
        db_default="",
        validators=[validate_target_url],
        help_text="Where visitors go once the link has expired or had all its visits, instead of a 410 page.",
    )
    # What a link-preview crawler (Slack's, Facebook's: edge previews.lua)
    # is shown instead of the destination's own title and image; all empty:
    # the crawler is sent on like any visitor.
    preview_title = models.CharField("preview title", max_length=200, blank=True, default="", db_default="")
    preview_description = models.CharField("preview description", max_length=500, blank=True, default="", db_default="")
    preview_image_url = models.TextField(
        "preview image URL",
        blank=True,
        default="",
        db_default="",
        validators=[validate_target_url],
        help_text="An image for the card shown where the link is shared, 1200×630 px is best.",
    )
    # An image uploaded for the preview (PreviewImage.name), which the edge
    # serves on the link's domain; it stands before preview_image_url. Empty: none.
    preview_image = models.CharField(max_length=80, blank=True, default="", db_default="", editable=False)
    is_active = models.BooleanField("active", default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    # Why the destination, or a rule's or split's, is on a blocklist since
    # the link was made ("phish.example: hagezi"), or empty: links/flags.py
    # writes it; the edge answers 451 while it is set.
    listed = models.CharField(max_length=300, blank=True, default="", db_default="", editable=False)
    # Stopped by the service's staff (moderation/services.py): when, the
    # words the edge's 451 page says ('' for the page's own), and for what:
    # the link itself, its team's suspension, or its owner's.
    blocked_at = models.DateTimeField(null=True, blank=True, editable=False)
    blocked = models.CharField(max_length=500, blank=True, default="", db_default="", editable=False)
    blocked_for = models.CharField(
        max_length=5, blank=True, default="", db_default="", editable=False, choices=BLOCKED_FOR
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="link_owner_created"),
            models.Index(fields=["team", "-created_at"], name="link_team_created"),
            # The tag filter, case aside (clicks.selectors.link_search; migration 0003).
            GinIndex(LowerTags("tags"), name="link_tags_lower_gin"),
            # A domain's robots.txt lists these (links.publishing.robots_txt).
            models.Index(fields=["domain", "slug"], condition=models.Q(crawlable=True), name="link_crawlable"),
            # The preview images some link shows (links.preview_images._collect).
            models.Index(fields=["preview_image"], condition=~models.Q(preview_image=""), name="link_preview_image"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["domain", "slug"], name="link_domain_slug"),
            models.CheckConstraint(
                condition=models.Q(redirect_status__in=REDIRECT_STATUSES), name="link_redirect_status_valid"
            ),
            models.CheckConstraint(condition=models.Q(slug__regex=rf"^{slugs.PATTERN}$"), name="link_slug_shape"),
            models.CheckConstraint(condition=models.Q(max_visits__gte=1), name="link_max_visits_positive"),
            models.CheckConstraint(
                condition=models.Q(valid_since__lt=models.F("expires_at"))
                | models.Q(valid_since__isnull=True)
                | models.Q(expires_at__isnull=True),
                name="link_valid_before_expiry",
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def has_password(self) -> bool:
        return bool(self.password)

    @property
    def short_url(self) -> str:
        """Where the edge serves this link (its domain's base URL)."""
        return f"{self.domain.base_url()}/{self.slug}"

    @property
    def preview_image_path(self) -> str | None:
        """Where the edge serves the link's uploaded preview image on its domain
        (links/preview_images.py), or None."""
        return PREVIEW_IMAGE_PREFIX + self.preview_image if self.preview_image else None

    @property
    def domain_query(self) -> str:
        """The query that names the link's domain in the dashboard's and the
        API's addresses of a link: empty for the default domain."""
        return "" if self.domain.is_default else "?" + urlencode({"domain": self.domain.host})

    def clean(self) -> None:
        """The target as normalise_target writes it, and times PostgreSQL
        can keep in the right order: every way a link is made or changed
        (services, admin) runs full_clean, and so this."""
        with suppress(ValidationError):  # the field's own validator has said why
            self.url = normalise_target(self.url)
        for name in (*OTHER_TARGETS, "preview_image_url"):
            with suppress(ValidationError):
                setattr(self, name, normalise_target(getattr(self, name)) if getattr(self, name) else "")
        self.clean_rules()
        for name in ("valid_since", "expires_at"):
            moment = getattr(self, name)
            if moment is not None and not storable_offset(moment):
                raise ValidationError({name: "The UTC offset must be within ±15:59."})
        if self.valid_since and self.expires_at and self.valid_since >= self.expires_at:
            raise ValidationError({"expires_at": "Must be after valid_since."})

    def clean_rules(self) -> None:
        """Rules and split as links.rules keeps them (targets normalised too)."""
        with suppress(ValidationError):
            self.rules = link_rules.validate_rules(self.rules)
        with suppress(ValidationError):
            self.split = link_rules.validate_split(self.split)


class LinkOutbox(models.Model):
    """A link (a domain's host and a slug) or a domain (its host, and an
    empty slug) whose state must reach Redis, written in the same
    transaction as the change itself; the request that made it, or the
    publisher, delivers rows in id order and deletes them once Redis has
    taken the change (links/delivery.py)."""

    id = models.BigAutoField(primary_key=True)
    host = models.CharField(max_length=253)
    slug = models.CharField(max_length=slugs.MAX_LENGTH, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"outbox #{self.id}: {self.host}/{self.slug}"


class LinkImport(models.Model):
    """A CSV file of links, checked row by row when uploaded and then created
    in chunks (links/imports.py). `rows` holds, per CSV row, its line number,
    its fields as read, and its errors ({field: [message]}, empty when the
    row is valid); `position` is how many rows have been through the import."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="link_imports")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="link_imports")  # where the links go
    filename = models.CharField(max_length=255)
    rows = models.JSONField(default=list)
    position = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({len(self.rows)} rows)"

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row["errors"])

    @property
    def done(self) -> bool:
        return self.position >= len(self.rows)


class UtmTemplate(models.Model):
    """A team's UTM parameters kept under a name, which the link form's UTM
    builder fills in (links/utm_templates.py has the services)."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="utm_templates")
    name = models.CharField(max_length=100)
    utm_source = models.CharField(max_length=200, blank=True)
    utm_medium = models.CharField(max_length=200, blank=True)
    utm_campaign = models.CharField(max_length=200, blank=True)
    utm_term = models.CharField(max_length=200, blank=True)
    utm_content = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="utm_template_team_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def values(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in UTM_PARAMETERS}


class PreviewImage(models.Model):
    """An image uploaded for links' previews (links/preview_images.py), by
    its name: its SHA-256 and its type's extension, so that the same image
    is kept once and its address never changes what it shows."""

    name = models.CharField(max_length=80, primary_key=True)
    content = models.BinaryField()
    content_type = models.CharField(max_length=20)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name
