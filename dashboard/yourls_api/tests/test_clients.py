"""Real YOURLS clients against the dashboard under gunicorn: the `yourls`
client from PyPI (pinned in requirements.txt), and the requests ShareX and
two WordPress plugins send, as their sources write them."""

import hashlib
import time

import pytest
import requests
from yourls import YOURLSClient, YOURLSHTTPError, YOURLSNoLoopError, YOURLSNoURLError

from links.models import Link
from tokens.services import token_create
from tokens.signatures import token_signature

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api_url(make_dashboard):
    return f"http://127.0.0.1:{make_dashboard()}/yourls-api.php"


@pytest.fixture
def token(make_user):
    """(token, raw secret): a write token of a new person's."""
    user = make_user()
    return token_create(user=user, name="client", scope="write")


def test_the_yourls_client_from_pypi(api_url, token, settings):
    token, raw = token
    client = YOURLSClient(api_url, signature=raw)
    short = client.shorten("https://example.com/pypi", keyword="pypi", title="From PyPI")
    assert (short.shorturl, short.keyword, short.url, short.title) == (
        settings.EDGE_BASE_URL + "/pypi",
        "pypi",
        "https://example.com/pypi",
        "From PyPI",
    )
    assert Link.objects.get(slug="pypi").team_id == token.team_id
    assert client.expand("pypi") == client.expand(short.shorturl) == "https://example.com/pypi"
    stats = client.url_stats("pypi")
    assert (stats.shorturl, stats.url, stats.title, stats.clicks) == (short.shorturl, short.url, "From PyPI", 0)
    assert stats.date == short.date
    client.shorten("https://example.com/second")
    links, totals = client.stats(filter="last", limit=2)
    assert [link.url for link in links] == ["https://example.com/second", "https://example.com/pypi"]
    assert (totals.total_links, totals.total_clicks) == (2, 0)
    assert client.db_stats() == totals
    # What it raises is what it raises against YOURLS 1.10, which answers these with a 400.
    with pytest.raises(YOURLSHTTPError) as taken:
        client.shorten("https://example.com/other", keyword="pypi")
    assert taken.value.response.json()["code"] == "error:keyword"
    with pytest.raises(YOURLSHTTPError) as again:
        client.shorten("https://example.com/pypi")
    assert again.value.response.json()["shorturl"] == short.shorturl
    with pytest.raises(YOURLSNoURLError):
        client.shorten("")
    with pytest.raises(YOURLSNoLoopError):
        client.shorten(short.shorturl)
    with pytest.raises(YOURLSHTTPError) as refused:
        YOURLSClient(api_url, signature="wrong").expand("pypi")
    assert refused.value.response.status_code == 403 and str(refused.value) == "Please log in"
    # With the token's signature instead of the token.
    assert YOURLSClient(api_url, signature=token_signature(token)).expand("pypi") == "https://example.com/pypi"


def test_sharex_posts_its_form_and_takes_the_answer_as_the_short_url(api_url, token):
    token, raw = token
    fields = {"signature": raw, "action": "shorturl", "url": "https://example.com/shot.png", "format": "simple"}
    # ShareX's YOURLS shortener sends multipart/form-data (SendRequestMultiPart)...
    built_in = requests.post(api_url, files={name: (None, value) for name, value in fields.items()}, timeout=10)
    assert built_in.request.headers["Content-Type"].startswith("multipart/form-data")
    link = Link.objects.get(url="https://example.com/shot.png")
    assert (built_in.status_code, built_in.text) == (200, link.short_url)
    assert built_in.headers["Content-Type"] == "text/plain; charset=utf-8"
    # ...and a custom uploader a URL-encoded form; YOURLS answers an existing URL with its short URL too.
    custom = requests.post(api_url, data={**fields, "signature": token_signature(token)}, timeout=10)
    assert (custom.status_code, custom.text) == (400, link.short_url)
    fresh = requests.post(api_url, data={**fields, "url": "https://example.com/shot2.png"}, timeout=10)
    assert (fresh.status_code, fresh.text) == (200, Link.objects.get(url="https://example.com/shot2.png").short_url)
    wrong = requests.post(api_url, data={**fields, "signature": raw[:-1]}, timeout=10)
    assert (wrong.status_code, wrong.text) == (403, "Please log in")


def test_wordpress_plugins_requests(api_url, token):
    token, _ = token
    secret = token_signature(token)
    # Better YOURLS: a GET with a time-limited md5 signature and format=JSON,
    # which YOURLS answers as simple, the body taken as the short URL.
    timestamp = str(int(time.time()))
    better = requests.get(
        api_url,
        params={
            "title": "Hello world!",
            "timestamp": timestamp,
            "signature": hashlib.md5((timestamp + secret).encode()).hexdigest(),
            "action": "shorturl",
            "url": "https://blog.example.com/hello-world/",
            "format": "JSON",
            "keyword": "hello-world",
        },
        timeout=10,
    )
    link = Link.objects.get(slug="hello-world")
    assert (better.status_code, better.text, link.title) == (200, link.short_url, "Hello world!")
    # YOURLS Link Creator: POSTs with the signature and format=json, wants a
    # 200 and `shorturl`, then reads the clicks of that short URL.
    created = requests.post(
        api_url,
        data={
            "url": "https://blog.example.com/p/2/",
            "title": "Second",
            "signature": secret,
            "action": "shorturl",
            "format": "json",
        },
        timeout=10,
    )
    assert created.status_code == 200
    shorturl = created.json()["shorturl"]
    stats = requests.post(
        api_url, data={"shorturl": shorturl, "signature": secret, "action": "url-stats", "format": "json"}, timeout=10
    )
    assert stats.status_code == 200 and stats.json()["link"]["clicks"] == "0"
    assert stats.json()["link"]["url"] == "https://blog.example.com/p/2/"
