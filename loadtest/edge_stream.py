"""The click stream as the edge writes it (docs/contract.md), preloaded into
Redis for the import benchmarks (bench_import.py, bench_import_clickhouse.py,
bench_copy.py): ~100 clicks an entry, a realistic mix of browsers, bots,
referrers, addresses and some orphan visits."""

import random
import time
import uuid

BROWSERS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel {v}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (iPad; CPU OS 16_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36 Edg/{v}.0.0.0",
]
BOTS = [
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "Twitterbot/1.0",
    "curl/8.{v}.0",
    "python-requests/2.3{v}.0",
]
REFERERS = [
    "",
    "",
    "",
    "https://www.google.com/",
    "https://t.co/abc",
    "https://news.ycombinator.com/item?id=1",
    "https://www.facebook.com/",
    "https://mail.example.org/inbox",
    "android-app://com.slack/",
    "https://www.reddit.com/r/programming/comments/xyz/",
]


def user_agents(rng: random.Random) -> list[str]:
    """~600 distinct agents, ~12% of them bots, drawn with a skew like real traffic."""
    agents = [template.format(v=v) for template in BROWSERS for v in range(60, 140)]
    agents += [template.format(v=v) for template in BOTS for v in range(10)]
    rng.shuffle(agents)
    return agents


ADDRESSES = 66_000


def preload(
    client,
    *,
    clicks: int,
    links: list[tuple[str, int]],
    seed: int,
    stream: str,
    spread_ms: int,
    shuffled_times: bool = False,
    ipv6_addresses: int = 6_000,
) -> int:
    """XADDs `clicks` clicks as the edge does (100 a stream entry) on these
    links (slug, id), and 2% orphan visits; links are picked with a Zipf-like skew, times spread over the last
    `spread_ms` milliseconds. In the order the edge writes them: each click
    stamped when it was served, and later clicks later in the stream, give or
    take a flush interval (0.1 s) between workers. `shuffled_times`: every
    click at a random time of the spread instead, which no edge writes (the
    raw clicks' link index then takes each row at a random place)."""
    from clicks.records import encode_entry

    rng = random.Random(seed)
    agents = user_agents(rng)
    weights = [1 / (rank + 1) ** 0.8 for rank in range(len(agents))]
    link_weights = [1 / (rank + 1) for rank in range(len(links))]
    addresses = [
        f"{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        for _ in range(ADDRESSES - ipv6_addresses)
    ]
    addresses += [
        f"2a0{rng.randint(0, 9)}:{rng.randint(0, 0xFFFF):x}::{rng.randint(1, 0xFFFF):x}" for _ in range(ipv6_addresses)
    ]
    now_ms = int(time.time() * 1000)
    prefix = uuid.uuid4().hex[:16]
    pipe = client.pipeline(transaction=False)
    counter = 0
    entries = 0
    while counter < clicks:
        size = min(100, clicks - counter)
        agent_pick = rng.choices(agents, weights, k=size)
        link_pick = rng.choices(links, link_weights, k=size)
        batch = []
        first = counter
        for i in range(size):
            orphan = rng.random() < 0.02
            click = {
                "ts": (now_ms - rng.randint(0, spread_ms))
                if shuffled_times
                else (now_ms - spread_ms + counter * spread_ms // clicks - rng.randint(0, 100)),
                "slug": f"nolink{rng.randint(0, 999)}" if orphan else link_pick[i][0],
                "link": None if orphan else link_pick[i][1],
                "ip": rng.choice(addresses),
                "ua": agent_pick[i],
                "ref": rng.choice(REFERERS),
            }
            batch.append(click)
            counter += 1
        pipe.xadd(stream, encode_entry(prefix, first, batch))
        entries += 1
        if entries % 500 == 0:
            pipe.execute()
    pipe.execute()
    return entries
