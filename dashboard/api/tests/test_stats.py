"""Stats and totals come from the importer's rollups: clicks go through the real importer."""

import uuid
from datetime import datetime, timedelta, timezone

import jsonschema_rs
import pytest
from django.core.management import call_command

from testing.factories import make_link
from testing.streams import add_entry

pytestmark = pytest.mark.django_db(transaction=True)

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def import_clicks(link, clicks):
    add_entry(
        [
            {"ts": int(ts.timestamp() * 1000), "slug": link.slug, "link": link.pk, "ip": ip, "ua": ua, "ref": ref}
            for ts, ip, ua, ref in clicks
        ]
    )
    call_command("import_clicks", "--once", "--consumer", "stats-test")


def test_stats_series_breakdowns_and_bot_flag(api, user):
    link = make_link(owner=user, url="https://example.com/", slug="st" + uuid.uuid4().hex[:8])
    now = datetime.now(timezone.utc).replace(minute=30, second=0, microsecond=0)
    earlier = now - timedelta(hours=3)
    import_clicks(
        link,
        [
            (earlier, "198.51.100.1", FIREFOX, "https://news.example.org/a"),
            (earlier, "198.51.100.2", FIREFOX, "https://news.example.org/b"),
            (now, "198.51.100.3", FIREFOX, ""),
            (now, "66.249.66.1", GOOGLEBOT, ""),
        ],
    )

    body = api.get(f"/api/v1/links/{link.slug}/stats", {"interval": "hour"}).json()
    assert body["clicks"] == 3
    by_bucket = {point["bucket"]: point["clicks"] for point in body["series"]}
    assert sorted(by_bucket.values()) == [1, 2]
    assert {"value": "news.example.org", "clicks": 2} in body["breakdowns"]["referer_host"]
    assert body["breakdowns"]["browser"][0] == {"value": "Firefox", "clicks": 3}

    with_bots = api.get(f"/api/v1/links/{link.slug}/stats", {"interval": "day", "include_bots": "true"}).json()
    assert with_bots["clicks"] == 4 and with_bots["include_bots"] is True

    listed = api.get(f"/api/v1/links/{link.slug}").json()
    assert (listed["clicks"], listed["human_clicks"]) == (4, 3)

    raw = api.get("/api/v1/clicks", {"link": link.slug}).json()["results"]
    bot = next(click for click in raw if click["is_bot"])
    assert bot["user_agent"] == GOOGLEBOT and bot["ip"] == "66.249.66.0"
    firefox = [click for click in raw if click["browser"] == "Firefox"]
    assert len(firefox) == 3 and {click["referer_host"] for click in firefox} == {"news.example.org", ""}


def test_order_by_clicks(api, user):
    quiet = make_link(owner=user, url="https://example.com/q", slug="oq" + uuid.uuid4().hex[:8])
    busy = make_link(owner=user, url="https://example.com/b", slug="ob" + uuid.uuid4().hex[:8])
    now = datetime.now(timezone.utc)
    import_clicks(busy, [(now, "198.51.100.9", FIREFOX, "")] * 3)
    import_clicks(quiet, [(now, "198.51.100.9", FIREFOX, "")])
    slugs = [link["slug"] for link in api.get("/api/v1/links", {"ordering": "-clicks"}).json()["results"]]
    assert slugs.index(busy.slug) < slugs.index(quiet.slug)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"interval": "minute"}, "interval"),
        ({"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "to"),
        ({"interval": "hour", "from": "2020-01-01T00:00:00Z", "to": "2021-01-01T00:00:00Z"}, "interval"),
        ({"include_bots": "maybe"}, "include_bots"),
        ({"interval": "hour", "to": "9999-12-31T23:30:00Z"}, "to"),  # its hour ends in the year 10000
        ({"to": "9999-12-31T00:00:01Z"}, "to"),
        ({"to": "0001-01-10T00:00:00Z"}, "to"),  # the default 30 days before it
        ({"from": "0001-01-01T00:00:00+01:00", "to": "0001-01-02T00:00:00Z"}, "from"),
    ],
)
def test_bad_stats_queries_are_400(api, user, params, field):
    link = make_link(owner=user, url="https://example.com/", slug="sb" + uuid.uuid4().hex[:8])
    response = api.get(f"/api/v1/links/{link.slug}/stats", params)
    assert response.status_code == 400 and list(response.json()) == [field], response.content


def test_stats_ranges_default_and_reach_the_ends_of_the_calendar(api, user):
    link = make_link(owner=user, url="https://example.com/", slug="sr" + uuid.uuid4().hex[:8])

    def span(**params):
        response = api.get(f"/api/v1/links/{link.slug}/stats", params)
        assert response.status_code == 200, response.content
        body = response.json()
        return datetime.fromisoformat(body["from"]), datetime.fromisoformat(body["to"])

    start, end = span()
    assert end - start == timedelta(days=30) and abs(end - datetime.now(timezone.utc)) < timedelta(minutes=5)
    start, end = span(interval="hour", to="2030-06-01T12:00:00+02:00")
    assert (start, end) == (
        datetime(2030, 5, 30, 10, tzinfo=timezone.utc),
        datetime(2030, 6, 1, 10, tzinfo=timezone.utc),
    )
    assert span(interval="hour", to="9999-12-31T23:00:00Z")[0] == datetime(9999, 12, 29, 23, tzinfo=timezone.utc)
    assert span(**{"from": "0001-01-01T00:00:00Z", "to": "0001-01-02T00:00:00Z"})[1].year == 1
    start, _ = span(**{"from": "2030-01-01T00:00:00+16:00", "to": "2030-01-02T00:00:00Z"})
    assert start == datetime(2029, 12, 31, 8, tzinfo=timezone.utc)


def test_stats_times_are_rfc_3339_in_a_zone_that_kept_its_local_mean_time(api, user):
    """Asia/Aden kept its local mean time (+02:59:54) until 1950, and RFC 3339
    (the schema's date-time) has offsets of whole minutes only: such a time
    comes out in UTC, the same instant; a time in standard time keeps +03:00."""
    link = make_link(owner=user, url="https://example.com/", slug="sl" + uuid.uuid4().hex[:8])
    date_time = jsonschema_rs.validator_for({"type": "string", "format": "date-time"}, validate_formats=True)
    for to, offset in [
        ("0169-01-15T23:02:18+07:29", "Z"),
        ("1949-06-15T12:00:00Z", "Z"),
        ("2030-06-15T12:00:00Z", "+03:00"),
    ]:
        response = api.get(f"/api/v1/links/{link.slug}/stats", {"tz": "Asia/Aden", "interval": "month", "to": to})
        assert response.status_code == 200, response.content
        body = response.json()
        assert date_time.is_valid(body["from"]) and date_time.is_valid(body["to"]), body
        assert body["to"].endswith(offset) and datetime.fromisoformat(body["to"]) == datetime.fromisoformat(to)


def test_stats_of_another_users_link_are_404(api, make_user):
    theirs = make_link(owner=make_user(), url="https://example.com/", slug="so" + uuid.uuid4().hex[:8])
    assert api.get(f"/api/v1/links/{theirs.slug}/stats").status_code == 404


def test_stats_in_a_zone_with_totals_the_period_before_and_filters(api, user):
    link = make_link(owner=user, url="https://example.com/", slug="sz" + uuid.uuid4().hex[:8])
    now = datetime.now(timezone.utc).replace(minute=10, second=0, microsecond=0) - timedelta(hours=1)
    import_clicks(
        link,
        [
            (now, "198.51.100.1", FIREFOX, "https://news.example.org/a"),
            (now, "203.0.113.2", FIREFOX, ""),
            (now - timedelta(days=3), "198.51.100.3", FIREFOX, ""),
            (now, "66.249.66.1", GOOGLEBOT, "https://news.example.org/a"),
        ],
    )
    since = (now - timedelta(days=2)).isoformat()
    body = api.get(f"/api/v1/links/{link.slug}/stats", {"tz": "Asia/Kolkata", "from": since}).json()
    assert body["tz"] == "Asia/Kolkata" and body["filters"] == {}
    assert body["totals"] == {"clicks": 2, "visitors": 2, "bots": 1}
    assert body["previous"] == {"clicks": 1, "visitors": 1, "bots": 0}
    assert all(point["bucket"].endswith("T00:00:00+05:30") for point in body["series"])
    assert body["from"].endswith("+05:30") and body["breakdowns_sample"] is None

    filtered = api.get(
        f"/api/v1/links/{link.slug}/stats", {"from": since, "referer_host": "news.example.org", "include_bots": "true"}
    ).json()
    assert filtered["filters"] == {"referer_host": "news.example.org"}
    assert filtered["totals"] == {"clicks": 2, "visitors": None, "bots": 1}
    assert [point["visitors"] for point in filtered["series"]] == [None]
    assert filtered["breakdowns_sample"] == 2
    assert {"value": "Googlebot", "clicks": 1} in filtered["breakdowns"]["browser"]

    direct = api.get(f"/api/v1/links/{link.slug}/stats", {"from": since, "referer_host": "", "browser": "Firefox"})
    assert direct.status_code == 200 and direct.json()["totals"]["clicks"] == 1

    for params, field in [({"tz": "Mars/Olympus"}, "tz"), ({"device": "toaster"}, "device"), ({"os": ""}, "os")]:
        response = api.get(f"/api/v1/links/{link.slug}/stats", params)
        assert response.status_code == 400 and list(response.json()) == [field], response.content
