"""A batch's rows for ClickHouse (clickhouse_clicks.click_rows), read
straight from its binary COPY rows: the same values as the general
decoder of those rows (copy_rows.binary_rows) gives, each click with its
own visitor hash, in the tables' sort order. Pure: no database."""

import struct
from datetime import UTC, datetime, timedelta

import pytest

from clicks.batch import CLICK_COLUMNS, BatchMaker
from clicks.clickhouse_clicks import click_rows
from clicks.copy_rows import CopyFormatError, binary_rows
from clicks.enrichment import Enricher
from testing.streams import entry

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Googlebot/2.1", ""]


def _clicks(n: int, *, first: int = 0) -> list[dict]:
    return [
        {
            "ts": int((NOW - timedelta(minutes=7 * i, milliseconds=i)).timestamp() * 1000),
            "slug": f"s{i % 3}",
            "link": 10 + i % 3,
            "ip": ["203.0.113.9", "2001:db8::1", "198.51.100.200", ""][i % 4],
            "ua": AGENTS[i % 3],
            "ref": ["", "https://news.example.org/a?b", "not a url \\ with a tab\t"][i % 3],
            **({"rule": "ab2"} if i % 5 == 0 else {}),
        }
        for i in range(first, first + n)
    ]


@pytest.mark.parametrize("ip_privacy", ["anonymise", "full", "none"])
def test_the_rows_are_those_the_copy_rows_hold_each_with_its_visitor(ip_privacy):
    maker = BatchMaker(Enricher(ip_privacy=ip_privacy), visitors_per_click=True)
    batch = maker.make([entry(_clicks(40)), entry(_clicks(25, first=40))], now=NOW)
    general = binary_rows(batch.click_rows, CLICK_COLUMNS)
    assert len(general) == 65 and len(batch.click_visitors) == 65 * 8
    visitors = struct.unpack(f"={len(general)}q", batch.click_visitors)
    expected = sorted(
        (
            (click_id, int(at.timestamp()), at.microsecond // 1000, link, agent, int(bot), slug)
            + (None if ip is None else str(ip), country, browser, os, device, referer, host, rule, None, visitor, 1)
            for (
                click_id,
                at,
                slug,
                link,
                ip,
                country,
                agent,
                browser,
                os,
                device,
                bot,
                referer,
                host,
                rule,
            ), visitor in zip(general, visitors, strict=True)
        ),
        key=lambda row: (row[3], row[1], row[2], row[0]),
    )
    assert click_rows(batch) == expected
    # The same visitor (address and agent) has the same hash; the bots are told apart.
    assert len({row[-2] for row in expected}) < len(expected) and {row[5] for row in expected} == {0, 1}


def test_rows_without_their_visitors_are_refused():
    batch = BatchMaker(Enricher(), visitors_per_click=True).make([entry(_clicks(3))], now=NOW)
    batch.click_visitors = batch.click_visitors[:-8]
    with pytest.raises(CopyFormatError):
        click_rows(batch)
