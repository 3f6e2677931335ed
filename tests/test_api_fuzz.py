"""Schema-driven fuzzing of the live API (schemathesis), bounded in examples and time."""
import subprocess
import sys
from pathlib import Path

import pytest

from api.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

ST = Path(sys.executable).with_name("st")


def test_no_5xx_and_every_response_matches_the_schema(live_server, django_user_model, tmp_path):
    user = django_user_model.objects.create_user("fuzzer")
    _, raw = token_create(user=user, name="fuzz", scope="write")
    result = subprocess.run(
        [
            str(ST), "run", f"{live_server.url}/api/v1/schema/",
            "--header", f"Authorization: Bearer {raw}",
            "--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,"
            "content_type_conformance,response_headers_conformance",
            "--max-examples", "25", "--seed", "1", "--request-timeout", "10",
            "--generation-deterministic", "--continue-on-failure",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
