"""The links pages: the list with its filters and bulk actions, a link's
form, toggle, deletion and QR code, and the CSV export. Views stay thin:
forms parse, the services of links/ act, the selectors read."""

import io

import segno
from csp.decorators import csp_update
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import get_template
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from clicks import selectors as clicks_selectors
from clicks import services as click_services
from clicks.reports import link_totals
from health import selectors as health_selectors
from links import checks, delivery, imports, preview_images, selectors, services, utm_templates
from links.limits import CreationLimited, admit_creation
from links.models import Link
from slingshot.db import reports_db
from teams import access
from teams.models import Role

from . import forms, link_forms, link_list_forms
from .teams import current_team, edits_in, memberships


def link_or_404(request, slug: str, needed: str = Role.VIEWER) -> Link:
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


def to_detail(link: Link):
    return redirect(reverse("web:link-detail", args=[link.slug]) + link.domain_query)


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


def _searched(request, form: link_list_forms.LinkListForm, team_id: int):
    """The links of the team the list's filters leave."""
    links = clicks_selectors.link_search(user=request.user, team=team_id, **form.search_arguments()).using(
        reports_db(request.user)
    )
    return health_selectors.broken_only(links) if form.broken() else links


@login_required
def link_list(request):
    form = link_list_forms.LinkListForm(request.GET)
    team = current_team(request)
    links = _searched(request, form, team.pk)
    # The page's ids first, then those rows with their click totals: PostgreSQL
    # would otherwise join the totals of every row an OFFSET skips too.
    page = Paginator(links.values_list("pk", flat=True), settings.WEB_LINKS_PER_PAGE).get_page(request.GET.get("page"))
    by_id = health_selectors.with_health(links).in_bulk(list(page))
    page.object_list = [by_id[pk] for pk in page]
    states = selectors.link_states(page.object_list)
    row_urls = _RowUrls()
    for link in page.object_list:
        link.state = states[link.pk]
        link.urls = row_urls.of(link)
        link.last_check = health_selectors.health_of(link)
    query = request.GET.copy()
    query.pop("page", None)
    edits = edits_in(request, team)
    rows = get_template("web/_link_rows.html", using="jinja2").render({"links": page.object_list, "edits": edits})
    filtered = form.filtered()
    return render(
        request,
        "web/link_list.html",
        {
            "form": form,
            "page": page,
            "query": query.urlencode(),
            "filtered": filtered,
            "team": team,
            "other_teams": [] if page.paginator.count or filtered else _other_teams(request, team),
            "edits": edits,
            "rows": mark_safe(rows),  # Jinja2 escaped every value (web/jinja_env.py)
        },
    )


def _other_teams(request, team) -> list[tuple]:
    """The person's other teams with their links, to switch back to from a
    team without any (a new one, say)."""
    others = [membership for membership in memberships(request) if membership.team_id != team.pk]
    counts = selectors.link_counts(membership.team_id for membership in others)
    return [(membership.team, counts.get(membership.team_id, 0)) for membership in others]


@login_required
@require_POST
def link_bulk(request):
    """An action on the links selected in the list; deleting asks first."""
    # Links by id: a slug is unique on its domain only.
    selected = [value for value in request.POST.getlist("selected") if value.isdigit()][: settings.WEB_LINKS_PER_PAGE]
    # Of the current team's links, as the list shows them; changing them takes an editor (the services check).
    team = current_team(request)
    links = list(selectors.links_visible_to(request.user, team=team.pk).filter(pk__in=selected).order_by("slug"))
    data = request.POST.copy()
    data.setlist("selected", [str(link.pk) for link in links])  # only those this person sees
    form = link_list_forms.BulkForm(data)
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
                clicks_selectors.with_click_totals(
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
    links = _searched(request, link_list_forms.LinkListForm(request.GET), current_team(request).pk)
    response = StreamingHttpResponse(
        imports.export_lines(links.iterator(chunk_size=2000)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = 'attachment; filename="links.csv"'
    return response


def checked(form: link_forms.LinkForm, link: Link | None = None) -> bool:
    """Whether the link form is valid, with every problem found at once: the
    form's checks and then the services' (links.checks.link_check) on what
    parsed, so that a bad rule does not hide a slug that is taken."""
    form.is_valid()
    try:
        checks.link_check(values=form.values_to_check(), link=link)
    except ValidationError as exc:
        forms.add_service_errors(form, exc)
    return not form.errors


# The pages that show a link's social preview (web/_preview_card.html) load
# its image from where the link says, over HTTPS only, or an image chosen to
# upload from the browser itself (blob:).
shows_preview = csp_update({"img-src": ["https:", "blob:"]})

PENDING_MESSAGE = (
    "Redis could not be reached, so the short link is not live yet: it is saved, and goes live as soon as Redis "
    "answers. Until then it answers 503 (try again shortly), never 404."
)


def _utm_templates(request) -> dict:
    """The UTM templates of the teams the person makes links in, for the form's builder."""
    templates = list(
        utm_templates.templates_of(access.teams_of(request.user, Role.EDITOR).values_list("pk", flat=True))
        .select_related("team")
        .order_by("team__name", "team_id", "name")
    )
    return {
        "utm_templates": templates,
        "utm_template_values": {str(template.pk): template.values for template in templates},
    }


def _preview_image(request, form, link: Link) -> None:
    """The image the form uploads for the link's preview, or removes."""
    if form.preview_image_data is not None:
        preview_images.preview_image_set(link=link, actor=request.user, data=form.preview_image_data)
    elif form.cleaned_data.get("preview_image_remove"):
        preview_images.preview_image_remove(link=link, actor=request.user)


@login_required
def preview_image(request, name: str):
    """An uploaded preview image, for the dashboard's own pages (the edge serves it to the rest)."""
    response = preview_images.image_response(name, cache_control="private, max-age=86400, immutable")
    if response is None:
        raise Http404("No such image.")
    return response


@login_required
@shows_preview
def link_create(request):
    form = link_forms.LinkForm(forms.posted(request), request.FILES or None)
    if request.method == "POST" and checked(form):
        try:
            admit_creation(owner=request.user, team=current_team(request))
            with transaction.atomic():
                link = services.link_create(
                    owner=request.user, team=current_team(request), fields=form.as_link_fields()
                )
                _preview_image(request, form, link)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        except CreationLimited as exc:
            form.add_error(None, str(exc))
            response = render(
                request,
                "web/link_form.html",
                {"form": form, "title": "New link", **_utm_templates(request)},
                status=429,
            )
            for name, value in exc.headers().items():
                response[name] = value
            return response
        else:
            messages.success(request, f"Created {link.short_url}")
            if delivery.delivery.get() == delivery.PENDING:
                messages.warning(request, PENDING_MESSAGE)
            return to_detail(link)
    if form.is_bound:
        form.before_shown_again()
    return render(request, "web/link_form.html", {"form": form, "title": "New link", **_utm_templates(request)})


@login_required
@shows_preview
def link_edit(request, slug: str):
    link = link_or_404(request, slug, Role.EDITOR)
    teams = access.teams_of(request.user, Role.EDITOR)
    form = link_forms.LinkForm(
        forms.posted(request),
        initial={**link_forms.LinkForm.initial_for(link), "team": link.team_id},
        editing=True,
        has_password=link.has_password,
        teams=teams if teams.count() > 1 else None,
        preview_image=link.preview_image,
        files=request.FILES or None,
    )
    if request.method == "POST" and checked(form, link):
        try:
            with transaction.atomic():
                services.link_update(link=link, actor=request.user, **form.changes())
                _preview_image(request, form, link)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, "Saved.")
            return to_detail(link)
    if form.is_bound:
        form.before_shown_again()
    return render(
        request, "web/link_form.html", {"form": form, "title": f"Edit {slug}", "link": link, **_utm_templates(request)}
    )


@login_required
@require_POST
def link_toggle(request, slug: str):
    link = link_or_404(request, slug, Role.EDITOR)
    services.link_update(link=link, actor=request.user, is_active=not link.is_active)
    messages.success(request, f"{link.slug} is now {'active' if link.is_active else 'disabled'}.")
    if request.POST.get("next") == "list":
        return redirect("web:link-list")
    return to_detail(link)


@login_required
def link_delete(request, slug: str):
    link = link_or_404(request, slug, Role.EDITOR)
    if request.method == "POST":
        services.link_delete(link=link, actor=request.user)
        messages.success(request, f"Deleted {slug}.")
        return redirect("web:link-list")
    return render(request, "web/link_delete.html", {"link": link})


@login_required
def link_visits_delete(request, slug: str):
    """Its visits deleted, the link kept: its reports start again from
    nothing (clicks.services.link_visits_delete), as Shlink's
    DELETE /short-urls/{shortCode}/visits does."""
    link = link_or_404(request, slug, Role.EDITOR)
    if request.method == "POST":
        deleted = click_services.link_visits_delete(link=link, actor=request.user)
        messages.success(request, f"Deleted {deleted} visit{'s' if deleted != 1 else ''} of {slug}.")
        return redirect(reverse("web:link-detail", args=[slug]) + link.domain_query)
    totals = link_totals(link_ids=[link.pk])[link.pk]
    return render(request, "web/link_visits_delete.html", {"link": link, "totals": totals})


@login_required
def link_qr(request, slug: str, kind: str):
    link = link_or_404(request, slug)
    buffer = io.BytesIO()
    segno.make(link.short_url, error="m").save(buffer, kind=kind, scale=10, border=2)
    response = HttpResponse(buffer.getvalue(), content_type={"png": "image/png", "svg": "image/svg+xml"}[kind])
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{link.slug}.{kind}"'
    return response


def link_unlock_moved(request, rest: str = ""):
    """Where edges older than their own password pages send the visitors of
    a link with a password (docs/contract.md, "Upgrading"): the same answer
    for every path, so that it tells nothing of any link, until the edges
    are upgraded and ask for the password themselves."""
    response = render(request, "web/link_unlock_moved.html", status=503)
    response["Retry-After"] = "60"
    return response
