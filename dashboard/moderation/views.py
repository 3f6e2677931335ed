"""The moderation queue in the dashboard, for staff: the reports, each with
the link, its owner, team, creation and clicks, and the actions of
moderation/services.py (the same as the API's, /api/v1/reports)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from . import selectors, services
from .models import Ban, Report, Status


def staff(user) -> bool:
    return user.is_active and (user.is_staff or user.is_superuser)


def _staff_only(request) -> None:
    if not staff(request.user):
        raise PermissionDenied("The moderation queue is for staff.")


@login_required
def queue(request):
    _staff_only(request)
    status = request.GET.get("status", Status.OPEN)
    if status not in (*Status.values, "all"):
        status = Status.OPEN
    reports = list(selectors.reports(status=None if status == "all" else status)[:100])
    rows = [(report, selectors.link_facts(report.link) if report.link_id else None) for report in reports]
    return render(
        request,
        "moderation/queue.html",
        {"rows": rows, "status": status, "statuses": [*Status.choices, ("all", "all")], "bans": Ban.objects.all()},
    )


def _act(request, report: Report) -> str:
    """Does what the form asked; the message to show."""
    action, user = request.POST.get("action", ""), request.user
    words, reason = request.POST.get("words", ""), request.POST.get("reason", "")
    link = report.link
    if action == "dismiss":
        services.report_dismiss(report=report, actor=user)
        return f"Report {report.pk} dismissed."
    if action == "reopen":
        services.report_reopen(report=report, actor=user)
        return f"Report {report.pk} opened again."
    if link is None:
        raise ValidationError("The reported link is gone.")
    if action == "disable":
        services.link_block(link=link, actor=user, words=words, report=report)
        return f"Stopped {link.short_url}: it answers 451."
    if action == "enable":
        services.link_unblock(link=link, actor=user)
        return f"{link.short_url} goes on again, unless a suspension stops it."
    if action == "ban-domain":
        ban = services.domain_ban(domain=link.url, actor=user, reason=reason, report=report)
        return f"Banned {ban.domain}: every link to it is flagged."
    if action in ("suspend-owner", "unsuspend-owner") and link.owner is None:
        raise ValidationError("The link has no owner any more.")
    if action == "suspend-owner":
        services.user_suspend(user=link.owner, actor=user, reason=reason, report=report)
        return f"Suspended {link.owner.get_username()}."
    if action == "unsuspend-owner":
        services.user_unsuspend(user=link.owner, actor=user)
        return f"Lifted {link.owner.get_username()}'s suspension."
    if action == "suspend-team":
        services.team_suspend(team=link.team, actor=user, reason=reason, report=report)
        return f"Suspended the team {link.team.name}."
    if action == "unsuspend-team":
        services.team_unsuspend(team=link.team, actor=user)
        return f"Lifted the suspension of the team {link.team.name}."
    raise ValidationError("Choose an action.")


@login_required
@require_POST
def report_act(request, pk: int):
    _staff_only(request)
    report = get_object_or_404(Report.objects.select_related("link__domain", "link__team", "link__owner"), pk=pk)
    try:
        messages.success(request, _act(request, report))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    status = request.POST.get("status", "")
    where = reverse("moderation:queue")
    return redirect(f"{where}?status={status}" if status in (*Status.values, "all") else where)


@login_required
@require_POST
def unban(request, pk: int):
    _staff_only(request)
    ban = get_object_or_404(Ban, pk=pk)
    cleared = services.domain_unban(domain=ban.domain, actor=request.user)
    messages.success(request, f"Lifted the ban of {ban.domain}: {cleared} links no longer flagged.")
    return redirect("moderation:queue")
