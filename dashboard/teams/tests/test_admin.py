"""The Django admin holds staff to their roles: model permissions apply to
the links, clicks, teams and audit entries of their own teams, and changing
a link also takes the editor role."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from links.models import Link
from teams.models import Role
from teams.services import member_add, team_create
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db

EVERY_PERMISSION = ["view_link", "change_link", "delete_link", "view_team", "view_auditentry", "view_click"]


def test_staff_reach_only_what_their_roles_allow(crew, make_user):
    staff = make_user(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=EVERY_PERMISSION))
    member_add(actor=crew.people["admin"], team=crew.team, username=staff.username, role=Role.VIEWER)
    elsewhere = team_create(actor=crew.people["non-member"], name=fresh("Elsewhere "))
    theirs = make_link(owner=crew.people["non-member"], team=elsewhere, url="https://example.com/x", slug=fresh())
    admin = Client()
    admin.force_login(staff)

    listing = admin.get("/admin/links/link/").content.decode()
    assert crew.link.slug in listing and theirs.slug not in listing
    assert admin.get(f"/admin/links/link/{theirs.pk}/change/").status_code in (302, 404)
    # A viewer of the team: the link opens read-only, and neither a change nor a delete goes through.
    page = admin.get(f"/admin/links/link/{crew.link.pk}/change/")
    assert page.status_code == 200 and b'name="url"' not in page.content
    admin.post(
        f"/admin/links/link/{crew.link.pk}/change/",
        {"url": "https://evil.example/", "slug": crew.link.slug, "redirect_status": 302, "is_active": "on"},
    )
    assert admin.post(f"/admin/links/link/{crew.link.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Link.objects.get(pk=crew.link.pk).url == "https://example.com/campaign"

    teams = admin.get("/admin/teams/team/").content.decode()
    assert crew.team.name in teams and elsewhere.name not in teams
    # The audit log is for a team's admins: a viewer reads none of it.
    assert crew.link.slug not in admin.get("/admin/teams/auditentry/").content.decode()


def test_the_clicks_list_says_when_clicks_are_stored_in_clickhouse(make_user, settings):
    admin = Client()
    admin.force_login(make_user(is_superuser=True, is_staff=True))
    assert b"ClickHouse" not in admin.get("/admin/clicks/click/").content
    settings.CLICK_STORE = "clickhouse"
    page = admin.get("/admin/clicks/click/")
    assert page.status_code == 200
    assert b"this list shows only those still in PostgreSQL" in page.content
