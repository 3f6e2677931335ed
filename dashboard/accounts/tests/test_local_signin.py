"""LOCAL_SIGNIN=false (accounts/backends.py): password sign-in refused on
every door that offers it (the sign-in page, Django's admin, the YOURLS
API's username and password) but to the break-glass superusers, the
refusals counted by the sign-in throttle, and the sessions signed in before
kept."""

import json
import uuid

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import SESSION_KEY
from django.test import Client

from testing.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def sso_only(settings):
    settings.OIDC_ISSUER = "https://sso.example.com"
    settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = "slingshot", "secret"
    settings.OIDC_NAME = "Example SSO"
    settings.LOCAL_SIGNIN = False
    settings.LOCAL_SIGNIN_SUPERUSERS = frozenset({"root-on-call"})
    return settings


def address() -> str:
    number = uuid.uuid4().int
    return f"2001:db8::{number % 65536:x}:{number // 65536 % 65536:x}"


def sign_in(username: str, *, to: str = "/sign-in/") -> Client:
    client = Client(REMOTE_ADDR=address())
    client.post(to, {"username": username, "password": PASSWORD})
    return client


def signed_in(client: Client) -> bool:
    return SESSION_KEY in client.session


def test_the_page_hides_passwords_but_for_break_glass_and_refuses_them(client, sso_only, make_user, monkeypatch):
    from accounts import sso

    monkeypatch.setattr(sso, "reachable", lambda: True)
    page = client.get("/sign-in/").content.decode()
    assert "Sign in with Example SSO" in page and 'name="password"' not in page
    assert 'href="?local"' in page
    assert 'name="password"' in client.get("/sign-in/?local").content.decode()

    person = make_user()
    refused = Client(REMOTE_ADDR=address())
    answer = refused.post("/sign-in/?local", {"username": person.username, "password": PASSWORD})
    assert answer.status_code == 200 and not signed_in(refused)
    assert "Password sign-in is turned off here: sign in with Example SSO." in answer.content.decode()
    assert AccessAttempt.objects.filter(
        username=person.username, failures_since_start=1
    ).exists()  # the throttle counts it

    assert signed_in(sign_in(make_user(username="root-on-call", is_superuser=True, is_staff=True).username))
    assert not signed_in(sign_in(make_user(is_superuser=True, is_staff=True).username))  # not named


def test_named_but_no_superuser_is_refused(sso_only, make_user):
    assert not signed_in(sign_in(make_user(username="root-on-call").username))


def test_the_admins_sign_in_and_the_yourls_apis_passwords_are_closed_too(sso_only, make_user):
    staff = make_user(is_staff=True)
    assert not signed_in(sign_in(staff.username, to="/admin/login/"))
    sso_only.YOURLS_PASSWORD_AUTH = True
    answer = Client(REMOTE_ADDR=address()).get(
        "/yourls-api.php", {"action": "version", "format": "json", "username": staff.username, "password": PASSWORD}
    )
    assert answer.status_code == 403 and json.loads(answer.content)["message"] == "Invalid username or password"
    sso_only.LOCAL_SIGNIN = True
    answer = Client(REMOTE_ADDR=address()).get(
        "/yourls-api.php", {"action": "version", "format": "json", "username": staff.username, "password": PASSWORD}
    )
    assert answer.status_code == 200


def test_a_session_signed_in_before_is_kept(settings, make_user):
    person = make_user()
    client = sign_in(person.username)
    assert client.get("/links/").status_code == 200
    settings.OIDC_ISSUER = "https://sso.example.com"
    settings.LOCAL_SIGNIN = False
    assert client.get("/links/").status_code == 200  # its backend is still the one it names


def test_the_ways_to_and_from_the_provider_are_throttled_by_address(sso_only, settings):
    settings.OIDC_THROTTLE_RATE = "2/min"
    client = Client(REMOTE_ADDR=address())
    answers = [client.get("/sign-in/sso/done?code=x&state=y").status_code for _ in range(3)]
    assert answers[:2] == [302, 302] and answers[2] == 429  # refused (no state of ours), then throttled
    throttled = client.get("/sign-in/sso/")
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert "Too many sign-ins through single sign-on" in throttled.content.decode()
    assert Client(REMOTE_ADDR=address()).get("/sign-in/sso/done?code=x&state=y").status_code == 302  # another address


def test_a_link_waiting_for_its_password_ends_after_ten_minutes(sso_only, make_user):
    import time

    from web.sso_views import LINKING, LINKING_SECONDS

    local = make_user(email="ivy@example.org")
    client = Client(REMOTE_ADDR=address())
    claims = {
        "issuer": "https://sso.example.com",
        "subject": "ivy",
        "email": "ivy@example.org",
        "email_verified": True,
        "name": "",
        "username": "ivy",
        "groups": [],
    }
    session = client.session
    session[LINKING] = {"claims": claims, "user": local.pk, "id_token": None, "at": time.time() - LINKING_SECONDS - 1}
    session.save()
    answer = client.post("/sign-in/sso/link", {"password": PASSWORD}, follow=True)
    assert "That took too long: sign in with Example SSO again." in answer.content.decode()
    assert not signed_in(client)
    assert LINKING not in client.session
