"""Forms parse and type what people type. The rules of links and tokens stay
in their services (links/services.py, api/services.py) and selectors
(clicks.selectors.stats_range); a service's ValidationError is shown on the
form with add_service_errors."""

from datetime import date, datetime, time, timedelta, tzinfo
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django import forms
from django.conf import settings
from django.contrib.postgres.forms import SimpleArrayField
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from api.models import ApiToken
from clicks.rollups import DIMENSIONS
from clicks.selectors import (
    INTERVALS,
    ORPHAN_KIND_LABELS,
    StatsRange,
    checked_filters,
    orphan_domain,
    stats_range,
    time_zones,
)
from links.domains import default_domain
from links.imports import CSV_COLUMNS
from links.models import Domain, Link
from slingshot.text import check_storable, unstorable_in
from teams.models import Role

from .reports import DEFAULT_PRESET, PRESETS, auto_interval, preset_range


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Puts each message of a service's ValidationError on its field, or on
    the whole form, after the name it was given, when the form has no such
    field (a report's filter, a query parameter of its own)."""
    for field, messages in error.message_dict.items():
        for message in messages:
            if field in form.fields:
                form.add_error(field, message)
            else:
                form.add_error(None, message if field == NON_FIELD_ERRORS else f"{field}: {message}")


class DateInput(forms.DateInput):
    input_type = "date"

    def format_value(self, value):
        return value.isoformat() if hasattr(value, "isoformat") else value


class DateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def format_value(self, value):
        return value.strftime("%Y-%m-%dT%H:%M") if hasattr(value, "strftime") else value


UTM_PARAMETERS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


def with_utm(url: str, values: dict[str, str]) -> str:
    """The URL with these utm_* parameters set (replacing any of the same
    name), the others and the fragment left as they are. static/web/app.js
    does the same as people type."""
    given = {name: value for name, value in values.items() if value}
    if not given:
        return url
    parts = urlsplit(url)
    query = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True) if name not in given]
    return urlunsplit(parts._replace(query=urlencode([*query, *given.items()])))


class JSONListField(forms.JSONField):
    """A JSON list typed in a textarea; an empty list shows as an empty box.
    A lone surrogate, which JSON's "\\ud800" escape decodes to, is refused
    here: neither the link nor the page could hold it."""

    def prepare_value(self, value):
        return "" if value in (None, [], "") else super().prepare_value(value)

    def to_python(self, value):
        value = super().to_python(value)
        check_storable(value)
        return value

    def bound_data(self, data, initial):
        value = super().bound_data(data, initial)
        # Shown again as it was typed, escapes and all: decoded, it may not be text at all.
        return forms.fields.InvalidJSONInput(data) if isinstance(data, str) and unstorable_in(value) else value

    def clean(self, value):
        return super().clean(value) or []

    def has_changed(self, initial, data):
        try:
            return (initial or []) != (self.to_python(data) or [])
        except ValidationError:
            return True


class LinkForm(forms.Form):
    url = forms.CharField(label="Target URL", widget=forms.URLInput(attrs={"placeholder": "https://"}))
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.order_by("host"),
        to_field_name="host",
        empty_label=None,
        required=False,
        help_text="The short domain the link is served on.",
    )
    slug = forms.CharField(required=False, help_text="The part after the short domain. Left empty, one is generated.")
    title = forms.CharField(required=False)
    description = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    tags = SimpleArrayField(forms.CharField(), required=False, help_text="Separated by commas.")
    redirect_status = forms.TypedChoiceField(
        label="Redirect status",
        coerce=int,
        initial=302,
        choices=Link._meta.get_field("redirect_status").choices,
    )
    valid_since = forms.DateTimeField(
        label="Valid since (UTC)",
        required=False,
        widget=DateTimeInput,
        help_text="Before it the link answers as if it did not exist.",
    )
    expires_at = forms.DateTimeField(
        label="Expires at",
        required=False,
        widget=DateTimeInput,
        help_text="After it the link answers 410 Gone.",
    )
    max_visits = forms.IntegerField(
        label="Visit limit",
        required=False,
        min_value=1,
        help_text="After this many redirects the link answers 410 Gone. Empty: no limit.",
    )
    forward_query = forms.BooleanField(
        label="Forward query string",
        required=False,
        help_text="Add the visitor's query parameters to the target.",
    )
    crawlable = forms.BooleanField(
        label="Crawlable",
        required=False,
        help_text="Allowed in the short domain's robots.txt; other links are not.",
    )
    password = forms.CharField(
        required=False,
        max_length=128,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Visitors must type it before they are sent on. Kept only as a salted hash.",
    )
    is_active = forms.BooleanField(label="Active", required=False, initial=True)
    rules = JSONListField(
        label="Redirect rules",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "code"}),
        help_text="A JSON list, tried in order; a visitor goes to the url of the first rule whose conditions all "
        'hold. Conditions: {"type": "device", "value": "ios"} (or android, mobile, desktop, windows, macos, linux), '
        '{"type": "language", "value": "en"} (en also matches en-GB), {"type": "country", "value": "DE"}, '
        '{"type": "query", "key": "ref", "value": "mail"} (value left out: the key is present). Example: '
        '[{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}]',
    )
    split = JSONListField(
        label="A/B split",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "code"}),
        help_text="Used when no rule matched: 2 to 10 destinations sharing the visitors by weight (1 to 100); each "
        'visitor always gets the same one. Example: [{"url": "https://example.com/a", "weight": 50}, '
        '{"url": "https://example.com/b", "weight": 50}]',
    )

    # Not fields of a link: the UTM builder, whose values go into the target URL.
    UTM_FIELDS = UTM_PARAMETERS
    # A browser never gets a typed password back, so a form shown again with
    # an error has an empty password field: the form says so, and marks
    # (password_typed) that the person means the link to have one.
    PASSWORD_NOT_KEPT = (
        "Type the password again: it is not kept when the form comes back with an error, "
        "and the link is not saved without it."
    )
    # Edited apart from the rest, in their own section of the form.
    RULE_FIELDS = ("rules", "split")

    def __init__(self, *args, editing: bool = False, has_password: bool = False, teams=None, **kwargs):
        """`teams`: those the link may move to (the person's, as an editor),
        when there is a choice."""
        super().__init__(*args, **kwargs)
        if not editing:
            self.fields["domain"].initial = default_domain()
        if teams is not None:
            self.fields["team"] = forms.ModelChoiceField(
                queryset=teams.order_by("name", "id"),
                empty_label=None,
                required=False,
                help_text="The team whose link it is; its clicks and reports go with it.",
            )
            self.order_fields(["url", "domain", "team"])
        for name in UTM_PARAMETERS:
            self.fields[name] = forms.CharField(
                label=name, required=False, max_length=200, widget=forms.TextInput(attrs={"data-utm": name})
            )
        self.fields["expires_at"].label = f"Expires at ({timezone.get_current_timezone_name()})"
        if editing:
            self.fields["slug"].required = True
            self.fields["slug"].help_text = "Changing it breaks the old short URL."
        if has_password:
            self.fields["password"].help_text = "Leave empty to keep the current password."
            self.fields["remove_password"] = forms.BooleanField(
                label="Remove the password", required=False, help_text="Anyone with the short URL gets through."
            )
        self.fields["password_typed"] = forms.BooleanField(required=False, widget=forms.HiddenInput)
        if self.is_bound and (self.data.get("password") or self.data.get("password_typed") == "True"):
            self.data = self.data.copy()
            self.data["password_typed"] = "True"  # and so in the form shown again

    @classmethod
    def initial_for(cls, link: Link) -> dict:
        return {name: getattr(link, name) for name in cls.base_fields if name != "password"}

    def link_fields(self):
        return [
            self[name]
            for name in self.fields
            if name not in UTM_PARAMETERS and name not in self.RULE_FIELDS and name != "password_typed"
        ]

    def rule_fields(self):
        return [self[name] for name in self.RULE_FIELDS]

    def utm_fields(self):
        return [self[name] for name in UTM_PARAMETERS]

    def clean(self):
        data = super().clean()
        if data.get("url"):
            data["url"] = with_utm(data["url"], {name: data.get(name, "") for name in UTM_PARAMETERS})
        if data.get("password_typed") and not data.get("password") and not data.get("remove_password"):
            self.add_error("password", self.PASSWORD_NOT_KEPT)
        return data

    def before_shown_again(self) -> None:
        """For a form sent with errors: a password typed in it is not
        shown again, and its field says so."""
        if self.data.get("password") and "password" not in self.errors:
            self.add_error("password", self.PASSWORD_NOT_KEPT)

    def service_arguments(self) -> dict:
        """The cleaned fields as link_create takes them."""
        data = {name: value for name, value in self.cleaned_data.items() if name in self.base_fields}
        data["slug"] = data["slug"] or None
        data["password"] = data["password"] or None
        return data

    def changes(self) -> dict:
        """The changed fields as link_update takes them: an empty password
        keeps the current one, unless it is to be removed."""
        changes = {
            name: self.cleaned_data[name]
            for name in self.changed_data
            if name in self.base_fields and name != "password"
        }
        if "domain" in changes and changes["domain"] is None:
            del changes["domain"]  # left out of the form: the link stays on its domain
        if "team" in self.changed_data and self.cleaned_data.get("team") is not None:
            changes["team"] = self.cleaned_data["team"]
        if any(name in self.changed_data for name in UTM_PARAMETERS):
            changes["url"] = self.cleaned_data["url"]
        if self.cleaned_data.get("password"):
            changes["password"] = self.cleaned_data["password"]
        elif self.cleaned_data.get("remove_password"):
            changes["password"] = None
        return changes


class LinkListForm(forms.Form):
    """The links page's filters, as links.selectors.link_search takes them.
    A value that does not parse is left out."""

    SORTS = {
        "-created": "-created_at",
        "created": "created_at",
        "-clicks": "-clicks",
        "clicks": "clicks",
        "slug": "slug",
    }
    STATUSES = [("", "Any status"), ("active", "Active"), ("disabled", "Disabled")]

    q = forms.CharField(
        label="Search", required=False, widget=forms.SearchInput(attrs={"placeholder": "Slug, title or target"})
    )
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.order_by("host"), to_field_name="host", required=False, empty_label="Any domain"
    )
    tag = forms.CharField(required=False)
    status = forms.ChoiceField(choices=STATUSES, required=False)
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("-created", "Newest"),
            ("created", "Oldest"),
            ("-clicks", "Most clicks"),
            ("clicks", "Fewest clicks"),
            ("slug", "Slug"),
        ],
    )

    def search_arguments(self) -> dict:
        self.is_valid()
        data = self.cleaned_data
        return {
            "query": data.get("q") or "",
            "domain": data.get("domain"),
            "tag": data.get("tag") or None,
            "is_active": {"active": True, "disabled": False}.get(data.get("status") or ""),
            "ordering": self.SORTS[data.get("sort") or "-created"],
        }


class ReportForm(forms.Form):
    """A report's range, bucket, bots and filters, as the link page takes
    them from its query string. A preset (web.reports.PRESETS) or a custom
    range of whole days (`from` and `to`, both included) in the person's
    zone; the limits are clicks.selectors.stats_range's. `filters` are the
    dimensions given in the query, an empty value included (a referrer host
    of '' is a direct visit). After is_valid(), `span` is the StatsRange."""

    range = forms.ChoiceField(
        choices=[*PRESETS.items(), ("custom", "Custom")], required=False, widget=forms.HiddenInput
    )
    interval = forms.ChoiceField(
        label="By",
        choices=[("", "Best fit"), *((name, name) for name in INTERVALS)],
        required=False,
    )
    include_bots = forms.BooleanField(label="Include bots", required=False)

    def __init__(self, *args, now: datetime, zone: tzinfo, since: datetime | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # `from` is a Python keyword, so these two cannot be class attributes.
        self.fields["from"] = forms.DateField(label="From", required=False, widget=DateInput)
        self.fields["to"] = forms.DateField(label="To (included)", required=False, widget=DateInput)
        self.now, self.zone, self.since = now, zone, since
        self.span: StatsRange | None = None
        self.preset = DEFAULT_PRESET
        self.filters = {name: self.data[name] for name in DIMENSIONS if name in self.data}

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        first, last = data.get("from"), data.get("to")
        if first or last or data.get("range") == "custom":
            self.preset = "custom"
            today = self.now.astimezone(self.zone).date()
            first, last = first or last or today, last or today
            if last < first:
                self.add_error("to", "The last day must not be before the first.")
                return data
            if last == date.max:
                self.add_error("to", "That day is later than a report can reach.")
                return data
            start = datetime.combine(first, time(), tzinfo=self.zone)
            end = datetime.combine(last + timedelta(days=1), time(), tzinfo=self.zone)
        else:
            self.preset = data.get("range") or DEFAULT_PRESET
            start, end = preset_range(self.preset, now=self.now, zone=self.zone, since=self.since)
        try:
            self.span = stats_range(
                start=start,
                end=end,
                interval=data.get("interval") or auto_interval(start, end),
                include_bots=data["include_bots"],
                zone=self.zone,
                filters=self.filters,
            )
        except ValidationError as exc:
            add_service_errors(self, exc)
        return data

    def default_span(self) -> StatsRange:
        """The default report, shown below the errors of a query that is not one."""
        start, end = preset_range(DEFAULT_PRESET, now=self.now, zone=self.zone)
        return stats_range(start=start, end=end, interval=auto_interval(start, end), zone=self.zone)


class ClickExportForm(forms.Form):
    """The export's range (the report's [from, to), as instants), bots and filters."""

    include_bots = forms.BooleanField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"] = forms.DateTimeField()
        self.fields["to"] = forms.DateTimeField()
        self.filters = {name: self.data[name] for name in DIMENSIONS if name in self.data}

    def clean(self):
        try:
            checked_filters(self.filters)
        except ValidationError as exc:
            add_service_errors(self, exc)
        return super().clean()


class BulkForm(forms.Form):
    """An action on the links selected in the list (links.services.link_bulk_change), or their export."""

    action = forms.ChoiceField(
        label="With the selected links",
        choices=[
            ("tag", "Add a tag"),
            ("untag", "Remove a tag"),
            ("disable", "Disable"),
            ("enable", "Enable"),
            ("delete", "Delete…"),
            ("export", "Export as CSV"),
        ],
    )
    tag = forms.CharField(label="Tag", required=False, max_length=64, help_text="For adding or removing a tag.")
    selected = forms.MultipleChoiceField(required=False)  # slugs; the view sets the choices it may take
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if not data.get("selected"):
            raise ValidationError("Select at least one link.")
        if data.get("action") in ("tag", "untag") and not data.get("tag"):
            self.add_error("tag", "Give the tag to add or take away.")
        return data


class DaysForm(forms.Form):
    """A staff page's range: the last `days` days (one of `choices`), and bots in or out."""

    humans_only = forms.BooleanField(label="Leave bots out", required=False)

    def __init__(self, query, *, choices: tuple[int, ...], default: int):
        data = query.copy()
        data.setdefault("days", str(default))  # the select shows what the page reads
        super().__init__(data)
        self.default = default
        self.fields["days"] = forms.TypedChoiceField(
            label="Last",
            coerce=int,
            choices=[(n, f"{n} day{'s' if n > 1 else ''}") for n in choices],
            required=False,
            empty_value=None,
        )

    def days(self) -> int:
        return (self.cleaned_data["days"] if self.is_valid() else None) or self.default

    def include_bots(self) -> bool:
        return not (self.is_valid() and self.cleaned_data["humans_only"])


class OrphanVisitsForm(DaysForm):
    """The orphan visits page's range, bots, domain and kind."""

    domain = forms.CharField(label="Domain", required=False, help_text="A host; empty: every domain.")
    kind = forms.ChoiceField(
        label="Found",
        required=False,
        choices=[("", "anything"), *ORPHAN_KIND_LABELS.items()],
        help_text="What the edge found at the path.",
    )

    def clean_domain(self) -> str | None:
        """As orphan_visits names the domain ('' the default one); None for every domain."""
        host = self.cleaned_data["domain"].strip()
        return orphan_domain(host) if host else None

    def orphan_domain(self) -> str | None:
        return self.cleaned_data["domain"] if self.is_valid() else None

    def orphan_kind(self) -> str | None:
        return (self.cleaned_data["kind"] or None) if self.is_valid() else None


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(
        label="Time zone",
        help_text="Pages show times in it, and reports make their days in it.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["time_zone"].choices = [(name, name) for name in sorted(time_zones())]


class CsvUploadForm(forms.Form):
    file = forms.FileField(label="CSV file")

    def __init__(self, *args, too_large: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.too_large = too_large
        self.max_bytes = settings.WEB_IMPORT_MAX_BYTES
        field = self.fields["file"]
        field.required = not too_large  # a file cut off by UploadLimitHandler is absent, not missing
        field.help_text = (
            f"A header row with at least `url`; optional: {', '.join(name for name in CSV_COLUMNS if name != 'url')} "
            f"(the columns of the export). Up to {filesizeformat(self.max_bytes)} and "
            f"{settings.WEB_IMPORT_MAX_ROWS:,} rows. A cell that begins with a single quote followed by "
            "=, +, -, @, a tab or a carriage return loses that quote: the export adds it so that spreadsheets "
            "show such values instead of running them as formulas."
        )

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if self.too_large or (upload and upload.size > self.max_bytes):
            raise ValidationError(
                "The file is larger than %(max)s: split it.",
                code="too_large",
                params={"max": filesizeformat(self.max_bytes)},
            )
        return upload


class DomainForm(forms.ModelForm):
    """A domain's fields; links.domains checks and publishes them."""

    class Meta:
        model = Domain
        fields = ["host", "root_url", "not_found_url", "https_redirect"]
        help_texts = {
            "host": "A host name such as go.example.com, whose DNS points at the edge.",
            "root_url": "Where / redirects. Empty: a 404 (the default domain: EDGE_ROOT_URL).",
            "not_found_url": "Where unknown and disabled slugs redirect. Empty: a 404 (the default domain: "
            "EDGE_NOT_FOUND_URL).",
            "https_redirect": "Plain HTTP requests to this domain are redirected to HTTPS.",
        }

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["host"]

    def validate_unique(self):
        pass  # links.domains says a domain is there already


class TokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "scope", "expires_at"]
        widgets = {"expires_at": DateTimeInput}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["expires_at"].label = f"Expires at ({timezone.get_current_timezone_name()}, optional)"


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100)


class MemberForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class PeopleSearchForm(forms.Form):
    """The people page's search: part of a user name or e-mail address."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=150,
        widget=forms.SearchInput(attrs={"placeholder": "Name or e-mail"}),
    )


class InviteForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150)
    email = forms.EmailField(required=False, help_text="For your records; no mail is sent.")
