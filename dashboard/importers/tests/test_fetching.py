"""Every request of an import goes through slingshot/outbound/: the first
one and every page's next link, retries too. From the Import page
(public_only) none reaches this server's own network, however the address
is spelt; no source's redirect is followed, so its key goes nowhere else;
an answer too large or too slow ends the import with a sentence naming the
setting. The core's own tests are in slingshot/tests/test_outbound.py."""

from datetime import datetime, timezone

import pytest
from django.core.management import CommandError

from importers.sources import SourceError, source_for
from testing.listeners import SECRET, InternalService, RawServer, dripping, redirecting

from .helpers import import_links, secret_file
from .servers import ApiServer

KEY = "fetch-test-key"
GROUP = "Bg1"

SPELLINGS = [
    "http://127.0.0.1:{port}",
    "http://127.0.0.1:{port}\\@example.com",
    "http://example.com\\@127.0.0.1:{port}",
    "http://user@127.0.0.1:{port}",
    "http://[::1]:{port}",
    "http://[::ffff:127.0.0.1]:{port}",
    "http://2130706433:{port}",
    "http://0x7f.1:{port}",
    "http://127.1:{port}",
    "http://0.0.0.0:{port}",
    "http://localhost:{port}",
    "http://127.0.0.1:{port}\t",
    "http://１２７.０.０.１:{port}",
]


def page_source(kind: str, url: str):
    """The source an import started from the Import page reads."""
    options = {"url": url, "public_only": True, "group": GROUP}
    return source_for(kind, options=options, secret=KEY, opener=lambda name: None, until=datetime.now(timezone.utc))


@pytest.mark.parametrize("kind", ["shlink", "kutt", "bitly"])
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_an_import_from_the_import_page_reaches_no_internal_service(kind, spelling):
    with InternalService() as service, pytest.raises(SourceError) as refused:
        source = page_source(kind, spelling.format(port=service.port))
        next(source.links())

    assert service.connections() == 0
    assert SECRET not in str(refused.value)


def test_with_private_addresses_allowed_the_import_page_reaches_a_local_server(settings):
    settings.IMPORTERS_PRIVATE_ADDRESSES = True
    answer = {"data": [{"id": "1", "address": "abc", "target": "https://example.com/"}], "total": 1}
    with ApiServer(lambda path, query: (200, answer), header="X-API-KEY", secret=KEY) as server:
        links = list(page_source("kutt", server.url).links())

    assert [link.slug for link in links] == ["abc"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "location", ["{elsewhere}/rest/v3/short-urls", "http://localhost:{port}/rest/v3/short-urls", "/rest/v3/moved"]
)
def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(user, tmp_path, location):
    with ApiServer(lambda path, query: (200, {}), header="X-Api-Key", secret=KEY) as elsewhere:
        location = location.format(elsewhere=elsewhere.url, port=elsewhere.url.rsplit(":", 1)[1])
        with RawServer(redirecting(location)) as server, pytest.raises(CommandError) as failed:
            import_links("shlink", url=server.url, api_key_file=secret_file(tmp_path, KEY), user=user.username)

    assert f"with a redirect (302) to '{location}', which the import does not follow" in str(failed.value)
    assert elsewhere.asked == [] and server.connections == 1  # asked once, not again elsewhere


def bitly_paging(pages: dict):
    """Bitly's API with one link, whose page says the next is at pages["next"]."""

    def route(path: str, query: dict):
        if path == f"/v4/groups/{GROUP}/bitlinks":
            link = {"id": "bit.ly/abc", "long_url": "https://example.com/", "created_at": "2024-06-12T18:06:22+0000"}
            return 200, {"links": [link], "pagination": {"next": pages["next"]}}
        if path.endswith("/clicks/summary"):
            return 200, {"total_clicks": 1}
        return None

    return route


@pytest.mark.django_db
@pytest.mark.parametrize(
    "following",
    [
        "http://localhost:{port}/v4/groups/Bg1/bitlinks?page=2",
        "http://127.0.0.1:{other}/v4/groups/Bg1/bitlinks?page=2",
        "https://127.0.0.1:{port}/v4/groups/Bg1/bitlinks?page=2",
        "http://127.0.0.1:{port}\\@example.com/v4/groups/Bg1/bitlinks?page=2",
        "http://example.com\\@127.0.0.1:{port}/v4/groups/Bg1/bitlinks?page=2",
        "http://user@127.0.0.1:{port}/v4/groups/Bg1/bitlinks?page=2",
    ],
)
def test_a_next_page_on_another_server_is_not_followed(user, tmp_path, following):
    pages = {}
    with (
        InternalService() as other,
        ApiServer(bitly_paging(pages), header="Authorization", secret=f"Bearer {KEY}") as api,
    ):
        pages["next"] = following.format(port=api.url.rsplit(":", 1)[1], other=other.port)
        with pytest.raises(CommandError, match="it does not follow"):
            token = secret_file(tmp_path, KEY)
            import_links("bitly", url=api.url + "/v4", group=GROUP, token_file=token, user=user.username)

        assert other.connections() == 0
        assert api.asked == [
            f"/v4/groups/{GROUP}/bitlinks?size=100&archived=both",
            "/v4/bitlinks/bit.ly/abc/clicks/summary?unit=month&units=-1",
        ]


@pytest.mark.django_db
def test_an_answer_over_the_cap_ends_the_import_saying_which_setting(user, tmp_path, settings):
    settings.IMPORTERS_MAX_RESPONSE_MB = 1
    settings.IMPORTERS_API_ATTEMPTS = 3
    answers = iter([(503, {}), (200, {"data": ["x" * 1000] * 2000, "total": 2000})])
    too_large = r"larger than 1 MB \(IMPORTERS_MAX_RESPONSE_MB\), to /links"
    with (
        ApiServer(lambda path, query: next(answers), header="X-API-KEY", secret=KEY) as server,
        pytest.raises(CommandError, match=too_large),
    ):
        import_links("kutt", url=server.url, api_key_file=secret_file(tmp_path, KEY), user=user.username)

    assert len(server.asked) == 2  # the retry of a 503 is capped as the first request is; the cap is not retried


@pytest.mark.django_db
def test_an_answer_too_slow_ends_the_import_saying_which_setting(user, tmp_path, settings):
    settings.IMPORTERS_REQUEST_TIMEOUT = 2

    dripped = dripping(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", every=1)
    with RawServer(dripped) as server, pytest.raises(CommandError) as failed:
        import_links("kutt", url=server.url, api_key_file=secret_file(tmp_path, KEY), user=user.username)

    assert "did not come in full within 2 s (IMPORTERS_REQUEST_TIMEOUT)" in str(failed.value)
    assert server.connections == 1  # not tried again


def test_a_name_that_does_not_resolve_is_said_so(settings):
    settings.IMPORTERS_API_ATTEMPTS = 1
    with pytest.raises(SourceError, match="no-such-host.invalid cannot be found"):
        next(page_source("kutt", "https://no-such-host.invalid").links())
