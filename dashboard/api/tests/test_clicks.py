import base64
import csv
import io
import json
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

import pytest
from django.db import connection

from clicks.enrichment import hash64
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)


def insert_clicks(link, rows):
    with connection.cursor() as cursor:
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, 1)", [T0 - timedelta(days=1)])
        for offset, ip, ua in rows:
            agent = hash64(ua, b"agent")
            cursor.execute("INSERT INTO user_agents VALUES (%s, %s) ON CONFLICT DO NOTHING", [agent, ua])
            cursor.execute(
                "INSERT INTO clicks (click_id, occurred_at, link_id, slug, ip, user_agent_id, is_bot, country, "
                "browser, os, device, referer, referer_host) "
                "VALUES (%s, %s, %s, %s, %s, %s, false, 'unknown', 'unknown', 'unknown', 'unknown', '', '')",
                [uuid.uuid4(), T0 + timedelta(minutes=offset), link.pk, link.slug, ip, agent],
            )


def test_clicks_filter_by_ip_link_and_time_with_cursor_pages(api, user, make_user):
    mine = make_link(owner=user, url="https://example.com/", slug="m" + uuid.uuid4().hex[:8])
    theirs = make_link(owner=make_user(), url="https://example.com/", slug="o" + uuid.uuid4().hex[:8])
    insert_clicks(mine, [(i, "203.0.113.0" if i % 2 else "198.51.100.0", f"ua-{i}") for i in range(150)])
    insert_clicks(theirs, [(i, "203.0.113.0", "theirs") for i in range(10)])

    # Stored anonymised (the default): any address of the /24 finds them.
    first = api.get("/api/v1/clicks", {"ip": "203.0.113.77"}).json()
    assert len(first["results"]) == 75
    assert {c["user_agent"] for c in first["results"]} == {f"ua-{i}" for i in range(1, 150, 2)}
    times = [c["occurred_at"] for c in first["results"]]
    assert times == sorted(times, reverse=True)

    page = api.get("/api/v1/clicks", {"link": mine.slug}).json()
    assert len(page["results"]) == 100 and page["next"]
    rest = api.get(page["next"]).json()
    assert len(rest["results"]) == 50 and rest["next"] is None
    window = api.get(
        "/api/v1/clicks",
        {"from": (T0 + timedelta(minutes=10)).isoformat(), "to": (T0 + timedelta(minutes=20)).isoformat()},
    ).json()
    assert len(window["results"]) == 10
    assert api.get("/api/v1/clicks", {"link": theirs.slug}).json()["results"] == []


def test_clicks_of_one_moment_are_paged_each_once_newest_first_then_by_click_id(api, user):
    link = make_link(owner=user, url="https://example.com/", slug="t" + uuid.uuid4().hex[:8])
    insert_clicks(link, [(0, "203.0.113.0", "same")] * 150 + [(1, "203.0.113.0", "later")] * 30)

    pages = [api.get("/api/v1/clicks", {"link": link.slug}).json()]
    while pages[-1]["next"]:
        pages.append(api.get(pages[-1]["next"]).json())
    seen = [click for page in pages for click in page["results"]]
    assert len(pages) == 2 and len(seen) == 180
    assert [click["user_agent"] for click in seen] == ["later"] * 30 + ["same"] * 150
    ids = [click["click_id"] for click in seen]
    assert ids[:30] == sorted(ids[:30], reverse=True) and ids[30:] == sorted(ids[30:], reverse=True)


@pytest.mark.parametrize("position", ["not-a-moment", "2026-11-30 01:00:00", "2026-11-30T01:00:00+00:00'; --"])
def test_a_cursor_whose_position_is_not_a_moment_is_a_404_not_an_error(api, position):
    cursor = base64.b64encode(urlencode({"o": 0, "r": 0, "p": position}).encode()).decode()
    response = api.get("/api/v1/clicks", {"cursor": cursor})
    assert response.status_code == 404 and response.json()["detail"] == "Invalid cursor", response.content


@pytest.mark.parametrize(
    "params",
    [
        {"ip": "not-an-ip"},
        {"from": "yesterday"},
        {"link": "a b"},
        {"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"},
    ],
)
def test_bad_click_queries_are_400(api, params):
    assert api.get("/api/v1/clicks", params).status_code == 400


def test_clicks_export_as_csv_and_json_lines_streamed(api, user, make_user):
    mine = make_link(owner=user, url="https://example.com/", slug="x" + uuid.uuid4().hex[:8])
    theirs = make_link(owner=make_user(), url="https://example.com/", slug="y" + uuid.uuid4().hex[:8])
    insert_clicks(mine, [(i, "203.0.113.0", f"ua-{i}") for i in range(3)] + [(3, "203.0.113.0", "=cmd|'/c calc'!A1")])
    insert_clicks(theirs, [(0, "203.0.113.0", "theirs")])

    response = api.get("/api/v1/clicks", {"format": "csv"})
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["user_agent"] for row in rows] == ["ua-0", "ua-1", "ua-2", "'=cmd|'/c calc'!A1"]  # oldest first
    lines = b"".join(api.get("/api/v1/clicks", {"format": "jsonl", "link": mine.slug}).streaming_content)
    records = [json.loads(line) for line in lines.decode().splitlines()]
    assert [record["user_agent"] for record in records][-1] == "=cmd|'/c calc'!A1"  # JSON needs no quote
    assert api.get("/api/v1/clicks").json()["results"][0]["user_agent"].startswith("=cmd")  # JSON stays the default
    bad = api.get("/api/v1/clicks", {"format": "csv", "from": "soon"})
    assert bad.status_code == 400 and bad["Content-Type"] == "application/json" and "from" in bad.json()
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    content = schema["paths"]["/api/v1/clicks"]["get"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/csv", "application/jsonl"}
    assert (
        "next" in json.dumps(content["application/json"]["schema"]) or "$ref" in content["application/json"]["schema"]
    )


def test_clicks_of_a_slug_are_those_of_its_domain(api, user):
    from links.domains import domain_create

    other = domain_create(host=f"go-{uuid.uuid4().hex[:6]}.example.com")
    slug = "d" + uuid.uuid4().hex[:8]
    on_default = make_link(owner=user, url="https://example.com/a", slug=slug)
    on_other = make_link(owner=user, url="https://example.com/b", slug=slug, domain=other)
    insert_clicks(on_default, [(0, "203.0.113.0", "default-domain")])
    insert_clicks(on_other, [(1, "203.0.113.0", "other-domain"), (2, "203.0.113.0", "other-domain")])

    agents = lambda **params: [c["user_agent"] for c in api.get("/api/v1/clicks", params).json()["results"]]  # noqa: E731
    assert agents(link=slug) == ["default-domain"]
    assert agents(link=slug, domain=other.host.upper()) == ["other-domain", "other-domain"]
    assert agents(link=slug, domain="unknown.example.org") == []
