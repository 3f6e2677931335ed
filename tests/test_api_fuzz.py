"""Schema-driven fuzzing of the live API (schemathesis), bounded in examples and time,
with the text its generators never make put into bodies (tests/schemathesis_hooks.py:
lone surrogates, NUL, characters IDNA drops).

The API runs under gunicorn, the server it runs under in production."""

import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from axes.models import AccessAttempt
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.utils.crypto import get_random_string

from accounts.models import SessionUse
from testing.factories import PASSWORD
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

ST = Path(sys.executable).with_name("st")


@pytest.fixture
def dashboard_url(make_dashboard):
    return f"http://127.0.0.1:{make_dashboard()}"


# tests/schemathesis_hooks.py puts text into bodies in every phase but the
# stateful one, whose bodies schemathesis checks again, once links have
# changed them, with a validator that cannot read a lone surrogate.
PHASES = [
    ("examples,coverage,fuzzing", {"SCHEMATHESIS_HOOKS": str(Path(__file__).with_name("schemathesis_hooks.py"))}),
    ("stateful", {}),
]


def schema_file(dashboard_url: str, directory: Path) -> Path:
    """The live API's schema, fetched once with time to spare: drf-spectacular
    builds it on each request, which a loaded machine took over schemathesis's
    10 s request timeout to do (2026-11-29)."""
    answer = requests.get(f"{dashboard_url}/api/v1/schema/", params={"format": "json"}, timeout=120)
    answer.raise_for_status()
    path = directory / "schema.json"
    path.write_bytes(answer.content)
    return path


def schemathesis(dashboard_url: str, seed: int, cwd: Path, *options: str) -> None:
    schema = schema_file(dashboard_url, cwd)
    for phases, environment in PHASES:
        result = subprocess.run(
            [
                str(ST),
                "--config-file",
                str(Path(__file__).with_name("schemathesis.toml")),
                "run",
                str(schema),
                "--url",
                dashboard_url,
                "--phases",
                phases,
                "--checks",
                "all",
                "--max-examples",
                "30",
                "--seed",
                str(seed),
                "--request-timeout",
                "10",
                "--continue-on-failure",
                *options,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=cwd,
            env={**os.environ, **environment},
        )
        assert result.returncode == 0, f"seed {seed}, {phases}\n" + result.stdout[-8000:] + result.stderr[-2000:]
        assert "passed" in result.stdout
        print(result.stdout[result.stdout.rfind("API Operations") :])


def session_cookies(user) -> dict[str, str]:
    """The headers of a browser signed in as `user`: its session, and a CSRF
    token in the cookie and the header, as the dashboard's pages send them."""
    store = SessionStore()
    store.update(
        {
            SESSION_KEY: str(user.pk),
            BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
            HASH_SESSION_KEY: user.get_session_auth_hash(),
        }
    )
    store.create()
    csrf = get_random_string(32)
    return {"Cookie": f"sessionid={store.session_key}; csrftoken={csrf}", "X-CSRFToken": csrf}


@pytest.mark.slow
def test_no_5xx_and_every_response_matches_the_schema(dashboard_url, make_user, tmp_path):
    """Every check schemathesis has (tests/schemathesis.toml says where a
    400 is expected of schema-valid data), with a fresh seed each run: the
    seed is printed, and `SCHEMATHESIS_SEED=<seed>` runs the same again.
    With a token first, then the token endpoints as a signed-in session."""
    seed = int(os.environ.get("SCHEMATHESIS_SEED") or random.randrange(2**32))
    print(f"schemathesis seed: {seed}")
    user = make_user()
    _, raw = token_create(user=user, name="fuzz", scope="write")
    schemathesis(dashboard_url, seed, tmp_path, "--header", f"Authorization: Bearer {raw}")
    headers = [
        argument for name, value in session_cookies(user).items() for argument in ("--header", f"{name}: {value}")
    ]
    # The session goes as a raw Cookie header, which schemathesis cannot take
    # away when it tries a request without credentials: that check
    # (ignored_auth) runs in the first pass, with the token.
    schemathesis(
        dashboard_url,
        seed,
        tmp_path,
        "--include-path-regex",
        "^/api/v1/tokens",
        "--exclude-checks",
        "ignored_auth",
        *headers,
    )


def raw_status(dashboard_url: str, request: bytes) -> int:
    """The status of one request sent as these bytes to the live dashboard."""
    host, port = dashboard_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection_:
        connection_.sendall(request)
        answer = connection_.recv(64)
    return int(answer.split(b" ", 2)[1])


def test_headers_text_cannot_hold_never_reach_the_dashboard(dashboard_url, make_user):
    """A NUL (or another control character) in a header, which PostgreSQL
    could not store as a session's or a failed sign-in's user agent, is
    refused by gunicorn with a 400; bytes that are not UTF-8 (a surrogate's,
    ED A0 80) reach Django as Latin-1 text, which it stores."""
    for header in (b"User-Agent: Firefox\x00/120", b"Referer: https://a.example/\x00", b"X-Forwarded-For: 1.2.3.4\x01"):
        request = b"GET /sign-in/ HTTP/1.1\r\nHost: dashboard\r\n" + header + b"\r\nConnection: close\r\n\r\n"
        assert raw_status(dashboard_url, request) == 400, header
    user = make_user()
    agent = "Firefox\xed\xa0\x80/120"  # sent as those bytes: http.client writes headers in Latin-1
    session = requests.Session()
    session.headers["User-Agent"] = agent
    form = session.get(f"{dashboard_url}/sign-in/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)[1]
    for password, status in (("wrong", 200), (PASSWORD, 302)):
        answer = session.post(
            f"{dashboard_url}/sign-in/",
            {"username": user.username, "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{dashboard_url}/sign-in/"},
            allow_redirects=False,
        )
        assert answer.status_code == status, answer.text[-500:]
    assert AccessAttempt.objects.get(username=user.username).user_agent == agent
    assert SessionUse.objects.get(user=user).user_agent == agent
