"""/api/v1/webhooks: who may, what is refused, the secret shown once."""

import pytest
from rest_framework.test import APIClient

from teams.models import Membership, Role, Team
from testing.factories import api_client, fresh, make_user
from webhooks.models import Webhook

pytestmark = pytest.mark.django_db


def session(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


@pytest.fixture
def team_and_people(db):
    admin, editor, viewer = make_user(), make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    for person, role in ((admin, Role.ADMIN), (editor, Role.EDITOR), (viewer, Role.VIEWER)):
        Membership.objects.create(team=team, user=person, role=role)
    return team, admin, editor, viewer


def make(client, team, url, **fields):
    return client.post(
        "/api/v1/webhooks", {"url": url, "events": ["link.created"], "team": team.pk, **fields}, format="json"
    )


def test_an_admin_makes_a_webhook_and_sees_its_secret_once(webhook_settings, team_and_people, receiver):
    team, admin, _, _ = team_and_people
    client = session(admin)
    response = make(client, team, receiver.url, description="CRM")
    assert response.status_code == 201, response.json()
    made = response.json()
    assert made["secret"].startswith("whsec_") and made["enabled"] is True
    assert made["events"] == ["link.created"] and made["team"] == team.pk
    shown = client.get(f"/api/v1/webhooks/{made['id']}").json()
    assert "secret" not in shown and shown["url"] == receiver.url
    assert [hook["id"] for hook in client.get("/api/v1/webhooks").json()["results"]] == [made["id"]]
    assert bytes(Webhook.objects.get(pk=made["id"]).secret) != made["secret"].encode()  # sealed at rest


def test_viewers_editors_and_read_tokens_see_nothing_of_webhooks(webhook_settings, team_and_people, receiver):
    team, admin, editor, viewer = team_and_people
    hook = make(session(admin), team, receiver.url).json()
    for person in (editor, viewer):
        client = session(person)
        assert make(client, team, receiver.url).status_code == 403
        assert client.get("/api/v1/webhooks").json()["results"] == []
        assert client.get(f"/api/v1/webhooks/{hook['id']}").status_code == 404
        assert client.delete(f"/api/v1/webhooks/{hook['id']}").status_code == 404
    reader = api_client(admin, scope="read", team=team)
    assert reader.get(f"/api/v1/webhooks/{hook['id']}").status_code == 404
    assert make(reader, team, receiver.url).status_code == 403
    # An editor's webhooks token is no way around the admin role.
    assert make(api_client(editor, scope="webhooks", team=team), team, receiver.url).status_code == 403


def test_a_webhooks_token_of_an_admin_manages_webhooks_and_only_reads_links(
    webhook_settings, team_and_people, receiver
):
    team, admin, _, _ = team_and_people
    token = api_client(admin, scope="webhooks", team=team)
    response = make(token, team, receiver.url)
    assert response.status_code == 201
    hook = response.json()["id"]
    assert token.patch(f"/api/v1/webhooks/{hook}", {"enabled": False}, format="json").json()["enabled"] is False
    assert token.get("/api/v1/links").status_code == 200
    assert token.post("/api/v1/links", {"url": "https://example.com/"}, format="json").status_code == 403
    assert token.delete(f"/api/v1/webhooks/{hook}").status_code == 204
    assert not Webhook.objects.filter(pk=hook).exists()


def test_another_teams_webhook_is_out_of_reach(webhook_settings, team_and_people, receiver):
    team, admin, _, _ = team_and_people
    hook = make(session(admin), team, receiver.url).json()["id"]
    stranger = make_user()
    client = session(stranger)
    assert client.get(f"/api/v1/webhooks/{hook}").status_code == 404
    assert client.post(f"/api/v1/webhooks/{hook}/test").status_code == 404
    assert client.get(f"/api/v1/webhooks/{hook}/deliveries").status_code == 404
    refused = make(client, team, receiver.url)
    assert refused.status_code == 400
    assert refused.json() == {"team": ["No team with this id among those whose webhooks you manage."]}


@pytest.mark.parametrize(
    ("url", "allow_http", "allow_private", "says"),
    [
        ("http://example.com/hook", False, False, "must be https://"),
        ("https://127.0.0.1/hook", True, False, "private network"),
        ("https://10.1.2.3/hook", True, False, "private network"),
        ("https://[::1]/hook", True, False, "private network"),
        ("https://169.254.169.254/latest", True, False, "private network"),
        ("https://localhost/hook", True, False, "private network"),
        ("ftp://example.com/", True, True, "not an http or https"),
        ("https://user:pw@example.com/", True, True, "user name or password"),
        ("https://no-such-host.invalid/", True, True, "cannot be resolved"),
    ],
)
def test_unsafe_addresses_are_refused_with_400(settings, team_and_people, url, allow_http, allow_private, says):
    settings.WEBHOOKS_ALLOW_HTTP, settings.WEBHOOKS_ALLOW_PRIVATE = allow_http, allow_private
    team, admin, _, _ = team_and_people
    response = make(session(admin), team, url)
    assert response.status_code == 400
    assert says in " ".join(response.json()["url"])
    assert not Webhook.objects.filter(team=team).exists()


def test_bad_input_is_a_400_naming_the_field(webhook_settings, team_and_people, receiver):
    team, admin, _, _ = team_and_people
    client = session(admin)
    assert "events" in make(client, team, receiver.url, events=["link.nope"]).json()
    assert "events" in make(client, team, receiver.url, events=[]).json()
    assert "colour" in make(client, team, receiver.url, colour="red").json()
    hook = make(client, team, receiver.url).json()["id"]
    webhook_settings.WEBHOOKS_ALLOW_PRIVATE = False
    refused = client.patch(f"/api/v1/webhooks/{hook}", {"url": "https://10.0.0.1/"}, format="json")
    assert refused.status_code == 400 and "private network" in " ".join(refused.json()["url"])
    assert Webhook.objects.get(pk=hook).url == receiver.url
