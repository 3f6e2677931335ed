"""Schema-driven fuzzing of the live API (schemathesis), bounded in examples and time.

The API runs under gunicorn, the server it runs under in production."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import connection
from django.utils.crypto import get_random_string

import devstack
from api.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

ST = Path(sys.executable).with_name("st")


@pytest.fixture
def dashboard_url(tmp_path):
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    port = devstack.free_port()
    server = subprocess.Popen(
        devstack.gunicorn_command(port, workers=2),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "gunicorn.log", "ab"),
    )
    try:
        devstack.wait_for_port(port, process=server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def schemathesis(dashboard_url: str, seed: int, cwd: Path, *options: str) -> None:
    result = subprocess.run(
        [
            str(ST),
            "--config-file",
            str(Path(__file__).with_name("schemathesis.toml")),
            "run",
            f"{dashboard_url}/api/v1/schema/",
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
    )
    assert result.returncode == 0, f"seed {seed}\n" + result.stdout[-8000:] + result.stderr[-2000:]
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


def test_no_5xx_and_every_response_matches_the_schema(dashboard_url, django_user_model, tmp_path):
    """Every check schemathesis has (tests/schemathesis.toml says where a
    400 is expected of schema-valid data), with a fresh seed each run: the
    seed is printed, and `SCHEMATHESIS_SEED=<seed>` runs the same again.
    With a token first, then the token endpoints as a signed-in session."""
    seed = int(os.environ.get("SCHEMATHESIS_SEED") or random.randrange(2**32))
    print(f"schemathesis seed: {seed}")
    user = django_user_model.objects.create_user("fuzzer")
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
