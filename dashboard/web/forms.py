"""Forms parse and type what people type. The rules of links and tokens stay
in their services (links/services.py, api/services.py); a service's
ValidationError is shown on the form with add_service_errors."""
from django import forms
from django.contrib.postgres.forms import SimpleArrayField
from django.core.exceptions import ValidationError

from api.models import ApiToken
from links.models import Link


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
        label="Redirect status", coerce=int, initial=302, choices=Link._meta.get_field("redirect_status").choices,
    )
    expires_at = forms.DateTimeField(
        label="Expires at (UTC)", required=False, widget=DateTimeInput, help_text="After it the link answers 410 Gone.",
    )
    forward_query = forms.BooleanField(
        label="Forward query string", required=False, help_text="Add the visitor's query parameters to the target.",
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
    SORTS = {
        "-created": ("-created_at", "-id"), "created": ("created_at", "id"),
        "-clicks": ("-clicks", "-id"), "clicks": ("clicks", "id"), "slug": ("slug",),
    }
    STATUSES = [("", "Any status"), ("active", "Active"), ("disabled", "Disabled")]

    q = forms.CharField(label="Search", required=False, widget=forms.SearchInput(
        attrs={"placeholder": "Slug, title or target"}))
    tag = forms.CharField(required=False)
    status = forms.ChoiceField(choices=STATUSES, required=False)
    sort = forms.ChoiceField(required=False, choices=[
        ("-created", "Newest"), ("created", "Oldest"), ("-clicks", "Most clicks"), ("clicks", "Fewest clicks"),
        ("slug", "Slug"),
    ])

    def ordering(self) -> tuple[str, ...]:
        return self.SORTS[self.cleaned_data.get("sort") or "-created"]


class CsvUploadForm(forms.Form):
    file = forms.FileField(
        label="CSV file", help_text="A header row with at least `url`; optional: slug, title, tags, "
        "redirect_status, expires_at, forward_query, is_active (the columns of the export).",
    )


class TokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "scope", "expires_at"]
        labels = {"expires_at": "Expires at (UTC, optional)"}
        widgets = {"expires_at": DateTimeInput}
