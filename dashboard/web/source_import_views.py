"""Imports from other shorteners on a team's Import page (importers/): the
form queues a background job (worker: `manage.py run_imports`), whose page
shows its progress as it runs (app.js polls its status) and its summary
when it ends; a dry run's page offers the import itself."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_POST

from importers.files import files_store
from importers.jobs import job_create, job_import_for_real
from importers.models import ImportJob, Source, State
from importers.summary import Summary
from links.domains import domain_list
from links.models import Domain
from slingshot.outbound import UrlRefused, check_url
from teams import access
from teams.models import Role

from .forms import posted
from .teams import current_team
from .uploads import UploadLimitHandler, limit_uploads

# Each source's fields, under its heading, in the order the page shows them.
# Without JavaScript every source's show; with it, only the chosen one's
# (app.js, showChosenSource), the others left out of what is sent.
SOURCE_FIELDS = {
    "shlink": ("shlink_url", "shlink_key"),
    "yourls": ("sql", "url_csv", "log_csv", "table_prefix", "yourls_name"),
    "kutt": ("kutt_url", "kutt_key"),
    "bitly": ("bitly_token", "bitly_group", "bitly_csv"),
    "csv": ("csv", "csv_name"),
}
# What each source needs: all of a set, or one of a tuple (the first says so).
NEEDS = {
    "shlink": {"shlink_url", "shlink_key"},
    "kutt": {"kutt_url", "kutt_key"},
    "bitly": ("bitly_token", "bitly_csv"),
    "yourls": ("sql", "url_csv"),
    "csv": {"csv"},
}
EITHER = {
    "bitly": "Give an access token, or the CSV Bitly exports.",
    "yourls": "Give a dump of its database, or the yourls_url table as CSV.",
}
# The job's files (importers/sources/__init__.py source_for) from the page's fields.
FILES = {"sql": "sql", "url_csv": "url_csv", "log_csv": "log_csv", "csv": "csv", "bitly_csv": "csv"}
# Imports of a team waiting or running at once: more are refused until one ends.
UNFINISHED_MAX = 3


def _server(source: str) -> tuple[forms.Field, forms.Field]:
    return (
        forms.URLField(
            label="Server address", required=False, assume_scheme="https", help_text=f"The {source} server's address."
        ),
        forms.CharField(
            label="API key",
            required=False,
            strip=True,
            widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
            help_text="Kept encrypted until the import ends.",
        ),
    )


def _source_name() -> forms.CharField:
    return forms.CharField(
        label="Name of this source",
        required=False,
        max_length=100,
        help_text="Tells this data from another of the same kind, imported before.",
    )


class SourceImportForm(forms.Form):
    source = forms.ChoiceField(choices=Source.choices)
    shlink_url, shlink_key = _server("Shlink")
    sql = forms.FileField(
        label="YOURLS: mysqldump (SQL)",
        required=False,
        help_text="A dump of its database as mysqldump, mariadb-dump or phpMyAdmin writes it; gzipped too.",
    )
    url_csv = forms.FileField(label="YOURLS: yourls_url as CSV", required=False, help_text="Instead of a dump.")
    log_csv = forms.FileField(
        label="YOURLS: yourls_log as CSV", required=False, help_text="With the CSV of yourls_url."
    )
    table_prefix = forms.CharField(
        label="Table prefix",
        initial="yourls_",
        required=False,
        max_length=64,
        help_text="What YOURLS' table names begin with (YOURLS_DB_PREFIX in its config.php).",
    )
    yourls_name = _source_name()
    kutt_url, kutt_key = _server("Kutt")
    bitly_token = forms.CharField(
        label="Access token",
        required=False,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
        help_text="Kept encrypted until the import ends.",
    )
    bitly_group = forms.CharField(
        label="Bitly group GUID", required=False, help_text="Empty: the token's default group."
    )
    bitly_csv = forms.FileField(
        label="Bitly: the CSV its Links page exports", required=False, help_text="Instead of a token."
    )
    csv = forms.FileField(label="Slingshot's links export (CSV)", required=False)
    csv_name = _source_name()
    domain = forms.ModelChoiceField(
        queryset=Domain.objects.none(),
        required=False,
        empty_label="the default domain",
        help_text="Where the links of the source's default domain go.",
    )
    dry_run = forms.BooleanField(label="Dry run: read everything, write nothing, say what would happen", required=False)

    def __init__(self, *args, too_large: set[str] = frozenset(), **kwargs):
        super().__init__(*args, **kwargs)
        self.too_large = too_large
        self.fields["domain"].queryset = domain_list()
        for name in FILES:
            size = f"Up to {filesizeformat(settings.IMPORTERS_UPLOAD_MAX_BYTES)}."
            self.fields[name].help_text = f"{self.fields[name].help_text} {size}".strip()

    def sections(self) -> list[tuple[str, str, list]]:
        """(source, its name, its bound fields) for each source."""
        return [(source, label, [self[name] for name in SOURCE_FIELDS[source]]) for source, label in Source.choices]

    def clean(self):
        data = super().clean()
        source = data.get("source")
        chosen = SOURCE_FIELDS.get(source, ())
        for other in SOURCE_FIELDS.values():  # another source's fields are not the import's
            for name in set(other) - set(chosen):
                self._errors.pop(name, None)
                data.pop(name, None)
        for name in self.too_large & set(chosen):
            self.add_error(name, f"The file is larger than {filesizeformat(settings.IMPORTERS_UPLOAD_MAX_BYTES)}.")
        url = data.get(f"{source}_url")
        if url:
            # What the import's requests check again, said beside the field at once.
            try:
                check_url(url)
            except UrlRefused as exc:
                self.add_error(f"{source}_url", str(exc))
        needs = NEEDS.get(source, set())  # no source: its own field says so
        if isinstance(needs, tuple):
            if not any(data.get(name) for name in needs):
                self.add_error(needs[0], EITHER[source])
        else:
            for name in sorted(needs, key=chosen.index):
                if not data.get(name):
                    self.add_error(name, "This source needs it.")
        return data

    def job_input(self) -> tuple[dict, str, dict]:
        """The job's options, its secret and its files (importers.jobs.job_create, importers.files.files_store)."""
        data, source = self.cleaned_data, self.cleaned_data["source"]
        options = {"public_only": True}  # this server fetches what a person names: not its own network
        secret = ""
        if source in ("shlink", "kutt"):
            options["url"], secret = data[f"{source}_url"], data[f"{source}_key"]
        elif source == "bitly":
            options["group"], secret = data["bitly_group"], data["bitly_token"]
        elif source == "yourls":
            options["table_prefix"], options["name"] = data["table_prefix"] or "yourls_", data["yourls_name"]
        elif source == "csv":
            options["name"] = data["csv_name"]
        files = {FILES[name]: data[name].chunks() for name in SOURCE_FIELDS[source] if name in FILES and data.get(name)}
        return options, secret, files


@login_required
@limit_uploads("IMPORTERS_UPLOAD_MAX_BYTES")
def source_import(request, limit: UploadLimitHandler):
    team = current_team(request)
    data = posted(request)
    form = SourceImportForm(data, None if data is None else request.FILES, too_large=limit.too_large)
    unfinished = ImportJob.objects.filter(team=team, state__in=[State.QUEUED, State.RUNNING]).count()
    if request.method == "POST" and unfinished >= UNFINISHED_MAX:
        form.add_error(None, f"This team has {unfinished} imports waiting or running: start another once one ends.")
    if request.method == "POST" and form.is_valid():
        options, secret, files = form.job_input()
        try:
            with transaction.atomic():
                job = job_create(
                    owner=request.user,
                    team=team,
                    source=form.cleaned_data["source"],
                    options=options,
                    secret=secret,
                    domain=form.cleaned_data["domain"],
                    dry_run=form.cleaned_data["dry_run"],
                    background=True,
                )
                files_store(job, files)
        except PermissionDenied as exc:
            messages.error(request, str(exc))
        else:
            return redirect("web:source-import-detail", pk=job.pk)
    jobs = ImportJob.objects.filter(team=team).select_related("owner")[:20]
    return render(request, "web/source_import.html", {"form": form, "jobs": jobs, "team": team})


def _job_for(request, pk: int) -> ImportJob:
    job = get_object_or_404(ImportJob.objects.select_related("team", "owner"), pk=pk)
    if not access.allows(access.role_in(request.user, job.team_id), Role.VIEWER):
        raise Http404("No such import.")
    return job


def job_status(job: ImportJob) -> dict:
    """What the job's page shows of it, and app.js updates as it runs."""
    progress = job.progress or {}
    summary = (
        Summary(**{key: value for key, value in job.summary.items() if key != "visits_there"}) if job.summary else None
    )
    return {
        "state": job.state,
        "finished": job.finished,
        "phase": progress.get("phase", ""),
        "done": progress.get("done", 0),
        "total": progress.get("total"),
        "error": job.error,
        "lines": summary.lines() if summary else [],
    }


@login_required
def source_import_detail(request, pk: int):
    job = _job_for(request, pk)
    status = job_status(job)
    if request.headers.get("Accept") == "application/json":
        return JsonResponse(status)
    return render(request, "web/source_import_detail.html", {"job": job, "status": status})


@login_required
@require_POST
def source_import_for_real(request, pk: int):
    job = _job_for(request, pk)
    try:
        access.require(request.user, job.team_id, Role.EDITOR, to="import links")
        job_import_for_real(job)
    except (PermissionDenied, ValueError, ValidationError) as exc:
        messages.error(request, str(exc))
    return redirect("web:source-import-detail", pk=job.pk)
