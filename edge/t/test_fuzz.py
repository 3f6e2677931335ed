"""Hostile paths: never a 5xx, and no Redis call for a path that cannot be a slug."""

import random
import time

from edge_helpers import delta, metrics, raw_request

from devstack.redis import redis_calls

ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# Bytes that survive nginx's URI normalisation, so a path holding one can
# never turn into a slug.
NEVER_IN_A_SLUG = [b"!", b"~", b"*", b"'", b"(", b"$", b"@", b",", b";", b"=", b":", b"\xe2\x9c\x93", b"\xff"]


def raw_status(port: int, target: bytes, *, method: bytes = b"GET") -> int:
    answer = raw_request(port, target, method=method)
    if not answer:
        return 0  # nginx closed without answering: not a 5xx
    if not answer.startswith(b"HTTP/"):
        # A request line without a version is HTTP/0.9: the body alone comes back.
        server_error = b"<title>5" in answer or b"Unavailable" in answer
        return 599 if server_error else 9
    return int(answer.split(b" ", 2)[1])


def random_paths(rng: random.Random, count: int) -> list[bytes]:
    paths = []
    for _ in range(count):
        kind = rng.randrange(7)
        if kind == 0:  # random bytes, anything at all
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        elif kind == 1:  # long, up to and past nginx's 8 KB request line
            body = bytes(rng.choice(ALPHABET) for _ in range(rng.choice([65, 1000, 8 * 1024, 9000])))
        elif kind == 2:  # percent-encoding, valid and not
            body = b"".join(
                rng.choice(
                    [
                        b"%",
                        b"%%",
                        b"%zz",
                        b"%2",
                        b"%25",
                        b"%2F",
                        b"%2e",
                        b"%00",
                        b"%0d%0a",
                        b"%41",
                        b"%c3%a9",
                        b"%ed%a0%80",  # a lone surrogate's UTF-8 form, which no UTF-8 text holds
                        b"%ff",
                        b"a",
                    ]
                )
                for _ in range(rng.randrange(1, 20))
            )
        elif kind == 3:  # CR/LF and friends
            body = b"a" + rng.choice([b"\r\n", b"\r", b"\n", b"\r\nX-Injected: 1", b"\t", b"\x00", b" x"])
        elif kind == 4:  # unicode
            body = "".join(
                rng.choice(["é", "✓", "😀", "ß", "\u202e", "\u3164", "\ufe0f", "a"]) for _ in range(10)
            ).encode()
        elif kind == 5:  # dot segments
            body = rng.choice([b"..", b"../..", b"a/../b", b"./a", b"//a", b"a/./b/../../.."])
        else:  # almost a slug
            body = bytes(rng.choice(ALPHABET) for _ in range(8)) + rng.choice(NEVER_IN_A_SLUG)
        paths.append(b"/" + body + rng.choice([b"", b"?q=\r", b"?a=%0d%0aSet-Cookie:x", b"#frag"]))
    return paths


def test_fuzzed_paths_never_get_a_5xx(edge):
    rng = random.Random(20261122)
    statuses = {}
    for path in random_paths(rng, 600):
        status = raw_status(edge.port, path)
        statuses.setdefault(status, path)
        assert status < 500, f"{status} for {path!r}"
    for method in (b"HEAD", b"POST", b"DELETE", b"BREW"):
        assert raw_status(edge.port, b"/abc!", method=method) < 500
    assert {404, 400, 414} <= set(statuses)
    assert edge.errors() == ""


def test_a_path_that_cannot_be_a_slug_never_reaches_redis(make_edge, rds):
    edge = make_edge(workers=2)
    rng = random.Random(7)
    paths = []
    for _ in range(300):
        body = bytes(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 30)))
        cut = rng.randrange(len(body) + 1)
        paths.append(b"/" + body[:cut] + rng.choice(NEVER_IN_A_SLUG) + body[cut:])
    paths += [
        b"/" + b"x" * 65,
        b"/" + b"y" * 5000,
        b"/a/b",
        b"/a%2Fb",
        b"/a.b",
        b"/%E2%9C%93",
        b"/a%20b",
        b"/a%0D%0Ab",
        b"/caf%C3%A9",
        b"/" + "é".encode(),
    ]
    time.sleep(0.3)
    before, gets_before = metrics(edge), redis_calls(rds, "get")
    statuses = [raw_status(edge.port, path) for path in paths]
    after, gets_after = metrics(edge), redis_calls(rds, "get")
    assert set(statuses) <= {404, 400, 414}
    assert statuses.count(404) >= 300
    assert gets_after == gets_before, "Redis was asked for an invalid slug"
    assert delta(before, after, "slingshot_edge_redis_lookups_total") == 0
    assert delta(before, after, 'slingshot_edge_requests_total{outcome="invalid_slug"}') == statuses.count(404)
