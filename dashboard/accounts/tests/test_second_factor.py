"""Two-factor for local accounts (accounts/second_factor.py, web/second_factor_views.py):
the authenticator app set up and asked for after the password, recovery
codes each once, wrong codes counted by the sign-in lockout, a team that
requires a second factor, the admin's and the YOURLS API's password doors,
and a superuser's help for a person who lost theirs. Passkeys in a real
browser are in web/tests/test_browser_passkeys.py."""

import json
import re
import time
import uuid

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts import second_factor
from teams.services import team_create
from testing.factories import PASSWORD, fresh

pytestmark = pytest.mark.django_db


def address() -> str:
    number = uuid.uuid4().int
    return f"2001:db8::{number % 65536:x}:{number // 65536 % 65536:x}"


def code_of(device: TOTPDevice, *, steps_ahead: int = 0) -> str:
    app = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    app.time = time.time() + steps_ahead * device.step
    return f"{app.token():06d}"


def password_step(username: str, *, client: Client | None = None, to: str = "/sign-in/", next_: str = "/links/"):
    client = client or Client(REMOTE_ADDR=address())
    answer = client.post(to, {"username": username, "password": PASSWORD, "next": next_})
    return client, answer


def signed_in(client: Client) -> bool:
    return SESSION_KEY in client.session


@pytest.fixture
def with_app(make_user):
    """A person with an authenticator app set up, through their page."""
    person = make_user()
    client = Client(REMOTE_ADDR=address())
    client.force_login(person)
    assert client.post("/account/two-factor/", {"action": "app-begin"}).status_code == 302
    page = client.get("/account/two-factor/").content.decode()
    assert "<svg" in page and 'id="totp-secret"' in page  # the QR code, and the key to type
    device = second_factor.totp_pending(user=person)
    wrong = "000000" if code_of(device) != "000000" else "111111"
    assert client.post("/account/two-factor/", {"action": "app-confirm", "code": wrong}).status_code == 400
    time.sleep(1.1)  # django-otp takes no code for a second after a wrong one, and twice as long after two
    confirmed = client.post("/account/two-factor/", {"action": "app-confirm", "code": code_of(device)})
    assert confirmed.status_code == 200  # the first recovery codes, shown once
    codes = re.findall(r"<code>([0-9a-f]{5}-[0-9a-f]{5})</code>", confirmed.content.decode())
    assert len(codes) == second_factor.RECOVERY_CODES
    assert second_factor.totp_of(person) is not None
    assert "<code>" + codes[0] not in client.get("/account/two-factor/").content.decode()  # shown only then
    person.codes = codes
    person.device = second_factor.totp_of(person)
    return person


def test_the_password_alone_no_longer_signs_in_and_the_apps_code_does(with_app):
    client, answer = password_step(with_app.username)
    assert answer.status_code == 302 and answer["Location"] == "/sign-in/second-factor/"
    assert not signed_in(client)
    assert client.get("/links/").status_code == 302  # to the sign-in, not the links
    page = client.get("/sign-in/second-factor/")
    assert page.status_code == 200 and b'name="code"' in page.content
    wrong = client.post(
        "/sign-in/second-factor/", {"code": "123456" if code_of(with_app.device) != "123456" else "654321"}
    )
    assert wrong.status_code == 400 and b"That code is not right." in wrong.content and not signed_in(client)
    time.sleep(1.1)
    right = client.post("/sign-in/second-factor/", {"code": code_of(with_app.device, steps_ahead=1)})
    assert right.status_code == 302 and right["Location"] == "/links/"
    assert signed_in(client) and client.session[second_factor.SIGNED_IN_WITH] == second_factor.SECOND_FACTOR


def test_a_recovery_code_signs_in_once(with_app):
    client, _ = password_step(with_app.username)
    answer = client.post("/sign-in/second-factor/", {"code": with_app.codes[3].upper()})
    assert answer.status_code == 302 and signed_in(client)
    assert second_factor.recovery_codes_left(with_app) == second_factor.RECOVERY_CODES - 1
    again, _ = password_step(with_app.username)
    assert again.post("/sign-in/second-factor/", {"code": with_app.codes[3]}).status_code == 400
    assert not signed_in(again)


def test_wrong_codes_count_toward_the_sign_in_lockout(with_app, settings):
    client, _ = password_step(with_app.username)
    for _ in range(settings.SIGN_IN_FAILURE_LIMIT):
        client.post("/sign-in/second-factor/", {"code": "zzzzz-zzzzz"})
    locked = client.post("/sign-in/second-factor/", {"code": with_app.codes[0]})
    assert locked.status_code == 429 and b"Too many failed sign-ins" in locked.content
    assert not signed_in(client)
    # The password step from that address is locked out too, as after wrong passwords.
    assert client.post("/sign-in/", {"username": with_app.username, "password": PASSWORD}).status_code == 429


def test_the_step_waits_a_few_minutes_only(with_app, monkeypatch):
    client, _ = password_step(with_app.username)
    started = time.time()
    monkeypatch.setattr(time, "time", lambda: started + second_factor.PENDING_SECONDS + 1)
    answer = client.post("/sign-in/second-factor/", {"code": with_app.codes[0]})
    assert answer.status_code == 302 and answer["Location"] == "/sign-in/" and not signed_in(client)


def test_the_admins_sign_in_asks_the_second_factor_too(make_user):
    staff = make_user(is_staff=True)
    TOTPDevice.objects.create(user=staff, name=second_factor.TOTP_DEVICE, confirmed=True)
    client, answer = password_step(staff.username, to="/admin/login/", next_="/admin/")
    assert answer.status_code == 302 and answer["Location"] == "/sign-in/second-factor/"
    assert not signed_in(client) and client.get("/admin/").status_code == 302


def test_the_yourls_apis_password_is_refused_to_a_person_with_a_second_factor(with_app, settings):
    settings.YOURLS_PASSWORD_AUTH = True
    answer = Client(REMOTE_ADDR=address()).get(
        "/yourls-api.php", {"action": "version", "format": "json", "username": with_app.username, "password": PASSWORD}
    )
    assert answer.status_code == 403 and "second factor" in json.loads(answer.content)["message"]


def test_a_team_that_requires_it_sends_a_password_session_to_set_one_up(make_user):
    admin, member = make_user(), make_user()
    team = team_create(actor=admin, name=fresh("Secure "))
    admin_client = Client(REMOTE_ADDR=address())
    admin_client.force_login(admin)
    admin_client.post(f"/teams/{team.pk}/", {"username": member.username, "role": "editor"})
    assert team.memberships.filter(user=member).exists()
    assert admin_client.post(f"/teams/{team.pk}/second-factor", {"required": "true"}).status_code == 302
    team.refresh_from_db()
    assert team.require_second_factor
    assert team.audit_entries.filter(action="team.second_factor").exists()

    client, answer = password_step(member.username)
    assert answer.status_code == 302 and signed_in(client)  # no factor yet: the password signs in...
    for page in ("/links/", "/", f"/teams/{team.pk}/"):
        sent = client.get(page)
        assert sent.status_code == 302 and sent["Location"] == "/account/two-factor/", page  # ...to set one up
    assert team.name.encode() in client.get("/account/two-factor/").content
    client.post("/account/two-factor/", {"action": "app-begin"})
    device = second_factor.totp_pending(user=member)
    assert client.post("/account/two-factor/", {"action": "app-confirm", "code": code_of(device)}).status_code == 200
    assert client.get("/links/").status_code == 200  # this session gave it

    # The next sign-in asks for it, and a session that gives it sees the links.
    again, answer = password_step(member.username)
    assert answer["Location"] == "/sign-in/second-factor/"
    again.post("/sign-in/second-factor/", {"code": code_of(second_factor.totp_of(member), steps_ahead=1)})
    assert again.get("/links/").status_code == 200

    # The admin, who has no factor, is sent too; a single sign-on session is not.
    assert admin_client.get("/links/")["Location"] == "/account/two-factor/"
    session = admin_client.session
    session[second_factor.SIGNED_IN_WITH] = second_factor.SSO
    session.save()
    assert admin_client.get("/links/").status_code == 200


def test_a_session_of_before_the_requirement_gives_the_factor_it_has(with_app):
    team = team_create(actor=with_app, name=fresh("Secure "))
    team.require_second_factor = True
    team.save()
    client = Client(REMOTE_ADDR=address())
    client.force_login(with_app)  # signed in before, with a password alone
    sent = client.get("/links/?q=x")
    assert sent.status_code == 302 and sent["Location"] == "/sign-in/second-factor/?next=/links/%3Fq%3Dx"
    answer = client.post(sent["Location"], {"code": with_app.codes[0]})
    assert answer.status_code == 302 and answer["Location"] == "/links/?q=x"
    assert client.get("/links/").status_code == 200


def test_a_superuser_removes_the_factors_of_a_person_who_lost_them(with_app, make_user):
    root = make_user(is_superuser=True, is_staff=True)
    client = Client(REMOTE_ADDR=address())
    client.force_login(root)
    assert b"Remove second factors" in client.get("/users/").content
    assert client.post(f"/users/{with_app.pk}/second-factor-remove").status_code == 302
    assert not second_factor.has_second_factor(with_app) and not second_factor.recovery_codes_left(with_app)
    _, answer = password_step(with_app.username)
    assert answer["Location"] == "/links/"
    # Not anyone's to do.
    other = Client(REMOTE_ADDR=address())
    other.force_login(make_user())
    assert other.post(f"/users/{root.pk}/second-factor-remove").status_code == 403


def test_passkey_doors_answer_bad_input_with_json(make_user):
    client = Client(REMOTE_ADDR=address())
    options = client.post("/sign-in/passkey/options")
    assert options.status_code == 200 and options.json()["userVerification"] == "required"
    for body in (b"not json", b"[]", b'{"credential": 1}', b'{"credential": {}, "next": {"a": 1}}'):
        answer = client.post("/sign-in/passkey/", body, content_type="application/json")
        assert answer.status_code == 400 and "error" in answer.json(), body
    made_up = {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {}}
    answer = client.post("/sign-in/passkey/", {"credential": made_up}, content_type="application/json")
    assert answer.status_code == 400 and "error" in answer.json() and not signed_in(client)
    # Without a challenge asked for just before, nothing is checked at all.
    answer = Client(REMOTE_ADDR=address()).post(
        "/sign-in/passkey/", {"credential": made_up}, content_type="application/json"
    )
    assert answer.status_code == 400 and "too long" in answer.json()["error"]


def test_passkey_ceremonies_are_throttled_per_address(settings):
    settings.PASSKEY_THROTTLE_RATE = "3/min"
    client = Client(REMOTE_ADDR=address())
    answers = [client.post("/sign-in/passkey/options").status_code for _ in range(5)]
    assert answers[:3] == [200, 200, 200] and answers[3:] == [429, 429]


def test_changing_second_factors_takes_one_given_lately(with_app, monkeypatch):
    client, _ = password_step(with_app.username)
    assert client.post("/sign-in/second-factor/", {"code": with_app.codes[0]}).status_code == 302
    later = time.time() + second_factor.RECENT_SECONDS + 1
    monkeypatch.setattr(time, "time", lambda: later)
    asked = "/sign-in/second-factor/?next=/account/two-factor/"
    for action in ("app-remove", "codes", "app-begin"):
        sent = client.post("/account/two-factor/", {"action": action})
        assert sent.status_code == 302 and sent["Location"] == asked, action
    options = client.post("/account/passkeys/options")
    assert options.status_code == 403 and options.json()["next"] == asked
    assert second_factor.totp_of(with_app) is not None and second_factor.recovery_codes_left(with_app) == 9
    # Given again, the change goes through.
    assert client.post(asked, {"code": with_app.codes[1]})["Location"] == "/account/two-factor/"
    assert client.post("/account/two-factor/", {"action": "app-remove"})["Location"] == "/account/two-factor/"
    assert second_factor.totp_of(with_app) is None
