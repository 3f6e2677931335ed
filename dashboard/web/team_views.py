"""The dashboard's team pages: switching team, a team's members, name and
deletion (an admin's to manage) and its audit log (an admin's to read).
The services of teams/ act and check the roles (teams/access.py); these
pages parse and show."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts import sso
from teams import access, groups
from teams import selectors as team_selectors
from teams import services as team_services
from teams.models import Membership, Role, Team

from . import forms
from .teams import choose

AUDIT_PER_PAGE = 50


def _team_or_404(request, team_id: int, needed: str = Role.VIEWER) -> Team:
    try:
        return team_selectors.team_for(request.user, team_id, needed)
    except Team.DoesNotExist:
        raise Http404("No such team among yours.") from None


@login_required
@require_POST
def team_switch(request):
    try:
        team_id = int(request.POST.get("team", ""))
    except ValueError:
        team_id = 0
    if not choose(request, team_id):
        raise Http404("No such team among yours.")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    return redirect(back or "web:link-list")


@login_required
def team_list(request):
    form = forms.TeamForm(forms.posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            team = team_services.team_create(actor=request.user, name=form.cleaned_data["name"])
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            choose(request, team.pk)
            messages.success(
                request,
                f"Created the team {team.name}, and you now work in it: its links, tokens and reports, none yet. "
                "Your links are in the teams they were in: the team menu at the top switches back.",
            )
            return redirect("web:team-detail", team_id=team.pk)
    # A superuser may work in any team: they see every one.
    every = access.acts_everywhere(request.user)
    teams = team_selectors.teams_for(request.user) if every else team_selectors.teams_belonging_to(request.user)
    return render(request, "web/team_list.html", {"form": form, "teams": teams})


def _visits_form(team: Team, data=None) -> forms.TeamVisitsForm:
    initial = {"visit_retention_days": team.visit_retention_days, "ip_storage": team.ip_storage}
    return forms.TeamVisitsForm(data, initial=initial, service_default=settings.CLICK_IP_PRIVACY)


def _team_page(request, team: Team, *, form=None, rename_form=None, group_form=None, visits_form=None):
    return render(
        request,
        "web/team_detail.html",
        {
            "team": team,
            "manages": access.allows(team.role, Role.ADMIN),
            "members": team_selectors.team_members(team),
            "roles": Role.choices,
            "form": form or forms.MemberForm(),
            "rename_form": rename_form or forms.TeamForm(initial={"name": team.name}),
            "sso": sso.enabled(),
            "group_roles": list(team.group_roles.all()),
            "coded_group_roles": [
                (group, role) for group, name, role in settings.OIDC_GROUP_ROLES if name == team.name
            ],
            "group_form": group_form or forms.GroupRoleForm(),
            "visits_form": visits_form or _visits_form(team),
            "rollups_kept": settings.CLICK_RETENTION_ROLLUPS == "keep",
        },
    )


@login_required
def team_detail(request, team_id: int):
    team = _team_or_404(request, team_id)
    form = forms.MemberForm(forms.posted(request))
    if request.method == "POST":
        access.require(request.user, team.pk, Role.ADMIN, to="add members")
        if form.is_valid():
            try:
                team_services.member_add(actor=request.user, team=team, **form.cleaned_data)
            except ValidationError as exc:
                forms.add_service_errors(form, exc)
            else:
                messages.success(request, f"Added {form.cleaned_data['username']} as {form.cleaned_data['role']}.")
                return redirect("web:team-detail", team_id=team.pk)
    return _team_page(request, team, form=form)


@login_required
@require_POST
def team_rename(request, team_id: int):
    team = _team_or_404(request, team_id)
    access.require(request.user, team.pk, Role.ADMIN, to="rename the team")
    rename_form = forms.TeamForm(request.POST)
    if rename_form.is_valid():
        try:
            renamed = team_services.team_rename(actor=request.user, team=team, name=rename_form.cleaned_data["name"])
        except ValidationError as exc:
            forms.add_service_errors(rename_form, exc)
        else:
            messages.success(request, f"The team is now called {renamed.name}.")
            return redirect("web:team-detail", team_id=team.pk)
    return _team_page(request, team, rename_form=rename_form)


@login_required
@require_POST
def team_visits(request, team_id: int):
    team = _team_or_404(request, team_id)
    access.require(request.user, team.pk, Role.ADMIN, to="change how the team keeps its visits")
    visits_form = _visits_form(team, request.POST)
    if visits_form.is_valid():
        try:
            team_services.team_visit_settings(actor=request.user, team=team, **visits_form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(visits_form, exc)
        else:
            messages.success(request, "Saved how the team keeps its visits.")
            return redirect("web:team-detail", team_id=team.pk)
    return _team_page(request, team, visits_form=visits_form)


@login_required
@require_POST
def team_second_factor(request, team_id: int):
    team = _team_or_404(request, team_id)
    required = request.POST.get("required") == "true"
    team_services.team_require_second_factor(actor=request.user, team=team, required=required)
    if required:
        messages.success(
            request, "Members now give a second factor, or sign in with single sign-on, before they see anything."
        )
    else:
        messages.success(request, "Members no longer need a second factor.")
    return redirect("web:team-detail", team_id=team.pk)


@login_required
def team_delete(request, team_id: int):
    """A page that asks first; the deletion is a POST."""
    team = _team_or_404(request, team_id)
    access.require(request.user, team.pk, Role.ADMIN, to="delete the team")
    if request.method == "POST":
        try:
            team_services.team_delete(actor=request.user, team=team)
        except ValidationError as exc:
            for message in exc.messages:
                messages.error(request, message)
            return redirect("web:team-detail", team_id=team_id)
        messages.success(request, f"Deleted the team {team.name}.")
        return redirect("web:team-list")
    return render(request, "web/team_delete.html", {"team": team})


def _member_or_404(request, team_id: int, username: str) -> Membership:
    team = _team_or_404(request, team_id)
    try:
        return team_selectors.member_of(team, username)
    except Membership.DoesNotExist:
        raise Http404("No such member of this team.") from None


@login_required
@require_POST
def member_role(request, team_id: int, username: str):
    membership = _member_or_404(request, team_id, username)
    try:
        team_services.member_change(actor=request.user, membership=membership, role=request.POST.get("role", ""))
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, f"{username} is now {request.POST['role']}.")
    return redirect("web:team-detail", team_id=team_id)


@login_required
@require_POST
def member_remove(request, team_id: int, username: str):
    membership = _member_or_404(request, team_id, username)
    try:
        team_services.member_remove(actor=request.user, membership=membership)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
        return redirect("web:team-detail", team_id=team_id)
    messages.success(request, f"Removed {username} from the team; their tokens for it are revoked.")
    if membership.user_id == request.user.pk:
        return redirect("web:team-list")
    return redirect("web:team-detail", team_id=team_id)


@login_required
@require_POST
def group_role_add(request, team_id: int):
    team = _team_or_404(request, team_id, Role.ADMIN)
    group_form = forms.GroupRoleForm(request.POST)
    if group_form.is_valid():
        try:
            mapping = groups.group_role_set(actor=request.user, team=team, **group_form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(group_form, exc)
        else:
            messages.success(request, f"Members of {mapping.group} are {mapping.role}s here from their next sign-in.")
            return redirect("web:team-detail", team_id=team.pk)
    return _team_page(request, team, group_form=group_form)


@login_required
@require_POST
def group_role_remove(request, team_id: int, pk: int):
    team = _team_or_404(request, team_id, Role.ADMIN)
    mapping = team.group_roles.filter(pk=pk).first()
    if mapping is None:
        raise Http404("No such group of this team.")
    groups.group_role_delete(actor=request.user, mapping=mapping)
    messages.success(request, f"{mapping.group} gives no role here from its members' next sign-in.")
    return redirect("web:team-detail", team_id=team.pk)


@login_required
def team_audit(request, team_id: int):
    team = _team_or_404(request, team_id)
    access.require(request.user, team.pk, Role.ADMIN, to="read the audit log")
    entries = team_selectors.audit_entries(team_ids=[team.pk])
    page = Paginator(entries, AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "web/team_audit.html", {"team": team, "page": page})
