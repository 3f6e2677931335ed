"""Every answer of the edge tells browsers not to guess its content type
(X-Content-Type-Options: nosniff): redirects, 404s, 410s and its own paths."""

import time
import uuid

from edge_helpers import publish


def test_every_answer_says_nosniff(edge, rds):
    live, expired = "h" + uuid.uuid4().hex[:10], "x" + uuid.uuid4().hex[:10]
    publish(rds, live, "https://example.com/landing")
    publish(rds, expired, expires_at=int(time.time()) - 5)
    answers = {
        "redirect": edge.request(f"/{live}"),
        "unknown slug": edge.request("/missing-" + uuid.uuid4().hex[:8]),
        "malformed slug": edge.request("/not.a.slug"),
        "expired": edge.request(f"/{expired}"),
        "health": edge.request("/healthz"),
    }
    assert {name: answer.status for name, answer in answers.items()} == {
        "redirect": 302,
        "unknown slug": 404,
        "malformed slug": 404,
        "expired": 410,
        "health": 200,
    }
    for name, answer in answers.items():
        assert answer.headers.get_all("X-Content-Type-Options") == ["nosniff"], name
