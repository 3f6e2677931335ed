"""What takes effect at once: a removed membership, a lowered role, a
deactivated person, a deleted team; and what the audit log keeps."""

import json
import logging
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from links.models import Link, LinkImport
from links.services import link_delete
from teams import selectors
from teams.models import Action, AuditEntry, Membership, Role, Team
from teams.services import member_change, member_remove, team_delete
from testing.factories import PASSWORD, fresh, make_link
from tokens.models import ApiToken
from tokens.services import token_create

from .conftest import session_api

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
    link = make_link(owner=viewer, team=viewer.personal_team, url="https://example.com/", slug=fresh())
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


def page_client(user, team=None) -> Client:
    client = Client()
    client.force_login(user)
    if team is not None:
        assert client.post(reverse("web:team-switch"), {"team": team.pk}).status_code == 302
    return client


def test_a_rename_is_audited_and_shows_in_the_team_switcher(crew):
    admin, viewer = crew.people["admin"], crew.people["viewer"]
    before = crew.team.name
    renamed = session_api(admin).patch(f"/api/v1/teams/{crew.team.pk}", {"name": "  Spring team "}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Spring team"
    entry = AuditEntry.objects.filter(team=crew.team).first()
    assert (entry.action, entry.actor_id, entry.subject) == (Action.TEAM_RENAMED, admin.pk, "Spring team")
    assert entry.changes == {"name": [before, "Spring team"]}
    same = session_api(admin).patch(f"/api/v1/teams/{crew.team.pk}", {"name": "Spring team"}, format="json")
    assert same.status_code == 200
    assert AuditEntry.objects.filter(team=crew.team, action=Action.TEAM_RENAMED).count() == 1  # nothing changed

    page = page_client(viewer, crew.team).get(reverse("web:link-list"))
    assert b'id="current-team" aria-label="Team: Spring team"' in page.content
    form = page_client(admin, crew.team).post(reverse("web:team-rename", args=[crew.team.pk]), {"name": "Autumn"})
    assert form.status_code == 302
    switcher = page_client(viewer, crew.team).get(reverse("web:team-list")).content
    assert b"Team: Autumn" in switcher and b"Spring team" not in switcher


@pytest.mark.parametrize(
    "name", ["", "   ", "x" * 101, "a\x00b", 7, None, "\u3164", " \u115f\u200b\ufe0f ", "a\ud800b"]
)
def test_a_bad_team_name_is_refused_with_the_field(crew, name):
    admin = crew.people["admin"]
    body = json.dumps({"name": name})  # a lone surrogate as JSON's escape, as a client sends it
    response = session_api(admin).patch(f"/api/v1/teams/{crew.team.pk}", body, content_type="application/json")
    assert response.status_code == 400 and list(response.json()) == ["name"]
    teams = Team.objects.count()
    created = session_api(admin).post("/api/v1/teams", body, content_type="application/json")
    assert created.status_code == 400 and list(created.json()) == ["name"]
    assert Team.objects.count() == teams
    if isinstance(name, str) and not any("\ud800" <= char <= "\udfff" for char in name):  # no form carries one
        page = page_client(admin).post(reverse("web:team-rename", args=[crew.team.pk]), {"name": name})
        assert page.status_code == 200 and "name" in page.context["rename_form"].errors
        assert b'class="error field-error"' in page.content
    assert Team.objects.get(pk=crew.team.pk).name == crew.team.name
    assert not AuditEntry.objects.filter(team=crew.team, action=Action.TEAM_RENAMED).exists()


def test_a_personal_team_is_renamed_by_its_person_but_not_deleted(crew):
    admin = crew.people["admin"]
    personal = admin.personal_team
    api = session_api(admin)
    assert api.patch(f"/api/v1/teams/{personal.pk}", {"name": "Mine"}, format="json").json()["personal"] is True
    refused = api.delete(f"/api/v1/teams/{personal.pk}")
    assert refused.status_code == 409 and "personal" in refused.json()["team"][0]
    page = page_client(admin).post(reverse("web:team-delete", args=[personal.pk]), follow=True)
    assert b"A personal team is not deleted" in page.content
    assert Team.objects.get(pk=personal.pk).personal_for == admin


def test_a_team_with_links_is_not_deleted(crew):
    admin = crew.people["admin"]
    token_create(user=crew.people["editor"], team=crew.team, name="ci", scope="write")
    make_link(owner=admin, team=crew.team, url="https://example.com/second", slug=fresh("l"))
    kept = (Membership.objects.filter(team=crew.team).count(), ApiToken.objects.filter(team=crew.team).count())
    refused = session_api(admin).delete(f"/api/v1/teams/{crew.team.pk}")
    assert refused.status_code == 409 and "still has 2 links" in refused.json()["team"][0]
    page = page_client(admin).post(reverse("web:team-delete", args=[crew.team.pk]), follow=True)
    assert page.redirect_chain[-1][0] == reverse("web:team-detail", args=[crew.team.pk])
    assert b"still has 2 links: move them to another team or delete them first" in page.content
    assert Team.objects.filter(pk=crew.team.pk).exists() and crew.team.links.count() == 2
    assert (Membership.objects.filter(team=crew.team).count(), ApiToken.objects.filter(team=crew.team).count()) == kept


def test_a_deleted_teams_tokens_stop_and_its_members_fall_back_to_their_personal_team(crew, caplog):
    admin, editor, viewer = crew.people["admin"], crew.people["editor"], crew.people["viewer"]
    superuser = crew.people["superuser"]
    api = token_client(editor, crew.team)
    assert api.get("/api/v1/links").status_code == 200
    sessions = {person: page_client(person, crew.team) for person in (viewer, superuser)}
    LinkImport.objects.create(owner=admin, team=crew.team, filename="x.csv", rows=[])
    link_delete(link=crew.link, actor=admin)
    with caplog.at_level(logging.INFO, logger="teams.services"):
        assert session_api(admin).delete(f"/api/v1/teams/{crew.team.pk}").status_code == 204
    assert f"team {crew.team.pk} ({crew.team.name!r}) deleted by {admin.username}" in caplog.text
    assert api.get("/api/v1/links").status_code == 401
    assert not Membership.objects.filter(team_id=crew.team.pk).exists()
    assert not ApiToken.objects.filter(team_id=crew.team.pk).exists()
    assert not LinkImport.objects.filter(team_id=crew.team.pk).exists()
    for person, client in sessions.items():
        page = client.get(reverse("web:link-list"))
        assert page.status_code == 200 and page.context["current_membership"].team == person.personal_team
        assert client.get(reverse("web:team-list")).status_code == 200
        assert client.get(reverse("web:team-detail", args=[crew.team.pk])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_link_made_while_its_team_is_deleted_is_refused_not_orphaned(crew):
    admin = crew.people["admin"]
    link_delete(link=crew.link, actor=admin)
    made, go, outcome = threading.Event(), threading.Event(), []

    def create_then_wait():
        try:
            with transaction.atomic():
                make_link(owner=admin, team=crew.team, url="https://example.com/late", slug=fresh("late"))
                made.set()
                go.wait(10)
        except IntegrityError as exc:
            outcome.append(exc)
        finally:
            made.set()
            connection.close()

    creator = threading.Thread(target=create_then_wait)
    creator.start()
    assert made.wait(10)
    team_delete(actor=admin, team=crew.team)  # the uncommitted link is not seen, and holds no lock
    go.set()
    creator.join(10)
    assert len(outcome) == 1 and "links_link_team_id" in str(outcome[0])
    assert not Link.objects.filter(url="https://example.com/late").exists()


def test_the_edit_page_moves_a_link_into_another_team_the_editor_edits_in(crew, make_user):
    from teams.services import member_add, team_create

    editor = crew.people["editor"]
    other = team_create(actor=editor, name=fresh("Sales "))  # the editor is its admin
    read_only = team_create(actor=crew.people["admin"], name=fresh("Legal "))
    member_add(actor=crew.people["admin"], team=read_only, username=editor.username, role=Role.VIEWER)
    client = Client()
    client.force_login(editor)
    edit = reverse("web:link-edit", args=[crew.link.slug])
    offered = {team.pk for team in client.get(edit).context["form"].fields["team"].queryset}
    assert offered == {crew.team.pk, other.pk, editor.personal_team.pk}  # not the team they only read

    form = client.get(edit).context["form"]
    data = {name: value for name, value in form.initial.items() if value not in (None, [], "")}
    data.update(tags=",".join(crew.link.tags), is_active="on", rules="[]", split="[]")
    refused = client.post(edit, {**data, "team": read_only.pk})
    assert refused.status_code == 200 and "team" in refused.context["form"].errors
    crew.link.refresh_from_db()
    assert crew.link.team_id == crew.team.pk

    moved = client.post(edit, {**data, "team": other.pk})
    assert moved.status_code == 302, moved.context["form"].errors if moved.context else moved
    crew.link.refresh_from_db()
    assert crew.link.team_id == other.pk
    for team in (crew.team, other):  # the move is in both teams' audit logs
        entry = AuditEntry.objects.filter(team=team, link_id=crew.link.pk).latest("id")
        assert entry.changes["team"] == [crew.team.pk, other.pk]
