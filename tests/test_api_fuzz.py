"""Schema-driven fuzzing of the live API (schemathesis), bounded in examples and time.

The API runs under gunicorn, the server it runs under in production."""
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

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
        devstack.gunicorn_command(port, workers=2), env=env, stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "gunicorn.log", "ab"),
    )
    try:
        devstack.wait_for_port(port, process=server)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_no_5xx_and_every_response_matches_the_schema(dashboard_url, django_user_model, tmp_path):
    """Every check schemathesis has, with a fresh seed each run: the seed is
    printed, and `SCHEMATHESIS_SEED=<seed>` runs the same examples again."""
    seed = int(os.environ.get("SCHEMATHESIS_SEED") or random.randrange(2**32))
    print(f"schemathesis seed: {seed}")
    user = django_user_model.objects.create_user("fuzzer")
    _, raw = token_create(user=user, name="fuzz", scope="write")
    result = subprocess.run(
        [
            str(ST), "run", f"{dashboard_url}/api/v1/schema/",
            "--header", f"Authorization: Bearer {raw}",
            "--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,"
            "content_type_conformance,response_headers_conformance", "--max-examples", "30", "--seed", str(seed), "--request-timeout", "10",
            "--continue-on-failure",
        ],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, f"seed {seed}\n" + result.stdout[-8000:] + result.stderr[-2000:]
    assert "passed" in result.stdout
