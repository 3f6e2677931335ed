"""Links with a password, as a visitor meets them at the edge: the password
page on the link's own domain, the check by the live dashboard, and then
the link served exactly as the same link without a password would be."""

import base64
import hashlib
import http.client
import json
import re
import time
import uuid
from urllib.parse import urlencode

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password
from edge_helpers import EVICTIONS, following, metrics, publish, wait_for_clicks, wait_until
from rest_framework.test import APIClient

from devstack.http_client import Response
from links import services, unlocking
from links.models import Link
from links.publishing import link_payload, password_version, publish_keys
from slingshot.contract import link_key
from slingshot.redis import get_redis
from testing.factories import make_link
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
NEWS = "https://news.example.org/story?id=7"


def visit(edge, path: str, *, form: dict | None = None, source: str = "127.0.0.1", headers=None) -> Response:
    """One request from the address `source` (any of 127.0.0.0/8); a POST of
    `form` when it is given."""
    headers = {"User-Agent": FIREFOX, **(headers or {})}
    body = None
    if form is not None:
        body = urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn = http.client.HTTPConnection("127.0.0.1", edge.port, timeout=10, source_address=(source, 0))
    try:
        conn.request("POST" if form is not None else "GET", path, body=body, headers=headers)
        response = conn.getresponse()
        return Response(response.status, response.headers, response.read())
    finally:
        conn.close()


def head(edge, path: str) -> Response:
    return edge.request(path, method="HEAD")


def unlock(edge, path: str, password: str, *, referer: str = NEWS, source: str = "127.0.0.1") -> Response:
    """The page, then the password sent from it, as a browser does."""
    page = visit(edge, path, headers={"Referer": referer}, source=source)
    assert page.status == 200
    (action,) = re.findall(rb'<form method="post" action="([^"]+)"', page.body)
    (kept,) = re.findall(rb'name="ref" value="([^"]*)"', page.body)
    assert action.decode().replace("&amp;", "&") == path
    return visit(edge, path, form={"ref": kept.decode().replace("&amp;", "&"), "password": password}, source=source)


def pass_cookie(answer: Response) -> str:
    cookie = answer.headers["Set-Cookie"]
    assert re.fullmatch(r"slingshot_unlock=[0-9a-f]{32}; Path=/[\w-]+; Max-Age=60; HttpOnly; SameSite=Lax", cookie)
    return cookie.split(";")[0]


def twins(owner, password: str = "hunter2", **fields) -> tuple[Link, Link]:
    """The same link twice, without a password and with one."""
    plain = make_link(owner=owner, slug="p" + uuid.uuid4().hex[:10], **fields)
    locked = make_link(owner=owner, slug="l" + uuid.uuid4().hex[:10], password=password, **fields)
    return plain, locked


def test_the_page_is_the_links_own_with_a_strict_csp_and_a_view_is_an_orphan_visit(password_edge, owner, rds):
    link = make_link(owner=owner, url="https://example.com/t", slug=uuid.uuid4().hex[:10], password="pw")
    page = visit(password_edge, f"/{link.slug}?utm_source=mail&x=%22q%22", headers={"Referer": NEWS})
    assert page.status == 200 and page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"This link needs a password" in page.body and b'type="password"' in page.body
    assert b"example.com/t" not in page.body and b"127.0.0.1" not in page.body  # nothing of the target or dashboard
    assert f'action="/{link.slug}?utm_source=mail&amp;x=%22q%22"'.encode() in page.body
    assert b'name="ref" value="https://news.example.org/story?id=7"' in page.body
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp and "frame-ancestors 'none'" in csp
    (style,) = re.findall(rb"<style>(.*?)</style>", page.body)
    assert f"style-src 'sha256-{base64.b64encode(hashlib.sha256(style).digest()).decode()}'" in csp
    assert (page.headers["Cache-Control"], page.headers["Referrer-Policy"]) == ("private, no-store", "same-origin")
    assert head(password_edge, f"/{link.slug}").status == 200  # no visit: HEAD is not one
    (view,) = wait_for_clicks(rds, link.slug, 1)
    assert (view.get("orphan"), view["kind"], view["ref"]) == (True, "password", NEWS)
    assert '"password":true' in link_payload(link)


# Accept-Language, then the page's language, its heading, the onward page's,
# and what a wrong password and the lockout after it say.
LANGUAGES = [
    (
        "de-AT,de;q=0.9,en;q=0.5",
        "de",
        "Für diesen Link ist ein Passwort nötig",
        "Der Link wird geöffnet",
        "Das ist nicht das Passwort.",
        "Zu viele falsche Passwörter von Ihrer Adresse. Versuchen Sie es in 10 Minuten erneut.",
    ),
    (
        "es-MX",
        "es",
        "Este enlace necesita una contraseña",
        "Abriendo el enlace",
        "Esa no es la contraseña.",
        "Demasiadas contraseñas incorrectas desde su dirección. Inténtelo de nuevo en 10 minutos.",
    ),
    (
        "it, fr;q=0.8",
        "fr",
        "Ce lien demande un mot de passe",
        "Ouverture du lien",
        "Ce n’est pas le mot de passe.",
        "Trop de mauvais mots de passe depuis votre adresse. Réessayez dans 10 minutes.",
    ),
    (
        "en-GB,en;q=0.9",
        "en",
        "This link needs a password",
        "Opening the link",
        "That is not the password.",
        "Too many wrong passwords from your address. Try again in 10 minutes.",
    ),
    (
        "ja, *;q=0.1",
        "en",
        "This link needs a password",
        "Opening the link",
        "That is not the password.",
        "Too many wrong passwords from your address. Try again in 10 minutes.",
    ),
]


def in_language(answer: Response, status: int, lang: str, heading: str, csp: str) -> str:
    """The body of a page of the edge in `lang`, whose heading is `heading`."""
    assert answer.status == status
    assert answer.headers["Content-Language"] == lang
    assert answer.headers["Content-Security-Policy"] == csp
    assert answer.headers["Content-Length"] == str(len(answer.body))
    body = answer.body.decode()
    assert body.startswith(f'<!doctype html><html lang="{lang}">') and f"<h1>{heading}</h1>" in body
    return body


def test_the_password_page_and_its_answers_speak_the_visitors_language(password_edge, owner, settings):
    settings.LINK_UNLOCK_FAILURE_LIMIT = 1
    settings.LINK_UNLOCK_COOLOFF_MINUTES = 10
    # The 404 page's CSP: the pages share their one style.
    csp = password_edge.request("/nope-" + uuid.uuid4().hex[:8]).headers["Content-Security-Policy"]
    referer = NEWS + "&q=\"><b>'"
    for number, (accept, lang, heading, onward, wrong, locked) in enumerate(LANGUAGES, start=1):
        link = make_link(owner=owner, url="https://example.com/t", slug="i" + uuid.uuid4().hex[:10], password="pw")
        path = f"/{link.slug}?x=%22q%22"
        source = f"127.0.1.{number}"
        said = {"Accept-Language": accept}
        page = visit(password_edge, path, headers={**said, "Referer": referer}, source=source)
        body = in_language(page, 200, lang, heading, csp)
        assert 'name="ref" value="https://news.example.org/story?id=7&amp;q=&quot;&gt;&lt;b&gt;&#39;"' in body
        assert f'action="/{link.slug}?x=%22q%22"' in body
        form = {"ref": referer, "password": "pw"}
        right = visit(password_edge, path, form=form, headers=said, source=source)
        assert f'<a href="/{link.slug}?x=%22q%22">' in in_language(right, 200, lang, onward, csp)
        answer = visit(password_edge, path, form={**form, "password": "no"}, headers=said, source=source)
        assert f'role="alert">{wrong}</p>' in in_language(answer, 403, lang, heading, csp), accept
        answer = visit(password_edge, path, form=form, headers=said, source=source)
        assert f'role="alert">{locked}</p>' in in_language(answer, 429, lang, heading, csp), accept


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_the_right_password_serves_the_link_as_it_would_be_served_without_one(password_edge, owner, rds, status):
    rules = [{"url": "https://example.com/nl", "conditions": [{"type": "query", "key": "lang", "value": "nl"}]}]
    split = [{"url": "https://a.example.com/", "weight": 50}, {"url": "https://b.example.com/", "weight": 50}]
    plain, locked = twins(
        owner, url="https://example.com/t", redirect_status=status, forward_query=True, rules=rules, split=split
    )
    for query in ("?lang=nl&utm_source=mail", "?utm_source=mail", ""):
        wrong = unlock(password_edge, f"/{locked.slug}{query}", "nope")
        assert wrong.status == 403 and b"That is not the password." in wrong.body and "Set-Cookie" not in wrong.headers
        answer = unlock(password_edge, f"/{locked.slug}{query}", "hunter2")
        # A page that goes on, not a redirect: form-action would block one to
        # another site, and a 307/308 would send the password on.
        assert answer.status == 200 and "Location" not in answer.headers
        onward = f"/{locked.slug}{query}".replace("&", "&amp;")
        assert f'<meta http-equiv="refresh" content="0; url={onward}">'.encode() in answer.body
        served = visit(password_edge, f"/{locked.slug}{query}", headers={"Cookie": pass_cookie(answer)})
        expected = visit(password_edge, f"/{plain.slug}{query}")
        assert (served.status, served.headers["Location"]) == (expected.status, expected.headers["Location"])
        assert (
            served.headers["Set-Cookie"].startswith("slingshot_unlock=; ")
            and "Max-Age=0" in served.headers["Set-Cookie"]
        )
        again = visit(password_edge, f"/{locked.slug}{query}", headers={"Cookie": pass_cookie(answer)})
        assert again.status == 200 and b'type="password"' in again.body  # a pass serves once
    clicks = wait_for_clicks(rds, locked.slug, 3 * 5)
    served = sorted((click for click in clicks if "link" in click), key=lambda click: click["ts"])
    # The rule, then the split twice (the same visitor, the same destination).
    assert served[0]["rule"] == "1" and served[1]["rule"] == served[2]["rule"] and served[1]["rule"] in ("ab1", "ab2")
    assert {click["ref"] for click in served} == {NEWS}
    assert all(click["kind"] == "password" for click in clicks if "link" not in click)
    assert len(clicks) - len(served) == 12  # 3 × (page, wrong, page, the pass's second use)


def test_a_pass_is_for_its_own_link_only_and_a_visit_limit_counts_only_served_visits(password_edge, owner):
    first, second = twins(owner, url="https://example.com/l", max_visits=1)
    services.link_update(link=first, password="hunter2")
    answer = unlock(password_edge, f"/{first.slug}", "hunter2")
    cookie = pass_cookie(answer)
    # The same token on another link's path is no pass for it.
    stolen = visit(password_edge, f"/{second.slug}", headers={"Cookie": cookie})
    assert stolen.status == 200 and b'type="password"' in stolen.body
    for _ in range(3):  # looking at the page takes no visit
        assert visit(password_edge, f"/{first.slug}").status == 200
    assert visit(password_edge, f"/{first.slug}", headers={"Cookie": cookie}).status == 200  # taken by the try above
    served = visit(
        password_edge,
        f"/{first.slug}",
        headers={"Cookie": pass_cookie(unlock(password_edge, f"/{first.slug}", "hunter2"))},
    )
    assert (served.status, served.headers["Location"]) == (302, "https://example.com/l")
    assert visit(password_edge, f"/{first.slug}").status == 410  # the limit, as for a link without a password
    forged = visit(password_edge, f"/{second.slug}", headers={"Cookie": "slingshot_unlock=" + "0" * 32})
    assert forged.status == 200 and b'type="password"' in forged.body


def test_wrong_guesses_lock_an_address_then_the_link_from_every_address(password_edge, owner, settings):
    settings.LINK_UNLOCK_FAILURE_LIMIT = 2
    settings.LINK_UNLOCK_LINK_FAILURE_LIMIT = 5
    settings.LINK_UNLOCK_COOLOFF_MINUTES = 10
    link = make_link(owner=owner, url="https://example.com/g", slug=uuid.uuid4().hex[:10], password="right")
    path = f"/{link.slug}"
    for guess in range(2):
        assert visit(password_edge, path, form={"password": f"wrong{guess}"}, source="127.0.0.2").status == 403
    locked = visit(password_edge, path, form={"password": "right"}, source="127.0.0.2")
    assert locked.status == 429 and 590 <= int(locked.headers["Retry-After"]) <= 600
    assert b"Too many wrong passwords from your address. Try again in 10 minutes." in locked.body
    # Other addresses still may, until the link has had 5 wrong guesses in all.
    for source in ("127.0.0.3", "127.0.0.3", "127.0.0.4"):
        assert visit(password_edge, path, form={"password": "nope"}, source=source).status == 403
    for source in ("127.0.0.5", "127.0.0.6"):
        refused = visit(password_edge, path, form={"password": "right"}, source=source)
        assert refused.status == 429 and int(refused.headers["Retry-After"]) > 590
        assert b"Too many wrong passwords for this link. Try again in 10 minutes." in refused.body
    by_address, by_link = unlocking.failure_keys(link.pk, "127.0.0.5")
    assert int(get_redis().get(by_link)) == 5
    # The edge keeps the lockout it was told: under it, nothing reaches the
    # dashboard, even once the dashboard's count is gone.
    get_redis().delete(by_link)
    assert visit(password_edge, path, form={"password": "right"}, source="127.0.0.7").status == 429
    assert get_redis().get(by_link) is None
    other = make_link(owner=owner, url="https://example.com/o", slug=uuid.uuid4().hex[:10], password="right")
    assert visit(password_edge, f"/{other.slug}", form={"password": "right"}, source="127.0.0.2").status == 200


def test_no_answer_tells_which_links_have_a_password(password_edge, owner, live_server):
    locked = make_link(owner=owner, url="https://example.com/a", slug=uuid.uuid4().hex[:10], password="x")
    plain = make_link(owner=owner, url="https://example.com/b", slug=uuid.uuid4().hex[:10])
    answers = set()
    for path in (f"/unlock/{locked.pk}/", f"/unlock/{plain.pk}/", "/unlock/999999999/", "/unlock/"):
        conn = http.client.HTTPConnection("127.0.0.1", int(live_server.url.rsplit(":", 1)[1]), timeout=10)
        conn.request("GET", path)
        response = conn.getresponse()
        answers.add((response.status, response.getheader("Retry-After"), response.read()))
        conn.close()
    assert len(answers) == 1 and next(iter(answers))[0] == 503
    for link_id in (locked.pk, plain.pk, 999999999):
        conn = http.client.HTTPConnection("127.0.0.1", int(live_server.url.rsplit(":", 1)[1]), timeout=10)
        conn.request(
            "POST", "/internal/link-password", body=f'{{"link": {link_id}, "password": "x", "address": "1.2.3.4"}}'
        )
        assert conn.getresponse().status == 401  # the edge's secret first
        conn.close()
    assert password_edge.request("/_slingshot/password-check").status == 404


def test_a_pass_taken_before_the_password_changed_no_longer_serves(password_edge, owner, rds):
    link = make_link(owner=owner, url="https://example.com/v", slug="v" + uuid.uuid4().hex[:10], password="first")
    _, key = token_create(user=owner, name="unlock", scope="write")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    path = f"/{link.slug}"
    evicted = following(password_edge, rds)

    def change_password(password: str) -> None:
        """The change through the API, then until every worker of the edge has read it."""
        nonlocal evicted
        response = api.patch(f"/api/v1/links/{link.slug}", {"password": password}, format="json")
        assert response.status_code == 200, response.content
        evicted += password_edge.workers
        wait_until(lambda: metrics(password_edge).get(EVICTIONS, 0) >= evicted, what="the change read by every worker")

    def served(cookie: str) -> bool:
        answer = visit(password_edge, path, headers={"Cookie": cookie})
        if answer.status == 200:
            assert b'type="password"' in answer.body
            return False
        assert (answer.status, answer.headers["Location"]) == (302, "https://example.com/v")
        return True

    taken = pass_cookie(unlock(password_edge, path, "first"))
    change_password("second")
    assert not served(taken)
    assert unlock(password_edge, path, "first").status == 403
    assert served(pass_cookie(unlock(password_edge, path, "second")))
    # Removed and set again, to the same password: a new version all the same.
    taken = pass_cookie(unlock(password_edge, path, "second"))
    change_password("")
    change_password("second")
    assert not served(taken)
    assert served(pass_cookie(unlock(password_edge, path, "second")))


def test_a_form_from_another_site_is_refused_unchecked(password_edge, owner):
    link = make_link(owner=owner, url="https://example.com/c", slug=uuid.uuid4().hex[:10], password="right")
    sent = visit(password_edge, f"/{link.slug}", form={"password": "right"}, headers={"Origin": "https://evil.example"})
    assert sent.status == 403 and b"can only be sent from this page" in sent.body and "Set-Cookie" not in sent.headers
    # An opaque origin (a sandboxed frame on any site), and what browsers say of a form from elsewhere.
    for headers in (
        {"Origin": "null"},
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        for password in ("right", "wrong"):
            sent = visit(password_edge, f"/{link.slug}", form={"password": password}, headers=headers)
            assert sent.status == 403 and b"can only be sent from this page" in sent.body, headers
            assert "Set-Cookie" not in sent.headers
    # Not one was checked: no wrong guess was counted.
    assert get_redis().get(unlocking.failure_keys(link.pk, "127.0.0.1")[1]) is None
    origin = f"http://127.0.0.1:{password_edge.port}"
    same = visit(
        password_edge,
        f"/{link.slug}",
        form={"password": "right"},
        headers={"Origin": origin, "Sec-Fetch-Site": "same-origin"},
    )
    assert same.status == 200 and "Set-Cookie" in same.headers
    empty = visit(password_edge, f"/{link.slug}", form={"password": ""})
    assert empty.status == 400 and b"Type the password." in empty.body


def spent_budget(checks: int) -> None:
    """Sets the checks made in these seconds."""
    now = int(time.time())
    for second in (now, now + 1, now + 2):
        get_redis().set(f"{unlocking.CHECKS_KEY_PREFIX}{second}", checks, ex=5)


def test_checks_over_the_budget_wait_a_second_without_hashing(make_edge, live_server, owner, settings):
    port = live_server.url.rsplit(":", 1)[1]
    edge = make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})
    settings.LINK_UNLOCK_CHECKS_PER_SECOND = 3
    link = make_link(owner=owner, url="https://example.com/b", slug=uuid.uuid4().hex[:10], password="right")
    spent_budget(3)
    refused = visit(edge, f"/{link.slug}", form={"password": "right"})
    assert refused.status == 429 and refused.headers["Retry-After"] == "1"
    assert b"Too many passwords are being checked right now. Try again in 1 second." in refused.body
    assert get_redis().get(unlocking.failure_keys(link.pk, "127.0.0.1")[1]) is None  # not a wrong guess


def test_an_edge_that_cannot_ask_the_dashboard_never_serves_the_link(make_edge, owner, rds):
    link = make_link(owner=owner, url="https://example.com/f", slug=uuid.uuid4().hex[:10], password="right")
    for env in ({"EDGE_DASHBOARD_URL": ""}, {"EDGE_DASHBOARD_URL": "http://127.0.0.1:9"}):
        edge = make_edge(env=env)
        refused = visit(edge, f"/{link.slug}", form={"password": "right"})
        assert refused.status == 503 and "Set-Cookie" not in refused.headers
        assert b"Passwords cannot be checked just now." in refused.body


def test_a_link_published_by_an_older_dashboard_keeps_its_password(password_edge, rds):
    slug = "old" + uuid.uuid4().hex[:8]
    publish(rds, slug, "https://example.com/old", unlock_url="https://dashboard.example.com/unlock/7/")
    page = visit(password_edge, f"/{slug}")
    assert page.status == 200 and b'type="password"' in page.body and "Location" not in page.headers
    publish(rds, slug, "https://example.com/old", password="yes")  # breaks the contract: not served
    time.sleep(0.3)
    assert visit(password_edge, f"/{slug}").status == 404


def old_hash(link: Link, password: str) -> str:
    """The link's password hashed as before the link hasher (Django's
    default, ~0.2 s a check), published as such."""
    Link.objects.filter(pk=link.pk).update(password=make_password(password, hasher=PBKDF2PasswordHasher()))
    publish_keys([(link.domain.host, link.slug)])
    return Link.objects.get(pk=link.pk).password


def test_a_password_set_before_the_link_hasher_is_made_again_with_it(owner):
    link = make_link(owner=owner, url="https://example.com/h", slug=uuid.uuid4().hex[:10])
    encoded = old_hash(link, "right")
    assert unlocking.check_cost(encoded) == 50
    spent_budget(0)
    assert unlocking.check_link_password(link_id=link.pk, password="wrong", address="1.2.3.4").outcome == "wrong"
    assert Link.objects.get(pk=link.pk).password == encoded
    spent_budget(50)  # as after one check of an old hash this second
    assert unlocking.check_link_password(link_id=link.pk, password="right", address="1.2.3.4").as_json() == {
        "outcome": "locked",
        "scope": "everyone",
        "retry_after": 1,
    }
    spent_budget(0)
    assert unlocking.check_link_password(link_id=link.pk, password="right", address="1.2.3.4").outcome == "right"
    rehashed = Link.objects.get(pk=link.pk).password
    assert rehashed.startswith("pbkdf2_sha256$20000$") and unlocking.check_cost(rehashed) == 1
    # The same password, made again with its salt: the same version, so what
    # Redis has stays true and a pass the edge gave for it serves on.
    assert password_version(rehashed) == password_version(encoded)
    assert json.loads(get_redis().get(link_key(link.slug))) == json.loads(link_payload(Link.objects.get(pk=link.pk)))
    spent_budget(0)
    assert unlocking.check_link_password(link_id=link.pk, password="right", address="1.2.3.4").outcome == "right"


def test_the_pass_given_as_an_old_hash_is_made_again_opens_the_link(password_edge, owner):
    """The first right password for a hash made before the link hasher (an
    upgrade's links) makes it again: the pass it gets still opens the link."""
    link = make_link(owner=owner, url="https://example.com/o", slug="o" + uuid.uuid4().hex[:10])
    encoded = old_hash(link, "right")
    spent_budget(0)
    path = f"/{link.slug}"
    cookie = pass_cookie(unlock(password_edge, path, "right"))
    assert Link.objects.get(pk=link.pk).password != encoded  # made again
    answer = visit(password_edge, path, headers={"Cookie": cookie})
    assert (answer.status, answer.headers.get("Location")) == (302, "https://example.com/o")
