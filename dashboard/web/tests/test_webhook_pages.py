"""A team's webhooks page and each one's delivery log (web/webhook_views.py):
an admin's to use, nothing of them for anyone else; what the services
refuse shown on the form, nothing typed lost; a signing secret shown once;
each action against a real receiver on loopback, delivered by the real
deliverer (webhooks/tests/conftest.py). In a real browser, at 1280 and
390 px: test_browser_webhooks.py."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from teams.models import Membership, Role, Team
from testing.factories import fresh, make_user
from webhooks.models import Attempt, Message, Webhook
from webhooks.tests import conftest as webhook_fixtures

pytestmark = pytest.mark.django_db

# The webhooks app's fixtures: a receiver on loopback, the settings that let a webhook reach it, the deliverer.
webhook_settings, receiver, deliver = (
    webhook_fixtures.webhook_settings,
    webhook_fixtures.receiver,
    webhook_fixtures.deliver,
)
SECRET = re.compile(r"whsec_[A-Za-z0-9+/=]+")


@pytest.fixture
def team_and_people(db):
    admin, editor, viewer, stranger = make_user(), make_user(), make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    for person, role in ((admin, Role.ADMIN), (editor, Role.EDITOR), (viewer, Role.VIEWER)):
        Membership.objects.create(team=team, user=person, role=role)
    return team, admin, editor, viewer, stranger


@pytest.fixture
def admin_client(client, team_and_people):
    team, admin, *_ = team_and_people
    client.force_login(admin)
    client.post(reverse("web:team-switch"), {"team": team.pk})
    return client


def webhooks_url(team) -> str:
    return reverse("web:webhook-list", args=[team.pk])


def add(client, team, url, events=("link.created",), description="CRM"):
    return client.post(webhooks_url(team), {"url": url, "description": description, "events": list(events)})


def secret_in(response) -> str | None:
    found = SECRET.search(response.content.decode())
    return found[0] if found else None


def made(client, team, url) -> tuple[Webhook, str]:
    """A webhook added on the page, and the secret the page showed."""
    response = add(client, team, url)
    assert response.status_code == 302, response.content.decode()
    shown = secret_in(client.get(response["Location"]))
    return Webhook.objects.get(team=team, url=url), shown


def act(client, webhook, name, **kwargs):
    return client.post(reverse(f"web:webhook-{name}", args=[webhook.team_id, webhook.pk]), **kwargs, follow=True)


def test_an_admin_finds_the_page_beside_the_teams_other_admin_pages(admin_client, team_and_people):
    team = team_and_people[0]
    page = admin_client.get(webhooks_url(team))
    assert page.status_code == 200
    assert "No webhooks yet." in page.content.decode()
    assert f'href="{webhooks_url(team)}"' in page.content.decode()  # in the navigation, beside API tokens
    assert (
        f'href="{webhooks_url(team)}"' in admin_client.get(reverse("web:team-detail", args=[team.pk])).content.decode()
    )


def test_nobody_but_the_teams_admins_finds_anything_of_its_webhooks(
    client, webhook_settings, receiver, team_and_people
):
    team, admin, editor, viewer, stranger = team_and_people
    client.force_login(admin)
    webhook, _ = made(client, team, receiver.url)
    message = Message.objects.create(webhook=webhook, msg_id="msg_x", event_type="webhook.test", body="{}")
    attempt = Attempt.objects.create(message=message, webhook=webhook, number=1, status_code=500, duration_ms=3)
    for person in (editor, viewer, stranger):
        client.force_login(person)
        client.post(reverse("web:team-switch"), {"team": team.pk})
        assert client.get(webhooks_url(team)).status_code == 404, person
        assert add(client, team, receiver.url + "/theirs").status_code == 404
        assert client.get(reverse("web:webhook-deliveries", args=[team.pk, webhook.pk])).status_code == 404
        for name in ("toggle", "test", "rotate", "delete", "edit"):
            assert client.post(reverse(f"web:webhook-{name}", args=[team.pk, webhook.pk])).status_code == 404
        edit = reverse("web:webhook-edit", args=[team.pk, webhook.pk])
        assert client.get(edit).status_code == 404
        assert client.post(edit, {"url": receiver.url + "/theirs", "events": ["link.deleted"]}).status_code == 404
        redeliver = reverse("web:webhook-redeliver", args=[team.pk, webhook.pk, attempt.pk])
        assert client.post(redeliver).status_code == 404
        assert client.get(reverse("web:webhook-list", args=[2**63])).status_code == 404
        # No way to it from their pages either.
        assert webhooks_url(team) not in client.get(reverse("web:tokens")).content.decode()
    assert Webhook.objects.filter(team=team).count() == 1
    kept = Webhook.objects.get(pk=webhook.pk)
    assert (kept.enabled, bytes(kept.secret), kept.previous_until) == (True, bytes(webhook.secret), None)
    assert (kept.url, kept.events) == (receiver.url, ["link.created"])
    assert Message.objects.filter(webhook=webhook).count() == 1
    # An admin of another team reaches none of this one's webhooks through their own.
    client.force_login(stranger)
    theirs = Team.objects.create(name=fresh("theirs-"))
    Membership.objects.create(team=theirs, user=stranger, role=Role.ADMIN)
    assert client.get(reverse("web:webhook-deliveries", args=[theirs.pk, webhook.pk])).status_code == 404
    assert client.post(reverse("web:webhook-delete", args=[theirs.pk, webhook.pk])).status_code == 404
    assert Webhook.objects.filter(pk=webhook.pk).exists()


@pytest.mark.parametrize(
    ("url", "settings_on", "says"),
    [
        ("http://hooks.example.com/in", {}, "must be https://"),
        ("https://127.0.0.1/in", {"WEBHOOKS_ALLOW_HTTP": True}, "127.0.0.1"),
    ],
)
def test_an_address_the_service_refuses_shows_its_error_and_keeps_what_was_typed(
    admin_client, team_and_people, settings, url, settings_on, says
):
    team = team_and_people[0]
    for name, value in settings_on.items():
        setattr(settings, name, value)
    response = add(admin_client, team, url, events=["link.deleted", "import.finished"], description="The CRM's inbox")
    assert response.status_code == 200
    page = response.content.decode()
    errors = re.findall(r'<small class="error field-error">(.*?)</small>', page)
    assert len(errors) == 1 and says in errors[0], errors
    assert f'value="{url}"' in page and "The CRM&#x27;s inbox" in page
    checked = re.findall(r'<input type="checkbox" name="events" value="([a-z._]+)"[^>]*checked', page)
    assert checked == ["link.deleted", "import.finished"]
    assert secret_in(response) is None
    assert not Webhook.objects.filter(team=team).exists()


def test_an_admin_changes_a_webhooks_address_events_and_description_and_keeps_its_secret(
    admin_client, team_and_people, webhook_settings, receiver
):
    team = team_and_people[0]
    webhook, _ = made(admin_client, team, receiver.url)
    edit = reverse("web:webhook-edit", args=[team.pk, webhook.pk])
    page = admin_client.get(edit).content.decode()
    assert f'value="{receiver.url}"' in page and "CRM" in page
    assert re.findall(r'<input type="checkbox" name="events" value="([a-z._]+)"[^>]*checked', page) == ["link.created"]
    assert f'href="{edit}"' in admin_client.get(webhooks_url(team)).content.decode()

    # Refused: the error on its field, what was typed kept, the webhook as it was.
    refused = admin_client.post(edit, {"url": "hooks example com", "events": ["link.deleted"]})
    assert refused.status_code == 200
    errors = re.findall(r"<small class=\"error field-error\">(.*?)</small>", refused.content.decode())
    assert errors == ["The address &#x27;hooks example com&#x27; holds a space or a control character."], errors
    assert 'value="hooks example com"' in refused.content.decode()
    assert (Webhook.objects.get(pk=webhook.pk).url, Webhook.objects.get(pk=webhook.pk).events) == (
        receiver.url,
        ["link.created"],
    )
    assert admin_client.post(edit, {"url": receiver.url, "events": []}).status_code == 200  # an event is needed

    saved = admin_client.post(
        edit, {"url": receiver.url + "/v2", "events": ["link.clicked", "link.deleted"], "description": "CRM v2"}
    )
    assert saved.status_code == 302 and saved["Location"] == webhooks_url(team)
    changed = Webhook.objects.get(pk=webhook.pk)
    assert (changed.url, changed.events, changed.description) == (
        receiver.url + "/v2",
        ["link.deleted", "link.clicked"],  # in the events' own order
        "CRM v2",
    )
    assert bytes(changed.secret) == bytes(webhook.secret) and changed.enabled
    assert "Saved the webhook" in admin_client.get(webhooks_url(team)).content.decode()


def test_a_webhook_needs_an_event(admin_client, team_and_people, webhook_settings, receiver):
    team = team_and_people[0]
    response = add(admin_client, team, receiver.url, events=[])
    assert response.status_code == 200
    assert re.search(r'id="id_events_error"[^>]*>.*This field is required', response.content.decode())
    assert f'value="{receiver.url}"' in response.content.decode()
    assert not Webhook.objects.filter(team=team).exists()


@pytest.mark.django_db(transaction=True)  # the deliverer's claim reads PostgreSQL's now()
def test_the_signing_secret_is_shown_once_and_signs_what_is_sent(
    admin_client, team_and_people, webhook_settings, receiver, deliver
):
    team = team_and_people[0]
    response = add(admin_client, team, receiver.url, events=["link.created", "link.clicked"])
    assert response.status_code == 302 and response["Location"] == webhooks_url(team)
    page = admin_client.get(webhooks_url(team))
    secret = secret_in(page)
    assert secret and "it is shown only now" in page.content.decode()
    webhook = Webhook.objects.get(team=team)
    assert (webhook.url, webhook.description, webhook.events) == (receiver.url, "CRM", ["link.created", "link.clicked"])
    assert re.search(r"<h2[^>]*>" + re.escape(receiver.url) + "</h2>", page.content.decode())
    assert "link.clicked" in page.content.decode() and ">enabled<" in page.content.decode()
    again = admin_client.get(webhooks_url(team))
    assert secret_in(again) is None and "shown only now" not in again.content.decode()

    receiver.secrets = [secret]
    assert "is on its way" in act(admin_client, webhook, "test").content.decode()
    deliver()
    (delivery,) = receiver.got
    assert delivery.verified and delivery.event["type"] == "webhook.test"


def test_disable_enable_and_delete(admin_client, team_and_people, webhook_settings, receiver):
    team = team_and_people[0]
    webhook, _ = made(admin_client, team, receiver.url)
    page = act(admin_client, webhook, "toggle").content.decode()
    assert f"Disabled {receiver.url}" in page and ">disabled<" in page and ">Enable</button>" in page
    assert "Send test event" not in page
    assert Webhook.objects.get(pk=webhook.pk).enabled is False
    page = act(admin_client, webhook, "toggle").content.decode()
    assert f"Enabled {receiver.url}" in page and ">Disable</button>" in page
    assert Webhook.objects.get(pk=webhook.pk).enabled is True
    assert admin_client.get(reverse("web:webhook-delete", args=[team.pk, webhook.pk])).status_code == 405
    page = act(admin_client, webhook, "delete").content.decode()
    assert "Deleted the webhook" in page and "No webhooks yet." in page
    assert not Webhook.objects.filter(pk=webhook.pk).exists()


@pytest.mark.django_db(transaction=True)  # the deliverer's claim reads PostgreSQL's now()
def test_the_deliverers_reason_for_disabling_a_webhook_is_shown(
    admin_client, team_and_people, webhook_settings, receiver, deliver
):
    team = team_and_people[0]
    webhook, _ = made(admin_client, team, receiver.url)
    receiver.statuses = [410]
    act(admin_client, webhook, "test")
    deliver()
    webhook.refresh_from_db()
    assert webhook.enabled is False and "410 Gone" in webhook.disabled_reason
    page = admin_client.get(webhooks_url(team)).content.decode()
    assert f"Disabled by the deliverer: {webhook.disabled_reason}" in page
    log = admin_client.get(reverse("web:webhook-deliveries", args=[team.pk, webhook.pk])).content.decode()
    assert f"Disabled by the deliverer: {webhook.disabled_reason}" in log and "HTTP 410" in log
    assert ">Redeliver</button>" not in log  # nothing is sent to a disabled webhook
    page = act(admin_client, webhook, "toggle").content.decode()
    assert "Disabled by the deliverer" not in page


@pytest.mark.django_db(transaction=True)  # the deliverer's claim reads PostgreSQL's now()
def test_a_test_event_in_the_delivery_log_and_redelivered(
    admin_client, team_and_people, webhook_settings, receiver, deliver
):
    team = team_and_people[0]
    webhook, _ = made(admin_client, team, receiver.url)
    receiver.statuses = [503]
    act(admin_client, webhook, "test")
    deliver()
    (message,) = Message.objects.filter(webhook=webhook)
    log_url = reverse("web:webhook-deliveries", args=[team.pk, webhook.pk])
    log = admin_client.get(log_url).content.decode()
    (row,) = re.findall(r"<tr>\s*<td data-label=\"When\".*?</tr>", log, flags=re.S)
    assert "webhook.test" in row and message.msg_id in row and "HTTP 503" in row and ">pending<" in row
    assert re.search(r'data-label="Attempt" class="num">1<', row)
    (attempt,) = Attempt.objects.filter(webhook=webhook)
    assert attempt.next_attempt_at is not None
    assert attempt.next_attempt_at.strftime("%Y-%m-%d %H:%M:%S") in row  # its next attempt (UTC here)

    response = admin_client.post(
        reverse("web:webhook-redeliver", args=[team.pk, webhook.pk, attempt.pk]), {"page": "1"}
    )
    assert response.status_code == 302 and response["Location"] == log_url
    message.refresh_from_db()
    assert message.state == "pending" and message.next_attempt_at <= attempt.next_attempt_at
    deliver()
    assert receiver.ids() == [message.msg_id, message.msg_id]
    log = admin_client.get(log_url).content.decode()
    rows = re.findall(r"<tr>\s*<td data-label=\"When\".*?</tr>", log, flags=re.S)
    assert len(rows) == 2 and "HTTP 200" in rows[0] and ">delivered<" in rows[0]
    assert re.search(r'data-label="Attempt" class="num">2<', rows[0])


@pytest.mark.django_db(transaction=True)  # the deliverer's claim reads PostgreSQL's now()
def test_a_rotated_secret_is_shown_once_and_the_old_one_still_signs(
    admin_client, team_and_people, webhook_settings, receiver, deliver
):
    team = team_and_people[0]
    webhook, old = made(admin_client, team, receiver.url)
    response = admin_client.post(reverse("web:webhook-rotate", args=[team.pk, webhook.pk]))
    assert response.status_code == 302 and response["Location"] == webhooks_url(team)
    page = admin_client.get(webhooks_url(team)).content.decode()
    new = SECRET.search(page)[0]
    assert new != old and "A new signing secret for" in page
    assert "The old secret keeps signing beside it for 24 hours" in page
    assert secret_in(admin_client.get(webhooks_url(team))) is None
    for secrets in ([new], [old]):
        receiver.secrets, receiver.got = secrets, []
        act(admin_client, webhook, "test")
        deliver()
        assert [delivery.verified for delivery in receiver.got] == [True], secrets


def rows_of(webhook: Webhook, count: int) -> None:
    """`count` more attempts at one message each, as the deliverer writes them."""
    start = Message.objects.filter(webhook=webhook).count()
    messages = Message.objects.bulk_create(
        Message(webhook=webhook, msg_id=f"msg_{webhook.pk}_{n}", event_type="link.created", body="{}", state="failed")
        for n in range(start, start + count)
    )
    Attempt.objects.bulk_create(
        Attempt(message=message, webhook=webhook, number=1, error="the receiver could not be reached", duration_ms=7)
        for message in messages
    )


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_delivery_log_is_paged_and_its_queries_do_not_grow_with_it(
    admin_client, team_and_people, webhook_settings, receiver
):
    team = team_and_people[0]
    webhook, _ = made(admin_client, team, receiver.url)
    log_url = reverse("web:webhook-deliveries", args=[team.pk, webhook.pk])
    rows_of(webhook, 2)
    few = queries(admin_client, log_url)
    rows_of(webhook, 58)
    assert queries(admin_client, log_url) == few
    first = admin_client.get(log_url).content.decode()
    assert first.count('data-label="When"') == 50 and "Page 1 of 2" in first and "?page=2" in first
    assert "the receiver could not be reached" in first and ">failed<" in first
    second = admin_client.get(log_url, {"page": 2}).content.decode()
    assert second.count('data-label="When"') == 10 and f"msg_{webhook.pk}_0<" in second
    last = Attempt.objects.filter(webhook=webhook).order_by("id").first()
    back = admin_client.post(reverse("web:webhook-redeliver", args=[team.pk, webhook.pk, last.pk]), {"page": "2"})
    assert back["Location"] == f"{log_url}?page=2"

    one = queries(admin_client, webhooks_url(team))
    for n in range(3):
        made(admin_client, team, f"{receiver.url}/{n}")
    assert queries(admin_client, webhooks_url(team)) == one
