"""The report pages: the overview, a link's page with its report, live
updates and export, and the operators' orphan visits and accounting."""

from datetime import datetime, timedelta, timezone

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone as tz

from clicks import accounting as clicks_accounting
from clicks import orphans as clicks_orphans
from clicks import selectors as clicks_selectors
from clicks.calendar import INTERVALS
from clicks.export import FORMATS, export_response
from clicks.report_queries import ReportTooLarge, one_snapshot
from clicks.reports import link_totals, range_stats
from clicks.stores import import_lag_of_every_store
from health.selectors import health_of
from links import selectors
from links.models import Link
from slingshot.redis import RedisUnavailable, quick_call
from teams import access
from teams.models import Role

from . import live, report_forms, reports
from .link_views import link_or_404, shows_preview
from .selectors import OVERVIEW_DAYS, clicks_per_rule, edge_health, overview_for, overview_version

RECENT_CLICKS = 20
# Seconds a link's live parts, once made, serve every reader of the link (link_report).
REPORT_KEPT = 2


ORPHAN_DAYS = (1, 7, 30, 90)


ACCOUNTING_DAYS = (1, 2, 8)


@login_required
def overview(request):
    if request.GET.get("fragment"):
        return HttpResponse(overview_part(request))
    context = _overview(request)
    context["live_events"] = live.overview_events_url(request)
    return render(request, "web/overview.html", context)


def overview_part(request) -> str:
    """The overview's figures alone, which it fetches again (or serve_live
    pushes it, web/live_parts.py) as its clicks come in."""
    return render_to_string("web/_overview.html", _overview(request))


def _overview(request) -> dict:
    now = datetime.now(timezone.utc)
    # Read first: clicks stored after it make the page fetch the figures again.
    live_version = overview_version(request.user)
    totals = overview_for(request.user, now=now)
    context = {
        "live_version": live_version,
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
    return context


@login_required
def overview_live(request):
    """A number that changes when the clicks of the person's links do: the
    overview polls it while it has no events (web/live.py), and takes a new
    events URL from it."""
    return JsonResponse({"version": overview_version(request.user), "events": live.overview_events_url(request)})


def _link_report(request, link: Link, *, alias: str) -> dict:
    """What the link page's report shows: its range, totals against the
    period before, chart, breakdowns and recent clicks (web/reports.py),
    the clicks read from the database `alias`."""
    now = datetime.now(timezone.utc)
    zone = tz.get_current_timezone()
    form = report_forms.ReportForm(request.GET, now=now, zone=zone, since=link.created_at)
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
    recent = (
        clicks_selectors.clicks_visible_to(request.user, start=span.start, end=span.end)
        .filter(link_id=link.pk)
        .using(alias)
    )
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
        "recent": list(recent.order_by("-occurred_at")[:RECENT_CLICKS]),
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


def _link_live(request, link: Link) -> dict:
    """What the link page shows of its link's clicks, which it fetches again
    as they come in (web/_link_live.html): the all-time totals and the visits
    served beside its state, the clicks per rule and the report. The totals
    and the report are read in one snapshot, so that they count the same
    clicks; the totals are the version the page compares with link_live's."""
    with one_snapshot() as alias:
        totals = link_totals(link_ids=[link.pk])[link.pk]
        context = _link_report(request, link, alias=alias)
    limit = selectors.visit_limit(link)
    context.update(
        state=selectors.link_state(link, visits=limit and limit.served),
        limit=limit,
        totals=totals,
    )
    return context


@login_required
@shows_preview
def link_detail(request, slug: str):
    link = link_or_404(request, slug)
    context = _link_live(request, link)
    context.update(
        edits=access.allows(link.role, Role.EDITOR),
        short_url=link.short_url,
        live_events=live.link_events_url(request, link),
        screen_action=settings.SCREEN_ACTION,
        last_check=health_of(link),
        checks_on=settings.LINK_HEALTH_HOURS > 0,
        after_the_end=_after_the_end(link),
        preview_image_shown=(
            reverse("web:preview-image", args=[link.preview_image]) if link.preview_image else link.preview_image_url
        ),
    )
    return render(request, "web/link_detail.html", context)


def _after_the_end(link) -> int | None:
    """Visits after a link with an end (an expiry, a visit limit) reached it; None for a link without one."""
    if link.expires_at is None and link.max_visits is None:
        return None
    try:
        return clicks_orphans.visits_after_the_end(host=link.domain.host, slug=link.slug)
    except ReportTooLarge:
        return None


@login_required
def link_report(request, slug: str):
    """The parts of the link page that its clicks change, alone: the page
    fetches them again as clicks come in (docs/dashboard.md). Each open page
    of a link asks for them at once when its clicks come (web/live.py), so
    they are made once for everyone who reads the link, for each count of
    its clicks, time zone and choice of range, and kept REPORT_KEPT seconds
    in this process: what they show is the same for every reader."""
    return HttpResponse(link_part(request, link_or_404(request, slug)))


def link_part(request, link: Link) -> str:
    """link_report's HTML: the page fetches it, or serve_live pushes it (web/live_parts.py)."""
    version = link_totals(link_ids=[link.pk])[link.pk].clicks
    key = f"web:link-report:{link.pk}:{version}:{tz.get_current_timezone_name()}:{request.GET.urlencode()}"
    content = cache.get(key)
    if content is None:
        content = render_to_string("web/_link_live.html", _link_live(request, link))
        cache.set(key, content, REPORT_KEPT)
    return content


@login_required
def link_live(request, slug: str):
    """A number that changes when the link's clicks do: the page polls it
    while it has no events (web/live.py), and takes a new events URL from
    it (docs/dashboard.md)."""
    link = link_or_404(request, slug)
    return JsonResponse(
        {
            "version": link_totals(link_ids=[link.pk])[link.pk].clicks,
            "events": live.link_events_url(request, link),
        }
    )


def live_events(request):
    """/live/events is served by `manage.py serve_live` behind the front
    (dashboard/nginx.conf); reached here, there is none, and pages poll."""
    return HttpResponse("Pushed clicks are served by serve_live.", status=503, content_type="text/plain")


@login_required
def link_clicks_export(request, slug: str):
    """The raw clicks of the link page's report (its range, bots and filters)
    as CSV or JSON lines, streamed (clicks/export.py)."""
    link = link_or_404(request, slug)
    kind = request.GET.get("format", "csv")
    if kind not in FORMATS:
        return HttpResponse("format is csv or jsonl.", status=400, content_type="text/plain")
    form = report_forms.ClickExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse(form.errors.as_text(), status=400, content_type="text/plain")
    data = form.cleaned_data
    clicks = clicks_selectors.clicks_filter(request.user, start=data["from"], end=data["to"]).narrowed(
        link_id=link.pk, dimensions=form.filters, include_bots=data["include_bots"]
    )
    return export_response(clicks, kind, name=f"{link.slug}-clicks")


def _staff_only(request) -> None:
    if not selectors.sees_operations(request.user):
        raise PermissionDenied("For staff and superusers.")


@login_required
def orphan_visits(request):
    """Visits to paths that are no link, for staff (docs/dashboard.md)."""
    _staff_only(request)
    form = report_forms.OrphanVisitsForm(request.GET, choices=ORPHAN_DAYS, default=7)
    days, include_bots = form.days(), form.include_bots()
    now = datetime.now(timezone.utc)
    try:
        found, too_large = (
            clicks_orphans.orphan_visits(
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
            "kinds": clicks_orphans.ORPHAN_KIND_LABELS,
        },
    )


@login_required
def accounting(request):
    """Per hour, the clicks the edges served beside those stored, for staff."""
    _staff_only(request)
    form = report_forms.DaysForm(request.GET, choices=ACCOUNTING_DAYS, default=1)
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
