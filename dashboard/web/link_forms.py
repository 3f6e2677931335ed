"""A link's form: its options as links/fields.py declares them, with the
UTM builder (web/link_list_forms.py has the list's filters and bulk actions)."""

from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse
from django.utils import timezone

from links import rules
from links.domains import default_domain
from links.fields import OPTION_NAMES, LinkFields
from links.models import OTHER_TARGETS, Domain, Link
from links.preview_images import read_image
from links.unlocking import PASSWORD_MAX_LENGTH
from links.utm import UTM_PARAMETERS, with_utm
from slingshot.text import check_storable, unstorable_in

from .forms import DateTimeInput

RULES_HELP = (
    "The rules as a JSON list, as the API takes them, tried in order; a visitor goes to the url of the first rule "
    'whose conditions all hold. Conditions: {"type": "device", "value": "ios"} (or android, mobile, desktop, '
    'windows, macos, linux, chromeos), {"type": "language", "value": "en"} (en also matches en-GB), '
    '{"type": "country", "value": "DE"}, {"type": "query", "key": "ref", "value": "mail"} (value left out: the key '
    'is present), {"type": "ip", "value": "192.0.2.0/24"} (an address, a CIDR range or 192.168.1.*), '
    '{"type": "browser", "value": "firefox"} (or chrome, edge, safari, opera, android_browser), '
    '{"type": "before", "value": "2030-01-31T23:59:59Z"} (or after; kept in UTC). '
    'Example: [{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}]'
)
SPLIT_HELP = (
    "The split as a JSON list: 2 to 10 destinations sharing the visitors by weight (1 to 100). Example: "
    '[{"url": "https://example.com/a", "weight": 50}, {"url": "https://example.com/b", "weight": 50}]'
)
EXPIRED_MESSAGE = (
    "This time has passed: the short URL would answer 410 Gone from the start. Choose a later time, "
    "or tick “Save it expired” below."
)


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


def _option_field(model_field, **kwargs) -> forms.Field:
    """The form field of an option (links/fields.py), from its model field:
    its label, help text, checks and default; times in the person's zone,
    JSON lists typed in a box."""
    if isinstance(model_field, models.DateTimeField):
        kwargs.setdefault("widget", DateTimeInput)
    if isinstance(model_field, models.JSONField):
        kwargs.setdefault("form_class", JSONListField)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "code"}))
    if model_field.name in _URL_OPTIONS:
        kwargs.setdefault("widget", forms.URLInput(attrs={"placeholder": "https://"}))
        if model_field.verbose_name[:1].isupper() or model_field.verbose_name.startswith("iOS"):
            kwargs.setdefault("label", model_field.verbose_name)  # "iOS URL", not "IOS URL"
    if model_field.name == "preview_description":
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
    if isinstance(model_field, models.TextField) and model_field.max_length:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
    return model_field.formfield(**kwargs)


# Options that hold one URL: a line, not a box.
_URL_OPTIONS = (*OTHER_TARGETS, "preview_image_url")


class _LinkFormBase(forms.Form):
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
    APP_FIELDS = ("ios_url", "android_url")
    PREVIEW_FIELDS = ("preview_title", "preview_description", "preview_image_url", "preview_image_file")
    SECTIONS = (*RULE_FIELDS, *APP_FIELDS, *PREVIEW_FIELDS, "preview_image_remove")

    def __init__(
        self,
        *args,
        editing: bool = False,
        has_password: bool = False,
        teams=None,
        preview_image: str = "",
        **kwargs,
    ):
        """`teams`: those the link may move to (the person's, as an editor),
        when there is a choice; `preview_image`: the name of the image
        uploaded for its preview, if it has one."""
        super().__init__(*args, **kwargs)
        self.preview_image = preview_image
        self.preview_image_data = None  # an image chosen to upload, as read
        self.fields["preview_image_file"] = forms.FileField(
            label="Or upload an image",
            required=False,
            help_text="PNG, JPEG, WebP or GIF, at most 1 MiB and 4096 pixels a side; it stands before the URL.",
            widget=forms.FileInput(
                attrs={"accept": ",".join(f"image/{kind}" for kind in ("png", "jpeg", "webp", "gif"))}
            ),
        )
        if preview_image:
            self.fields["preview_image_remove"] = forms.BooleanField(label="Remove the uploaded image", required=False)
        self.editing = editing
        self.expired_to_confirm = False
        # Shown, after the expiry, only when that has passed (EXPIRED_MESSAGE).
        self.fields["expired_ok"] = forms.BooleanField(
            label="Save it expired", required=False, help_text="The short URL answers 410 Gone at once."
        )
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
        for field in self.fields.values():
            if isinstance(field, forms.DateTimeField):  # as the person's zone has them
                field.label = f"{field.label} ({timezone.get_current_timezone_name()})"
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
        return {name: getattr(link, name) for name in OPTION_NAMES if name != "password"}

    def link_fields(self):
        shown = []
        for name in self.fields:
            if name in UTM_PARAMETERS or name in (*self.SECTIONS, "password_typed", "expired_ok"):
                continue
            shown.append(self[name])
            if name == "expires_at" and (self.expired_to_confirm or self.data.get("expired_ok")):
                shown.append(self["expired_ok"])
        return shown

    def expiry_passed(self) -> bool:
        """Whether the expiry given (a new one, when editing) has passed."""
        expires_at = getattr(self, "cleaned_data", {}).get("expires_at")
        changed = not self.editing or "expires_at" in self.changed_data
        return bool(expires_at and changed and expires_at <= timezone.now())

    def rule_fields(self):
        return [self[name] for name in self.RULE_FIELDS]

    @property
    def app_fields(self):
        return [self[name] for name in self.APP_FIELDS]

    @property
    def preview_fields(self):
        return [self[name] for name in self.PREVIEW_FIELDS]

    @property
    def preview_host(self) -> str:
        """The short domain's host, which a card names as the link's site."""
        chosen = self["domain"].value()
        domain = Domain.objects.filter(pk=chosen).first() if str(chosen or "").isdigit() else None
        return urlsplit((domain or default_domain()).base_url()).hostname or ""

    @property
    def preview_uploaded(self) -> str:
        """Where the dashboard shows the image uploaded for the preview, or ""."""
        return reverse("web:preview-image", args=[self.preview_image]) if self.preview_image else ""

    @property
    def preview_image_shown(self) -> str:
        """The card's image: the uploaded one, else the URL typed."""
        return self.preview_uploaded or self["preview_image_url"].value() or ""

    @property
    def preview_open(self) -> bool:
        return bool(self.preview_image) or any(self[name].value() or self[name].errors for name in self.PREVIEW_FIELDS)

    def clean_preview_image_file(self):
        upload = self.cleaned_data.get("preview_image_file")
        if upload:
            data = upload.read(settings.PREVIEW_IMAGE_MAX_BYTES + 1)
            try:
                read_image(data)
            except ValidationError as exc:
                raise ValidationError(exc.message_dict["preview_image"]) from None
            self.preview_image_data = data
        return upload

    @property
    def builder_options(self) -> dict:
        """What the rows of rules and split offer (static/web/rules.js), as links/rules.py has it."""
        return {
            "types": list(rules.CONDITION_TYPES),
            "devices": list(rules.DEVICES),
            "browsers": list(rules.BROWSERS),
            "max_rules": rules.MAX_RULES,
            "max_conditions": rules.MAX_CONDITIONS,
            "max_split": rules.MAX_SPLIT,
            "max_weight": rules.MAX_WEIGHT,
        }

    def utm_fields(self):
        return [self[name] for name in UTM_PARAMETERS]

    def clean(self):
        data = super().clean()
        if data.get("url"):
            data["url"] = with_utm(data["url"], {name: data.get(name, "") for name in UTM_PARAMETERS})
        if data.get("password_typed") and not data.get("password") and not data.get("remove_password"):
            self.add_error("password", self.PASSWORD_NOT_KEPT)
        if self.expiry_passed() and not data.get("expired_ok"):
            self.expired_to_confirm = True
            self.add_error("expires_at", EXPIRED_MESSAGE)
        return data

    def values_to_check(self) -> dict:
        """The options that parsed, for links.checks.link_check: every
        problem of the link is then shown at once, not one stage at a time."""
        data = getattr(self, "cleaned_data", {})
        values = {name: data[name] for name in OPTION_NAMES if name in data and name not in self.errors}
        if not values.get("slug"):
            values.pop("slug", None)  # generated when the link is saved
        if values.get("domain") is None:
            values.pop("domain", None)
        return values

    def before_shown_again(self) -> None:
        """For a form sent with errors: a password typed in it is not
        shown again, and its field says so."""
        if self.data.get("password") and "password" not in self.errors:
            self.add_error("password", self.PASSWORD_NOT_KEPT)

    def as_link_fields(self) -> LinkFields:
        """The cleaned options as link_create takes them."""
        data = {name: self.cleaned_data[name] for name in OPTION_NAMES}
        data["slug"] = data["slug"] or None
        data["password"] = data["password"] or None
        return LinkFields(**data)

    def changes(self) -> dict:
        """The changed fields as link_update takes them: an empty password
        keeps the current one, unless it is to be removed."""
        changes = {
            name: self.cleaned_data[name] for name in self.changed_data if name in OPTION_NAMES and name != "password"
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


LinkForm = type(
    "LinkForm",
    (_LinkFormBase,),
    {
        "__module__": __name__,
        "__doc__": "A link's options (links/fields.py) as the New and Edit pages show them.",
        **forms.fields_for_model(Link, fields=OPTION_NAMES, formfield_callback=_option_field),
        # What the model's fields do not say: the target's input, the domain by
        # its host, a generated slug, the password never shown back.
        "url": forms.CharField(
            label="Target URL",
            widget=forms.URLInput(attrs={"placeholder": "https://"}),
            help_text=Link._meta.get_field("url").help_text,
        ),
        "domain": forms.ModelChoiceField(
            queryset=Domain.objects.order_by("host"),
            to_field_name="host",
            empty_label=None,
            required=False,
            help_text="The short domain the link is served on.",
        ),
        "slug": forms.CharField(
            required=False, help_text="The part after the short domain. Left empty, one is generated."
        ),
        "password": forms.CharField(
            required=False,
            max_length=PASSWORD_MAX_LENGTH,
            strip=False,
            widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
            help_text="Visitors must type it before they are sent on. Kept only as a salted hash.",
        ),
        "rules": JSONListField(
            label="Redirect rules",
            required=False,
            widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "code"}),
            help_text=RULES_HELP,
        ),
        "split": JSONListField(
            label="A/B split",
            required=False,
            widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "code"}),
            help_text=SPLIT_HELP,
        ),
    },
)
