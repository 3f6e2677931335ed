"""Forms parse and type what people type. The rules of links and tokens stay
in their services (links/services.py, api/services.py) and selectors
(clicks.selectors.stats_range); a service's ValidationError is shown on the
form with add_service_errors."""

from django import forms
from django.conf import settings
from django.contrib.postgres.forms import SimpleArrayField
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from api.models import ApiToken
from clicks.selectors import INTERVALS, StatsRange, stats_range
from links.imports import CSV_COLUMNS
from links.models import Link
from teams.models import Role


def add_service_errors(form: forms.Form, error: ValidationError) -> None:
    """Puts each message of a service's ValidationError on its field, or on
    the whole form when the form has no such field."""
    for field, messages in error.message_dict.items():
        for message in messages:
            form.add_error(field if field in form.fields else None, message)


class DateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def format_value(self, value):
        return value.strftime("%Y-%m-%dT%H:%M") if hasattr(value, "strftime") else value


class LinkForm(forms.Form):
    url = forms.CharField(label="Target URL", widget=forms.URLInput(attrs={"placeholder": "https://"}))
    slug = forms.CharField(required=False, help_text="The part after the short domain. Left empty, one is generated.")
    title = forms.CharField(required=False)
    tags = SimpleArrayField(forms.CharField(), required=False, help_text="Separated by commas.")
    redirect_status = forms.TypedChoiceField(
        label="Redirect status",
        coerce=int,
        initial=302,
        choices=Link._meta.get_field("redirect_status").choices,
    )
    expires_at = forms.DateTimeField(
        label="Expires at (UTC)",
        required=False,
        widget=DateTimeInput,
        help_text="After it the link answers 410 Gone.",
    )
    forward_query = forms.BooleanField(
        label="Forward query string",
        required=False,
        help_text="Add the visitor's query parameters to the target.",
    )
    is_active = forms.BooleanField(label="Active", required=False, initial=True)

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["slug"].required = True
            self.fields["slug"].help_text = "Changing it breaks the old short URL."

    @classmethod
    def initial_for(cls, link: Link) -> dict:
        return {name: getattr(link, name) for name in cls.base_fields}

    def service_arguments(self) -> dict:
        """The cleaned fields as link_create and link_update take them."""
        data = dict(self.cleaned_data)
        data["slug"] = data["slug"] or None
        return data


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
            "tag": data.get("tag") or None,
            "is_active": {"active": True, "disabled": False}.get(data.get("status") or ""),
            "ordering": self.SORTS[data.get("sort") or "-created"],
        }


class StatsRangeForm(forms.Form):
    """The link page's stats range; its defaults and limits are
    clicks.selectors.stats_range's, and `span` is its StatsRange."""

    interval = forms.ChoiceField(choices=[(name, name) for name in INTERVALS], required=False)
    include_bots = forms.BooleanField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # `from` is a Python keyword, so these two cannot be class attributes.
        self.fields["from"] = forms.DateTimeField(required=False)
        self.fields["to"] = forms.DateTimeField(required=False)
        self.span: StatsRange | None = None

    def clean(self):
        data = super().clean()
        if not self.errors:
            try:
                self.span = stats_range(
                    start=data.get("from"),
                    end=data.get("to"),
                    interval=data.get("interval") or "day",
                    include_bots=data["include_bots"],
                )
            except ValidationError as exc:
                self.add_error(None, exc)
        return data


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


class TokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "scope", "expires_at"]
        labels = {"expires_at": "Expires at (UTC, optional)"}
        widgets = {"expires_at": DateTimeInput}


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100)


class MemberForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class InviteForm(forms.Form):
    username = forms.CharField(label="User name", max_length=150)
    email = forms.EmailField(required=False, help_text="For your records; no mail is sent.")
