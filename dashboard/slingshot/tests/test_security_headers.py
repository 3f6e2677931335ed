"""The dashboard's security headers: a Content-Security-Policy on every
page, and for TLS deployments HSTS, secure cookies, the HTTPS redirect and
the proxy's X-Forwarded-Proto, with `manage.py check --deploy` clean."""

import os
import secrets
import subprocess
import sys

import pytest

from devstack import REPO
from slingshot.release import VERSION

from .conftest import request

pytestmark = pytest.mark.django_db(transaction=True)

STRICT = {
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
}


def policy(response) -> set[str]:
    return {directive.strip() for directive in response["Content-Security-Policy"].split(";")}


def test_every_page_has_the_strict_policy(client, make_user):
    assert policy(client.get("/sign-in/")) == STRICT
    client.force_login(make_user())
    for path in ("/", "/links/", "/tokens/", "/api/v1/docs/"):
        response = client.get(path)
        assert response.status_code == 200 and policy(response) == STRICT, path


def test_only_redoc_allows_inline_styles_and_blob_workers(client):
    redoc = policy(client.get("/api/v1/redoc/"))
    assert "style-src 'self' 'unsafe-inline'" in redoc and "worker-src 'self' blob:" in redoc
    assert "script-src 'self'" in redoc


def test_swagger_ui_starts_from_a_script_of_its_own(client):
    page = client.get("/api/v1/docs/").content.decode()
    assert "<style>" not in page and "<script>" not in page
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in script.content


def deploy_check(**env: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "links.example.com",
        **env,
    }
    return subprocess.run(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_for_a_tls_deployment():
    result = deploy_check(HTTPS_ONLY="true", SECURE_HSTS_PRELOAD="true", TRUSTED_PROXY_COUNT="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_check_deploy_warns_without_them():
    result = deploy_check()
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr, warning


def test_tls_behind_a_proxy(make_dashboard):
    port = make_dashboard({"HTTPS_ONLY": "true", "TRUSTED_PROXY_COUNT": "1", "ALLOWED_HOSTS": "links.example.com"})
    host = {"Host": "links.example.com"}

    plain = request(port, "/sign-in/", headers=host)
    assert plain.status == 301 and plain.headers["Location"] == "https://links.example.com/sign-in/"

    secure = request(port, "/sign-in/", headers={**host, "X-Forwarded-Proto": "https"})
    assert secure.status == 200
    assert secure.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    cookie = secure.headers["Set-Cookie"]
    assert cookie.startswith("csrftoken=") and "; Secure" in cookie
    assert "default-src 'self'" in secure.headers["Content-Security-Policy"]

    # Health checks come over plain HTTP, by whatever name reaches the container.
    health = request(port, "/healthz", headers={"Host": "dashboard:8000"})
    assert (health.status, health.body) == (200, f"ok\nversion: {VERSION}\n".encode())
