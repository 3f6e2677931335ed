from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from testing.factories import fresh
from tokens.models import ApiToken
from tokens.services import token_create, token_digest

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(raw):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def session(user):
    """The API as the signed-in dashboard (or its browsable API) uses it."""
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def test_a_read_only_token_reads_but_cannot_write(client_for, user):
    reader = client_for(user, scope="read")
    assert reader.get("/api/v1/links").status_code == 200
    response = reader.post("/api/v1/links", {"url": "https://example.com/"}, format="json")
    assert response.status_code == 403
    assert "read-only" in response.json()["detail"]


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer ssk_" + "x" * 43, "Bearer a b", "Token abc"])
def test_bad_credentials_are_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/links")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_and_expired_tokens_are_401(user, session):
    token, raw = token_create(user=user, name="soon revoked", scope="write")
    assert bearer(raw).get("/api/v1/links").status_code == 200
    assert session.delete(f"/api/v1/tokens/{token.pk}").status_code == 204
    assert bearer(raw).get("/api/v1/links").status_code == 401
    soon, expired = token_create(user=user, name="old", expires_at=timezone.now() + timedelta(seconds=60))
    assert bearer(expired).get("/api/v1/links").status_code == 200
    ApiToken.objects.filter(pk=soon.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert bearer(expired).get("/api/v1/links").status_code == 401


def test_tokens_are_managed_from_a_session_not_with_a_token(api, session):
    for response in (api.get("/api/v1/tokens"), api.post("/api/v1/tokens", {"name": "more"}, format="json")):
        assert response.status_code == 403
        assert "signed-in session" in response.json()["detail"]
    assert not ApiToken.objects.filter(name="more").exists()
    assert session.post("/api/v1/tokens", {"name": "more"}, format="json").status_code == 201


@pytest.mark.parametrize("expires_at", [timezone.now() - timedelta(days=1), timezone.now()])
def test_a_token_must_expire_in_the_future(session, expires_at):
    response = session.post("/api/v1/tokens", {"name": "past", "expires_at": expires_at.isoformat()}, format="json")
    assert response.status_code == 400
    assert response.json()["expires_at"] == ["An expiry must be in the future."]
    assert not ApiToken.objects.filter(name="past").exists()


def test_a_token_is_shown_once_and_stored_hashed(session):
    response = session.post("/api/v1/tokens", {"name": "ci", "scope": "read"}, format="json")
    assert response.status_code == 201
    raw = response.json()["token"]
    stored = ApiToken.objects.get(pk=response.json()["id"])
    assert stored.digest == token_digest(raw) and raw not in stored.digest
    listing = session.get("/api/v1/tokens").json()["results"]
    assert all("token" not in item for item in listing)
    assert "token" not in session.get(f"/api/v1/tokens/{stored.pk}").json()
    assert bearer(raw).get("/api/v1/links").status_code == 200
    assert ApiToken.objects.get(pk=stored.pk).last_used_at is not None


def test_tokens_of_others_are_invisible(session, make_user):
    theirs, _ = token_create(user=make_user(), name="theirs")
    assert session.get(f"/api/v1/tokens/{theirs.pk}").status_code == 404
    assert session.delete(f"/api/v1/tokens/{theirs.pk}").status_code == 404
    assert ApiToken.objects.get(pk=theirs.pk).revoked_at is None


def test_session_auth_works_for_the_browsable_api(user, client):
    client.force_login(user)
    assert client.get("/api/v1/links", HTTP_ACCEPT="text/html").status_code == 200


def test_anonymous_is_401():
    assert APIClient().get("/api/v1/links").status_code in (401, 403)
    assert APIClient().get("/api/v1/links").status_code == 401


def test_throttled_requests_get_429_with_retry_after(client_for, user, settings):
    settings.API_THROTTLE_RATE = "3/hour"
    first, second = client_for(user), client_for(user)
    assert [first.get("/api/v1/links").status_code for _ in range(3)] == [200, 200, 200]
    throttled = first.get("/api/v1/links")
    assert throttled.status_code == 429
    assert int(throttled["Retry-After"]) > 0
    # Each token has its own budget.
    assert second.get("/api/v1/links").status_code == 200


def test_create_api_token_command_prints_a_working_token(user, capsys):
    call_command("create_api_token", user.username, "--scope", "write", "--name", "deploy")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("ssk_")
    response = bearer(raw).post("/api/v1/links", {"url": "https://example.com/", "slug": fresh()}, format="json")
    assert response.status_code == 201
    assert ApiToken.objects.get(digest=token_digest(raw)).name == "deploy"


def test_create_api_token_for_an_unknown_user_fails():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user named"):
        call_command("create_api_token", "nobody-here")


def test_a_revoked_token_is_gone_from_the_api_and_listed_as_revoked_on_the_page(user, session, client):
    token, _ = token_create(user=user, name="gone", scope="read")
    assert session.delete(f"/api/v1/tokens/{token.pk}").status_code == 204
    assert session.get(f"/api/v1/tokens/{token.pk}").status_code == 404
    assert "gone" not in [item["name"] for item in session.get("/api/v1/tokens").json()["results"]]
    assert session.delete(f"/api/v1/tokens/{token.pk}").status_code == 404
    client.force_login(user)
    page = client.get("/tokens/").content.decode()
    assert "gone" in page and "revoked" in page.lower()


def test_a_page_given_empty_is_a_400_as_any_query_parameter(session):
    response = session.get("/api/v1/tokens", {"page": ""})
    assert response.status_code == 400 and "page" in response.json()
    assert session.get("/api/v1/tokens").status_code == 200


def test_create_api_token_with_arguments_that_are_not_utf8_fails_clearly(user):
    """Python hands bytes of argv that are not UTF-8 over as lone surrogates."""
    from django.core.management.base import CommandError

    for arguments in (["nobody\udcff"], [user.username, "--name", "ci\udcff"], [user.username, "--team", "\udce9"]):
        with pytest.raises(CommandError, match="is not UTF-8 text"):
            call_command("create_api_token", *arguments)
    assert not ApiToken.objects.exists()
