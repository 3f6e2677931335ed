"""The contract (docs/contract.md): both tiers use the names it gives, and a
link published by the dashboard is read correctly by the edge."""

import json
import re
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

import click_stream
import pytest
from django.utils import timezone
from edge_helpers import wait_for_clicks

from links import publishing, rules, slugs, unlocking
from links.models import Link
from links.publishing import link_payload
from slingshot import contract
from slingshot.contract import link_key
from slingshot.redis import get_redis
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parent.parent.parent
DOC = (REPO / "docs" / "contract.md").read_text()


def luajit(script: str) -> dict:
    """What a Lua script run with the edge's modules prints, as JSON."""
    lua_path = f"{REPO / 'edge'}/?.lua;;"
    run = subprocess.run(
        ["luajit", "-e", f"package.path = {json.dumps(lua_path)}; local cjson = require('cjson'); {script}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


def lua_constants(module: str) -> dict[str, str]:
    """The `_M.NAME = "value"` and `_M.NAME = number` lines of an edge module."""
    text = (REPO / "edge" / "slingshot" / f"{module}.lua").read_text()
    return {name: value.strip('"') for name, value in re.findall(r'^_M\.(\w+) = ("[^"]*"|\d+)$', text, flags=re.M)}


def test_the_edge_and_the_dashboard_use_the_names_of_the_document():
    edge = lua_constants("contract")
    assert edge == {
        "LINK_KEY_PREFIX": contract.LINK_KEY_PREFIX,
        "DOMAINS_KEY": contract.DOMAINS_KEY,
        "ROBOTS_KEY_PREFIX": contract.ROBOTS_KEY_PREFIX,
        "APP_FILE_KEY_PREFIX": contract.APP_FILE_KEY_PREFIX,
        "LINK_CHANGES_STREAM": contract.LINK_CHANGES_STREAM,
        "VISITS_KEY_PREFIX": contract.VISITS_KEY_PREFIX,
        "CLICKS_STREAM": contract.CLICKS_STREAM,
        "CLICK_RECORD_VERSION": contract.CLICK_RECORD_VERSION,
        "SERVED_KEY_PREFIX": contract.SERVED_KEY_PREFIX,
        "UNLOCK_KEY_PREFIX": contract.UNLOCK_KEY_PREFIX,
    }
    keys = dict(
        re.findall(
            r"^\| (.+?) \| (stream|string \(JSON\)|string \(integer\)|string \(text\)|hash|hash \(JSON values\)"
            r"|consumer group) \|",
            DOC,
            flags=re.M,
        )
    )
    assert keys == {
        f"`{contract.LINK_KEY_PREFIX}<slug>`": "string (JSON)",
        f"`{contract.LINK_KEY_PREFIX}<host>/<slug>`": "string (JSON)",
        f"`{contract.DOMAINS_KEY}`": "hash (JSON values)",
        f"`{contract.ROBOTS_KEY_PREFIX}<host>`": "string (text)",
        f"`{contract.APP_FILE_KEY_PREFIX}<name>:<host>`": "string (JSON)",
        f"`{contract.VISITS_KEY_PREFIX}<link id>`": "string (integer)",
        f"`{contract.LINK_CHANGES_STREAM}`": "stream",
        f"`{contract.CLICKS_STREAM}`": "stream",
        f"consumer group `{contract.CLICKS_GROUP}` on `{contract.CLICKS_STREAM}`": "consumer group",
        f"`{contract.DEAD_LETTER_STREAM}`": "stream",
        f"`{contract.SERVED_KEY_PREFIX}<hour>`": "hash",
        f"`{contract.UNLOCK_KEY_PREFIX}<token>`": "string (text)",
        # The dashboard's own, in the same Redis.
        f"`{unlocking.FAILURES_KEY_PREFIX}<link id>` and `...:<link id>:<address>`": "string (integer)",
        f"`{unlocking.CHECKS_KEY_PREFIX}<second>`": "string (integer)",
        f"`{publishing.VERSION_KEY_PREFIX}<host>/<slug>`": "string (integer)",
    }
    assert f"| `v` | record format version, `{contract.CLICK_RECORD_VERSION}` |" in DOC
    assert f"### Record format {contract.CLICK_RECORD_VERSION}" in DOC
    lua = (REPO / "edge" / "slingshot" / "contract.lua").read_text()
    (edge_kinds,) = re.findall(r"^_M\.ORPHAN_KINDS = \{ (.*?) \}$", lua, flags=re.M | re.S)
    assert tuple(kind.strip('"\n ') for kind in edge_kinds.split(",")) == contract.ORPHAN_KINDS
    assert click_stream.ORPHAN_KINDS == contract.ORPHAN_KINDS
    (app_files,) = re.findall(r"^_M\.APP_FILES = \{ (.*) \}$", lua, flags=re.M)
    assert tuple(name.strip('" ') for name in app_files.split(",")) == contract.APP_FILES
    for name in contract.APP_FILES:
        assert f"location = /.well-known/{name} {{" in (REPO / "nginx.conf").read_text()
    # orphan_visits takes every kind, and no other (sql/clicks.sql).
    sql = (REPO / "sql" / "clicks.sql").read_text()
    (checked,) = re.findall(r"kind +text +NOT NULL CHECK \(kind IN \(([^)]*)\)\)", sql)
    assert tuple(kind.strip(" '") for kind in checked.split(",")) == contract.ORPHAN_KINDS
    kinds_table = DOC.split("| kind | what the edge found |\n|---|---|\n")[1].split("\n\n")[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", kinds_table, flags=re.M)) == contract.ORPHAN_KINDS
    assert f"MAXLEN ~ {contract.LINK_CHANGES_MAXLEN}" in DOC


def test_the_slug_rule_is_the_same_in_the_document_the_dashboard_and_the_edge():
    edge = lua_constants("slug")
    assert (edge["DEFAULT_ALPHABET"], int(edge["MIN_LENGTH"]), int(edge["MAX_LENGTH"])) == (
        slugs.ALPHABET,
        slugs.MIN_LENGTH,
        slugs.MAX_LENGTH,
    )
    assert f"A slug is {slugs.MIN_LENGTH} to {slugs.MAX_LENGTH} characters of `[{slugs.ALPHABET}]`" in " ".join(
        DOC.split()
    )
    # Each of one path segment; /_slingshot/... are internal, never a slug's shape.
    nginx_paths = set(re.findall(r"^\s*location = /([\w.-]+) \{", (REPO / "nginx.conf").read_text(), flags=re.M))
    assert nginx_paths == set(contract.EDGE_PATHS)
    for path in contract.EDGE_PATHS:
        assert f"`{path}`" in DOC
    slug_shaped = {path for path in contract.EDGE_PATHS if "." not in path}
    assert slug_shaped | {"new", "import", "admin", "api", "static", "unlock", "domains"} <= slugs.reserved()


def test_every_slug_the_dashboard_accepts_the_edge_serves(edge):
    owner = make_user()
    every_character = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    chosen = [
        "Q",
        "-" + uuid.uuid4().hex[:8],
        every_character[:32] + uuid.uuid4().hex,
        uuid.uuid4().hex[:8] + every_character[32:],
    ]
    links = [make_link(owner=owner, url=f"https://example.com/{slug}", slug=slug) for slug in chosen]
    links += [make_link(owner=owner, url="https://example.com/generated") for _ in range(20)]
    for link in links:
        assert edge.request(f"/{link.slug}").status == 302, link.slug


def create(owner, **fields):
    return make_link(owner=owner, slug="c" + uuid.uuid4().hex[:12], **fields)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_status_per_link(edge, owner, status):
    link = create(owner, url="https://example.com/s", redirect_status=status)
    response = edge.request(f"/{link.slug}")
    assert response.status == status
    assert response.headers["Location"] == "https://example.com/s"
    assert response.headers["Cache-Control"] == "private, no-store"


@pytest.mark.parametrize(
    "target, query, expected",
    [
        ("https://example.com/p", "utm=1&x=%20y", "https://example.com/p?utm=1&x=%20y"),
        ("https://example.com/p?a=1", "b=2", "https://example.com/p?a=1&b=2"),
        ("https://example.com/p?a=1#top", "b=2", "https://example.com/p?a=1&b=2#top"),
        ("https://example.com/p", "", "https://example.com/p"),
    ],
)
def test_query_forwarding(edge, owner, target, query, expected):
    link = create(owner, url=target, forward_query=True)
    path = f"/{link.slug}?{query}" if query else f"/{link.slug}"
    assert edge.request(path).headers["Location"] == expected


def test_query_is_not_forwarded_unless_asked(edge, owner):
    link = create(owner, url="https://example.com/p")
    assert edge.request(f"/{link.slug}?utm=1").headers["Location"] == "https://example.com/p"


def test_disabled_link_is_404_and_expired_link_is_410(edge, owner):
    disabled = create(owner, url="https://example.com/", is_active=False)
    expired = create(owner, url="https://example.com/", expires_at=timezone.now() - timedelta(seconds=1))
    later = create(owner, url="https://example.com/later", expires_at=timezone.now() + timedelta(days=1))
    assert edge.request(f"/{disabled.slug}").status == 404
    assert edge.request(f"/{expired.slug}").status == 410
    assert edge.request(f"/{later.slug}").status == 302


@pytest.mark.parametrize(
    "typed",
    [
        "HTTPS://EXAMPLE.COM/Case",
        "https://Bücher.example/straße?q=ä#frag",
        "http://134744072/dotted",
        "https://example.com:443/default-port",
        'https://example.com/"quotes"<and>{braces}',
    ],
)
def test_the_edge_serves_every_target_as_the_dashboard_keeps_it(edge, owner, typed):
    link = create(owner, url=typed)
    assert link.url.isascii() and link.url != typed
    response = edge.request(f"/{link.slug}")
    assert (response.status, response.headers["Location"]) == (302, link.url)


def test_unknown_and_malformed_slugs_are_404(edge):
    assert edge.request("/no-such-" + uuid.uuid4().hex[:8]).status == 404
    for path in ["/", "/a/b", "/semi;colon", "/" + "x" * 65, "/%E2%9C%93", "/a%2Fb"]:
        assert edge.request(path).status == 404, path
    # nginx's own parser refuses an encoded NUL before Lua runs.
    assert edge.request("/%00").status == 400


def test_a_value_that_breaks_the_contract_is_answered_as_unknown(make_edge):
    edge = make_edge()  # its own, since it logs the refusal as an error
    slug = "bad" + uuid.uuid4().hex[:8]
    get_redis().set(link_key(slug), '{"id": 1, "url": "javascript:alert(1)"}')
    assert edge.request(f"/{slug}").status == 404
    assert "link url is missing or unsafe" in edge.errors()


def test_an_apps_targets_take_iphones_and_androids_there_and_the_rest_to_the_url_each_a_click_of_the_link(
    edge, owner, rds
):
    """ios_url and android_url through the services and the publisher: an
    iPhone and an Android phone sent to their app's targets, a desktop to
    the link's url (its rule before them still wins); every visit a click of
    the link, none an orphan, with no rule (the device says which)."""
    link = create(
        owner,
        url="https://example.com/web",
        ios_url="https://apps.apple.com/app/id1",
        android_url="https://play.google.com/store/apps/details?id=com.example.app",
        rules=[{"url": "https://example.com/nl", "conditions": [{"type": "query", "key": "lang", "value": "nl"}]}],
    )
    iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"
    android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
    desktop = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0"
    seen = [
        edge.request(path, headers={"User-Agent": ua}).headers["Location"]
        for path, ua in (
            (f"/{link.slug}", iphone),
            (f"/{link.slug}", android),
            (f"/{link.slug}", desktop),
            (f"/{link.slug}?lang=nl", iphone),
        )
    ]
    assert seen == [
        "https://apps.apple.com/app/id1",
        "https://play.google.com/store/apps/details?id=com.example.app",
        "https://example.com/web",
        "https://example.com/nl",
    ]
    clicks = wait_for_clicks(rds, link.slug, 4)  # from two workers: in no set order
    rules = sorted((c.get("orphan", False), c["link"], c.get("rule") or "") for c in clicks)
    assert rules == [(False, str(link.pk), "")] * 3 + [(False, str(link.pk), "1")]


def test_healthz_reports_redis(edge):
    response = edge.request("/healthz")
    assert response.status == 200
    assert response.body.strip() == b"ok"
    assert edge.errors() == ""


def with_every_option(owner):
    """A link with every option the publisher writes set."""
    now = timezone.now()
    return create(
        owner,
        url="https://example.com/every",
        redirect_status=308,
        valid_since=now - timedelta(days=1),
        expires_at=now + timedelta(days=1),
        max_visits=5,
        forward_query=True,
        crawlable=True,
        password="contract password",
        rules=[{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}],
        split=[{"url": "https://example.com/a", "weight": 1}, {"url": "https://example.com/b", "weight": 2}],
        ios_url="https://apps.apple.com/app/id1",
        android_url="https://play.google.com/store/apps/details?id=com.example.app",
        expired_url="https://example.com/over",
        preview_title="Every option",
        preview_description="A link with every option set.",
        preview_image_url="https://example.com/card.png",
    )


def test_the_edge_decodes_every_field_the_publisher_writes_and_no_other(owner):
    """linkvalue.lua's FIELDS, the fields its decode reads, against the keys
    of a published link with every option set (flagged as listed, and
    stopped by the staff): a
    field the publisher adds that the edge does not read fails here, and so
    does one the edge reads that the publisher no longer writes."""
    link = with_every_option(owner)
    link.preview_image = "0" * 64 + ".png"  # uploaded (links/preview_images.py), which preview_image_url yields to
    link.listed = "example.com: a list"
    link.blocked_for, link.blocked_at, link.blocked = "link", link.created_at, "Stopped for phishing."
    payload = link_payload(link)
    published = json.loads(payload)
    # Every option set; `active` is written false beside `listed` and `blocked`, for edges older than them.
    assert published["active"] is False
    assert all(value not in (None, False, []) for key, value in published.items() if key != "active"), published
    decoded = luajit(
        "local linkvalue = require('slingshot.linkvalue'); "
        f"local value, err = linkvalue.decode({json.dumps(payload)}, 'v:'); "
        "print(cjson.encode({ fields = linkvalue.FIELDS, err = err or cjson.null, "
        "locked = value and value.locked, max_visits = value and value.max_visits, "
        "rules = value and value.rules ~= nil }))"
    )
    assert set(decoded["fields"]) == set(published)
    assert len(decoded["fields"]) == len(set(decoded["fields"]))
    assert decoded == {"fields": decoded["fields"], "err": None, "locked": True, "max_visits": 5, "rules": True}


def test_the_delivery_writes_what_link_payload_makes_of_the_link_the_orm_reads(owner):
    """links/delivery.py reads the links it delivers with plain SQL: what it
    writes to Redis for a link with every option set is what link_payload
    makes of the same link read through the ORM."""
    link = with_every_option(owner)
    written = get_redis().get(link_key(link.slug))
    assert written is not None
    assert json.loads(written) == json.loads(link_payload(Link.objects.get(pk=link.pk)))


def test_the_rule_limits_of_the_dashboard_and_the_edge_are_the_same():
    edge = luajit(
        "local r = require('slingshot.rules'); print(cjson.encode({ MAX_RULES = r.MAX_RULES, "
        "MAX_CONDITIONS = r.MAX_CONDITIONS, MIN_SPLIT = r.MIN_SPLIT, MAX_SPLIT = r.MAX_SPLIT, "
        "MAX_WEIGHT = r.MAX_WEIGHT, MAX_QUERY_TEXT = r.MAX_QUERY_TEXT, "
        "CONDITION_TYPES = r.CONDITION_TYPES, DEVICES = r.DEVICES, BROWSERS = r.BROWSERS }))"
    )
    assert edge == {
        "MAX_RULES": rules.MAX_RULES,
        "MAX_CONDITIONS": rules.MAX_CONDITIONS,
        "MIN_SPLIT": rules.MIN_SPLIT,
        "MAX_SPLIT": rules.MAX_SPLIT,
        "MAX_WEIGHT": rules.MAX_WEIGHT,
        "MAX_QUERY_TEXT": rules.MAX_QUERY_TEXT,
        "CONDITION_TYPES": list(rules.CONDITION_TYPES),
        "DEVICES": list(rules.DEVICES),
        "BROWSERS": list(rules.BROWSERS),
    }
