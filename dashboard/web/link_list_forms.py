"""The forms of the links list: its filters, its bulk actions, and the CSV
upload of the import page (web/link_forms.py has a link's own form)."""

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from links.imports import CSV_COLUMNS
from links.models import Domain


class LinkListForm(forms.Form):
    """The links page's filters, as clicks.selectors.link_search takes them.
    A value that does not parse is left out."""

    SORTS = {
        "-created": "-created_at",
        "created": "created_at",
        "-clicks": "-clicks",
        "clicks": "clicks",
        "slug": "slug",
    }
    STATUSES = [
        ("", "Any status"),
        ("active", "Active"),
        ("scheduled", "Scheduled"),
        ("expired", "Expired"),
        ("disabled", "Disabled"),
    ]

    q = forms.CharField(
        label="Search", required=False, widget=forms.SearchInput(attrs={"placeholder": "Slug, title or target"})
    )
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.order_by("host"), to_field_name="host", required=False, empty_label="Any domain"
    )
    tag = forms.CharField(required=False)
    status = forms.ChoiceField(choices=STATUSES, required=False)
    # The last check of the destination (health/), apart from what the edge does with the link.
    health = forms.ChoiceField(
        label="Destination", choices=[("", "Any destination"), ("broken", "Broken")], required=False
    )
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

    def filtered(self) -> bool:
        """Whether any filter narrows the list (the sort does not)."""
        self.is_valid()
        return any(self.cleaned_data.get(name) for name in ("q", "domain", "tag", "status", "health"))

    def broken(self) -> bool:
        """Whether only the links whose destination is broken are asked for (health.selectors.broken_only)."""
        self.is_valid()
        return self.cleaned_data.get("health") == "broken"

    def search_arguments(self) -> dict:
        self.is_valid()
        data = self.cleaned_data
        return {
            "query": data.get("q") or "",
            "domain": data.get("domain"),
            "tag": data.get("tag") or None,
            "state": data.get("status") or None,
            "ordering": self.SORTS[data.get("sort") or "-created"],
        }


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


class CsvUploadForm(forms.Form):
    file = forms.FileField(label="CSV file")

    def __init__(self, *args, too_large: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.too_large = too_large
        self.max_bytes = settings.WEB_IMPORT_MAX_BYTES
        field = self.fields["file"]
        field.required = not too_large  # a file cut off by UploadLimitHandler is absent, not missing
        field.help_text = (
            f"A header row naming the columns, url at least; optional: {', '.join(name for name in CSV_COLUMNS if name != 'url')} "
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
