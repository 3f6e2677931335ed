"""The importer against the real Redis and PostgreSQL."""

import json
import socket
import time
import uuid
from datetime import datetime, timedelta, timezone
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from clicks.importer import _Feed
from clicks.models import Click
from clicks.partitions import click_tables_maintain, months_before
from clicks.reports import link_stats
from clicks.stream import import_lag
from links.models import Link
from slingshot.contract import CLICK_RECORD_VERSION, DEAD_LETTER_STREAM
from slingshot.contract import CLICKS_GROUP as GROUP
from slingshot.contract import CLICKS_STREAM as STREAM
from slingshot.redis import get_redis
from testing.factories import make_link, make_user
from testing.streams import add_entry, entry_fields, importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams")]


@pytest.fixture
def link() -> Link:
    owner = make_user()
    return make_link(owner=owner, url="https://example.org/", slug="imp" + uuid.uuid4().hex[:6])


def make_click(of: Link, **overrides) -> dict:
    click = {
        "ts": int(datetime.now(timezone.utc).timestamp() * 1000),
        "slug": of.slug,
        "link": of.pk,
        "ip": "198.51.100.7",
        "ua": "pytest",
        "ref": "",
    }
    click.update(overrides)
    return click


def clicks_for(link: Link) -> int:
    return Click.objects.filter(link_id=link.pk).count()


def test_a_batch_delivered_twice_is_stored_once(link):
    add_entry([make_click(link) for _ in range(50)])
    twice = importer("twice")
    twice.stream.ensure_group()
    entries = get_redis().xreadgroup(GROUP, "twice", {STREAM: ">"})[0][1]

    # As if the importer died after COMMIT and before XACK: the same entries again.
    batch = twice.maker.make(entries)
    assert twice.store(batch) == 50
    assert twice.store(batch) == 0
    assert clicks_for(link) == 50


def test_a_following_importer_reads_new_entries_at_most_once_a_linger_and_stores_them_together(link):
    following = importer("linger")
    following.linger_ms = 400
    following.stream.ensure_group()
    feed = _Feed(following, once=False)
    feed.start, feed.next_claim = ">", time.monotonic() + 60  # nothing of its own pending, no idle entries to claim
    add_entry([make_click(link)])
    entries, _ = feed.next()
    assert len(entries) == 1  # the first read is not held back
    read_at = time.monotonic()
    add_entry([make_click(link)])
    add_entry([make_click(link), make_click(link)])
    entries, batch = feed.next()
    assert time.monotonic() - read_at >= 0.39
    assert len(entries) == 2 and batch.size == 3
    assert following.store(batch) == 3


def test_clicks_are_stored_with_their_link_and_acknowledged(link):
    add_entry([make_click(link), make_click(link, slug="renamed")])

    call_command("import_clicks", "--once", "--consumer", "ack-test")

    assert sorted(Click.objects.filter(link_id=link.pk).values_list("slug", flat=True)) == sorted(
        [link.slug, "renamed"]
    )
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0
    assert get_redis().xlen(STREAM) == 0


def test_a_drain_by_hand_takes_a_name_of_its_own_and_leaves_the_group(link):
    add_entry([make_click(link)])
    importer(socket.gethostname()).acquire_lock()  # as the importer of `make run` holds it

    call_command("import_clicks", "--once")

    assert clicks_for(link) == 1
    names = {c["name"].decode() for c in get_redis().xinfo_consumers(STREAM, GROUP)}
    assert socket.gethostname() + "-once" not in names


def test_pending_entries_of_a_consumer_are_imported_when_it_restarts(link):
    add_entry([make_click(link) for _ in range(3)])
    importer("crashy").stream.ensure_group()
    # Read but never acknowledged, as by an importer killed mid-batch.
    get_redis().xreadgroup(GROUP, "crashy", {STREAM: ">"})

    call_command("import_clicks", "--once", "--consumer", "crashy")

    assert clicks_for(link) == 3
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_poisoned_entries_go_to_the_dead_letter_stream_and_the_rest_is_imported(link):
    good = entry_fields(
        [make_click(link), make_click(link, link=None, slug="nolink")], prefix="00000000000000aa", first=7
    )["clicks"]
    out_of_range = entry_fields([make_click(link, ts=1)], prefix="00000000000000bb")
    poisoned = [
        good[:-1],  # the last line feed missing
        good.replace(f"\n{link.pk}\n".encode(), b"\nx\n", 1),  # a link id that is not digits
        good.replace(b"00000000000000aa", b"xyz", 1),  # an id prefix that is not hex
        b"00000000000000aa\n7\n" + b"a\n1\n",  # part of a click
        good.replace(b".", b",", 1),  # a time that is not Unix seconds
    ]
    for payload in poisoned:
        get_redis().xadd(STREAM, {"v": CLICK_RECORD_VERSION, "clicks": payload})
    get_redis().xadd(STREAM, {"v": "2", "clicks": good})
    get_redis().xadd(STREAM, {"garbage": "1"})
    get_redis().xadd(STREAM, out_of_range)
    get_redis().xadd(STREAM, {"v": CLICK_RECORD_VERSION, "clicks": good})

    call_command("import_clicks", "--once", "--consumer", "dlq-test")

    ids = {str(click_id) for click_id in Click.objects.filter(link_id=link.pk).values_list("click_id", flat=True)}
    assert ids == {"00000000-0000-00aa-0000-000000000007"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT click_id::text FROM orphan_visits WHERE slug = 'nolink'")
        assert cursor.fetchall() == [("00000000-0000-00aa-0000-000000000008",)]
    dead = get_redis().xrange(DEAD_LETTER_STREAM)
    assert [fields.get(b"clicks") for _, fields in dead][:5] == poisoned
    reasons = " | ".join(fields[b"reason"].decode() for _, fields in dead)
    for expected in (
        "7 lines a click",
        "link id",
        "prefix",
        "Unix seconds",
        "record version",
        "time is out of range",
    ):
        assert expected in reasons
    assert len(dead) == 8
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_headers_past_the_limits_are_stored_cut_and_nul_dropped(link):
    add_entry([make_click(link, ua="\x00u" + "u" * 600, ref="https://r.example/" + "r" * 2000)])

    call_command("import_clicks", "--once", "--consumer", "cut-test")

    click = Click.objects.select_related("agent").get(link_id=link.pk)
    assert (click.user_agent, len(click.referer)) == ("u" * 511, 1024)


def test_invalid_utf8_in_a_header_does_not_cost_the_entry(link):
    fields = entry_fields([make_click(link), make_click(link)])
    fields["clicks"] = fields["clicks"].replace(b"pytest", b"bad \xff\xfe bytes", 1)
    get_redis().xadd(STREAM, fields)

    call_command("import_clicks", "--once", "--consumer", "utf-test")

    agents = sorted(Click.objects.filter(link_id=link.pk).values_list("agent__user_agent", flat=True))
    assert agents == ["bad \ufffd\ufffd bytes", "pytest"]


def test_entries_left_by_a_dead_consumer_are_claimed_after_the_idle_timeout(link):
    add_entry([make_click(link) for _ in range(4)])
    add_entry([make_click(link) for _ in range(4)])
    importer("ghost").stream.ensure_group()
    get_redis().xreadgroup(GROUP, "ghost", {STREAM: ">"})  # ... and it never comes back

    heir = importer("heir", claim_idle_ms=10_000)
    assert heir.run(once=True) == 0  # not idle long enough yet
    time.sleep(0.06)
    heir.stream.claim_idle_ms = 50
    assert heir.run(once=True) == 8

    assert clicks_for(link) == 8
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_import_lag_counts_what_is_not_acknowledged(link):
    add_entry([make_click(link)])
    add_entry([make_click(link)])
    importer("lagger").stream.ensure_group()
    get_redis().xreadgroup(GROUP, "lagger", {STREAM: ">"}, count=1)

    lag = import_lag(client=get_redis())
    assert (lag.backlog, lag.pending, lag.consumers["lagger"]) == (2, 1, 1)
    assert 0 <= lag.oldest_age_seconds < 60

    out = StringIO()
    call_command("import_clicks", "--lag", stdout=out)
    assert json.loads(out.getvalue())["backlog"] == 2

    call_command("import_clicks", "--once", "--consumer", "lagger")
    assert import_lag(client=get_redis()).backlog == 0


def test_once_shows_a_progress_bar_with_rate_and_backlog(capsys, link):
    for _ in range(3):
        add_entry([make_click(link) for _ in range(10)])

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
        cursor.execute(
            "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NULL",
            [f"clicks_y{ahead:%Y}m{ahead:%m}", f"clicks_{old_name}"],
        )
        assert cursor.fetchone() == (True, True)
        cursor.execute("SELECT clicks FROM click_rollup_day WHERE link_id = -1")
        assert cursor.fetchall() == [(5,)]
        cursor.execute("DELETE FROM click_rollup_day WHERE link_id = -1")


def test_many_pending_entries_of_a_restarted_consumer_are_each_stored_once(link):
    for _ in range(7):
        add_entry([make_click(link) for _ in range(3)])
    importer("many").stream.ensure_group()
    get_redis().xreadgroup(GROUP, "many", {STREAM: ">"})

    batches = []
    assert importer("many", batch_size=2).run(once=True, report=batches.append) == 21

    assert [result.entries for result in batches] == [2, 2, 2, 1]
    assert clicks_for(link) == 21


@pytest.mark.parametrize(
    "privacy, ip, stored",
    [
        ("anonymise", "198.51.100.7", "198.51.100.0"),
        ("full", "198.51.100.7", "198.51.100.7"),
        ("none", "198.51.100.7", None),
        ("anonymise", "2001:DB8:abcd:12::5", "2001:db8:abcd::"),
        ("full", "2001:DB8:abcd:12::5", "2001:db8:abcd:12::5"),
        ("anonymise", "::ffff:198.51.100.7", "198.51.100.0"),
    ],
)
def test_the_ip_privacy_setting_decides_what_address_is_stored(settings, link, privacy, ip, stored):
    settings.CLICK_IP_PRIVACY = privacy
    add_entry([make_click(link, ip=ip)])

    call_command("import_clicks", "--once", "--consumer", "privacy")

    assert list(Click.objects.filter(link_id=link.pk).values_list("ip", flat=True)) == [stored]


def test_format_3_and_4_entries_are_both_imported_with_the_rule_that_served(link):
    """An upgrade: format-3 entries an older edge left in the stream are read
    on (served by the link's url) beside format-4 ones, which carry the rule."""
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    old = b"00000000000000cc\n1\n%s\n%d\n%d.%03d\n198.51.100.7\ncurl/8.0\n\n" % (
        link.slug.encode(),
        link.pk,
        now // 1000,
        now % 1000,
    )
    get_redis().xadd(STREAM, {"v": "3", "clicks": old})
    add_entry(
        [make_click(link, rule="1"), make_click(link, rule="ab2"), make_click(link, rule="1"), make_click(link)],
        prefix="00000000000000dd",
    )

    call_command("import_clicks", "--once", "--consumer", "upgrade-test")

    rules = sorted(
        (str(click_id), rule)
        for click_id, rule in Click.objects.filter(link_id=link.pk).values_list("click_id", "rule")
    )
    assert rules == [
        ("00000000-0000-00cc-0000-000000000001", None),
        ("00000000-0000-00dd-0000-000000000000", "1"),
        ("00000000-0000-00dd-0000-000000000001", "ab2"),
        ("00000000-0000-00dd-0000-000000000002", "1"),
        ("00000000-0000-00dd-0000-000000000003", None),
    ]
    assert get_redis().xlen(DEAD_LETTER_STREAM) == 0
    stats = link_stats(
        link_ids=[link.pk],
        start=datetime.now(timezone.utc) - timedelta(days=1),
        end=datetime.now(timezone.utc) + timedelta(hours=1),
        include_bots=True,
    )
    assert stats.clicks == 5
    assert stats.breakdowns["rule"] == [("1", 2), ("ab2", 1)]


def test_orphan_visits_of_format_4_and_5_are_stored_with_their_kind_and_domain(link):
    """An upgrade: a format-4 orphan visit an older edge left in the stream is
    of an unknown slug on the default domain; format 5 says which."""
    slug = "orph" + uuid.uuid4().hex[:6]
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    old = b"00000000000000ee\n1\n%s\n\n\n%d.%03d\n198.51.100.7\ncurl/8.0\n\n" % (slug.encode(), now // 1000, now % 1000)
    get_redis().xadd(STREAM, {"v": "4", "clicks": old})
    add_entry(
        [
            make_click(link, link=None, slug=slug, kind="unknown", domain="go.example.com"),
            make_click(link, link=None, slug=slug, kind="disabled"),
            make_click(link, link=None, slug=slug, kind="expired", domain="go.example.com"),
            make_click(link, rule="1"),
        ],
        prefix="00000000000000ef",
    )

    call_command("import_clicks", "--once", "--consumer", "orphan-upgrade-test")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT click_id::text, kind, domain FROM orphan_visits WHERE slug = %s ORDER BY click_id", [slug]
        )
        assert cursor.fetchall() == [
            ("00000000-0000-00ee-0000-000000000001", "unknown", ""),
            ("00000000-0000-00ef-0000-000000000000", "unknown", "go.example.com"),
            ("00000000-0000-00ef-0000-000000000001", "disabled", ""),
            ("00000000-0000-00ef-0000-000000000002", "expired", "go.example.com"),
        ]
    assert list(Click.objects.filter(link_id=link.pk).values_list("rule", flat=True)) == ["1"]
    assert get_redis().xlen(DEAD_LETTER_STREAM) == 0
