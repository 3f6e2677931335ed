import hashlib
import time

import pytest


def timed(secret: str, *, hash_name: str = "md5", at: float | None = None, secret_first: bool = False) -> dict:
    """The time-limited signature parameters a YOURLS client sends for this secret."""
    timestamp = str(int(time.time() if at is None else at))
    text = secret + timestamp if secret_first else timestamp + secret
    return {"timestamp": timestamp, "signature": hashlib.new(hash_name, text.encode()).hexdigest()}


@pytest.fixture
def make_token(db):
    """make_token(user, scope="write", **fields) -> (ApiToken, raw secret)."""
    from tokens.services import token_create

    def make(user, scope: str = "write", **fields):
        return token_create(user=user, name="yourls", scope=scope, **fields)

    return make


@pytest.fixture
def yourls(client):
    """yourls(**params) -> response: a GET of /yourls-api.php (method="POST"
    posts the parameters as a form)."""

    def call(method: str = "GET", **params):
        if method == "POST":
            return client.post("/yourls-api.php", params)
        return client.get("/yourls-api.php", params)

    return call


def click(counts: dict) -> None:
    """Clicks on links ({link: how many}) through the real importer, as the
    edge records them, bots' among them. Once a test: in a test's
    transaction the importer's acknowledgements wait for a commit that never
    comes, so a second import would take the first one's clicks again."""
    from datetime import UTC, datetime

    from django.core.management import call_command

    from testing.streams import add_entry

    ts = int(datetime.now(UTC).timestamp() * 1000)
    agents = ["Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "curl/8.5.0"]
    add_entry(
        [
            {"ts": ts, "slug": link.slug, "link": link.pk, "ip": "198.51.100.7", "ua": agents[n % 2], "ref": ""}
            for link, count in counts.items()
            for n in range(count)
        ]
    )
    call_command("import_clicks", "--once", "--consumer", "yourls-test")
