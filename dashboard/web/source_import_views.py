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

# Which fields each source needs (the others are left aside).
NEEDS = {
    "shlink": {"url", "secret"},
    "kutt": {"url", "secret"},
    "bitly": set(),  # a token, or a CSV export
    "yourls": set(),  # a dump, or the url table as CSV
    "csv": {"csv"},
}
FILES = ("sql", "url_csv", "log_csv", "csv")
# Imports of a team waiting or running at once: more are refused until one ends.
UNFINISHED_MAX = 3


class SourceImportForm(forms.Form):
    source = forms.ChoiceField(choices=Source.choices)
    url = forms.URLField(
        label="Server address",
        required=False,
        assume_scheme="https",
        help_text="Shlink, Kutt: the server's address. Bitly: leave empty.",
    )
    secret = forms.CharField(
        label="API key or token",
        required=False,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
        help_text="Shlink, Kutt: an API key; Bitly: an access token. Kept encrypted until the import ends.",
    )
    group = forms.CharField(label="Bitly group GUID", required=False, help_text="Empty: the token's default group.")
    sql = forms.FileField(label="YOURLS: mysqldump (SQL)", required=False)
    url_csv = forms.FileField(label="YOURLS: yourls_url as CSV", required=False)
    log_csv = forms.FileField(label="YOURLS: yourls_log as CSV", required=False)
    csv = forms.FileField(label="CSV: Slingshot's links export, or Bitly's", required=False)
    table_prefix = forms.CharField(label="YOURLS table prefix", initial="yourls_", required=False, max_length=64)
    source_name = forms.CharField(
        label="Name of this source",
        required=False,
        max_length=100,
        help_text="YOURLS, CSV: tells this data from another of the same kind, imported before.",
    )
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
            self.fields[name].help_text = f"Up to {filesizeformat(settings.IMPORTERS_UPLOAD_MAX_BYTES)}."

    def clean_url(self) -> str:
        # What the import's requests check again, said beside the field at once.
        url = self.cleaned_data.get("url") or ""
        if url:
            try:
                check_url(url)
            except UrlRefused as exc:
                raise ValidationError(str(exc)) from None
        return url

    def clean(self):
        data = super().clean()
        for name in self.too_large:
            self.add_error(name, f"The file is larger than {filesizeformat(settings.IMPORTERS_UPLOAD_MAX_BYTES)}.")
        source = data.get("source")
        for name in NEEDS.get(source, ()):
            if not data.get(name):
                self.add_error(name, "This source needs it.")
        if source == "yourls" and not (data.get("sql") or data.get("url_csv")):
            self.add_error("sql", "Give a mysqldump, or the yourls_url table as CSV.")
        if source == "bitly" and not (data.get("secret") or data.get("csv")):
            self.add_error("secret", "Give an access token, or the CSV Bitly exports.")
        return data


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
        data = form.cleaned_data
        source = data["source"]
        try:
            with transaction.atomic():
                job = job_create(
                    owner=request.user,
                    team=team,
                    source=source,
                    options={
                        "url": data["url"] or "",
                        "group": data["group"],
                        "table_prefix": data["table_prefix"] or "yourls_",
                        "name": data["source_name"],
                        "public_only": True,  # this server fetches what a person names: not its own network
                    },
                    secret=data["secret"] if "secret" in NEEDS[source] or source == "bitly" else "",
                    domain=data["domain"],
                    dry_run=data["dry_run"],
                    background=True,
                )
                files_store(job, {name: data[name].chunks() for name in FILES if data.get(name)})
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
