"""YOURLS: a mysqldump of YOURLS 1.10's tables (tests/data/yourls-1.10.sql,
as mysqldump 8 writes it), and the same tables as CSV, imported with every
logged click through the click importer's store step."""

import csv
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from clicks import accounting
from clicks.models import Click
from clicks.rollups import fold_days
from clicks.services import link_visits_delete
from importers.models import ImportJob
from importers.sources.yourls import LOG_COLUMNS, URL_COLUMNS, dump_rows
from links.models import Link
from slingshot.contract import SERVED_KEY_PREFIX
from slingshot.redis import get_redis
from teams.models import Team
from testing.sources import YourlsData, write_yourls_dump

# Stored as the importer stores: each batch commits (its temporary tables empty on COMMIT).
from .helpers import clicks_of
from .helpers import import_links as run

pytestmark = pytest.mark.django_db(transaction=True)

DUMP = Path(__file__).parent / "data" / "yourls-1.10.sql"
UTC = timezone.utc


def totals_of(link: Link) -> tuple[int, int, int]:
    """(all-time clicks, the hour rollups' sum, the day rollups' sum) of a link."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(clicks), 0) FROM link_click_totals WHERE link_id = %(id)s),"
            " (SELECT coalesce(sum(clicks), 0) FROM click_rollup_hour WHERE link_id = %(id)s),"
            " (SELECT coalesce(sum(clicks), 0) FROM click_rollup_day WHERE link_id = %(id)s)",
            {"id": link.pk},
        )
        return cursor.fetchone()


def test_the_dump_is_read_as_mysqldump_wrote_it():
    urls = [
        dict(zip(URL_COLUMNS, row, strict=True))
        for row in dump_rows(lambda: DUMP.open("rb"), "yourls_url", URL_COLUMNS)
    ]
    assert [row["keyword"] for row in urls] == ["Guide2", "it's", "spring", "untitled"]
    assert urls[1]["url"] == "https://example.com/it's?a=1&b=2"
    assert urls[1]["title"] == 'It\'s "quoted"\\nnot a newline'
    assert urls[3]["title"] is None
    log = [
        dict(zip(LOG_COLUMNS, row, strict=True))
        for row in dump_rows(lambda: DUMP.open("rb"), "yourls_log", LOG_COLUMNS)
    ]
    assert [row["click_id"] for row in log] == [str(n) for n in range(1, 9)]
    assert log[2]["referrer"] == "https://news.ycombinator.com/item?id=1,2"
    assert log[7]["user_agent"].endswith('"Safari"')


def test_links_and_every_logged_click_with_their_times(user, team):
    out = run("yourls", str(DUMP), user=user.username, team=str(team.pk))

    assert "links: 4 read, 3 created" in out and "1 invalid" in out and "invalid: it's: slug" in out
    assert "visits: 7 read, 7 stored, 0 stored before, 1 of links not imported" in out
    spring = Link.objects.get(team=team, slug="spring")
    assert (spring.url, spring.title, spring.created_at) == (
        "https://example.com/spring-sale?ref=newsletter",
        "Spring sale",
        datetime(2025, 3, 1, 12, 34, 56, tzinfo=UTC),
    )
    assert Link.objects.get(team=team, slug="Guide2").title == "Guide — « Intro »"
    assert Link.objects.get(team=team, slug="untitled").title == ""
    job = ImportJob.objects.get(team=team)
    chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0"
    found = clicks_of(spring)
    assert [row[0] for row in found] == [
        datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC),
        datetime(2025, 3, 14, 9, 27, 1, tzinfo=UTC),
        datetime(2025, 4, 3, tzinfo=UTC),
        datetime(2025, 4, 3, tzinfo=UTC),  # the same second, agent and address: two clicks all the same
    ]
    assert found[0][1:3] == ("", "") and found[0][3].startswith(chrome) and found[0][4] == "DE"
    assert found[1][1:3] == ("https://www.google.com/", "www.google.com") and found[1][4] == "US"
    assert {row[6] for row in found} == {job.pk}
    bot = clicks_of(Link.objects.get(team=team, slug="untitled"))
    assert len(bot) == 1 and bot[0][5] is True and bot[0][1] == "https://example.org/?q='quoted'"
    fold_days(until=datetime.now(UTC))  # what the importer does each hour: the day tables then hold them too
    assert totals_of(spring) == (4, 4, 4)


@pytest.mark.parametrize(
    "storage, kept",
    [("full", ["203.0.113.7", "198.51.100.23"]), ("none", [None, None]), ("", ["203.0.113.0", "198.51.100.0"])],
)
def test_the_visits_keep_their_addresses_as_the_team_chose(user, team, settings, storage, kept):
    settings.CLICK_IP_PRIVACY = "anonymise"
    Team.objects.filter(pk=team.pk).update(ip_storage=storage)

    run("yourls", str(DUMP), user=user.username, team=str(team.pk))

    spring = Link.objects.get(team=team, slug="spring")
    found = Click.objects.filter(link_id=spring.pk).order_by("occurred_at").values_list("ip", flat=True)
    assert list(found)[:2] == kept


def test_a_second_run_adds_nothing_and_says_so(user, team):
    run("yourls", str(DUMP), user=user.username, team=str(team.pk))
    spring = Link.objects.get(team=team, slug="spring")
    before = (clicks_of(spring), totals_of(spring), Link.objects.filter(team=team).count())

    out = run("yourls", str(DUMP), user=user.username, team=str(team.pk))

    assert "0 created, 3 imported before" in out and "7 read, 0 stored, 7 stored before" in out
    assert "nothing new" in out
    assert (clicks_of(spring), totals_of(spring), Link.objects.filter(team=team).count()) == before


def test_a_dry_run_says_what_a_run_would_store(user, team):
    out = run("yourls", str(DUMP), user=user.username, team=str(team.pk), dry_run=True)

    assert "3 would be created" in out and "7 would be stored" in out
    assert not Link.objects.filter(team=team).exists()


def _as_csv(path: Path, table: str, columns: tuple[str, ...]) -> Path:
    """A table of the dump as phpMyAdmin exports it: a header (its columns
    in another order than the table's), every cell quoted."""
    order = list(reversed(range(len(columns))))
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, quoting=csv.QUOTE_ALL)
        writer.writerow([columns[place] for place in order])
        for row in dump_rows(lambda: DUMP.open("rb"), table, columns):
            writer.writerow(["NULL" if row[place] is None else row[place] for place in order])
    return path


def test_the_tables_as_csv_import_as_the_dump_does(user, team, other_domain, tmp_path):
    url_csv = _as_csv(tmp_path / "yourls_url.csv", "yourls_url", URL_COLUMNS)
    log_csv = _as_csv(tmp_path / "yourls_log.csv", "yourls_log", LOG_COLUMNS)

    out = run(
        "yourls",
        user=user.username,
        team=str(team.pk),
        domain=other_domain.host,
        url_csv=str(url_csv),
        log_csv=str(log_csv),
    )

    assert "3 created" in out and "7 stored" in out
    spring = Link.objects.get(domain=other_domain, slug="spring")
    assert [row[0] for row in clicks_of(spring)][:2] == [
        datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC),
        datetime(2025, 3, 14, 9, 27, 1, tzinfo=UTC),
    ]
    assert totals_of(spring)[0] == 4


def test_the_accounting_leaves_imported_visits_out(user, team, tmp_path):
    """Visits imported into an hour the edges counted leave its account as
    it was (a difference of 0 stays 0), and so does deleting them: no edge
    served them, so none is counted as deleted."""
    hour = accounting.hour_floor(datetime.now(UTC)) - timedelta(hours=2)
    key = SERVED_KEY_PREFIX + str(int(hour.timestamp()))
    redis = get_redis()
    redis.hset(key, mapping={"0123456789abcdef:redirect": 0, "0123456789abcdef:orphan": 0})
    data = YourlsData(links={"acct": ("https://example.com/a", "A", hour - timedelta(days=1), 3)})
    data.log = [
        (n, hour + timedelta(minutes=10 * n), "acct", "direct", "Mozilla/5.0", "192.0.2.1", "US") for n in (1, 2, 3)
    ]
    dump = write_yourls_dump(tmp_path / "dump.sql", data)

    def account():
        return accounting.accounts(client=redis, start=hour, end=hour + timedelta(hours=1))[0]

    try:
        before = account()  # other tests' live clicks may be in this hour too: they stay as they were
        run("yourls", str(dump), user=user.username, team=str(team.pk), source_name="accounting")
        assert totals_of(Link.objects.get(team=team, slug="acct"))[1] == 3  # in the hour's rollup
        after = account()
        assert after.counted and (after.stored, after.difference) == (before.stored, before.difference)
        assert link_visits_delete(link=Link.objects.get(team=team, slug="acct")) == 3
        emptied = account()
        assert (emptied.stored, emptied.deleted, emptied.difference) == (
            before.stored,
            before.deleted,
            before.difference,
        )
    finally:
        redis.delete(key)


def test_the_command_shows_a_bar_for_each_phase(user, team, capsys):
    call_command("import_links", "yourls", str(DUMP), user=user.username, team=str(team.pk), progress=True)

    bars = capsys.readouterr().err
    assert "links: " in bars and "4 links" in bars
    assert "visits: 100%" in bars and "7/7" in bars  # the log has one more click than YOURLS counted


def test_a_dump_whose_tables_have_another_prefix_says_which(user, team, tmp_path):
    data = YourlsData(links={"wp1": ("https://example.com/wp", "WP", datetime(2025, 1, 1, tzinfo=UTC), 0)})
    dump = write_yourls_dump(tmp_path / "wp.sql", data, prefix="wp_yourls_")

    with pytest.raises(CommandError) as refused:
        run("yourls", str(dump), user=user.username, team=str(team.pk))

    assert str(refused.value).endswith(
        "The dump holds no table yourls_url, but it holds wp_yourls_url, wp_yourls_log: YOURLS' tables there begin "
        'with "wp_yourls_". Set "Table prefix" to wp_yourls_ and import it again. '
        "(on the command line: --table-prefix wp_yourls_)"
    )
    out = run("yourls", str(dump), user=user.username, team=str(team.pk), table_prefix="wp_yourls_")
    assert "1 created" in out and Link.objects.filter(team=team, slug="wp1").exists()


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "The file holds no table (no CREATE TABLE, no INSERT): is it a dump (SQL) of YOURLS' database?"),
        (
            "CREATE TABLE posts (id int);",
            "The dump holds no table yourls_url, only posts: is it a dump of YOURLS' database?",
        ),
        ("CREATE TABLE yourls_url (keyword text);", "The dump's table yourls_url holds no rows"),
    ],
)
def test_a_dump_without_links_says_what_it_holds(user, team, tmp_path, text, said):
    dump = tmp_path / "dump.sql"
    dump.write_text(text)

    with pytest.raises(CommandError, match=re.escape(said)):
        run("yourls", str(dump), user=user.username, team=str(team.pk))
