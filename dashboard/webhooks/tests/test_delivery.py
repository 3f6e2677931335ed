"""Events made and delivered to a real receiver that verifies each one with
the Standard Webhooks spec's own library: at least once, the same id at
every attempt, retried, disabled on a 410, one slow receiver holding up
no other."""

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from rest_framework.test import APIClient

from clicks.models import Click
from links.services import link_delete, link_update
from testing.factories import make_link, make_user
from testing.streams import entry, importer
from webhooks import services
from webhooks.models import Attempt, Message, Webhook

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner(db):
    return make_user()


def hook_for(owner, receiver, events, **fields) -> Webhook:
    from teams.services import personal_team

    webhook, secret = services.webhook_create(
        actor=owner, team=personal_team(owner), url=receiver.url, events=events, **fields
    )
    receiver.secrets.append(secret)
    return webhook


def make_due() -> None:
    """As if the retries' time had come."""
    Message.objects.filter(next_attempt_at__isnull=False).update(next_attempt_at=datetime.now(UTC))


def test_link_changes_are_delivered_signed_as_the_spec_verifies(webhook_settings, owner, receiver, deliver):
    hook_for(owner, receiver, ["link.created", "link.updated", "link.deleted"])
    link = make_link(owner=owner, url="https://example.org/a", slug="wh" + uuid.uuid4().hex[:6])
    link_update(link=link, actor=owner, url="https://example.org/b")
    link_update(link=link, actor=owner, url="https://example.org/b")  # no change: no event
    link_delete(link=link, actor=owner)
    deliver()
    assert [d.verified for d in receiver.got] == [True, True, True]
    events = [d.event for d in receiver.got]
    assert sorted(event["type"] for event in events) == ["link.created", "link.deleted", "link.updated"]
    by_type = {event["type"]: event for event in events}
    assert by_type["link.created"]["data"]["link"]["url"] == "https://example.org/a"
    assert by_type["link.updated"]["data"]["link"]["url"] == "https://example.org/b"
    assert by_type["link.deleted"]["data"]["link"]["slug"] == link.slug
    assert by_type["link.created"]["data"]["link"]["short_url"].endswith("/" + link.slug)
    assert all(event["timestamp"].endswith("Z") for event in events)
    assert len(set(receiver.ids())) == 3
    assert Message.objects.filter(state="delivered").count() == 3


def test_only_the_events_subscribed_to_and_only_the_teams_own(webhook_settings, owner, receiver, deliver):
    hook_for(owner, receiver, ["link.deleted"])
    make_link(owner=owner, url="https://example.org/")
    make_link(owner=make_user(), url="https://example.org/")  # another team's
    deliver()
    assert receiver.got == []


def test_a_failing_receiver_gets_the_same_message_again_until_it_takes_it(webhook_settings, owner, receiver, deliver):
    webhook = hook_for(owner, receiver, ["link.created"])
    receiver.statuses = [500, 503]
    make_link(owner=owner, url="https://example.org/")
    deliver()
    message = Message.objects.get(webhook=webhook)
    assert message.state == "pending" and message.attempts == 1
    wait = (message.next_attempt_at - datetime.now(UTC)).total_seconds()
    assert 7 < wait < 12  # the first retry in about 10 s, with jitter
    assert Webhook.objects.get(pk=webhook.pk).failing_since is not None
    make_due()
    deliver()
    make_due()
    deliver()
    assert receiver.ids() == [message.msg_id] * 3
    assert all(d.verified for d in receiver.got)
    message.refresh_from_db()
    assert message.state == "delivered" and message.attempts == 3 and message.next_attempt_at is None
    log = list(Attempt.objects.filter(message=message).order_by("number").values_list("number", "status_code"))
    assert log == [(1, 500), (2, 503), (3, 200)]
    assert Attempt.objects.get(message=message, number=1).response == "x" * 1024  # the first KiB only
    assert Webhook.objects.get(pk=webhook.pk).failing_since is None


def test_a_410_disables_the_webhook_and_says_why(webhook_settings, owner, receiver, deliver):
    webhook = hook_for(owner, receiver, ["link.created"])
    receiver.statuses = [410]
    make_link(owner=owner, url="https://example.org/")
    deliver()
    webhook.refresh_from_db()
    assert not webhook.enabled and "410" in webhook.disabled_reason
    assert Message.objects.get(webhook=webhook).next_attempt_at is None  # parked, not retried
    make_link(owner=owner, url="https://example.org/")
    assert Message.objects.filter(webhook=webhook).count() == 1  # a disabled webhook gets no new events
    services.webhook_update(actor=owner, webhook=webhook, enabled=True)
    deliver()
    assert len(receiver.got) == 2 and receiver.got[0].msg_id == receiver.got[1].msg_id


def test_a_day_of_failures_disables_the_webhook(webhook_settings, owner, receiver, deliver):
    webhook = hook_for(owner, receiver, ["link.created"])
    Webhook.objects.filter(pk=webhook.pk).update(failing_since=datetime.now(UTC) - timedelta(hours=25))
    receiver.statuses = [500]
    make_link(owner=owner, url="https://example.org/")
    deliver()
    webhook.refresh_from_db()
    assert not webhook.enabled and "24 hours" in webhook.disabled_reason and "HTTP 500" in webhook.disabled_reason


def test_a_rotated_secret_signs_beside_the_new_one_for_a_day(webhook_settings, owner, receiver, deliver):
    webhook = hook_for(owner, receiver, ["link.created"])
    old = receiver.secrets[:]
    new = services.webhook_rotate_secret(actor=owner, webhook=webhook)
    assert new.startswith("whsec_") and new not in old
    make_link(owner=owner, url="https://example.org/")
    receiver.secrets = [new]
    deliver()
    assert receiver.got[-1].verified
    assert len(receiver.got[-1].headers["webhook-signature"].split(" ")) == 2
    receiver.secrets = old
    services.message_redeliver(actor=owner, message=Message.objects.get(webhook=webhook))
    deliver()
    assert receiver.got[-1].verified  # the old secret still verifies
    Webhook.objects.filter(pk=webhook.pk).update(previous_until=datetime.now(UTC))
    services.message_redeliver(actor=owner, message=Message.objects.get(webhook=webhook))
    deliver()
    assert not receiver.got[-1].verified  # past the day, only the new one signs


def test_a_slow_receiver_holds_up_no_other_webhook(webhook_settings, owner, deliver):
    from .receiver import Receiver

    slow, fast = Receiver(delay=1.5).start(), Receiver().start()
    try:
        hook_for(owner, slow, ["link.created"])
        hook_for(owner, fast, ["link.created"])
        for _ in range(12):
            make_link(owner=owner, url="https://example.org/")
        started = time.monotonic()
        from webhooks.delivery import Deliverer

        deliverer = Deliverer(concurrency=8, per_webhook=4, timeout=5.0, private_addresses=True)
        deliverer.claim()
        while len(fast.got) < 12 and time.monotonic() - started < 10:
            deliverer.record(wait=0.05)
        took = time.monotonic() - started
        assert len(fast.got) == 12 and took < 1.4, took  # before the first slow answer came back
        assert len(slow.got) <= 4  # four at a time to one webhook
        deliverer.close()
    finally:
        slow.stop()
        fast.stop()


def test_the_api_sends_a_test_event_shows_the_log_and_redelivers(webhook_settings, owner, receiver, deliver):
    client = APIClient()
    client.force_authenticate(user=owner)
    made = client.post("/api/v1/webhooks", {"url": receiver.url, "events": ["link.clicked"]}, format="json").json()
    receiver.secrets.append(made["secret"])
    assert client.post(f"/api/v1/webhooks/{made['id']}/test").status_code == 202
    deliver()
    assert receiver.got[0].verified and receiver.got[0].event["type"] == "webhook.test"
    log = client.get(f"/api/v1/webhooks/{made['id']}/deliveries").json()
    assert log["count"] == 1
    row = log["results"][0]
    assert row["event_type"] == "webhook.test" and row["status_code"] == 200 and row["attempt"] == 1
    assert row["message_id"] == receiver.got[0].msg_id and row["state"] == "delivered"
    again = client.post(f"/api/v1/webhooks/{made['id']}/deliveries/{row['id']}/redeliver")
    assert again.status_code == 202
    deliver()
    assert receiver.ids() == [row["message_id"]] * 2
    assert client.get(f"/api/v1/webhooks/{made['id']}/deliveries").json()["results"][0]["attempt"] == 2
    assert client.post(f"/api/v1/webhooks/{made['id']}/deliveries/999999/redeliver").status_code == 404


def _click(of, **overrides):
    click = {
        "ts": int(datetime.now(UTC).timestamp() * 1000),
        "slug": of.slug,
        "link": of.pk,
        "ip": "198.51.100.7",
        "ua": "pytest",
        "ref": "",
    }
    return {**click, **overrides}


def test_each_stored_click_is_one_message_even_when_its_batch_is_stored_twice(
    webhook_settings, owner, receiver, deliver
):
    from webhooks.clicks import make_click_messages

    hook_for(owner, receiver, ["link.clicked"])
    link = make_link(owner=owner, url="https://example.org/", slug="wc" + uuid.uuid4().hex[:6])
    others = make_link(owner=make_user(), url="https://example.org/")  # a team without webhooks
    clicks = [_click(link) for _ in range(30)] + [_click(others)] + [_click(link, link=None, kind="unknown")]
    store = importer("webhooks")
    batch = store.maker.make([entry(clicks[:16]), entry(clicks[16:])])
    assert store.store(batch) == 32
    assert store.store(store.maker.make(batch.entries)) == 0  # as after a crash between COMMIT and XACK
    assert make_click_messages() == 30
    assert make_click_messages() == 0
    deliver()
    assert len(receiver.got) == 30 and all(d.verified for d in receiver.got)
    stored = {str(click_id) for click_id in Click.objects.filter(link_id=link.pk).values_list("click_id", flat=True)}
    got = {d.event["data"]["click"]["click_id"] for d in receiver.got}
    assert got == stored
    assert {d.msg_id for d in receiver.got} == {f"msg_click_{uuid.UUID(c).hex}" for c in stored}
    event = receiver.got[0].event
    assert event["type"] == "link.clicked" and event["data"]["link"]["slug"] == link.slug
    assert event["data"]["click"]["ip"] and event["data"]["click"]["user_agent"] == "pytest"


def test_no_click_batch_is_kept_while_no_webhook_wants_clicks(webhook_settings, owner, receiver):
    hook_for(owner, receiver, ["link.created"])
    link = make_link(owner=owner, url="https://example.org/")
    store = importer("webhooks-none")
    assert store.store(store.maker.make([entry([_click(link)])])) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM webhooks_clickbatch")
        assert cursor.fetchone()[0] == 0


def test_an_expiry_and_a_reached_limit_are_each_one_event(webhook_settings, owner, receiver, deliver):
    from slingshot.contract import visits_key
    from slingshot.redis import get_redis
    from webhooks.watch import make_link_events

    hook_for(owner, receiver, ["link.expired", "link.limit_reached"])
    expired = make_link(owner=owner, url="https://example.org/", expires_at=datetime.now(UTC) + timedelta(seconds=1))
    limited = make_link(owner=owner, url="https://example.org/", max_visits=3)
    assert make_link_events() == 0
    get_redis().set(visits_key(limited.pk), 3)
    time.sleep(1.1)
    assert make_link_events() == 2
    assert make_link_events() == 0
    deliver()
    got = {d.event["type"]: d.event["data"]["link"]["slug"] for d in receiver.got}
    assert got == {"link.expired": expired.slug, "link.limit_reached": limited.slug}


def test_the_log_keeps_what_waits_and_forgets_what_is_old(webhook_settings, owner, receiver, deliver):
    from webhooks.delivery import prune_log

    webhook = hook_for(owner, receiver, ["link.created"])
    for _ in range(3):
        make_link(owner=owner, url="https://example.org/")
    deliver()
    old, kept, waiting = Message.objects.filter(webhook=webhook).order_by("id")
    Message.objects.filter(pk__in=[old.pk, waiting.pk]).update(created_at=datetime.now(UTC) - timedelta(days=15))
    Message.objects.filter(pk=waiting.pk).update(state="pending")
    assert prune_log(14) == 1
    assert set(Message.objects.filter(webhook=webhook).values_list("pk", flat=True)) == {kept.pk, waiting.pk}
    assert not Attempt.objects.filter(message_id=old.pk).exists()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_address_that_became_private_is_refused_where_the_connection_is_made(
    webhook_settings, owner, receiver, host
):
    """As after DNS rebinding: the name was checked when the webhook was
    made, and what it resolves to when the deliverer connects is asked
    again; nothing reaches the receiver."""
    from webhooks.delivery import Deliverer

    webhook = hook_for(owner, receiver, ["link.created"])
    Webhook.objects.filter(pk=webhook.pk).update(url=receiver.url.replace("127.0.0.1", host))
    make_link(owner=owner, url="https://example.org/")
    deliverer = Deliverer(concurrency=8, per_webhook=4, timeout=2.0, private_addresses=False)
    deliverer.claim()
    deadline = time.monotonic() + 5
    while deliverer.busy() and time.monotonic() < deadline:
        deliverer.record(wait=0.05)
    deliverer.close()
    attempt = Attempt.objects.get(webhook=webhook)
    assert attempt.status_code is None and "private network" in attempt.error
    assert receiver.got == []


def test_a_secret_sealed_under_another_secret_key_is_never_sent_unsigned(webhook_settings, owner, receiver, deliver):
    webhook = hook_for(owner, receiver, ["link.created"])
    make_link(owner=owner, url="https://example.org/")
    webhook_settings.SECRET_KEY = "another-secret-key-" + uuid.uuid4().hex
    deliver()
    attempt = Attempt.objects.get(webhook=webhook)
    assert receiver.got == [] and "rotate it" in attempt.error
    assert Message.objects.get(webhook=webhook).state == "pending"  # retried, once rotated
    receiver.secrets = [services.webhook_rotate_secret(actor=owner, webhook=webhook)]
    make_due()
    deliver()
    assert len(receiver.got) == 1 and receiver.got[0].verified


def test_an_import_that_ends_is_one_event_and_a_dry_run_none(webhook_settings, owner, receiver, deliver):
    from importers.jobs import job_create, job_fail
    from teams.services import personal_team

    hook_for(owner, receiver, ["import.finished"])
    dry = job_create(owner=owner, team=personal_team(owner), source="csv", dry_run=True)
    job_fail(dry, "a dry run's end makes no event")
    job = job_create(owner=owner, team=personal_team(owner), source="csv")
    job_fail(job, "the source could not be read")
    deliver()
    [event] = [d.event for d in receiver.got]
    assert event["type"] == "import.finished"
    assert event["data"]["import"]["id"] == job.pk and event["data"]["import"]["state"] == "failed"
    assert event["data"]["import"]["error"] == "the source could not be read"
