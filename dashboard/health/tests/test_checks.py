"""The checks of links' destinations against real servers on loopback
(health/tests/servers.py) and a real PostgreSQL: each reason a
destination is broken recorded, the production address policy refusing
loopback before any connection, the per-host interval, recovery, the
`link.broken` webhook message, and the schedule of `manage.py check_links`."""

import json
import socket
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from health.models import LinkHealth, Reason, Status
from health.probe import MAX_REDIRECTS, Outcome
from health.rounds import check_round
from health.services import record
from links.models import Link
from links.services import link_update
from teams.services import personal_team
from testing.factories import fresh, make_link
from webhooks.models import Message
from webhooks.services import webhook_create

from .servers import LATE_SECONDS, Destinations, TlsDestination

pytestmark = pytest.mark.django_db


@pytest.fixture
def check_settings(settings):
    settings.LINK_HEALTH_ALLOW_PRIVATE = True
    settings.LINK_HEALTH_HOST_INTERVAL = 0
    settings.LINK_HEALTH_TIMEOUT = 1.5
    return settings


@pytest.fixture
def destinations():
    with Destinations() as server:
        yield server


def link_to(user, url: str, **options) -> Link:
    """A link of the user's whose destination is `url`, written past the
    services' check, which refuses this machine's addresses as a loop to the edge."""
    link = make_link(owner=user, url=f"https://example.com/{fresh()}", **options)
    Link.objects.filter(pk=link.pk).update(url=url)
    link.refresh_from_db()
    return link


def health(link: Link) -> LinkHealth:
    return LinkHealth.objects.get(link=link)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_each_way_a_destination_breaks_is_recorded_with_its_reason(check_settings, destinations, user, tmp_path):
    with TlsDestination(tmp_path) as tls:
        links = {
            "ok": link_to(user, destinations.at("/ok")),
            "moved": link_to(user, destinations.at("/moved")),
            "no-head": link_to(user, destinations.at("/no-head")),
            "busy": link_to(user, destinations.at("/busy")),
            "gone": link_to(user, destinations.at("/gone")),
            "error": link_to(user, destinations.at("/error")),
            "loop": link_to(user, destinations.at("/loop")),
            "slow": link_to(user, destinations.at("/slow")),
            "dns": link_to(user, "http://nothing.invalid/page"),
            "tls": link_to(user, tls.https_url),
            "closed": link_to(user, f"http://127.0.0.1:{closed_port()}/"),
        }
        summary = check_round(every=None)

    found = {name: (health(link).status, health(link).reason, health(link).http_status) for name, link in links.items()}
    assert found == {
        "ok": (Status.OK, "", 200),
        "moved": (Status.OK, "", 200),
        "no-head": (Status.OK, "", 200),
        "busy": (Status.OK, "", 429),
        "gone": (Status.BROKEN, Reason.HTTP_4XX, 404),
        "error": (Status.BROKEN, Reason.HTTP_5XX, 500),
        "loop": (Status.BROKEN, Reason.TOO_MANY_REDIRECTS, 302),
        "slow": (Status.BROKEN, Reason.TIMEOUT, None),
        "dns": (Status.BROKEN, Reason.DNS, None),
        "tls": (Status.BROKEN, Reason.TLS, None),
        "closed": (Status.BROKEN, Reason.CONNECT, None),
    }
    assert (summary.checked, summary.broken, summary.newly_broken) == (11, 7, 7)
    assert health(links["moved"]).final_url == destinations.at("/ok")
    assert health(links["dns"]).detail == "nothing.invalid does not resolve"
    assert "self-signed certificate" in health(links["tls"]).detail
    assert health(links["gone"]).detail == "answered 404 Not Found"
    # HEAD first; GET only where HEAD was refused or failed.
    assert destinations.seen.of("/ok") == ["HEAD", "HEAD"]  # itself, and /moved's second hop
    assert destinations.seen.of("/no-head") == ["HEAD", "GET"]
    assert destinations.seen.of("/gone") == ["HEAD", "GET"]
    assert destinations.seen.of("/loop") == ["HEAD"] * (MAX_REDIRECTS + 1)
    assert all(item.broken_since == item.checked_at for item in LinkHealth.objects.filter(status=Status.BROKEN))


def test_with_the_production_policy_a_private_address_is_refused_without_a_connection(
    check_settings, destinations, user
):
    check_settings.LINK_HEALTH_ALLOW_PRIVATE = False
    direct = link_to(user, destinations.at("/ok"))
    by_name = link_to(user, f"http://localhost:{destinations.port}/ok")

    check_round(every=None)

    for link in (direct, by_name):
        assert (health(link).status, health(link).reason) == (Status.BROKEN, Reason.REFUSED_ADDRESS)
        assert "private network" in health(link).detail
    assert destinations.connections == 0


def test_one_host_is_asked_at_most_once_per_interval(check_settings, destinations, user):
    check_settings.LINK_HEALTH_HOST_INTERVAL = 0.4
    for path in ("/ok", "/gone", "/moved", "/no-head"):
        link_to(user, destinations.at(path))

    check_round(every=None)

    times = [at for _, _, at in destinations.seen.requests]
    assert len(times) == 7  # /ok; /gone HEAD and GET; /moved and its /ok; /no-head HEAD and GET
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.38, gaps


def test_the_interval_is_counted_from_the_hosts_answer_not_from_the_request(check_settings, destinations, user):
    check_settings.LINK_HEALTH_HOST_INTERVAL = 0.4
    for path in ("/late", "/late-too"):
        link_to(user, destinations.at(path))

    check_round(every=None)

    (_, _, first), (_, _, second) = destinations.seen.requests
    assert second - first >= LATE_SECONDS + 0.38, second - first


def test_a_link_that_works_again_loses_its_mark_and_one_that_breaks_again_gets_a_new_since(
    check_settings, destinations, user
):
    link = link_to(user, destinations.at("/gone"))
    check_round(every=None)
    first = health(link)
    assert first.broken and first.broken_since == first.checked_at

    check_round(every=None)
    again = health(link)
    assert again.checked_at > first.checked_at and again.broken_since == first.broken_since

    Link.objects.filter(pk=link.pk).update(url=destinations.at("/ok"))
    check_round(every=None)
    recovered = health(link)
    assert (recovered.status, recovered.reason, recovered.broken_since) == (Status.OK, "", None)

    Link.objects.filter(pk=link.pk).update(url=destinations.at("/error"))
    check_round(every=None)
    broken_again = health(link)
    assert broken_again.reason == Reason.HTTP_5XX and broken_again.broken_since > first.broken_since


def test_a_link_found_broken_queues_one_link_broken_message_for_the_webhooks_that_want_it(
    check_settings, destinations, user, settings
):
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = True
    team = personal_team(user)
    wanting, _ = webhook_create(actor=user, team=team, url="http://127.0.0.1:9/hook", events=["link.broken"])
    webhook_create(actor=user, team=team, url="http://127.0.0.1:9/other", events=["link.created"])
    link = link_to(user, destinations.at("/gone"))

    check_round(every=None)
    check_round(every=None)  # still broken: no second event

    messages = list(Message.objects.filter(event_type="link.broken"))
    assert [message.webhook_id for message in messages] == [wanting.pk]
    body = json.loads(messages[0].body)
    assert body["type"] == "link.broken"
    assert body["data"]["link"]["slug"] == link.slug
    assert (body["data"]["reason"], body["data"]["detail"]) == ("http_4xx", "answered 404 Not Found")
    assert body["data"]["link"]["health"]["status"] == "broken"
    assert body["data"]["link"]["health"]["http_status"] == 404

    Link.objects.filter(pk=link.pk).update(url=destinations.at("/ok"))
    check_round(every=None)
    Link.objects.filter(pk=link.pk).update(url=destinations.at("/error"))
    check_round(every=None)
    assert Message.objects.filter(event_type="link.broken").count() == 2


def test_only_active_links_are_checked(check_settings, destinations, user):
    now = timezone.now()
    active = link_to(user, destinations.at("/ok"))
    others = [
        link_to(user, destinations.at("/disabled"), is_active=False),
        link_to(user, destinations.at("/scheduled"), valid_since=now + timedelta(days=1)),
        link_to(user, destinations.at("/expired"), expires_at=now + timedelta(seconds=1)),
    ]
    listed = link_to(user, destinations.at("/listed"))
    Link.objects.filter(pk=listed.pk).update(listed="listed.example: a list")
    stopped = link_to(user, destinations.at("/stopped"))
    Link.objects.filter(pk=stopped.pk).update(blocked_at=now, blocked_for="link")
    Link.objects.filter(pk=others[2].pk).update(expires_at=now - timedelta(seconds=1))

    check_round(every=None)

    assert list(LinkHealth.objects.values_list("link_id", flat=True)) == [active.pk]
    assert [path for _, path, _ in destinations.seen.requests] == ["/ok"]


def test_a_link_given_another_destination_loses_its_check_and_keeps_it_otherwise(user):
    link = make_link(owner=user, url="https://example.com/page")
    gone = Outcome(Reason.HTTP_4XX, 404, "answered 404 Not Found", link.url)
    record(link=link, url=link.url, outcome=gone, at=timezone.now())

    link_update(link=link, actor=user, title="A new title")
    assert health(link).broken
    link_update(link=link, actor=user, url="https://example.org/elsewhere")
    assert not LinkHealth.objects.filter(link=link).exists()


def test_check_links_once_checks_what_is_due_and_then_nothing_until_it_is_due_again(check_settings, destinations, user):
    check_settings.LINK_HEALTH_HOURS = 24
    link = link_to(user, destinations.at("/gone"))
    out = StringIO()

    call_command("check_links", "--once", stdout=out)
    call_command("check_links", "--once", stdout=out)

    assert "check_links: 1 links checked, 1 broken (1 newly)" in out.getvalue()
    assert "check_links: 0 links checked, 0 broken (0 newly)" in out.getvalue()
    assert destinations.seen.of("/gone") == ["HEAD", "GET"]
    LinkHealth.objects.filter(link=link).update(checked_at=timezone.now() - timedelta(hours=25))
    call_command("check_links", "--once", stdout=out)
    assert destinations.seen.of("/gone") == ["HEAD", "GET"] * 2
