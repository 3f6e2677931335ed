"""The importer against the real Redis and PostgreSQL."""
import json
import time
import uuid
from datetime import datetime, timezone
from io import StringIO

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from clicks.enrichment import Enricher
from clicks.clickstream import encode_lines
from clicks.importer import DEAD_LETTER_STREAM, GROUP, STREAM, ClickImporter
from clicks.models import Click
from clicks.selectors import import_lag
from clicks.services import click_tables_maintain, months_before
from links import services
from links.redis import get_redis
from clicks.tests.streams import empty_streams  # noqa: F401 (autouse fixture)

pytestmark = pytest.mark.django_db(transaction=True)

ENRICHER = Enricher()


def make_click(slug: str, **overrides) -> dict:
    click = {
        "id": uuid.uuid4().hex,
        "ts": int(datetime.now(timezone.utc).timestamp() * 1000),
        "slug": slug,
        "ip": "198.51.100.7",
        "ua": "pytest",
        "ref": "",
    }
    click.update(overrides)
    return click


def add_entry(clicks: list) -> bytes:
    """An entry as the edge writes it (record format 2): the clicks' ids come
    from a prefix of the entry's own."""
    return get_redis().xadd(STREAM, {"v": "2", "clicks": encode_lines(uuid.uuid4().hex[:16], 0, clicks)})


def clicks_for(slug: str) -> int:
    return Click.objects.filter(slug=slug).count()


def test_a_batch_delivered_twice_is_stored_once():
    slug = "dup" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug) for _ in range(50)])
    importer = ClickImporter(client=get_redis(), consumer="twice", enricher=ENRICHER)
    importer.ensure_group()
    entries = get_redis().xreadgroup(GROUP, "twice", {STREAM: ">"})[0][1]

    # As if the importer died after COMMIT and before XACK: the same entries again.
    batch = importer.parse(entries)
    assert importer.store(batch).clicks == 50
    assert importer.store(batch).clicks == 0
    assert clicks_for(slug) == 50


def test_clicks_are_linked_to_their_link_and_acknowledged():
    owner = get_user_model().objects.create_user("importer-owner")
    link = services.link_create(owner=owner, url="https://example.org/", slug="imp" + uuid.uuid4().hex[:6])
    add_entry([make_click(link.slug), make_click(link.slug)])

    call_command("import_clicks", "--once", "--consumer", "ack-test")

    assert set(Click.objects.filter(slug=link.slug).values_list("link_id", flat=True)) == {link.pk}
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0
    assert get_redis().xlen(STREAM) == 0


def test_pending_entries_of_a_consumer_are_imported_when_it_restarts():
    slug = "pend" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug) for _ in range(3)])
    ClickImporter(client=get_redis(), consumer="crashy", enricher=ENRICHER).ensure_group()
    # Read but never acknowledged, as by an importer killed mid-batch.
    get_redis().xreadgroup(GROUP, "crashy", {STREAM: ">"})

    call_command("import_clicks", "--once", "--consumer", "crashy")

    assert clicks_for(slug) == 3
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_a_poisoned_entry_goes_to_the_dead_letter_stream_and_its_batch_is_imported():
    slug = "dlq" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug)])
    get_redis().xadd(STREAM, {"v": "1", "clicks": b"{not json"})
    get_redis().xadd(STREAM, {"v": "1", "clicks": orjson.dumps([make_click(slug, ts="yesterday")])})
    get_redis().xadd(STREAM, {"garbage": "1"})
    add_entry([make_click(slug, ua="\x00nul and invalid utf-8 \udcff".encode("utf-8", "surrogatepass").decode("utf-8", "ignore"))])

    call_command("import_clicks", "--once", "--consumer", "dlq-test")

    assert clicks_for(slug) == 2
    dead = get_redis().xrange(DEAD_LETTER_STREAM)
    reasons = sorted(fields[b"reason"].decode() for _, fields in dead)
    assert len(reasons) == 3
    assert any("not JSON" in reason for reason in reasons)
    assert any("ts is not an integer" in reason for reason in reasons)
    assert any("record version" in reason for reason in reasons)
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_poisoned_entries_of_format_2_go_to_the_dead_letter_stream_and_the_rest_is_imported():
    slug = "dl2" + uuid.uuid4().hex[:6]
    good = encode_lines("00000000000000aa", 7, [make_click(slug), make_click(slug, orphan=True)])
    poisoned = [
        good[:-1],                                    # the last line feed missing
        good.replace(b"\n0\n", b"\n2\n", 1),         # an orphan flag that is not 0 or 1
        good.replace(b"00000000000000aa", b"xyz", 1),  # an id prefix that is not hex
        b"00000000000000aa\n7\n" + b"a\n0\n",          # half a click
        encode_lines("00000000000000aa", 7, [make_click(slug, ts=1)]).replace(b".001\n", b",001\n"),
    ]
    for payload in poisoned:
        get_redis().xadd(STREAM, {"v": "2", "clicks": payload})
    get_redis().xadd(STREAM, {"v": "2", "clicks": good})

    call_command("import_clicks", "--once", "--consumer", "dlq2-test")

    ids = {str(click_id) for click_id in Click.objects.filter(slug=slug).values_list("click_id", flat=True)}
    assert ids == {"00000000-0000-00aa-0000-000000000007"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT click_id::text FROM orphan_visits WHERE slug = %s", [slug])
        assert cursor.fetchall() == [("00000000-0000-00aa-0000-000000000008",)]
    dead = get_redis().xrange(DEAD_LETTER_STREAM)
    assert [fields[b"clicks"] for _, fields in dead] == poisoned
    reasons = " | ".join(fields[b"reason"].decode() for _, fields in dead)
    for expected in ("six lines a click", "orphan flag", "prefix", "Unix seconds"):
        assert expected in reasons
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_headers_past_the_limits_are_stored_cut():
    slug = "cut" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug, ua="u" * 600, ref="https://r.example/" + "r" * 2000)])

    call_command("import_clicks", "--once", "--consumer", "cut-test")

    click = Click.objects.select_related("agent").get(slug=slug)
    assert (len(click.user_agent), len(click.referer)) == (512, 1024)


def test_invalid_utf8_in_a_header_does_not_cost_the_entry():
    slug = "utf" + uuid.uuid4().hex[:6]
    good = make_click(slug)
    raw = orjson.dumps([good, make_click(slug)]).replace(b'"pytest"', b'"bad \xff\xfe bytes"', 1)
    get_redis().xadd(STREAM, {"v": "1", "clicks": raw})

    call_command("import_clicks", "--once", "--consumer", "utf-test")

    agents = sorted(Click.objects.filter(slug=slug).values_list("agent__user_agent", flat=True))
    assert agents == ["bad \ufffd\ufffd bytes", "pytest"]


def test_entries_left_by_a_dead_consumer_are_claimed_after_the_idle_timeout():
    slug = "claim" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug) for _ in range(4)])
    add_entry([make_click(slug) for _ in range(4)])
    ClickImporter(client=get_redis(), consumer="ghost", enricher=ENRICHER).ensure_group()
    get_redis().xreadgroup(GROUP, "ghost", {STREAM: ">"})  # ... and it never comes back

    heir = ClickImporter(client=get_redis(), consumer="heir", enricher=ENRICHER, claim_idle_ms=10_000)
    assert heir.run(once=True) == 0  # not idle long enough yet
    time.sleep(0.06)
    heir.claim_idle_ms = 50
    assert heir.run(once=True) == 8

    assert clicks_for(slug) == 8
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_import_lag_counts_what_is_not_acknowledged():
    add_entry([make_click("lag")])
    add_entry([make_click("lag")])
    ClickImporter(client=get_redis(), consumer="lagger", enricher=ENRICHER).ensure_group()
    get_redis().xreadgroup(GROUP, "lagger", {STREAM: ">"}, count=1)

    lag = import_lag(client=get_redis())
    assert (lag.backlog, lag.pending, lag.consumers["lagger"]) == (2, 1, 1)
    assert 0 <= lag.oldest_age_seconds < 60

    out = StringIO()
    call_command("import_clicks", "--lag", stdout=out)
    assert json.loads(out.getvalue())["backlog"] == 2

    call_command("import_clicks", "--once", "--consumer", "lagger")
    assert import_lag(client=get_redis()).backlog == 0


def test_once_shows_a_progress_bar_with_rate_and_backlog(capsys):
    for _ in range(3):
        add_entry([make_click("bar" + uuid.uuid4().hex[:6]) for _ in range(10)])

    call_command("import_clicks", "--once", "--progress", "--batch-size", "1", "--consumer", "bar")

    captured = capsys.readouterr()
    assert "3/3" in captured.err and "clicks_s=" in captured.err and "backlog=0" in captured.err
    assert "imported 30 clicks (30 read, 0 dead entries)" in captured.out


def test_partitions_are_made_ahead_and_old_ones_dropped_while_rollups_stay():
    now = datetime.now(timezone.utc)
    old = months_before(now, 14)
    with connection.cursor() as cursor:
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, 0)", [old])
        cursor.execute("INSERT INTO click_rollup_day VALUES (-1, %s, 5, 5, 1, 1)", [old])
    old_name = f"y{old:%Y}m{old:%m}"

    kept = click_tables_maintain(now=now, months_ahead=2, retention_months=0)
    assert kept.partitions_dropped == []
    result = click_tables_maintain(now=now, months_ahead=2, retention_months=12)

    assert f"clicks_{old_name}" in result.partitions_dropped
    assert f"orphan_visits_{old_name}" in result.partitions_dropped
    ahead = months_before(now, -2)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NULL",
                       [f"clicks_y{ahead:%Y}m{ahead:%m}", f"clicks_{old_name}"])
        assert cursor.fetchone() == (True, True)
        cursor.execute("SELECT clicks FROM click_rollup_day WHERE link_id = -1")
        assert cursor.fetchall() == [(5,)]
        cursor.execute("DELETE FROM click_rollup_day WHERE link_id = -1")


def test_many_pending_entries_of_a_restarted_consumer_are_each_stored_once():
    slug = "many" + uuid.uuid4().hex[:6]
    for _ in range(7):
        add_entry([make_click(slug) for _ in range(3)])
    ClickImporter(client=get_redis(), consumer="many", enricher=ENRICHER).ensure_group()
    get_redis().xreadgroup(GROUP, "many", {STREAM: ">"})

    batches = []
    importer = ClickImporter(client=get_redis(), consumer="many", enricher=ENRICHER, batch_size=2)
    assert importer.run(once=True, report=batches.append) == 21

    assert [result.entries for result in batches] == [2, 2, 2, 1]
    assert clicks_for(slug) == 21


@pytest.mark.parametrize("privacy, stored", [("anonymise", "198.51.100.0"), ("full", "198.51.100.7"), ("none", None)])
def test_the_ip_privacy_setting_decides_what_address_is_stored(settings, privacy, stored):
    settings.CLICK_IP_PRIVACY = privacy
    slug = "priv" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug, ip="198.51.100.7")])

    call_command("import_clicks", "--once", "--consumer", "privacy")

    assert list(Click.objects.filter(slug=slug).values_list("ip", flat=True)) == [stored]
