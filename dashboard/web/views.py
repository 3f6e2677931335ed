"""Dashboard pages. Views stay thin: forms parse, the services of links/ and
api/ act, the selectors read."""

import io
from datetime import datetime, timedelta, timezone

import segno
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import get_template
from django.urls import reverse
from django.utils import timezone as tz
from django.utils.safestring import mark_safe
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from api import services as token_services
from api.models import ApiToken
from clicks import accounting as clicks_accounting
from clicks import selectors as clicks_selectors
from clicks.export import CHUNK as EXPORT_CHUNK
from clicks.export import FORMATS, export_lines
from clicks.selectors import INTERVALS, ReportTooLarge, link_totals, range_stats
from clicks.stores import import_lag_of_every_store
from links import domains, imports, selectors, services
from links.models import Domain, Link, LinkImport
from links.redis import RedisUnavailable, quick_call
from slingshot.db import reports_db
from teams import access
from teams.models import Role, Team
from teams.services import personal_team

from . import forms, reports
from . import services as web_services
from .middleware import remember_time_zone
from .selectors import OVERVIEW_DAYS, clicks_per_rule, edge_health, overview_for, overview_version
from .teams import current_membership
from .uploads import UploadLimitHandler

RECENT_CLICKS = 20
ORPHAN_DAYS = (1, 7, 30, 90)
ACCOUNTING_DAYS = (1, 2, 8)


class SignInView(auth_views.LoginView):
    """Django's sign-in; django-axes throttles it like every other way to
    sign in (slingshot/signin.py)."""

    template_name = "web/sign_in.html"
    redirect_authenticated_user = True


def _link_or_404(request, slug: str, needed: str = Role.VIEWER) -> Link:
    """The link of the slug on the domain `?domain=` names (the default
    domain without it), as the API addresses links, with `role` (the
    person's in its team); a 404 for one they do not see, a 403 for one
    their role does not let them change."""
    try:
        link = selectors.link_for(user=request.user, slug=slug, host=request.GET.get("domain"))
    except Link.DoesNotExist:
        raise Http404("No such link.") from None
    if not access.allows(link.role, needed):
        raise PermissionDenied(f"Changing links takes the {needed} role in their team; yours is {link.role}.")
    return link


def _current_team(request) -> Team:
    """The team chosen in the navigation (web/teams.py)."""
    membership = current_membership(request)
    return membership.team if membership else personal_team(request.user)


def _edits_in(request, team: Team) -> bool:
    """Whether the person may create and change links in the team."""
    membership = current_membership(request)
    if membership and membership.team_id == team.pk and not access.acts_everywhere(request.user):
        return access.allows(membership.role, Role.EDITOR)
    return access.allows(access.role_in(request.user, team.pk), Role.EDITOR)


def _detail(link: Link):
    return redirect(reverse("web:link-detail", args=[link.slug]) + link.domain_query)


@login_required
def overview(request):
    now = datetime.now(timezone.utc)
    totals = overview_for(request.user, now=now)
    context = {
        "totals": totals,
        "chart": reports.chart(
            totals.series,
            start=now - timedelta(days=OVERVIEW_DAYS - 1),
            end=now,
            interval="day",
            zone=timezone.utc,
            now=now,
            label="Clicks per day (UTC), bots left out",
        ),
    }
    if selectors.sees_operations(request.user):
        context["operations"] = True
        try:
            context["lag"] = quick_call(lambda client: import_lag_of_every_store(client=client), what="import lag")
        except RedisUnavailable as exc:
            context["lag_error"] = str(exc)
        context["edge"] = edge_health()
        try:
            context["lasting"] = quick_call(
                lambda client: clicks_accounting.lasting_differences(client=client), what="accounting"
            )
        except RedisUnavailable:
            context["lasting"] = None
        context["edge_health_url"] = settings.EDGE_HEALTH_URL
    if request.GET.get("fragment"):
        return render(request, "web/_overview.html", context)
    context["live_version"] = overview_version(request.user)
    return render(request, "web/overview.html", context)


@login_required
def overview_live(request):
    """A number that changes when the clicks of the person's links do: the overview polls it."""
    return JsonResponse({"version": overview_version(request.user)})


class _RowUrls:
    """The addresses of a row of the links list, each name reversed once per
    page rather than once per row (reverse() cost a 50-row page more than its
    queries): the slug takes the place of a stand-in, and needs no quoting
    (A-Z, a-z, 0-9, '_' and '-', Link.slug)."""

    STAND_IN = "row-slug-stand-in"
    NAMES = {
        "detail": ("web:link-detail",),
        "qr": ("web:link-qr", "png"),
        "edit": ("web:link-edit",),
        "toggle": ("web:link-toggle",),
    }

    def __init__(self) -> None:
        self.parts = {}
        for key, (name, *rest) in self.NAMES.items():
            head, _, tail = reverse(name, args=[self.STAND_IN, *rest]).partition(self.STAND_IN)
            self.parts[key] = (head, tail)

    def of(self, link: Link) -> dict[str, str]:
        query = link.domain_query
        urls = {key: head + link.slug + tail + query for key, (head, tail) in self.parts.items()}
        urls["qr"] += "&download=1" if query else "?download=1"
        return urls


@login_required
def link_list(request):
    form = forms.LinkListForm(request.GET)
    team = _current_team(request)
    links = selectors.link_search(user=request.user, team=team.pk, **form.search_arguments()).using(
        reports_db(request.user)
    )
    # The page's ids first, then those rows with their click totals: PostgreSQL
    # would otherwise join the totals of every row an OFFSET skips too.
    page = Paginator(links.values_list("pk", flat=True), settings.WEB_LINKS_PER_PAGE).get_page(request.GET.get("page"))
    by_id = links.in_bulk(list(page))
    page.object_list = [by_id[pk] for pk in page]
    states = selectors.link_states(page.object_list)
    row_urls = _RowUrls()
    for link in page.object_list:
        link.state = states[link.pk]
        link.urls = row_urls.of(link)
    query = request.GET.copy()
    query.pop("page", None)
    edits = _edits_in(request, team)
    rows = get_template("web/_link_rows.html", using="jinja2").render({"links": page.object_list, "edits": edits})
    return render(
        request,
        "web/link_list.html",
        {
            "form": form,
            "page": page,
            "query": query.urlencode(),
            "edits": edits,
            "rows": mark_safe(rows),  # Jinja2 escaped every value (web/jinja_env.py)
        },
    )


@login_required
@require_POST
def link_bulk(request):
    """An action on the links selected in the list; deleting asks first."""
    # Links by id: a slug is unique on its domain only.
    selected = [value for value in request.POST.getlist("selected") if value.isdigit()][: settings.WEB_LINKS_PER_PAGE]
    # Of the current team's links, as the list shows them; changing them takes an editor (the services check).
    team = _current_team(request)
    links = list(selectors.links_visible_to(request.user, team=team.pk).filter(pk__in=selected).order_by("slug"))
    data = request.POST.copy()
    data.setlist("selected", [str(link.pk) for link in links])  # only those this person sees
    form = forms.BulkForm(data)
    form.fields["selected"].choices = [(str(link.pk), link.slug) for link in links]
    if not form.is_valid():
        for message in [
            *form.non_field_errors(),
            *(f"{form[name].label}: {error}" for name in ("action", "tag", "selected") for error in form[name].errors),
        ]:
            messages.error(request, message)
        return redirect("web:link-list")
    action, chosen = (
        form.cleaned_data["action"],
        [link for link in links if str(link.pk) in form.cleaned_data["selected"]],
    )
    if action == "export":
        response = StreamingHttpResponse(
            imports.export_lines(
                selectors.with_click_totals(
                    selectors.links_visible_to(request.user, team=team.pk).filter(pk__in=[link.pk for link in chosen])
                ).iterator()
            ),
            content_type="text/csv; charset=utf-8",
        )
        response["Content-Disposition"] = 'attachment; filename="links.csv"'
        return response
    if action == "delete" and not form.cleaned_data["confirm"]:
        return render(request, "web/link_bulk_delete.html", {"links": chosen})
    try:
        changed = services.link_bulk_change(
            links=chosen, action=action, tag=form.cleaned_data["tag"], actor=request.user
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request,
            f"{dict(form.fields['action'].choices)[action].rstrip('…')}: {changed} link{'s' if changed != 1 else ''} changed.",
        )
    return redirect("web:link-list")


@login_required
def link_export(request):
    links = selectors.link_search(
        user=request.user, team=_current_team(request).pk, **forms.LinkListForm(request.GET).search_arguments()
    ).using(reports_db(request.user))
    response = StreamingHttpResponse(
        imports.export_lines(links.iterator(chunk_size=2000)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="links.csv"'
    return response


@login_required
def link_create(request):
    form = forms.LinkForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            link = services.link_create(owner=request.user, team=_current_team(request), **form.service_arguments())
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, f"Created {link.short_url}")
            return _detail(link)
    if form.is_bound:
        form.before_shown_again()
    return render(request, "web/link_form.html", {"form": form, "title": "New link"})


@login_required
def link_edit(request, slug: str):
    link = _link_or_404(request, slug, Role.EDITOR)
    teams = access.teams_of(request.user, Role.EDITOR)
    form = forms.LinkForm(
        request.POST or None,
        initial={**forms.LinkForm.initial_for(link), "team": link.team_id},
        editing=True,
        has_password=link.has_password,
        teams=teams if teams.count() > 1 else None,
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.link_update(link=link, actor=request.user, **form.changes())
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, "Saved.")
            return _detail(link)
    if form.is_bound:
        form.before_shown_again()
    return render(request, "web/link_form.html", {"form": form, "title": f"Edit {slug}", "link": link})


def _staff(user) -> bool:
    return user.is_active and (user.is_staff or user.is_superuser)


@login_required
def domain_list(request):
    """Every domain; staff add, change and remove them (links/domains.py)."""
    form = forms.DomainForm(request.POST or None)
    if request.method == "POST":
        if not _staff(request.user):
            raise PermissionDenied("Only staff manage domains.")
        if form.is_valid():
            try:
                domain = domains.domain_create(**form.cleaned_data)
            except ValidationError as exc:
                forms.add_service_errors(form, exc)
            else:
                messages.success(request, f"Added {domain.host}.")
                return redirect("web:domain-list")
    return render(
        request,
        "web/domain_list.html",
        {"domains": domains.domain_list(), "form": form, "staff": _staff(request.user)},
    )


def _domain_or_404(host: str) -> Domain:
    """The domain of a host as the API finds it (links.domains.domain_for_host),
    or a 404 for anything else, a host that cannot be one included."""
    try:
        return domains.domain_for_host(host)
    except Domain.DoesNotExist:
        raise Http404("No such domain.") from None


@login_required
def domain_edit(request, host: str):
    if not _staff(request.user):
        raise PermissionDenied("Only staff manage domains.")
    domain = _domain_or_404(host)
    form = forms.DomainForm(request.POST or None, instance=domain, editing=True)
    if request.method == "POST" and form.is_valid():
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        try:
            domains.domain_update(domain=Domain.objects.get(pk=domain.pk), **changes)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved {domain.host}.")
            return redirect("web:domain-list")
    return render(request, "web/domain_form.html", {"form": form, "domain": domain})


@login_required
@require_POST
def domain_delete(request, host: str):
    if not _staff(request.user):
        raise PermissionDenied("Only staff manage domains.")
    domain = _domain_or_404(host)
    try:
        domains.domain_delete(domain=domain)
    except domains.DomainInUse as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Removed {host}.")
    return redirect("web:domain-list")


@login_required
@require_POST
def link_toggle(request, slug: str):
    link = _link_or_404(request, slug, Role.EDITOR)
    services.link_update(link=link, actor=request.user, is_active=not link.is_active)
    messages.success(request, f"{link.slug} is now {'active' if link.is_active else 'disabled'}.")
    if request.POST.get("next") == "list":
        return redirect("web:link-list")
    return _detail(link)


@login_required
def link_delete(request, slug: str):
    link = _link_or_404(request, slug, Role.EDITOR)
    if request.method == "POST":
        services.link_delete(link=link, actor=request.user)
        messages.success(request, f"Deleted {slug}.")
        return redirect("web:link-list")
    return render(request, "web/link_delete.html", {"link": link})


def _link_report(request, link: Link) -> dict:
    """What the link page's report shows: its range, totals against the
    period before, chart, breakdowns and recent clicks (web/reports.py)."""
    now = datetime.now(timezone.utc)
    zone = tz.get_current_timezone()
    form = forms.ReportForm(request.GET, now=now, zone=zone, since=link.created_at)
    span = form.span if form.is_valid() else form.default_span()  # the defaults, below the form's errors
    too_large = None
    try:
        stats = range_stats(span, link_ids=[link.pk], top=10, now=now)
    except ReportTooLarge as exc:
        too_large = exc.messages[0]
        span = form.default_span()
        stats = range_stats(span, link_ids=[link.pk], top=10, now=now)
    filters = dict(span.filters)
    query = request.GET.copy()
    recent = selectors.clicks_visible_to(request.user, start=span.start, end=span.end).filter(link_id=link.pk)
    recent = recent.filter(**filters) if span.include_bots else recent.filter(is_bot=False, **filters)
    what = "" if span.include_bots else ", bots left out"
    export_base = reverse("web:link-clicks-export", args=[link.slug])
    # The link's domain rides along (link_clicks_export finds the link as this page does).
    domain = {"domain": link.domain.host} if link.domain_query else {}
    export_args = {
        "start": span.start,
        "end": span.end,
        "include_bots": span.include_bots,
        "filters": {**filters, **domain},
    }
    return {
        "link": link,
        "form": form,
        "span": span,
        "last_day": span.end - timedelta(days=1),
        "zone_name": tz.get_current_timezone_name(),
        "intervals": list(INTERVALS),
        "preset": form.preset if form.is_valid() and not too_large else reports.DEFAULT_PRESET,
        "presets": [
            (name, label, reports.href(query, range=name, **{"from": None, "to": None, "interval": None}))
            for name, label in reports.PRESETS.items()
        ],
        "errors": form.errors,
        "too_large": too_large,
        "stats": stats,
        "totals_rows": [
            (name, label, change)
            for (name, change), label in zip(
                reports.totals_changes(stats.totals, stats.previous).items(),
                ("Clicks", "Unique visitors", "Bots"),
                strict=True,
            )
        ],
        "filters": reports.active_filters(filters, query),
        "breakdowns": reports.breakdowns(stats, filters, query),
        "bots_href": reports.href(query, include_bots=None if span.include_bots else "true"),
        "recent": recent.order_by("-occurred_at")[:RECENT_CLICKS],
        "rule_clicks": clicks_per_rule(link, stats),
        "export": {kind: reports.export_url(export_base, kind=kind, **export_args) for kind in FORMATS},
        "query": query.urlencode(),
        "chart": reports.chart(
            stats.series,
            start=span.start,
            end=span.end,
            interval=span.interval,
            zone=zone,
            now=now,
            label=f"Clicks per {span.interval} ({tz.get_current_timezone_name()}){what}",
        ),
    }


@login_required
def link_detail(request, slug: str):
    link = _link_or_404(request, slug)
    totals = link_totals(link_ids=[link.pk])[link.pk]
    context = _link_report(request, link)
    visits = selectors.link_visits([link])
    context.update(
        edits=access.allows(link.role, Role.EDITOR),
        short_url=link.short_url,
        state=selectors.link_state(link, visits=(visits or {}).get(link.pk)),
        # None: Redis did not answer; absent: no limit.
        # Requests over the limit count too: the visits served are at most the limit.
        visits=None if visits is None else min(visits.get(link.pk, 0), link.max_visits or 0),
        totals=totals,
        live_version=totals.clicks,
    )
    return render(request, "web/link_detail.html", context)


@login_required
def link_report(request, slug: str):
    """The report of the link page alone, which the page fetches again as clicks come in."""
    link = _link_or_404(request, slug)
    return render(request, "web/_link_report.html", _link_report(request, link))


@login_required
def link_live(request, slug: str):
    """A number that changes when the link's clicks do: the page polls it (docs/dashboard.md)."""
    link = _link_or_404(request, slug)
    return JsonResponse({"version": link_totals(link_ids=[link.pk])[link.pk].clicks})


@login_required
def link_clicks_export(request, slug: str):
    """The raw clicks of the link page's report (its range, bots and filters)
    as CSV or JSON lines, streamed from a server-side cursor."""
    link = _link_or_404(request, slug)
    kind = request.GET.get("format", "csv")
    if kind not in FORMATS:
        return HttpResponse("format is csv or jsonl.", status=400, content_type="text/plain")
    form = forms.ClickExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse(form.errors.as_text(), status=400, content_type="text/plain")
    data = form.cleaned_data
    clicks = selectors.clicks_visible_to(request.user, start=data["from"], end=data["to"]).filter(link_id=link.pk)
    clicks = clicks.filter(**form.filters)
    if not data["include_bots"]:
        clicks = clicks.filter(is_bot=False)
    lines = export_lines(clicks.using(reports_db()).order_by("occurred_at").iterator(chunk_size=EXPORT_CHUNK), kind)
    response = StreamingHttpResponse(lines, content_type=FORMATS[kind])
    response["Content-Disposition"] = f'attachment; filename="{link.slug}-clicks.{kind}"'
    return response


def _staff_only(request) -> None:
    if not selectors.sees_operations(request.user):
        raise PermissionDenied("For staff and superusers.")


@login_required
def orphan_visits(request):
    """Visits to paths that are no link, for staff (docs/dashboard.md)."""
    _staff_only(request)
    form = forms.OrphanVisitsForm(request.GET, choices=ORPHAN_DAYS, default=7)
    days, include_bots = form.days(), form.include_bots()
    now = datetime.now(timezone.utc)
    try:
        found, too_large = (
            clicks_selectors.orphan_visits(
                start=now - timedelta(days=days),
                end=now,
                include_bots=include_bots,
                domain=form.orphan_domain(),
                kind=form.orphan_kind(),
            ),
            None,
        )
    except ReportTooLarge as exc:
        found, too_large = None, exc.messages[0]
    return render(
        request,
        "web/orphan_visits.html",
        {
            "form": form,
            "days": days,
            "found": found,
            "too_large": too_large,
            "choices": ORPHAN_DAYS,
            "kinds": clicks_selectors.ORPHAN_KIND_LABELS,
        },
    )


@login_required
def accounting(request):
    """Per hour, the clicks the edges served beside those stored, for staff."""
    _staff_only(request)
    form = forms.DaysForm(request.GET, choices=ACCOUNTING_DAYS, default=1)
    days = form.days()
    now = datetime.now(timezone.utc)
    try:
        hours = quick_call(
            lambda client: clicks_accounting.accounts(
                client=client, start=now - timedelta(days=days), end=now, now=now
            ),
            what="accounting",
        )
        error = None
    except RedisUnavailable as exc:
        hours, error = [], str(exc)
    return render(
        request,
        "web/accounting.html",
        {
            "form": form,
            "hours": hours,
            "error": error,
            "choices": ACCOUNTING_DAYS,
            "days": days,
            "lasting": [hour for hour in hours if hour.lasting],
            "grace": settings.ACCOUNTING_GRACE_MINUTES,
        },
    )


def link_unlock_moved(request, rest: str = ""):
    """Where edges older than their own password pages send the visitors of
    a link with a password (docs/contract.md, "Upgrading"): the same answer
    for every path, so that it tells nothing of any link, until the edges
    are upgraded and ask for the password themselves."""
    response = render(request, "web/link_unlock_moved.html", status=503)
    response["Retry-After"] = "60"
    return response


@login_required
def link_qr(request, slug: str, kind: str):
    link = _link_or_404(request, slug)
    buffer = io.BytesIO()
    segno.make(link.short_url, error="m").save(buffer, kind=kind, scale=10, border=2)
    response = HttpResponse(buffer.getvalue(), content_type={"png": "image/png", "svg": "image/svg+xml"}[kind])
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{link.slug}.{kind}"'
    return response


@csrf_exempt  # checked by _link_import, once the upload handler is in place
@login_required
def link_import(request):
    limit = UploadLimitHandler(request, max_bytes=settings.WEB_IMPORT_MAX_BYTES)
    request.upload_handlers.insert(0, limit)
    return _link_import(request, limit)


@csrf_protect
def _link_import(request, limit: UploadLimitHandler):
    if request.method != "POST":
        return render(request, "web/link_import.html", {"form": forms.CsvUploadForm()})
    form = forms.CsvUploadForm(request.POST, request.FILES, too_large="file" in limit.too_large)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            link_import = imports.import_upload(
                owner=request.user, team=_current_team(request), filename=upload.name, content=upload.read()
            )
        except ValidationError as exc:
            form.add_error("file", exc)
        else:
            return redirect("web:link-import-detail", pk=link_import.pk)
    return render(request, "web/link_import.html", {"form": form})


@login_required
def link_import_detail(request, pk: int):
    link_import = get_object_or_404(LinkImport, pk=pk, owner=request.user)
    rows = link_import.rows
    valid = [row for row in rows if not row["errors"]]
    return render(
        request,
        "web/link_import_detail.html",
        {
            "import": link_import,
            "columns": imports.CSV_COLUMNS,
            "valid": len(valid),
            "error_rows": [row for row in rows if row["errors"]][:500],
            "preview_rows": [
                (row["line"], [row["fields"].get(name, "") for name in imports.CSV_COLUMNS]) for row in valid[:20]
            ],
        },
    )


@login_required
@require_POST
def link_import_run(request, pk: int):
    link_import = imports.import_run_chunk(link_import=get_object_or_404(LinkImport, pk=pk, owner=request.user))
    if request.headers.get("Accept") == "application/json":
        return JsonResponse(
            {
                "position": link_import.position,
                "total": link_import.total,
                "created": link_import.created,
                "failed": link_import.failed,
                "done": link_import.done,
            }
        )
    return redirect("web:link-import-detail", pk=link_import.pk)


CREATED_TOKEN = "created_token"  # the session key that carries a new token's secret to the one page that shows it


@login_required
def tokens(request):
    """Post/redirect/get: a create redirects here, and the secret rides in
    the session to the next page only, so a reload never creates another."""
    form = forms.TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token, raw = token_services.token_create(
                user=request.user, team=_current_team(request), **form.cleaned_data
            )
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            request.session[CREATED_TOKEN] = {"pk": token.pk, "raw": raw}
            return redirect("web:tokens")
    tokens = ApiToken.objects.filter(user=request.user).select_related("team")
    created = request.session.pop(CREATED_TOKEN, None) if request.method == "GET" else None
    if created:
        created = {"token": next((token for token in tokens if token.pk == created["pk"]), None), "raw": created["raw"]}
    return render(request, "web/tokens.html", {"form": form, "created": created, "tokens": tokens})


@login_required
def time_zone(request):
    """The zone the pages show times and make days in. app.js posts the
    browser's zone with `guess` on a first visit, which never overrides a choice."""
    guess = request.method == "POST" and "guess" in request.POST
    form = forms.TimeZoneForm(request.POST or None, initial={"time_zone": tz.get_current_timezone_name()})
    if request.method == "POST" and form.is_valid():
        preferences = web_services.preferences_set_time_zone(
            user=request.user, time_zone=form.cleaned_data["time_zone"], only_if_unset=guess
        )
        remember_time_zone(request, preferences.time_zone)
        if guess:
            return JsonResponse({"time_zone": preferences.time_zone})
        messages.success(request, f"Times are now shown in {preferences.time_zone}.")
        return redirect("web:time-zone")
    if guess:
        return JsonResponse({"errors": form.errors}, status=400)
    return render(request, "web/time_zone.html", {"form": form})


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token = token_services.token_revoke(token=token, actor=request.user)
    messages.success(request, f"Revoked {token}.")
    return redirect("web:tokens")
