"""Roles from the OpenID provider's groups (teams/groups.py): memberships
follow a person's groups at each sign-in, roles given by hand are kept, the
mappings of a team's People page and of OIDC_GROUP_ROLES, and who may set
them."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from teams.groups import follow_groups, group_role_set, wanted_roles
from teams.models import Action, AuditEntry, GroupRole, Membership, Role, Team
from teams.services import member_add, member_change, team_create
from testing.factories import fresh
from tokens.services import token_create

pytestmark = pytest.mark.django_db


def roles_of(user) -> dict[str, tuple[str, bool]]:
    return {
        m.team.name: (m.role, m.via_groups)
        for m in Membership.objects.filter(user=user, team__personal_for__isnull=True).select_related("team")
    }


def test_memberships_follow_the_groups_and_roles_given_by_hand_stay(make_user):
    admin, person = make_user(), make_user()
    eng, mkt, ops = (team_create(actor=admin, name=fresh(name)) for name in ("Eng ", "Mkt ", "Ops "))
    group_role_set(actor=admin, team=eng, group="eng", role=Role.EDITOR)
    group_role_set(actor=admin, team=eng, group="eng-leads", role=Role.ADMIN)
    group_role_set(actor=admin, team=mkt, group="mkt", role=Role.VIEWER)
    group_role_set(actor=admin, team=ops, group="eng", role=Role.VIEWER)
    member_add(actor=admin, team=ops, username=person.username, role=Role.ADMIN)  # by hand

    follow_groups(user=person, groups=["eng", "eng-leads", "mkt", "unmapped"])
    assert roles_of(person) == {
        eng.name: ("admin", True),  # the highest of its groups
        mkt.name: ("viewer", True),
        ops.name: ("admin", False),  # by hand: not lowered to the group's viewer
    }
    token = token_create(user=person, name="ci", team=mkt)[0]

    follow_groups(user=person, groups=["eng"])
    assert roles_of(person) == {eng.name: ("editor", True), ops.name: ("admin", False)}
    token.refresh_from_db()
    assert token.revoked_at is not None  # out of Mkt: its token for Mkt with it
    entries = list(AuditEntry.objects.filter(team=mkt, subject=person.username).values_list("action", "actor"))
    assert (Action.MEMBER_ADDED, None) in entries and (Action.MEMBER_REMOVED, None) in entries

    # An admin's change by hand makes the role one given by hand: the groups leave it be.
    member_change(actor=admin, membership=Membership.objects.get(user=person, team=eng), role=Role.VIEWER)
    follow_groups(user=person, groups=[])
    assert roles_of(person) == {eng.name: ("viewer", False), ops.name: ("admin", False)}


def test_the_coded_mappings_make_their_teams_once(make_user, settings):
    name = fresh("Engineering ")
    settings.OIDC_GROUP_ROLES = [("eng", name, "editor"), ("eng-leads", name, "admin")]
    first, second = make_user(), make_user()
    follow_groups(user=first, groups=["eng"])
    follow_groups(user=second, groups=["eng", "eng-leads"])
    (team,) = Team.objects.filter(name=name)
    assert roles_of(first) == {name: ("editor", True)} and roles_of(second) == {name: ("admin", True)}
    assert wanted_roles(["nobody's"]) == {}
    assert Team.objects.filter(name=name).count() == 1


def test_only_a_teams_admins_map_its_groups_and_the_page_shows_it(client, make_user, settings):
    settings.OIDC_ISSUER = "https://sso.example.com"
    admin, editor = make_user(), make_user()
    team = team_create(actor=admin, name=fresh("Eng "))
    member_add(actor=admin, team=team, username=editor.username, role=Role.EDITOR)
    with pytest.raises(PermissionDenied):
        group_role_set(actor=editor, team=team, group="eng", role=Role.ADMIN)
    with pytest.raises(ValidationError):
        group_role_set(actor=admin, team=team, group="  ", role=Role.ADMIN)
    with pytest.raises(ValidationError):
        group_role_set(actor=admin, team=team, group="eng", role="owner")

    add = reverse("web:group-role-add", args=[team.pk])
    client.force_login(editor)
    assert client.post(add, {"group": "eng", "role": "admin"}).status_code == 404
    assert not GroupRole.objects.exists()
    client.force_login(admin)
    page = client.post(add, {"group": "", "role": "admin"})
    assert page.status_code == 200 and "This field is required." in page.content.decode()
    done = client.post(add, {"group": "eng", "role": "editor"}, follow=True)
    assert "Members of eng are editors here from their next sign-in." in done.content.decode()
    (mapping,) = GroupRole.objects.filter(team=team)
    assert (mapping.group, mapping.role) == ("eng", "editor")
    follow_groups(user=editor, groups=["eng"])  # by hand already: kept
    page = client.get(reverse("web:team-detail", args=[team.pk])).content.decode()
    assert 'id="group-role-list"' in page and "by hand" in page
    client.force_login(editor)
    assert client.post(reverse("web:group-role-remove", args=[team.pk, mapping.pk])).status_code == 404
    client.force_login(admin)
    client.post(reverse("web:group-role-remove", args=[team.pk, mapping.pk]))
    assert not GroupRole.objects.exists()
