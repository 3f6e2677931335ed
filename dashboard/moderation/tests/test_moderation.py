"""The staff's moderation (moderation/services.py, /api/v1/reports, the
queue page): each action published to Redis as the edge reads it, written
to the teams' audit log, and undone by its opposite; a stop of one kind
never lifted by the end of another; staff only."""

import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from links.models import Link
from links.publishing import redis_link_key
from links.validation import default_host
from moderation import services
from moderation.models import Ban, Report
from screening import screen
from slingshot.redis import get_redis
from teams.models import AuditEntry, Suspension
from teams.services import team_create
from testing.factories import PASSWORD, fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(make_user):
    return make_user(is_staff=True)


@pytest.fixture
def staff_api(staff):
    client = APIClient()
    client.force_authenticate(staff)
    return client


def published(link: Link) -> dict:
    raw = get_redis().get(redis_link_key(link.domain.host, link.slug, default_host()))
    return json.loads(raw)


def report_of(link: Link, reason: str = "phishing") -> Report:
    return Report.objects.create(
        short_url=link.short_url, host=link.domain.host, slug=link.slug, link=link, reason=reason
    )


@pytest.fixture(autouse=True)
def fresh_screen():
    screen.forget()
    yield
    screen.forget()


def test_a_stopped_link_is_published_blocked_with_the_words_audited_and_let_go_on(staff, user):
    link = make_link(owner=user, url="https://example.com/a")
    report = report_of(link)
    services.link_block(link=link, actor=staff, words="Stopped: phishing.", report=report)
    value = published(link)
    assert (value["blocked"], value["active"]) == ("Stopped: phishing.", False)
    report.refresh_from_db()
    assert (report.status, report.outcome, report.handled_by) == ("acted", "stopped the link", staff)
    entry = AuditEntry.objects.filter(team=link.team, action="link.blocked").get()
    assert (entry.actor, entry.slug) == (staff, link.slug)
    services.link_unblock(link=link, actor=staff)
    value = published(link)
    assert "blocked" not in value and value["active"] is True
    assert AuditEntry.objects.filter(team=link.team, action="link.unblocked").count() == 1


def test_a_suspended_team_stops_its_links_tokens_and_members_and_lifting_it_leaves_a_link_stopped_for_itself(
    staff, user, client_for
):
    team = team_create(actor=user, name=fresh("team-"))
    mine, stopped_alone = (make_link(owner=user, team=team, url=f"https://example.com/{n}") for n in "ab")
    token_client = client_for(user, team=team)
    assert token_client.get("/api/v1/links").status_code == 200
    services.link_block(link=stopped_alone, actor=staff, words="Own stop.")
    services.team_suspend(team=team, actor=staff, reason="spam run")
    assert published(mine)["blocked"] == "" and published(stopped_alone)["blocked"] == "Own stop."
    mine.refresh_from_db()
    assert (mine.blocked_for, Suspension.objects.get(team=team).reason) == ("team", "spam run")
    assert token_client.get("/api/v1/links").status_code == 401
    browser = APIClient()
    browser.force_login(user)
    assert team.pk not in [t["id"] for t in browser.get("/api/v1/teams").json()]
    assert browser.get(f"/api/v1/links?team={team.pk}").status_code in (400, 403, 404)
    services.team_unsuspend(team=team, actor=staff)
    assert "blocked" not in published(mine) and published(stopped_alone)["blocked"] == "Own stop."
    assert token_client.get("/api/v1/links").status_code == 200
    actions = set(AuditEntry.objects.filter(team=team).values_list("action", flat=True))
    assert {"team.suspended", "team.unsuspended", "link.blocked"} <= actions


def test_a_suspended_person_cannot_sign_in_their_tokens_and_links_stop_until_it_is_lifted(
    staff, make_user, client_for, client
):
    person = make_user()
    link = make_link(owner=person, url="https://example.com/p")
    token_client = client_for(person)
    client.force_login(person)
    services.user_suspend(user=person, actor=staff, reason="abuse")
    person.refresh_from_db()
    assert not person.is_active
    assert published(link)["blocked"] == "" and token_client.get("/api/v1/links").status_code == 401
    assert client.get("/links/").status_code == 302  # the session is gone: to the sign-in page
    sign_in = {"username": person.username, "password": PASSWORD}
    assert client.post("/sign-in/", sign_in).status_code == 200  # the form again, not signed in
    services.user_unsuspend(user=person, actor=staff)
    assert "blocked" not in published(link) and token_client.get("/api/v1/links").status_code == 200
    assert client.post("/sign-in/", sign_in).status_code == 302
    with pytest.raises(Exception, match="yourself"):
        services.user_suspend(user=staff, actor=staff)


def test_a_banned_domain_flags_every_link_to_it_refuses_new_ones_and_unbanning_clears_them(staff, user, api):
    domain = f"bad-{fresh()}.example"
    to_it = make_link(owner=user, url=f"https://login.{domain}/x")
    by_rule = make_link(
        owner=user,
        url="https://example.com/",
        rules=[{"url": f"https://{domain}/app", "conditions": [{"type": "device", "value": "ios"}]}],
    )
    clean = make_link(owner=user, url=f"https://not{domain}/")
    services.domain_ban(domain=f"https://{domain}/some/path", actor=staff, reason="phishing kit")
    assert Ban.objects.get().domain == domain
    for link in (to_it, by_rule):
        link.refresh_from_db()
        assert link.listed == f"{domain}: staff bans" and published(link)["listed"] is True
    clean.refresh_from_db()
    assert clean.listed == "" and "listed" not in published(clean)
    refused = api.post("/api/v1/links", {"url": f"https://{domain}/new"}, format="json")
    assert refused.status_code == 400 and "staff bans" in json.dumps(refused.json())
    services.domain_unban(domain=domain, actor=staff)
    for link in (to_it, by_rule):
        link.refresh_from_db()
        assert link.listed == "" and "listed" not in published(link)
    assert api.post("/api/v1/links", {"url": f"https://{domain}/new"}, format="json").status_code == 201


def test_with_screen_action_warn_a_listed_link_is_published_to_warn(settings, staff, user):
    settings.SCREEN_ACTION = "warn"
    domain = f"warn-{fresh()}.example"
    link = make_link(owner=user, url=f"https://{domain}/x")
    services.domain_ban(domain=domain, actor=staff)
    assert published(link)["listed"] == "warn"


def test_the_api_is_for_staff_and_acts_on_a_report(staff_api, user, client_for, make_user):
    link = make_link(owner=user, url="https://example.com/api")
    report = report_of(link)
    assert client_for(user).get("/api/v1/reports").status_code == 403
    assert APIClient().get("/api/v1/reports").status_code == 401
    listed = staff_api.get("/api/v1/reports", {"status": "open"}).json()["results"]
    assert [r["id"] for r in listed] == [report.pk]
    assert listed[0]["link"]["owner"]["username"] == user.username and listed[0]["link"]["clicks"] == 0
    assert staff_api.get("/api/v1/reports", {"status": "nope"}).status_code == 400
    done = staff_api.post(f"/api/v1/reports/{report.pk}/disable", {"words": "No."}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "acted" and done.json()["link"]["blocked"]
    assert published(link)["blocked"] == "No."
    assert staff_api.post(f"/api/v1/reports/{report.pk}/enable").json()["link"]["blocked"] is False
    assert staff_api.post(f"/api/v1/reports/{report.pk}/dismiss").json()["status"] == "dismissed"
    assert staff_api.post(f"/api/v1/reports/{report.pk}/reopen").json()["status"] == "open"
    bad = staff_api.post(f"/api/v1/reports/{report.pk}/ban-domain", {"domain": "not a domain"}, format="json")
    assert bad.status_code == 400 and "domain" in bad.json()
    assert staff_api.post(f"/api/v1/reports/{report.pk}/suspend", {"subject": "x"}, format="json").status_code == 400
    suspended = staff_api.post(f"/api/v1/reports/{report.pk}/suspend", {"subject": "owner"}, format="json")
    assert suspended.status_code == 200 and suspended.json()["link"]["owner"]["active"] is False
    lifted = staff_api.post(f"/api/v1/reports/{report.pk}/unsuspend", {"subject": "owner"}, format="json")
    assert lifted.json()["link"]["owner"]["active"] is True
    assert get_user_model().objects.get(pk=user.pk).is_active


def test_the_queue_page_is_for_staff_and_its_forms_act(client, staff, user):
    link = make_link(owner=user, url="https://example.com/page")
    report = report_of(link, reason="malware")
    client.force_login(user)
    assert client.get("/moderation/").status_code == 403
    client.force_login(staff)
    page = client.get("/moderation/")
    assert page.status_code == 200 and link.short_url in page.content.decode()
    acted = client.post(f"/moderation/{report.pk}/act", {"action": "disable", "words": "Gone.", "status": "open"})
    assert acted.status_code == 302 and acted["Location"] == "/moderation/?status=open"
    assert published(link)["blocked"] == "Gone."
    client.post(f"/moderation/{report.pk}/act", {"action": "ban-domain"})
    ban = Ban.objects.get()
    assert ban.domain == "example.com"
    assert client.post(f"/moderation/bans/{ban.pk}/lift").status_code == 302
    assert not Ban.objects.exists()


def test_no_other_door_makes_a_suspended_person_active_again(staff, make_user):
    from django.core.exceptions import ValidationError

    from accounts.services import user_set_active

    person, manager = make_user(), make_user(is_superuser=True)
    services.user_suspend(user=person, actor=staff)
    with pytest.raises(ValidationError, match="suspended"):
        user_set_active(actor=manager, user=person, active=True)
    person.refresh_from_db()
    assert not person.is_active
    services.user_unsuspend(user=person, actor=staff)
    user_set_active(actor=manager, user=person, active=False)
    assert user_set_active(actor=manager, user=person, active=True).is_active


def test_the_team_sees_its_stopped_link_marked_in_its_list_and_on_its_page(client, staff, user):
    link = make_link(owner=user, url="https://example.com/marked")
    services.link_block(link=link, actor=staff, words="Stopped for spam.")
    client.force_login(user)
    row = client.get("/links/").content.decode()
    assert 'title="Stopped for spam.">stopped</small>' in row
    page = client.get(f"/links/{link.slug}/").content.decode()
    assert "Stopped by the service's staff" in page and "Stopped for spam." in page
