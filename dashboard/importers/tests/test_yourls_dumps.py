"""YOURLS' database as the real MariaDB dumps it: a private MariaDB 10.11
(testing/mariadb.py) holds YOURLS 1.10's tables (data/yourls-1.10-tables.sql),
filled as YOURLS fills them, with links and clicks of every awkward kind;
`mariadb-dump` writes them with its defaults and with common options. Each
dump is read (importers/sources/sqldump.py) to the rows MariaDB holds,
value for value, and imported with `manage.py import_links yourls`, every
link and click with its values; the default one through the Import page too."""

import gzip
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from importers.models import ImportJob
from importers.sources.yourls import LOG_COLUMNS, URL_COLUMNS, dump_rows
from links.models import Link
from links.validation import normalise_target
from testing.mariadb import MariaDB
from testing.sources import sql_text

from .helpers import clicks_of
from .helpers import import_links as run

TABLES = Path(__file__).parent / "data" / "yourls-1.10-tables.sql"
UTC = timezone.utc
LONG_URL = "https://example.com/long/" + "a-b_c" * 12_000  # 60,025 characters: YOURLS' url is a TEXT

# keyword -> (url, title, created, ip, clicks): YOURLS' own sample links first.
LINKS = {
    "yourlsblog": ("https://blog.yourls.org/", "YOURLS' Blog", datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), "127.0.0.1"),
    "yourls": (
        "https://yourls.org/",
        "YOURLS: Your Own URL Shortener",
        datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        "::1",
    ),
    "ozh": ("https://ozh.org/", "ozh.org", datetime(2025, 1, 2, 3, 4, 6, tzinfo=UTC), "127.0.0.1"),
    "quotes": (
        "https://example.com/it's?q='a'&r=\"b\"",
        "It's \"quoted\" — 'single', \"double\", '' and \\'",
        datetime(2025, 2, 1, 0, 0, 0, tzinfo=UTC),
        "203.0.113.5",
    ),
    "slashes": (
        "https://example.com/a\\b?c=\\n\\\\",
        "back\\slash, \\n is not a newline, \\\\ two, \\' \\% \\_ end\\",
        datetime(2025, 2, 2, 12, 30, 0, tzinfo=UTC),
        "203.0.113.6",
    ),
    "lines": (
        "https://example.com/lines",
        "line one\nline two\r\nthree\ttab\x1actrl-Z",
        datetime(2025, 2, 3, 23, 59, 59, tzinfo=UTC),
        "2001:db8::7",
    ),
    "unicode": (
        "https://example.com/ünï/çødé?q=日本語",
        "Ünïcödé 日本語, emoji 😀🚀 and a 𝄞",
        datetime(2025, 3, 1, 8, 0, 0, tzinfo=UTC),
        "203.0.113.8",
    ),
    "statements": (
        "https://example.com/?a=1;b=2),(c=3",
        "ends; with ),( and '); DROP TABLE yourls_url; -- and /* */ #",
        datetime(2025, 3, 2, 9, 0, 0, tzinfo=UTC),
        "203.0.113.9",
    ),
    "untitled": ("https://example.com/untitled", None, datetime(2025, 3, 3, 10, 0, 0, tzinfo=UTC), "203.0.113.10"),
    "empty": ("https://example.com/empty", "", datetime(2025, 3, 4, 11, 0, 0, tzinfo=UTC), "203.0.113.11"),
    "almostlong": ("https://example.com/" + "x" * 2000, "2,020 characters", datetime(2025, 3, 5, tzinfo=UTC), "::1"),
    "long": (LONG_URL, "longer than a link may be here", datetime(2025, 3, 6, tzinfo=UTC), "::1"),
    "Case-Sensitive_1": (
        "https://example.com/case",
        "YOURLS' keywords keep their case",
        datetime(2025, 3, 7, tzinfo=UTC),
        "::1",
    ),
}
# (click_time, shorturl, referrer, user_agent, ip_address, country_code), in click_id order.
LOG = [
    (
        datetime(2025, 4, 1, 0, 0, 0),
        "quotes",
        "direct",
        "Mozilla/5.0 (X11; Linux x86_64) Firefox/124.0",
        "203.0.113.1",
        "DE",
    ),
    (
        datetime(2025, 4, 1, 0, 0, 0),
        "quotes",
        "direct",
        "Mozilla/5.0 (X11; Linux x86_64) Firefox/124.0",
        "203.0.113.1",
        "DE",
    ),
    (
        datetime(2025, 4, 1, 12, 0, 1),
        "slashes",
        "https://ref.example/?q=a'b\"c;d),(e",
        "agent \\ \"quoted\" 'single'",
        "2001:db8::1",
        "FR",
    ),
    (
        datetime(2025, 4, 2, 23, 59, 59),
        "unicode",
        "https://例え.jp/ページ?q=😀",
        "Agent/1.0 (Ünïcödé; 日本語) 😀",
        "203.0.113.2",
        "JP",
    ),
    (datetime(2025, 4, 3, 6, 30, 0), "lines", "https://t.co/abc", "curl/8.5.0", "192.0.2.44", ""),
    (
        datetime(2025, 4, 4, 7, 0, 0),
        "statements",
        "direct",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "66.249.66.1",
        "US",
    ),
    (
        datetime(2025, 4, 5, 8, 0, 0),
        "Case-Sensitive_1",
        "https://example.org/?q='quoted'",
        "Mozilla/5.0",
        "203.0.113.3",
        "GB",
    ),
    (datetime(2025, 4, 6, 9, 0, 0), "gone", "direct", "Mozilla/5.0", "203.0.113.4", "GB"),  # a link deleted since
    (
        datetime(2025, 4, 7, 10, 0, 0),
        "yourls",
        "https://news.ycombinator.com/item?id=1,2",
        "Mozilla/5.0 (iPhone)",
        "::1",
        "US",
    ),
]

# What `mariadb-dump` is run with: its defaults, then options a backup is often made with.
DUMPS = {
    "defaults": (),
    "skip-extended-insert": ("--skip-extended-insert",),
    "complete-insert": ("--complete-insert",),
    "compact": ("--compact",),
    "hex-blob": ("--hex-blob",),
    "skip-quote-names": ("--skip-quote-names",),
    "net-buffer-length": ("--extended-insert", "--net-buffer-length=4096"),  # several INSERTs a table
    "single-transaction": ("--single-transaction", "--quick"),
    "no-create-info": ("--no-create-info",),
    "insert-ignore": ("--insert-ignore", "--complete-insert"),
    "replace": ("--replace", "--skip-extended-insert"),
    "databases": ("--databases",),
    # Names in double quotes. Without a character set, it writes latin1, losing what latin1 lacks.
    "ansi": ("--compatible=ansi", "--default-character-set=utf8mb4"),
    "skip-opt": ("--skip-opt",),
}


def inserts() -> str:
    """The links and clicks, inserted as YOURLS inserts them
    (yourls_add_new_link, yourls_log_redirect), and its options."""
    lines = ["SET time_zone = '+00:00';"]  # the TIMESTAMP column holds UTC, as YOURLS writes it
    for keyword, (url, title, created, ip) in LINKS.items():
        clicks = sum(1 for row in LOG if row[1] == keyword)
        lines.append(
            "INSERT INTO yourls_url (keyword, url, title, timestamp, ip, clicks) VALUES "
            f"({sql_text(keyword)}, {sql_text(url)}, {'NULL' if title is None else sql_text(title)}, "
            f"'{created:%Y-%m-%d %H:%M:%S}', '{ip}', {clicks});"
        )
    for when, keyword, referrer, agent, ip, country in LOG:
        lines.append(
            "INSERT INTO yourls_log (click_time, shorturl, referrer, user_agent, ip_address, country_code) VALUES "
            f"('{when:%Y-%m-%d %H:%M:%S}', {sql_text(keyword)}, {sql_text(referrer)}, {sql_text(agent)}, "
            f"'{ip}', '{country}');"
        )
    for name, value in (("version", "1.10.4"), ("db_version", "507"), ("next_id", "1"), ("active_plugins", "a:0:{}")):
        lines.append(f"INSERT INTO yourls_options (option_name, option_value) VALUES ('{name}', '{value}');")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def mariadb():
    server = MariaDB()
    server.start()
    try:
        server.sql("CREATE DATABASE yourls CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;")
        server.sql(TABLES.read_text() + inserts(), database="yourls")
        yield server
    finally:
        server.stop()


def held(server: MariaDB, table: str, columns: tuple[str, ...]) -> list[tuple]:
    """The table's rows as MariaDB holds them, each value read back in hex (exact, whatever it holds)."""
    hexes = ", ".join(f"HEX(CAST({column} AS CHAR))" for column in columns)
    rows = []
    for line in server.sql(f"SET time_zone = '+00:00'; SELECT {hexes} FROM {table};", database="yourls").splitlines()[
        1:
    ]:
        rows.append(tuple(None if cell == "NULL" else bytes.fromhex(cell).decode() for cell in line.split("\t")))
    return sorted(rows, key=str)


@pytest.fixture(scope="module")
def dumps(mariadb, tmp_path_factory):
    """dumps(name): the file of that dump, made once."""
    folder, made = tmp_path_factory.mktemp("dumps"), {}

    def dump(name: str) -> Path:
        if name not in made:
            made[name] = folder / f"yourls-{name}.sql"
            made[name].write_bytes(mariadb.dump("yourls", *DUMPS[name]))
        return made[name]

    return dump


def test_the_server_holds_yourls_tables_as_yourls_made_them(mariadb):
    """The ground truth of the tests below: what MariaDB holds is what was inserted."""
    urls = held(mariadb, "yourls_url", URL_COLUMNS)
    assert len(urls) == len(LINKS) and mariadb.version().startswith("10.")
    by_keyword = {row[0]: row for row in urls}
    for keyword, (url, title, created, ip) in LINKS.items():
        assert by_keyword[keyword][1:5] == (url, title, f"{created:%Y-%m-%d %H:%M:%S}", ip)
    assert [row[2:4] for row in sorted(held(mariadb, "yourls_log", LOG_COLUMNS), key=lambda row: int(row[0]))] == [
        (keyword, referrer) for _, keyword, referrer, *_ in LOG
    ]


@pytest.mark.parametrize("name", DUMPS)
def test_every_row_is_read_as_mariadb_holds_it(mariadb, dumps, name):
    dump = dumps(name)

    urls = sorted(dump_rows(lambda: dump.open("rb"), "yourls_url", URL_COLUMNS), key=str)
    log = sorted(dump_rows(lambda: dump.open("rb"), "yourls_log", LOG_COLUMNS), key=str)

    assert urls == held(mariadb, "yourls_url", URL_COLUMNS)
    assert log == held(mariadb, "yourls_log", LOG_COLUMNS)


def test_each_dump_has_the_shape_its_options_give(dumps):
    """What the options change in the dump, so that each test above reads what it says it reads."""
    default = dumps("defaults").read_text()
    assert default.startswith("/*M!999999\\- enable the sandbox mode */")
    assert "INSERT INTO `yourls_url` VALUES\n(" in default and "),\n(" in default  # a row a line
    assert dumps("skip-extended-insert").read_text().count("INSERT INTO `yourls_log` VALUES (") == len(LOG)
    assert dumps("net-buffer-length").read_text().count("INSERT INTO `yourls_url` VALUES") >= 3
    assert "INSERT INTO yourls_url VALUES" in dumps("skip-quote-names").read_text()
    assert "INSERT INTO `yourls_url` (`keyword`, `url`, `title`," in dumps("complete-insert").read_text()
    assert 'INSERT INTO "yourls_url" VALUES' in dumps("ansi").read_text()
    assert "CREATE TABLE" not in dumps("no-create-info").read_text()
    assert "REPLACE INTO `yourls_url` VALUES" in dumps("replace").read_text()


def expected_clicks(keyword: str) -> list[tuple]:
    """A link's clicks as they are stored: 'direct' is no referrer; a click
    without a country is looked up by its address (these have none)."""
    return [
        (when.replace(tzinfo=UTC), "" if referrer == "direct" else referrer, agent, country or "unknown")
        for when, shorturl, referrer, agent, _, country in sorted(LOG)
        if shorturl == keyword
    ]


def assert_imported(out: str, domain) -> None:
    """Every link of the dump on `domain` with its values, every click of it with its own."""
    assert f"links: {len(LINKS)} read, {len(LINKS) - 1} created" in out, out
    assert "invalid: long: url: The URL is longer than 2048 characters." in out, out
    assert f"visits: {len(LOG) - 1} read, {len(LOG) - 1} stored" in out and "1 of links not imported" in out, out
    for keyword, (url, title, created, _) in LINKS.items():
        if keyword == "long":
            continue
        link = Link.objects.get(domain=domain, slug=keyword)
        assert (link.url, link.title, link.created_at) == (normalise_target(url), title or "", created), keyword
        stored = [(when, referer, agent, country) for when, referer, _, agent, country, _, _ in clicks_of(link)]
        assert stored == expected_clicks(keyword), keyword


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", DUMPS)
def test_every_link_and_click_is_imported(dumps, name, user, team, other_domain):
    out = run("yourls", str(dumps(name)), user=user.username, team=str(team.pk), domain=other_domain.host)

    assert_imported(out, other_domain)


@pytest.mark.django_db(transaction=True)
def test_the_dump_gzipped_with_windows_line_ends(dumps, user, team, other_domain, tmp_path):
    crlf = tmp_path / "yourls.sql.gz"
    crlf.write_bytes(gzip.compress(dumps("defaults").read_bytes().replace(b"\n", b"\r\n")))

    out = run("yourls", str(crlf), user=user.username, team=str(team.pk), domain=other_domain.host)

    assert_imported(out, other_domain)


@pytest.mark.django_db(transaction=True)
def test_the_default_dump_through_the_import_page(dumps, signed_in, user, other_domain):
    answer = signed_in.post(
        reverse("web:source-import"),
        {
            "source": "yourls",
            "table_prefix": "yourls_",
            "domain": other_domain.pk,
            "sql": SimpleUploadedFile("yourls.sql", dumps("defaults").read_bytes(), content_type="application/sql"),
        },
    )
    job = ImportJob.objects.get(owner=user)
    assert answer.status_code == 302

    call_command("run_imports", "--once")

    job.refresh_from_db()
    assert job.state == "done", job.error
    summary = job.summary
    assert (summary["links_created"], summary["visits_stored"]) == (len(LINKS) - 1, len(LOG) - 1)
    for keyword, (url, title, created, _) in LINKS.items():
        if keyword != "long":
            link = Link.objects.get(domain=other_domain, slug=keyword)
            assert (link.url, link.title, link.created_at) == (normalise_target(url), title or "", created)
            assert [row[0] for row in clicks_of(link)] == [row[0] for row in expected_clicks(keyword)]
