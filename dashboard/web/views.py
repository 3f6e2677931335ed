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
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from api import services as token_services
from api.models import ApiToken
from clicks.selectors import INTERVALS, bucket_start, link_stats, link_totals, stats_range
from clicks.stream import import_lag
from links import domains, imports, selectors, services, unlocking
from links.models import Domain, Link, LinkImport
from links.redis import RedisUnavailable, quick_call
from slingshot.proxies import client_address

from . import forms
from .selectors import OVERVIEW_DAYS, edge_health, overview_for
from .uploads import UploadLimitHandler

BREAKDOWN_TITLES = {
    "referer_host": "Referrers",
    "browser": "Browsers",
    "os": "Operating systems",
    "device": "Devices",
    "country": "Countries",
}
RECENT_CLICKS = 20


class SignInView(auth_views.LoginView):
    """Django's sign-in; django-axes throttles it like every other way to
    sign in (slingshot/signin.py)."""

    template_name = "web/sign_in.html"
    redirect_authenticated_user = True


def _link_or_404(request, slug: str) -> Link:
    """The link of the slug on the domain `?domain=` names (the default
    domain without it), as the API addresses links."""
    try:
        return selectors.link_for(user=request.user, slug=slug, host=request.GET.get("domain"))
    except Link.DoesNotExist:
        raise Http404("No such link.") from None


def _detail(link: Link):
    return redirect(reverse("web:link-detail", args=[link.slug]) + link.domain_query)


def _chart(series, *, label: str, interval: str, start: datetime, end: datetime) -> dict:
    """Chart data with a bar for every bucket of [start, end), empty ones too
    (the series holds only buckets with clicks)."""
    step = INTERVALS[interval]
    bucket = bucket_start(start, interval)
    by_bucket = {point.bucket: point for point in series}
    fmt = "%Y-%m-%d %H:00" if interval == "hour" else "%Y-%m-%d"
    chart = {"label": label, "labels": [], "clicks": [], "visitors": []}
    while bucket < end:
        point = by_bucket.get(bucket)
        chart["labels"].append(bucket.strftime(fmt))
        chart["clicks"].append(point.clicks if point else 0)
        chart["visitors"].append(point.visitors if point else 0)
        bucket += step
    return chart


@login_required
def overview(request):
    now = datetime.now(timezone.utc)
    totals = overview_for(request.user, now=now)
    context = {
        "totals": totals,
        "chart": _chart(
            totals.series,
            label="Clicks per day (UTC), bots left out",
            interval="day",
            start=now - timedelta(days=OVERVIEW_DAYS - 1),
            end=now,
        ),
    }
    if selectors.sees_operations(request.user):
        context["operations"] = True
        try:
            context["lag"] = quick_call(lambda client: import_lag(client=client), what="import lag")
        except RedisUnavailable as exc:
            context["lag_error"] = str(exc)
        context["edge"] = edge_health()
        context["edge_health_url"] = settings.EDGE_HEALTH_URL
    return render(request, "web/overview.html", context)


@login_required
def link_list(request):
    form = forms.LinkListForm(request.GET)
    links = selectors.link_search(user=request.user, **form.search_arguments())
    # The page's ids first, then those rows with their click totals: PostgreSQL
    # would otherwise join the totals of every row an OFFSET skips too.
    page = Paginator(links.values_list("pk", flat=True), settings.WEB_LINKS_PER_PAGE).get_page(request.GET.get("page"))
    rows = links.in_bulk(list(page))
    page.object_list = [rows[pk] for pk in page]
    states = selectors.link_states(page.object_list)
    for link in page.object_list:
        link.state = states[link.pk]
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "web/link_list.html",
        {
            "form": form,
            "page": page,
            "query": query.urlencode(),
        },
    )


@login_required
def link_export(request):
    links = selectors.link_search(user=request.user, **forms.LinkListForm(request.GET).search_arguments())
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
            link = services.link_create(owner=request.user, **form.service_arguments())
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, f"Created {link.short_url}")
            return _detail(link)
    return render(request, "web/link_form.html", {"form": form, "title": "New link"})


@login_required
def link_edit(request, slug: str):
    link = _link_or_404(request, slug)
    form = forms.LinkForm(
        request.POST or None, initial=forms.LinkForm.initial_for(link), editing=True, has_password=link.has_password
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.link_update(link=link, **form.changes())
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, "Saved.")
            return _detail(link)
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


@login_required
def domain_edit(request, host: str):
    if not _staff(request.user):
        raise PermissionDenied("Only staff manage domains.")
    domain = get_object_or_404(Domain, host=host)
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
    domain = get_object_or_404(Domain, host=host)
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
    link = _link_or_404(request, slug)
    services.link_update(link=link, is_active=not link.is_active)
    messages.success(request, f"{link.slug} is now {'active' if link.is_active else 'disabled'}.")
    return _detail(link)


@login_required
def link_delete(request, slug: str):
    link = _link_or_404(request, slug)
    if request.method == "POST":
        services.link_delete(link=link)
        messages.success(request, f"Deleted {slug}.")
        return redirect("web:link-list")
    return render(request, "web/link_delete.html", {"link": link})


@login_required
def link_detail(request, slug: str):
    link = _link_or_404(request, slug)
    form = forms.StatsRangeForm(request.GET)
    span = form.span if form.is_valid() else stats_range()  # the defaults, below the form's errors
    stats = link_stats(
        link_ids=[link.pk],
        start=span.start,
        end=span.end,
        interval=span.interval,
        include_bots=span.include_bots,
        top=10,
    )
    recent = selectors.clicks_visible_to(request.user, slug=link.slug).order_by("-occurred_at")[:RECENT_CLICKS]
    what = "" if span.include_bots else ", bots left out"
    totals = link_totals(link_ids=[link.pk])[link.pk]
    visits = selectors.link_visits([link])
    with_bots = request.GET.copy()
    with_bots["include_bots"] = "true"
    return render(
        request,
        "web/link_detail.html",
        {
            "link": link,
            "short_url": link.short_url,
            "state": selectors.link_state(link, visits=(visits or {}).get(link.pk)),
            # None: Redis did not answer; absent: no limit.
            # Requests over the limit count too: the visits served are at most the limit.
            "visits": None if visits is None else min(visits.get(link.pk, 0), link.max_visits or 0),
            "stats": stats,
            "span": span,
            "errors": form.errors,
            "totals": totals,
            "bot_clicks": totals.clicks - totals.human_clicks,
            "with_bots": with_bots.urlencode(),
            "recent": recent,
            "breakdowns": [(BREAKDOWN_TITLES[name], items) for name, items in stats.breakdowns.items()],
            "chart": _chart(
                stats.series,
                label=f"Clicks per {span.interval} (UTC){what}",
                interval=span.interval,
                start=span.start,
                end=span.end,
            ),
        },
    )


UNLOCK_STATUS = {
    unlocking.Outcome.WRONG: 403,
    unlocking.Outcome.LOCKED_OUT: 429,
    unlocking.Outcome.GONE: 410,
    unlocking.Outcome.UNAVAILABLE: 503,
}
UNLOCK_MESSAGES = {
    unlocking.Outcome.WRONG: "That is not the password.",
    unlocking.Outcome.LOCKED_OUT: "Too many wrong passwords: try again later.",
    unlocking.Outcome.GONE: "This link has expired, or had all the visits it was made for.",
    unlocking.Outcome.UNAVAILABLE: "Temporarily unavailable: please try again shortly.",
}


def link_unlock(request, pk: int):
    """The page the edge sends the visitors of a link with a password to.
    Open to anyone: the password is the permission (links/unlocking.py)."""
    link = Link.objects.filter(pk=pk).exclude(password="").first()
    if link is None:
        raise Http404("No such link.")
    form = forms.UnlockForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        result = unlocking.link_unlock(
            link=link,
            password=form.cleaned_data["password"],
            address=client_address(request),
            user_agent=request.headers.get("User-Agent", ""),
            referer=request.headers.get("Referer", ""),
        )
        if result.outcome is unlocking.Outcome.UNLOCKED:
            return redirect(result.target)
        if result.outcome is unlocking.Outcome.NOT_FOUND:
            raise Http404("No such link.")
        form.add_error("password", UNLOCK_MESSAGES[result.outcome])
        status = UNLOCK_STATUS[result.outcome]
    return render(request, "web/link_unlock.html", {"form": form, "link": link}, status=status)


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
            link_import = imports.import_upload(owner=request.user, filename=upload.name, content=upload.read())
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


@login_required
def tokens(request):
    form = forms.TokenForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            token, raw = token_services.token_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            created = {"token": token, "raw": raw}
            form = forms.TokenForm()
    return render(
        request,
        "web/tokens.html",
        {
            "form": form,
            "created": created,
            "tokens": ApiToken.objects.filter(user=request.user),
        },
    )


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = token_services.token_revoke(token=get_object_or_404(ApiToken, pk=pk, user=request.user))
    messages.success(request, f"Revoked {token}.")
    return redirect("web:tokens")
