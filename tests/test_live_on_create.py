"""A link is served the moment its create has answered, through every door
(docs/api.md, "Live at once"): the dashboard as production runs it (gunicorn,
its settings' defaults, the publisher beside it), a real edge, and a client
that visits at once, including where an edge had just answered the slug as
unknown, and under load. While Redis is away the answer says the link is
pending, and the edge answers its slug 503 until it is published, never 404."""

import io
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from links.delivery import _DELIVERY_LOCK
from links.models import Link
from testing.factories import fresh as fresh_name
from testing.factories import make_user
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

VISITS = 6  # enough for both of the edge's workers to answer, whichever takes the connection


@pytest.fixture
def dashboard(make_dashboard, publisher_process):
    """The dashboard under gunicorn with LINK_PUBLISH_INLINE at its default,
    the publisher running beside it, as `make run` and Compose run them."""
    port = make_dashboard(defaults=("LINK_PUBLISH_INLINE", "LINK_LIVE_TIMEOUT_MS"))
    url = f"http://127.0.0.1:{port}"
    for _ in range(8):  # each worker loads Django at its first request: not what the tests time
        requests.get(f"{url}/api/v1/links", timeout=30)
    return url


@pytest.fixture
def token():
    owner = make_user()
    _, raw = token_create(user=owner, name="live", scope="write")
    return owner, raw


def fresh() -> str:
    return fresh_name("lv")


def unknown_everywhere(edge, slug: str) -> None:
    """Each of the edge's workers has the slug cached as unknown."""
    for _ in range(VISITS):
        assert edge.request(f"/{slug}").status == 404


def served(edge, slug: str) -> list[int]:
    return [edge.request(f"/{slug}").status for _ in range(VISITS)]


def create_api_v1(dashboard, raw, slug):
    response = requests.post(
        f"{dashboard}/api/v1/links",
        json={"url": f"https://example.com/{slug}", "slug": slug},
        headers={"Authorization": f"Bearer {raw}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response


def create_api_v1_bulk(dashboard, raw, slug):
    response = requests.post(
        f"{dashboard}/api/v1/links/bulk",
        json={"links": [{"url": f"https://example.com/{slug}", "slug": slug}]},
        headers={"Authorization": f"Bearer {raw}"},
        timeout=10,
    )
    assert response.status_code == 200 and response.json()["created"] == 1, response.text
    return response


def create_shlink(dashboard, raw, slug):
    response = requests.post(
        f"{dashboard}/rest/v3/short-urls",
        json={"longUrl": f"https://example.com/{slug}", "customSlug": slug},
        headers={"X-Api-Key": raw},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response


def create_yourls(dashboard, raw, slug):
    response = requests.post(
        f"{dashboard}/yourls-api.php",
        data={
            "action": "shorturl",
            "signature": raw,
            "format": "json",
            "url": f"https://example.com/{slug}",
            "keyword": slug,
        },
        timeout=10,
    )
    assert response.status_code == 200 and response.json()["status"] == "success", response.text
    return response


DOORS = {
    "api-v1": create_api_v1,
    "api-v1-bulk": create_api_v1_bulk,
    "shlink": create_shlink,
    "yourls": create_yourls,
}


@pytest.mark.parametrize("door", DOORS)
def test_a_link_redirects_the_moment_its_create_answers(edge, dashboard, token, door):
    _, raw = token
    for _ in range(5):
        slug = fresh()
        unknown_everywhere(edge, slug)
        response = DOORS[door](dashboard, raw, slug)
        assert served(edge, slug) == [302] * VISITS
        assert response.headers["Slingshot-Publish"] == "live"


def test_a_link_made_on_the_dashboards_page_redirects_at_once(edge, client):
    user = make_user()
    client.force_login(user)
    slug = fresh()
    unknown_everywhere(edge, slug)
    response = client.post(
        reverse("web:link-create"),
        {"url": "https://example.com/page", "slug": slug, "redirect_status": "302", "is_active": "on"},
    )
    assert response.status_code == 302
    assert served(edge, slug) == [302] * VISITS


def test_links_of_a_csv_import_redirect_once_its_step_has_answered(edge, client):
    user = make_user()
    client.force_login(user)
    slugs = [fresh() for _ in range(3)]
    for slug in slugs:
        unknown_everywhere(edge, slug)
    upload = io.BytesIO(("url,slug\n" + "".join(f"https://example.com/{s},{s}\n" for s in slugs)).encode())
    upload.name = "links.csv"
    response = client.post(reverse("web:link-import"), {"file": upload})
    assert response.status_code == 302, response.content
    state = client.post(response["Location"] + "run", HTTP_ACCEPT="application/json").json()
    assert state["created"] == 3 and state["done"]
    for slug in slugs:
        assert served(edge, slug) == [302] * VISITS


def test_links_of_an_import_from_another_shortener_redirect_once_it_has_finished(edge, tmp_path):
    user = make_user()
    slugs = [fresh() for _ in range(3)]
    for slug in slugs:
        unknown_everywhere(edge, slug)
    path = Path(tmp_path) / "links.csv"
    path.write_text("url,slug\n" + "".join(f"https://example.com/{s},{s}\n" for s in slugs))
    call_command("import_links", "csv", str(path), user=user.username, progress=False, stdout=io.StringIO())
    for slug in slugs:
        assert served(edge, slug) == [302] * VISITS


def test_under_load_every_new_link_redirects_the_moment_its_create_answers(edge, dashboard, token):
    """Four clients keep the edge busy with cached links and unknown slugs
    while links are made one after another, each visited at once."""
    _, raw = token
    warm = fresh()
    create_api_v1(dashboard, raw, warm)
    stop = threading.Event()
    load = Counter()

    def traffic(index: int) -> None:
        while not stop.is_set():
            path = f"/{warm}" if index % 2 else f"/{fresh()}"
            load[edge.request(path).status] += 1

    threads = [threading.Thread(target=traffic, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        outcomes = Counter()
        for _ in range(40):
            slug = fresh()
            assert edge.request(f"/{slug}").status == 404
            create_api_v1(dashboard, raw, slug)
            outcomes[edge.request(f"/{slug}").status] += 1
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert outcomes == {302: 40}
    assert load[302] > 100 and load[404] > 100 and set(load) == {302, 404}


def test_creates_at_once_from_several_clients_each_redirect_the_moment_they_answer(edge, dashboard, token):
    """Four clients create at the same time, so that a request finds
    another's delivery under way and waits for it: each link redirects at
    the first visit after its own answer, which says it is live."""
    _, raw = token
    outcomes, publish = Counter(), Counter()

    def creator() -> None:
        for _ in range(15):
            slug = fresh()
            publish[create_api_v1(dashboard, raw, slug).headers["Slingshot-Publish"]] += 1
            outcomes[edge.request(f"/{slug}").status] += 1

    threads = [threading.Thread(target=creator) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == {302: 60} and publish == {"live": 60}


def hold_the_delivery(seconds: float, then) -> tuple[object, bool]:
    """Holds the outbox's delivery lock, as a deliverer under way does, for
    `seconds`, while `then` runs in a thread; what `then` returned, and
    whether it returned while the lock was still held."""
    answer = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_DELIVERY_LOCK])
        try:
            thread = threading.Thread(target=lambda: answer.append(then()))
            thread.start()
            thread.join(seconds)
            answered_while_held = bool(answer)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_DELIVERY_LOCK])
        thread.join()
    return answer[0], answered_while_held


def edit_api_v1(dashboard, raw, slug, url):
    response = requests.patch(
        f"{dashboard}/api/v1/links/{slug}",
        json={"url": url},
        headers={"Authorization": f"Bearer {raw}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response


def test_a_create_is_live_without_waiting_for_a_delivery_under_way(edge, dashboard, token):
    """A create delivers its own link without the outbox's lock: it
    answers, live, while the publisher's delivery still holds it."""
    _, raw = token
    create_api_v1(dashboard, raw, fresh())  # the default domain made: a domain's change is delivered under the lock
    slug = fresh()
    unknown_everywhere(edge, slug)
    response, answered_while_held = hold_the_delivery(3, lambda: create_api_v1(dashboard, raw, slug))
    assert answered_while_held
    assert response.headers["Slingshot-Publish"] == "live"
    assert served(edge, slug) == [302] * VISITS


def test_an_edit_that_waits_on_a_delivery_under_way_is_live_once_it_ends(edge, dashboard, token):
    """An edit reads the link back once committed, under the outbox's
    lock: the delivery under way ends without taking the edit's row (it
    began before the edit committed), and the request delivers it itself."""
    _, raw = token
    slug = fresh()
    create_api_v1(dashboard, raw, slug)
    response, answered_while_held = hold_the_delivery(
        0.2, lambda: edit_api_v1(dashboard, raw, slug, "https://example.com/edited")
    )
    assert not answered_while_held
    assert response.headers["Slingshot-Publish"] == "live"
    assert {edge.request(f"/{slug}").headers["Location"] for _ in range(VISITS)} == {"https://example.com/edited"}


def test_an_edit_held_up_past_the_bound_says_pending_and_is_published_after(edge, dashboard, token):
    """A delivery under way for longer than LINK_LIVE_TIMEOUT_MS (0.5 s):
    the edit answers pending at the bound, and the publisher, woken,
    delivers it once the lock is free."""
    _, raw = token
    slug = fresh()
    create_api_v1(dashboard, raw, slug)
    took = []

    def edit():
        started = time.monotonic()
        response = edit_api_v1(dashboard, raw, slug, "https://example.com/later")
        took.append(time.monotonic() - started)
        return response

    response, answered_while_held = hold_the_delivery(1.5, edit)
    assert answered_while_held and response.headers["Slingshot-Publish"] == "pending"
    assert took[0] >= 0.5
    deadline = time.monotonic() + 10
    while edge.request(f"/{slug}").headers.get("Location") != "https://example.com/later":
        assert time.monotonic() < deadline, "not published 10 s after the delivery lock was free"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["killed", "hung"])
def test_while_redis_is_away_the_answer_says_pending_and_the_edge_never_answers_404(
    servers, make_edge, dashboard, token, how
):
    """The create answers within the bound and says the link is pending;
    its slug, which the edge had just answered as unknown, is answered 503
    with Retry-After until Redis is back and the publisher has delivered
    it, and then redirects: never a 404 after the create answered."""
    _, raw = token
    edge = make_edge(patient_redis=False)  # its own: it logs the outage as errors
    slug = fresh()
    unknown_everywhere(edge, slug)

    if how == "killed":
        servers.stop_redis()
    else:
        servers.redis.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        response = create_api_v1(dashboard, raw, slug)
        took = time.monotonic() - started
        assert response.headers["Slingshot-Publish"] == "pending"
        assert took < 3, f"the create took {took:.1f}s with Redis away"
        assert Link.objects.filter(slug=slug).exists()
        for _ in range(VISITS):
            answer = edge.request(f"/{slug}")
            assert answer.status == 503 and answer.headers["Retry-After"]
        seen = Counter()
        until = time.monotonic() + 1
        while time.monotonic() < until:
            seen[edge.request(f"/{slug}").status] += 1
        assert set(seen) == {503}
    finally:
        if how == "killed":
            servers.start_redis()
        else:
            servers.redis.send_signal(signal.SIGCONT)

    seen = Counter()
    deadline = time.monotonic() + 15
    while True:
        status = edge.request(f"/{slug}").status
        seen[status] += 1
        if status == 302 and served(edge, slug) == [302] * VISITS:
            break
        assert time.monotonic() < deadline, f"not served 15 s after Redis came back: {seen}"
        time.sleep(0.02)
    assert 404 not in seen, seen
