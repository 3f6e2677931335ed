"""The forms of the pages of domains, tokens, teams, webhooks, people and
preferences, and how a service's ValidationError is shown on a form."""

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, QueryDict
from django.utils import timezone

from clicks.calendar import time_zones
from links.models import Domain
from teams.models import RETENTION_DAYS_MAX, IpStorage, Role
from tokens.models import ApiToken
from webhooks.event_types import SUBSCRIBABLE
from webhooks.models import Webhook


def posted(request: HttpRequest) -> QueryDict | None:
    """A form's data: what a POST sent, even nothing at all, so that the
    form is bound and says what is missing; None, an unbound form, for a GET."""
    return request.POST if request.method == "POST" else None


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


class TimeZoneForm(forms.Form):
    time_zone = forms.ChoiceField(
        label="Time zone",
        help_text="Pages show times in it, and reports make their days in it.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["time_zone"].choices = [(name, name) for name in sorted(time_zones())]


class DomainForm(forms.ModelForm):
    """A domain's fields; links.domains checks and publishes them."""

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
        ]
        # One URL each: a line, not a box.
        widgets = {
            "root_url": forms.URLInput(attrs={"placeholder": "https://"}),
            "not_found_url": forms.URLInput(attrs={"placeholder": "https://"}),
            "expired_url": forms.URLInput(attrs={"placeholder": "https://"}),
            "apple_app_site_association": forms.Textarea(
                attrs={"rows": 6, "spellcheck": "false", "placeholder": '{"applinks": {"details": [...]}}'}
            ),
            "assetlinks": forms.Textarea(
                attrs={"rows": 6, "spellcheck": "false", "placeholder": '[{"relation": [...], "target": {...}}]'}
            ),
        }
        help_texts = {
            "host": "A host name such as go.example.com, whose DNS points at the edge.",
            "root_url": "Where / redirects. Empty: a 404 (the default domain: EDGE_ROOT_URL).",
            "not_found_url": "Where unknown and disabled slugs redirect. Empty: a 404 (the default domain: "
            "EDGE_NOT_FOUND_URL).",
            "expired_url": "Where links that have expired or had all their visits redirect, unless a link has its "
            "own. Empty: a 410 page.",
            "https_redirect": "Plain HTTP requests to this domain are redirected to HTTPS.",
            "apple_app_site_association": "JSON served at /.well-known/apple-app-site-association, so that your "
            "iOS app opens this domain's links. Empty: none.",
            "assetlinks": "JSON served at /.well-known/assetlinks.json, so that your Android app opens this "
            "domain's links. Empty: none.",
        }

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["host"]
        else:  # set on the domain's own page, once it is there
            del self.fields["apple_app_site_association"], self.fields["assetlinks"]

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


class TeamVisitsForm(forms.Form):
    """How long a team keeps its visits and what of its visitors' addresses
    (teams.services.team_visit_settings)."""

    visit_retention_days = forms.IntegerField(
        label="Delete visits older than (days)",
        required=False,
        min_value=1,
        max_value=RETENTION_DAYS_MAX,
        help_text="Counted back from the last UTC midnight; empty keeps them.",
    )
    ip_storage = forms.ChoiceField(label="Visitors' addresses kept", choices=IpStorage.choices, required=False)

    def __init__(self, *args, service_default: str, **kwargs):
        super().__init__(*args, **kwargs)
        kept = dict(IpStorage.choices)[service_default]
        self.fields["ip_storage"].choices = [
            (value, f"as the service keeps them: {kept}" if not value else label) for value, label in IpStorage.choices
        ]


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


class EventCheckboxes(forms.CheckboxSelectMultiple):
    """A box for each event; the form's error summary (web/_form_errors.html)
    links to the first, where Django's own widget gives no id to link to."""

    def id_for_label(self, id_, index="0"):
        return super().id_for_label(id_, index)


class GroupRoleForm(forms.Form):
    """A group at the OpenID provider and the role it gives in the team (teams/groups.py)."""

    group = forms.CharField(
        max_length=200,
        help_text="As the provider names it in the groups claim (OIDC_GROUPS_CLAIM).",
    )
    role = forms.ChoiceField(choices=Role.choices)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "group_role_%s")  # apart from the add-member form's, on the same page
        super().__init__(*args, **kwargs)


class WebhookForm(forms.ModelForm):
    """A new webhook's fields; webhooks.services checks its address (https,
    a public host) and its events."""

    events = forms.MultipleChoiceField(
        choices=[(name, name) for name in SUBSCRIBABLE],
        widget=EventCheckboxes,
        help_text="What it is sent. A test event (webhook.test) is sent when you ask for one.",
    )

    class Meta:
        model = Webhook
        fields = ["url", "description", "events"]
        labels = {"url": "URL"}
        widgets = {"url": forms.URLInput(attrs={"placeholder": "https://"})}
        help_texts = {
            "url": "The https:// address the events are POSTed to, on a public host.",
            "description": "What receives them, for you and the other admins (optional).",
        }
