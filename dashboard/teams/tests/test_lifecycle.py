"""What takes effect at once: a removed membership, a lowered role, a
deactivated person; and what the audit log keeps."""

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from api.services import token_create
from links.services import link_create
from teams import selectors
from teams.models import Action, AuditEntry, Role
from teams.services import member_change, member_remove

from .conftest import PASSWORD, fresh, session_api

pytestmark = pytest.mark.django_db


def token_client(user, team, scope="write") -> APIClient:
    _, raw = token_create(user=user, team=team, name="ci", scope=scope)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_a_removed_members_token_is_refused_at_once(crew):
    editor = crew.people["editor"]
    api = token_client(editor, crew.team)
    assert api.get(f"/api/v1/links/{crew.link.slug}").status_code == 200
    member_remove(actor=crew.people["admin"], membership=selectors.member_of(crew.team, editor.username))
    assert api.get(f"/api/v1/links/{crew.link.slug}").status_code == 401
    assert api.get("/api/v1/links").status_code == 401


def test_a_lowered_role_lowers_the_token_at_once(crew):
    editor = crew.people["editor"]
    api = token_client(editor, crew.team)
    assert api.patch(f"/api/v1/links/{crew.link.slug}", {"title": "a"}, format="json").status_code == 200
    member_change(
        actor=crew.people["admin"], membership=selectors.member_of(crew.team, editor.username), role=Role.VIEWER
    )
    assert api.patch(f"/api/v1/links/{crew.link.slug}", {"title": "b"}, format="json").status_code == 403
    assert api.get(f"/api/v1/links/{crew.link.slug}").json()["title"] == "a"


def test_a_token_reaches_its_own_team_only(crew):
    admin = crew.people["admin"]
    personal = token_client(admin, admin.personal_team)
    assert personal.get(f"/api/v1/links/{crew.link.slug}").status_code == 404
    assert personal.get("/api/v1/links", {"team": crew.team.pk}).status_code == 404
    assert personal.get("/api/v1/audit", {"team": crew.team.pk}).status_code == 404


def test_a_deactivated_persons_session_and_tokens_are_refused_at_once(crew):
    editor = crew.people["editor"]
    browser = Client()
    signed_in = browser.post(reverse("web:sign-in"), {"username": editor.username, "password": PASSWORD})
    assert signed_in.status_code == 302
    api = token_client(editor, crew.team)
    assert browser.get(reverse("web:link-list")).status_code == 200
    editor.is_active = False
    editor.save(update_fields=["is_active"])
    response = browser.get(reverse("web:link-list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("web:sign-in"))
    assert api.get("/api/v1/links").status_code == 401


def test_the_audit_log_keeps_a_create_an_edit_and_a_delete(crew):
    editor = crew.people["editor"]
    api = session_api(editor)
    slug = fresh("a")
    assert (
        api.post(
            "/api/v1/links", {"url": "https://example.com/a", "slug": slug, "team": crew.team.pk}, format="json"
        ).status_code
        == 201
    )
    assert api.patch(f"/api/v1/links/{slug}", {"title": "Spring"}, format="json").status_code == 200
    assert api.patch(f"/api/v1/links/{slug}", {"is_active": False}, format="json").status_code == 200
    assert api.delete(f"/api/v1/links/{slug}").status_code == 204
    entries = AuditEntry.objects.filter(team=crew.team, slug=slug).order_by("id")
    assert [(entry.actor_id, entry.action) for entry in entries] == [
        (editor.pk, Action.LINK_CREATED),
        (editor.pk, Action.LINK_CHANGED),
        (editor.pk, Action.LINK_DISABLED),
        (editor.pk, Action.LINK_DELETED),
    ]
    assert entries[1].changes == {"title": ["", "Spring"]}
    assert entries[0].link_id == entries[3].link_id is not None  # kept after the link is gone

    read = session_api(crew.people["admin"]).get("/api/v1/audit", {"team": crew.team.pk, "link": slug}).json()
    assert [entry["action"] for entry in read["results"]] == [
        "link.deleted",
        "link.disabled",
        "link.changed",
        "link.created",
    ]
    assert read["results"][0]["actor"] == editor.username
    page = Client()
    page.force_login(crew.people["admin"])
    assert slug.encode() in page.get(reverse("web:team-audit", args=[crew.team.pk])).content


def test_membership_and_token_changes_are_audited(crew):
    admin, viewer = crew.people["admin"], crew.people["viewer"]
    token_create(user=viewer, team=crew.team, name="reports", scope="read")
    member_remove(actor=admin, membership=selectors.member_of(crew.team, viewer.username))
    actions = list(AuditEntry.objects.filter(team=crew.team).order_by("id").values_list("action", "subject"))
    assert (Action.MEMBER_ADDED, viewer.username) in actions
    assert [subject for action, subject in actions if action == Action.TOKEN_CREATED][0].startswith("reports (ssk_")
    assert actions[-2] == (Action.MEMBER_REMOVED, viewer.username)
    assert actions[-1][0] == Action.TOKEN_REVOKED and actions[-1][1].endswith(f"of {viewer.username}")


def test_a_team_keeps_an_admin(crew):
    admin = crew.people["admin"]
    api = session_api(admin)
    response = api.patch(f"/api/v1/teams/{crew.team.pk}/members/{admin.username}", {"role": "editor"}, format="json")
    assert response.status_code == 409 and "admin" in response.json()["role"][0]
    assert api.delete(f"/api/v1/teams/{crew.team.pk}/members/{admin.username}").status_code == 409


def test_teams_list_and_create(crew):
    viewer = crew.people["viewer"]
    api = session_api(viewer)
    names = {team["name"]: team["role"] for team in api.get("/api/v1/teams").json()}
    assert names == {crew.team.name: "viewer", viewer.username: "admin"}
    made = api.post("/api/v1/teams", {"name": "Reports"}, format="json")
    assert made.status_code == 201 and made.json()["role"] == "admin" and made.json()["personal"] is False
    assert (
        token_client(viewer, crew.team, scope="read").post("/api/v1/teams", {"name": "x"}, format="json").status_code
        == 403
    )
    link = link_create(owner=viewer, team=viewer.personal_team, url="https://example.com/", slug=fresh())
    assert link.team_id != crew.team.pk


def test_create_api_token_takes_a_team(crew, capsys):
    viewer = crew.people["viewer"]
    call_command("create_api_token", viewer.username, "--team", crew.team.name, "--name", "reports")
    raw = capsys.readouterr().out.strip()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get(f"/api/v1/links/{crew.link.slug}").status_code == 200
    assert api.get("/api/v1/teams").json()[0]["id"] == crew.team.pk
    with pytest.raises(CommandError, match="read-only"):
        call_command("create_api_token", viewer.username, "--team", str(crew.team.pk), "--scope", "write")
    with pytest.raises(CommandError, match="no team"):
        call_command("create_api_token", crew.people["non-member"].username, "--team", str(crew.team.pk))
