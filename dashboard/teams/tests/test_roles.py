"""Each role against each operation, through the API and through the
pages (teams/access.py is the one rule behind both)."""

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from links.models import Link
from links.services import link_delete
from teams.models import Membership, Team
from testing.factories import fresh, make_link, make_user
from tokens.models import ApiToken

from .conftest import session_api

pytestmark = pytest.mark.django_db

ROLES = ["viewer", "editor", "admin", "non-member", "superuser"]
READS = {"viewer": True, "editor": True, "admin": True, "non-member": False, "superuser": True}
EDITS = {"viewer": False, "editor": True, "admin": True, "non-member": False, "superuser": True}
MANAGES = {"viewer": False, "editor": False, "admin": True, "non-member": False, "superuser": True}


def expected(role: str, allowed: dict, *, yes: int, refused: int, hidden: int = 404) -> int:
    """A member refused gets `refused` (403); someone who may not even read
    the team finds nothing (`hidden`)."""
    if allowed[role]:
        return yes
    return refused if READS[role] else hidden


def api_operations(crew, role):
    """(operation, expected status, response) for each operation through the API."""
    api = session_api(crew.people[role])
    team, slug = crew.team.pk, crew.link.slug
    spare = make_link(owner=crew.people["admin"], team=crew.team, url="https://example.com/spare", slug=fresh("s"))
    newcomer = make_user(username=fresh("new-")).username
    listed = api.get("/api/v1/links", {"team": team})
    yield "list", expected(role, READS, yes=200, refused=404), listed.status_code
    if listed.status_code == 200:
        assert [link["slug"] for link in listed.json()["results"]] == [spare.slug, slug]
    mine = session_api(crew.people[role]).get("/api/v1/links").json()["results"]
    assert (slug in [link["slug"] for link in mine]) is READS[role]
    yield "read", expected(role, READS, yes=200, refused=404), api.get(f"/api/v1/links/{slug}").status_code
    created = api.post("/api/v1/links", {"url": "https://example.com/new", "team": team}, format="json")
    yield "create", expected(role, EDITS, yes=201, refused=403, hidden=400), created.status_code
    changed = api.patch(f"/api/v1/links/{slug}", {"title": "changed"}, format="json")
    yield "update", expected(role, EDITS, yes=200, refused=403), changed.status_code
    yield "delete", expected(role, EDITS, yes=204, refused=403), api.delete(f"/api/v1/links/{spare.slug}").status_code
    assert Link.objects.filter(pk=spare.pk).exists() is not EDITS[role]
    stats = api.get(f"/api/v1/links/{slug}/stats")
    yield "stats", expected(role, READS, yes=200, refused=404), stats.status_code
    clicks = api.get("/api/v1/clicks", {"link": slug})
    yield "clicks", 200, clicks.status_code  # a filter: someone who may not read the link finds no click
    token = api.post("/api/v1/tokens", {"name": "ci", "scope": "read", "team": team}, format="json")
    yield "tokens", expected(role, READS, yes=201, refused=403, hidden=400), token.status_code
    editors = ApiToken.objects.create(
        user=crew.people["editor"], team=crew.team, name="editor's", prefix="x", digest=fresh("d")
    )
    revoked = api.delete(f"/api/v1/tokens/{editors.pk}")
    # Only an admin of the team (or the token's own person) finds another's token.
    allowed = {**MANAGES, "editor": True}
    yield "an editor's token", expected(role, allowed, yes=204, refused=404), revoked.status_code
    member = api.post(f"/api/v1/teams/{team}/members", {"username": newcomer, "role": "viewer"}, format="json")
    yield "members", expected(role, MANAGES, yes=201, refused=403), member.status_code
    assert Membership.objects.filter(team=crew.team, user__username=newcomer).exists() is MANAGES[role]
    audit = api.get("/api/v1/audit", {"team": team})
    yield "audit", expected(role, MANAGES, yes=200, refused=403), audit.status_code
    renamed = api.patch(f"/api/v1/teams/{team}", {"name": "Renamed"}, format="json")
    yield "rename", expected(role, MANAGES, yes=200, refused=403), renamed.status_code
    yield "renamed", MANAGES[role], Team.objects.get(pk=team).name == "Renamed"
    yield from team_deletions(crew, role, lambda: api.delete(f"/api/v1/teams/{team}"), yes=204, refused=409)


def team_deletions(crew, role, delete, *, yes, refused):
    """Deleting the team, refused while it has links, then once they are gone."""
    with_links = delete()
    yield "delete with links", expected(role, MANAGES, yes=refused, refused=403), with_links.status_code
    yield "kept with its links", True, Team.objects.filter(pk=crew.team.pk).exists()
    for link in Link.objects.filter(team=crew.team):
        link_delete(link=link, actor=crew.people["admin"])
    yield "delete", expected(role, MANAGES, yes=yes, refused=403), delete().status_code
    yield "deleted", MANAGES[role], not Team.objects.filter(pk=crew.team.pk).exists()


@pytest.mark.parametrize("role", ROLES)
def test_each_role_through_the_api(crew, role):
    outcomes = [(operation, status, got) for operation, status, got in api_operations(crew, role)]
    assert [(operation, got) for operation, _, got in outcomes] == [
        (operation, status) for operation, status, _ in outcomes
    ]


def page_operations(crew, role):
    user = crew.people[role]
    client = Client()
    client.force_login(user)
    team, slug = crew.team.pk, crew.link.slug
    spare = make_link(owner=crew.people["admin"], team=crew.team, url="https://example.com/spare", slug=fresh("s"))
    switched = client.post(reverse("web:team-switch"), {"team": team})
    yield "switch", 302 if READS[role] else 404, switched.status_code
    listed = [link.slug for link in client.get(reverse("web:link-list")).context["page"]]
    yield "list", READS[role], slug in listed
    yield (
        "read",
        expected(role, READS, yes=200, refused=404),
        client.get(reverse("web:link-detail", args=[slug])).status_code,
    )
    yield (
        "qr",
        expected(role, READS, yes=200, refused=404),
        client.get(reverse("web:link-qr", args=[slug, "svg"])).status_code,
    )
    created = client.post(reverse("web:link-create"), {"url": "https://example.com/page", "redirect_status": 302})
    # A non-member, who could not switch to the team, creates in their personal team.
    yield "create", 302 if EDITS[role] or role == "non-member" else 403, created.status_code
    made = list(Link.objects.filter(url="https://example.com/page", owner=user).values_list("team_id", flat=True))
    if created.status_code == 302:  # in the current team
        yield "created in", [team if READS[role] else user.personal_team.pk], made
    edit = client.post(
        reverse("web:link-edit", args=[slug]), {"url": "https://example.com/c2", "slug": slug, "redirect_status": 302}
    )
    yield "update", expected(role, EDITS, yes=302, refused=403), edit.status_code
    toggle = client.post(reverse("web:link-toggle", args=[slug]))
    yield "disable", expected(role, EDITS, yes=302, refused=403), toggle.status_code
    delete = client.post(reverse("web:link-delete", args=[spare.slug]))
    yield "delete", expected(role, EDITS, yes=302, refused=403), delete.status_code
    export = client.get(reverse("web:link-export"))
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    yield "export", READS[role], slug in [row["slug"] for row in rows]
    member = client.post(
        reverse("web:team-detail", args=[team]), {"username": crew.people["non-member"].username, "role": "viewer"}
    )
    yield "members", expected(role, MANAGES, yes=302, refused=403), member.status_code
    yield (
        "audit",
        expected(role, MANAGES, yes=200, refused=403),
        client.get(reverse("web:team-audit", args=[team])).status_code,
    )
    # Webhooks are out of sight below admin, as in the API (teams.access.manages_webhooks).
    yield (
        "webhooks",
        200 if MANAGES[role] else 404,
        client.get(reverse("web:webhook-list", args=[team])).status_code,
    )
    page = client.get(reverse("web:team-detail", args=[team]))
    yield "rename and delete offered", MANAGES[role], b'id="rename-team"' in page.content
    yield "delete offered", MANAGES[role], b"Delete team" in page.content
    renamed = client.post(reverse("web:team-rename", args=[team]), {"name": "Renamed"})
    yield "rename", expected(role, MANAGES, yes=302, refused=403), renamed.status_code
    yield "renamed", MANAGES[role], Team.objects.get(pk=team).name == "Renamed"
    confirm = client.get(reverse("web:team-delete", args=[team]))
    yield "delete page", expected(role, MANAGES, yes=200, refused=403), confirm.status_code
    # Refused or done, an admin is sent on with a message.
    yield from team_deletions(
        crew, role, lambda: client.post(reverse("web:team-delete", args=[team])), yes=302, refused=302
    )


@pytest.mark.parametrize("role", ROLES)
def test_each_role_through_the_pages(crew, role):
    outcomes = list(page_operations(crew, role))
    assert [(operation, got) for operation, _, got in outcomes] == [
        (operation, status) for operation, status, _ in outcomes
    ]


def test_a_viewer_sees_no_way_to_edit(crew):
    client = Client()
    client.force_login(crew.people["viewer"])
    client.post(reverse("web:team-switch"), {"team": crew.team.pk})
    listing = client.get(reverse("web:link-list"))
    detail = client.get(reverse("web:link-detail", args=[crew.link.slug]))
    assert crew.link.slug.encode() in listing.content and b"New link" not in listing.content
    assert b"Edit</a>" not in detail.content and b"Delete</a>" not in detail.content
    editor = Client()
    editor.force_login(crew.people["editor"])
    assert b"Edit</a>" in editor.get(reverse("web:link-detail", args=[crew.link.slug])).content
