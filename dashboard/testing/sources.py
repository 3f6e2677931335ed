"""Data in the shapes other shorteners keep it, for the importers' tests and
benchmark (importers/sources/): a YOURLS database as `mysqldump` writes it,
in the tables of YOURLS' includes/functions-install.php."""

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel {v}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) v{v}",
]
REFERRERS = [
    "direct",
    "direct",
    "https://www.google.com/",
    "https://t.co/abc",
    "https://news.ycombinator.com/item?id=1",
]
COUNTRIES = ["US", "DE", "FR", "GB", "JP", "BR", "IN", ""]


def sql_text(value: str) -> str:
    """A string as mysqldump quotes it."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace('"', '\\"')
    return "'" + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\x00", "\\0") + "'"


@dataclass
class YourlsData:
    """What a generated YOURLS database holds: its links (keyword -> url,
    title, created, clicks) and its log rows, in click_id order."""

    links: dict[str, tuple[str, str, datetime, int]] = field(default_factory=dict)
    log: list[tuple[int, datetime, str, str, str, str, str]] = field(default_factory=list)


def yourls_data(*, links: int, visits: int, seed: int = 1, days: int = 365, now: datetime | None = None) -> YourlsData:
    """Links `k0`.. made over the `days` days before `now`, and `visits` log
    rows, as a shortener's visits come: links drawn with a Zipf skew (the
    n-th most visited gets 1/n of the first's), each visit some time after
    its link was made (exponentially, three days on average: a link is
    visited most once it is shared), user agents, addresses, referrers and
    countries from pools, in time order as YOURLS logs them."""
    rng = random.Random(seed)
    now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    span = days * 86_400
    data = YourlsData()
    made = sorted(rng.uniform(0, span * 0.95) for _ in range(links))
    for i, offset in enumerate(made):
        title = rng.choice(["", f"Link {i}", f'It\'s "quoted" \\ {i}', f"Ünïcode {i}\nline"])
        data.links[f"k{i}"] = (f"https://example.com/{i}?q=1", title, now - timedelta(seconds=span - offset), 0)
    keywords = list(data.links)
    weights = [1 / (rank + 1) for rank in range(len(keywords))]
    rng.shuffle(weights)
    agents = [template.format(v=v) for template in AGENTS for v in range(60, 160)]
    addresses = [
        f"{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        for _ in range(max(1, visits // 5))
    ]
    times = []
    for keyword in rng.choices(keywords, weights, k=visits):
        created = data.links[keyword][2]
        after = min(rng.expovariate(1 / (3 * 86_400)), (now - created).total_seconds() - 1)
        times.append((created + timedelta(seconds=int(after)), keyword))
    times.sort()
    counts: dict[str, int] = {}
    for click_id, (at, keyword) in enumerate(times, start=1):
        counts[keyword] = counts.get(keyword, 0) + 1
        data.log.append(
            (
                click_id,
                at,
                keyword,
                rng.choice(REFERRERS),
                rng.choice(agents),
                rng.choice(addresses),
                rng.choice(COUNTRIES),
            )
        )
    for keyword, (url, title, created, _) in list(data.links.items()):
        data.links[keyword] = (url, title, created, counts.get(keyword, 0))
    return data


_URL_TABLE = """DROP TABLE IF EXISTS `{prefix}url`;
CREATE TABLE `{prefix}url` (
  `keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  `url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `title` text COLLATE utf8mb4_unicode_ci,
  `timestamp` timestamp NOT NULL DEFAULT current_timestamp(),
  `ip` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  `clicks` int(10) unsigned NOT NULL,
  PRIMARY KEY (`keyword`),
  KEY `ip` (`ip`),
  KEY `timestamp` (`timestamp`),
  KEY `url_idx` (`url`(30))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
"""
_LOG_TABLE = """DROP TABLE IF EXISTS `{prefix}log`;
CREATE TABLE `{prefix}log` (
  `click_id` int(11) NOT NULL AUTO_INCREMENT,
  `click_time` datetime NOT NULL,
  `shorturl` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `referrer` varchar(200) COLLATE utf8mb4_unicode_ci NOT NULL,
  `user_agent` varchar(255) COLLATE utf8mb4_unicode_ci NOT NULL,
  `ip_address` varchar(41) COLLATE utf8mb4_unicode_ci NOT NULL,
  `country_code` char(2) COLLATE utf8mb4_unicode_ci NOT NULL,
  PRIMARY KEY (`click_id`),
  KEY `shorturl` (`shorturl`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
"""


def write_yourls_dump(path: Path, data: YourlsData, *, prefix: str = "yourls_", rows_per_insert: int = 2000) -> Path:
    """`data` as `mysqldump` writes it: the tables, then extended INSERTs of
    up to `rows_per_insert` rows, between LOCK TABLES and UNLOCK TABLES."""
    with path.open("w", encoding="utf-8") as out:
        out.write("-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)\n/*!40101 SET NAMES utf8mb4 */;\n")
        out.write("/*!40103 SET TIME_ZONE='+00:00' */;\n\n")
        for table, rows in (
            (
                _URL_TABLE,
                [
                    f"({sql_text(keyword)},{sql_text(url)},{sql_text(title) if title else 'NULL'},"
                    f"'{created:%Y-%m-%d %H:%M:%S}','127.0.0.1',{clicks})"
                    for keyword, (url, title, created, clicks) in data.links.items()
                ],
            ),
            (
                _LOG_TABLE,
                [
                    f"({click_id},'{at:%Y-%m-%d %H:%M:%S}',{sql_text(keyword)},{sql_text(referrer)},"
                    f"{sql_text(agent)},'{address}','{country}')"
                    for click_id, at, keyword, referrer, agent, address, country in data.log
                ],
            ),
        ):
            out.write(table.format(prefix=prefix))
            name = "url" if "`clicks`" in table else "log"
            out.write(f"\nLOCK TABLES `{prefix}{name}` WRITE;\n")
            for start in range(0, len(rows), rows_per_insert):
                out.write(
                    f"INSERT INTO `{prefix}{name}` VALUES " + ",".join(rows[start : start + rows_per_insert]) + ";\n"
                )
            out.write("UNLOCK TABLES;\n\n")
    return path
