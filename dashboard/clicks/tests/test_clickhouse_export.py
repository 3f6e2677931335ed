"""Exports of raw clicks on both click stores: the same clicks imported into
PostgreSQL and into a real ClickHouse cluster (18.16, two shards of two
replicas; test_clickhouse_reports.py's _both_stores), then every door that
exports them (the API's /api/v1/clicks and the link page's export), each
format, with and without its filters: the files are the same bytes."""

from collections import Counter
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse

from clicks import clickhouse_export
from testing.factories import api_client, make_user

from .test_clickhouse_reports import NOW, _both_stores, _on

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("empty_streams", "migrated", "current_engine"),
]


def _file(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def test_exports_are_the_same_files_from_either_store(clickhouse_cluster, client, monkeypatch):
    links = _both_stores(clickhouse_cluster)
    with connection.cursor() as cursor:
        # As deleting a link does; emptying the test database between tests leaves other tests' clicks.
        cursor.execute("DELETE FROM clicks WHERE link_id NOT IN (SELECT id FROM links_link)")
    owner = links[0].owner
    api, staff = api_client(owner, scope="read"), make_user(is_superuser=True)
    start, end = (NOW - timedelta(days=30, microseconds=1500)).isoformat(), (NOW - timedelta(days=2)).isoformat()
    api_asks = [
        {},
        {"link": links[0].slug},
        {"link": links[1].slug, "from": start, "to": end},
        {"ip": "198.51.2.17"},  # stored anonymised: its /24
    ]
    page = reverse("web:link-clicks-export", args=[links[0].slug])
    page_asks = [
        {"from": start, "to": end, "include_bots": "true"},
        {"from": start, "to": end},
        {"from": start, "to": end, "include_bots": "true", "browser": "Chrome", "referer_host": "news.example.org"},
        {"from": start, "to": end, "rule": "1"},
    ]

    def ask():
        files = []
        for kind in ("csv", "jsonl"):
            files += [_file(api.get("/api/v1/clicks", {**params, "format": kind})) for params in api_asks]
            client.force_login(owner)
            files += [_file(client.get(page, {**params, "format": kind})) for params in page_asks]
            client.force_login(staff)  # every link's clicks, and the cluster keeps other tests' of links gone
            files.append(_file(client.get("/api/v1/clicks", {"format": kind})))
        return files

    on_postgresql = _on("postgresql", [], ask)
    monkeypatch.setattr(clickhouse_export, "BLOCK", 7)  # many blocks, each its own look-up of user agents
    on_clickhouse = _on("clickhouse", clickhouse_cluster.urls, ask)
    lines = [len(found.splitlines()) for found in on_postgresql]
    assert lines[0] > 1200 and lines[8] == lines[0]  # every click of the owner's, and all the staff see
    assert len(set(lines[:8])) == 8 and min(lines[:8]) > 10  # each filter narrows, none to nothing
    assert b"+00:00" in on_postgresql[0] and b"." in on_postgresql[0].splitlines()[1][:30]  # to the millisecond
    for index, (theirs, ours) in enumerate(zip(on_postgresql, on_clickhouse, strict=True)):
        assert ours == theirs, index


def test_an_export_from_a_cluster_that_does_not_answer_is_a_503_before_any_line():
    api = api_client(make_user())
    api.raise_request_exception = False  # answered as a browser would be answered
    response = _on(
        "clickhouse", ["clickhouse://127.0.0.1:9/default"], lambda: api.get("/api/v1/clicks", {"format": "csv"})
    )
    assert response.status_code == 503 and response["Content-Type"] == "application/json" and not response.streaming
    page = _on("clickhouse", ["clickhouse://127.0.0.1:9/default"], lambda: api.get("/api/v1/clicks"))
    assert page.status_code == 503 and page["Content-Type"] == "application/json", page.content


def _pages(api, params: dict, *, back: bool = False) -> list[dict]:
    """Every page of /api/v1/clicks for `params`, following `next` from the
    first; with `back`, then `previous` from the last to the first."""
    pages = [api.get("/api/v1/clicks", params).json()]
    while pages[-1]["next"]:
        pages.append(api.get(pages[-1]["next"]).json())
    while back and pages[-1]["previous"]:
        pages.append(api.get(pages[-1]["previous"]).json())
    return pages


def test_the_apis_pages_of_clicks_are_the_same_from_either_store(clickhouse_cluster):
    links = _both_stores(clickhouse_cluster, ties=130)  # more clicks of one millisecond than a page holds
    owner = links[0].owner
    api = api_client(owner, scope="read")
    start, end = (NOW - timedelta(days=30, microseconds=1500)).isoformat(), (NOW - timedelta(days=2)).isoformat()
    asks = [
        ({}, True),
        ({"link": links[2].slug}, True),
        ({"link": links[1].slug, "from": start, "to": end}, False),
        ({"ip": "198.51.2.17"}, False),  # stored anonymised: its /24
    ]

    def ask():
        return [_pages(api, params, back=back) for params, back in asks]

    on_postgresql = _on("postgresql", [], ask)
    on_clickhouse = _on("clickhouse", clickhouse_cluster.urls, ask)
    last = next(index for index, page in enumerate(on_postgresql[0]) if not page["next"])
    walked = [click for page in on_postgresql[0][: last + 1] for click in page["results"]]
    assert len(walked) > 1300 and len({click["click_id"] for click in walked}) == len(walked)  # each once
    moments = [datetime.fromisoformat(click["occurred_at"]) for click in walked]
    assert moments == sorted(moments, reverse=True) and max(Counter(moments).values()) == 130
    assert len(on_postgresql[0]) > last + 1  # and back again
    for index, (theirs, ours) in enumerate(zip(on_postgresql, on_clickhouse, strict=True)):
        assert ours == theirs, asks[index]
