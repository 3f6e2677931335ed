"""Who may call yourls-api.php (yourls_api/auth.py): an API token or its
signature, a time-limited signature, a password only when allowed; refusals
as YOURLS answers them; every way throttled."""

import json
import time
import uuid
import xml.etree.ElementTree as ET

import pytest
from django.utils import timezone

from testing.factories import PASSWORD
from tokens.services import token_revoke
from tokens.signatures import token_signature

from .conftest import timed

pytestmark = pytest.mark.django_db

PLEASE = {"message": "Please log in", "errorCode": "403", "callback": ""}


def address() -> str:
    """An address no other test uses, so that its budget is this test's alone."""
    number = uuid.uuid4().int
    return f"2001:db8::{number % 65536:x}:{number // 65536 % 65536:x}"


def let_in(response) -> bool:
    return response.status_code == 200 and json.loads(response.content) == {"version": "1.10.4"}


def version(yourls, **credentials):
    return yourls(action="version", format="json", **credentials)


def test_without_credentials_or_with_wrong_ones_403_as_yourls_answers(yourls, user, make_token):
    _, raw = make_token(user)
    for credentials in (
        {},
        {"signature": raw + "x"},
        {"signature": "0123456789abcdef0123456789abcdef"},
        timed("0123456789abcdef0123456789abcdef"),
        {"signature": raw, "timestamp": ""},  # neither form, as in YOURLS
    ):
        response = version(yourls, **credentials)
        assert response.status_code == 403, credentials
        assert json.loads(response.content) == PLEASE, credentials
    assert yourls(action="version", format="simple").content == b"Please log in"
    xml = yourls(action="version", callback="cb").content.decode()
    assert xml.endswith(
        "<root><message>Please log in</message><errorCode>403</errorCode><callback>cb</callback></root>\n"
    )


def test_a_refusal_in_jsonp_without_a_callback_is_yourls_400(yourls):
    response = yourls(action="version", format="jsonp")
    assert (response.status_code, response.content) == (
        400,
        b'{"errorCode":"400","error":"Invalid callback parameter"}',
    )
    assert yourls(action="version", format="jsonp", callback="cb").content == (
        b'cb({"message":"Please log in","errorCode":"403","callback":"cb"})'
    )


def test_the_token_or_its_signature_as_signature(yourls, user, make_token):
    token, raw = make_token(user)
    assert let_in(version(yourls, signature=raw))
    assert let_in(version(yourls, signature=token_signature(token)))
    assert len(token_signature(token)) == 32 and raw not in token_signature(token)


@pytest.mark.parametrize(
    ("hash_name", "sent"),
    [("md5", None), ("md5", "md5"), ("sha1", "sha1"), ("sha256", None), ("sha256", "sha256"), ("sha512", "sha512")],
)
@pytest.mark.parametrize("secret_first", [False, True])
def test_time_limited_signatures_each_way_round(yourls, user, make_token, hash_name, sent, secret_first):
    token, _ = make_token(user)
    params = timed(token_signature(token), hash_name=hash_name, secret_first=secret_first)
    if sent:
        params["hash"] = sent
    assert let_in(version(yourls, **params))


def test_time_limited_signatures_expire_and_name_only_known_hashes(yourls, user, make_token, settings):
    token, raw = make_token(user)
    secret, lifetime = token_signature(token), settings.YOURLS_SIGNATURE_LIFETIME
    assert let_in(version(yourls, **timed(secret, at=time.time() - lifetime + 60)))
    assert let_in(version(yourls, **timed(secret, at=time.time() + lifetime - 60)))
    for at in (time.time() - lifetime - 5, time.time() + lifetime + 5):
        assert version(yourls, **timed(secret, at=at)).status_code == 403
    assert version(yourls, **timed(raw)).status_code == 403  # signed with the token itself: it is never sent
    assert version(yourls, **timed(secret, hash_name="sha384"), hash="crc32b").status_code == 403
    assert version(yourls, **timed(secret, hash_name="sha384")).status_code == 403  # a 96-digit hash must be named
    assert let_in(version(yourls, **timed(secret, hash_name="sha384"), hash="sha384"))


def test_revoked_expired_and_deactivated_are_refused_in_every_form(yourls, user, make_user, make_token):
    revoked, revoked_raw = make_token(user)
    token_revoke(token=revoked)
    expiring, expiring_raw = make_token(user, expires_at=timezone.now() + timezone.timedelta(seconds=1))
    gone = make_user()
    gone_token, gone_raw = make_token(gone)
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    time.sleep(1.1)
    for token, raw in ((revoked, revoked_raw), (expiring, expiring_raw), (gone_token, gone_raw)):
        secret = token_signature(token)
        for credentials in ({"signature": raw}, {"signature": secret}, timed(secret)):
            assert version(yourls, **credentials).status_code == 403, (token.name, credentials)


def test_passwords_are_off_unless_allowed(yourls, user, settings):
    response = version(yourls, username=user.username, password=PASSWORD)
    assert response.status_code == 403
    assert "off here" in json.loads(response.content)["message"]
    settings.YOURLS_PASSWORD_AUTH = True
    assert let_in(version(yourls, username=user.username, password=PASSWORD))
    wrong = version(yourls, username=user.username, password="wrong")
    assert (wrong.status_code, json.loads(wrong.content)["message"]) == (403, "Invalid username or password")


def test_wrong_passwords_are_locked_out_as_sign_ins_are(client, user, settings):
    settings.YOURLS_PASSWORD_AUTH = True
    guesser = address()

    def attempt(password: str):
        params = {"action": "version", "format": "json", "username": user.username, "password": password}
        return client.post("/yourls-api.php", params, REMOTE_ADDR=guesser)

    for _ in range(settings.SIGN_IN_FAILURE_LIMIT - 1):
        assert attempt("wrong").status_code == 403
    locked = attempt("wrong")
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) == settings.SIGN_IN_COOLOFF_MINUTES * 60
    assert json.loads(locked.content)["message"].startswith("Too many failed sign-ins from your address")
    assert attempt(PASSWORD).status_code == 429  # the right password too, from there
    right = client.post(
        "/yourls-api.php", {"action": "version", "username": user.username, "password": PASSWORD}, REMOTE_ADDR=address()
    )
    assert right.status_code == 200


def test_a_token_spends_the_budget_it_spends_on_api_v1(client, user, make_token, settings):
    settings.API_THROTTLE_RATE = "3/min"
    token, raw = make_token(user)
    caller = address()  # a signature looked for among the tokens counts against the address too

    def yourls(signature: str):
        return client.get("/yourls-api.php", {"action": "version", "signature": signature}, REMOTE_ADDR=caller)

    assert client.get("/api/v1/links", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    assert yourls(raw).status_code == 200
    assert yourls(token_signature(token)).status_code == 200
    throttled = yourls(raw)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert ET.fromstring(throttled.content).findtext("errorCode") == "429"


def test_wrong_signatures_are_throttled_per_address(client, settings):
    settings.API_THROTTLE_RATE = "3/min"
    guesser = address()
    statuses = [
        client.get("/yourls-api.php", {"action": "version", "signature": f"guess{n}"}, REMOTE_ADDR=guesser).status_code
        for n in range(5)
    ]
    assert statuses == [403, 403, 403, 429, 429]
    assert client.get("/yourls-api.php", {"action": "version"}, REMOTE_ADDR=address()).status_code == 403


def test_only_an_edge_reaches_the_internal_path(client, settings):
    response = client.get("/internal/yourls-api", {"action": "version"}, HTTP_X_SLINGSHOT_ADDRESS="198.51.100.1")
    assert response.status_code == 401
    forged = client.get(
        "/internal/yourls-api", HTTP_AUTHORIZATION="Bearer guess", HTTP_X_SLINGSHOT_ADDRESS="198.51.100.1"
    )
    assert forged.status_code == 401
    edge = {"HTTP_AUTHORIZATION": f"Bearer {settings.EDGE_DASHBOARD_SECRET}"}
    assert client.get("/internal/yourls-api", HTTP_X_SLINGSHOT_ADDRESS="not an address", **edge).status_code == 400
    passed = client.get("/internal/yourls-api", {"action": "version"}, HTTP_X_SLINGSHOT_ADDRESS="198.51.100.1", **edge)
    assert passed.status_code == 403 and b"Please log in" in passed.content


def test_a_token_signature_is_shown_once_with_its_token(signed_in, yourls):
    signed_in.post("/tokens/", {"name": "sharex", "scope": "write"})
    page = signed_in.get("/tokens/")
    signature = page.context["created"]["signature"]
    assert signature.encode() in page.content
    assert let_in(version(yourls, signature=signature))
    assert signature.encode() not in signed_in.get("/tokens/").content


def test_create_api_token_prints_the_signature_when_asked(user, yourls, capsys):
    from django.core.management import call_command

    call_command("create_api_token", user.username, "--scope", "write", "--signature")
    raw, signature = capsys.readouterr().out.split()
    assert raw.startswith("ssk_") and len(signature) == 32
    assert let_in(version(yourls, **timed(signature)))
