"""Sign-in throttling (slingshot/signin.py): every way to sign in, locked per
user name and address, and per address alone, never anywhere else."""

import uuid

import pytest

from slingshot.redis import get_quick_redis
from testing.factories import PASSWORD

LOCKED = b"Too many failed sign-ins from your address"
ATTACKER, ELSEWHERE = "198.51.100.66", "203.0.113.9"

pytestmark = pytest.mark.django_db

# Each way to sign in: its URL, what it posts besides the credentials, and
# where a successful sign-in goes.
PAGES = {
    "dashboard": ("/sign-in/", {"next": "/"}, "/"),
    "admin": ("/admin/login/", {"next": "/admin/"}, "/admin/"),
}


@pytest.fixture
def staff(make_user):
    return make_user(is_staff=True)


def sign_in(client, page: str, username: str, password: str, address: str, **headers):
    url, extra, _ = PAGES[page]
    client.cookies.clear()  # every attempt a new visitor, as a guesser's script would be
    return client.post(url, {"username": username, "password": password, **extra}, REMOTE_ADDR=address, **headers)


def signed_in(response, page: str) -> bool:
    return response.status_code == 302 and response["Location"] == PAGES[page][2]


@pytest.mark.parametrize("page", PAGES)
def test_wrong_passwords_lock_that_address_out_and_no_other(client, staff, settings, page):
    for attempt in range(settings.SIGN_IN_FAILURE_LIMIT - 1):
        response = sign_in(client, page, staff.username, "wrong", ATTACKER)
        assert response.status_code == 200 and LOCKED not in response.content, attempt
    # The failure that reaches the limit is answered with the lockout already...
    locked = sign_in(client, page, staff.username, "wrong", ATTACKER)
    assert locked.status_code == 429 and LOCKED in locked.content
    assert int(locked["Retry-After"]) == settings.SIGN_IN_COOLOFF_MINUTES * 60
    assert b'name="username"' in locked.content  # the sign-in page it came from, with the message on it
    # ...and the right password is refused from that address,
    refused = sign_in(client, page, staff.username, PASSWORD, ATTACKER)
    assert refused.status_code == 429 and LOCKED in refused.content and not signed_in(refused, page)
    assert "_auth_user_id" not in client.session
    # while from any other address it signs in.
    assert signed_in(sign_in(client, page, staff.username, PASSWORD, ELSEWHERE), page)


def test_both_pages_count_the_same_failures(client, staff, settings):
    for attempt in range(settings.SIGN_IN_FAILURE_LIMIT):
        sign_in(client, "admin" if attempt % 2 else "dashboard", staff.username, "wrong", ATTACKER)
    for page in PAGES:
        assert sign_in(client, page, staff.username, PASSWORD, ATTACKER).status_code == 429, page


def test_failures_from_one_address_never_block_the_user_from_another(client, staff, settings):
    for _ in range(settings.SIGN_IN_FAILURE_LIMIT * 3):  # keeps failing well past the lockout
        sign_in(client, "dashboard", staff.username, "wrong", ATTACKER)
    # From elsewhere the same user's own typos are counted on their own.
    typo = sign_in(client, "dashboard", staff.username, "wrong", ELSEWHERE)
    assert typo.status_code == 200 and b"Please enter a correct username and password" in typo.content
    assert signed_in(sign_in(client, "dashboard", staff.username, PASSWORD, ELSEWHERE), "dashboard")


def test_an_address_guessing_at_many_accounts_is_locked_out(client, staff, settings):
    settings.SIGN_IN_ADDRESS_FAILURE_LIMIT = 4
    for n in range(4):  # one guess each: no user name reaches its own limit
        sign_in(client, "dashboard", f"nobody-{n}-{uuid.uuid4().hex[:6]}", "wrong", ATTACKER)
    assert sign_in(client, "admin", staff.username, PASSWORD, ATTACKER).status_code == 429
    assert signed_in(sign_in(client, "admin", staff.username, PASSWORD, ELSEWHERE), "admin")


def test_x_forwarded_for_is_ignored_without_a_trusted_proxy(client, staff, settings):
    assert settings.TRUSTED_PROXY_COUNT == 0
    for n in range(settings.SIGN_IN_FAILURE_LIMIT):  # a new forged address every time
        sign_in(client, "dashboard", staff.username, "wrong", ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    refused = sign_in(client, "dashboard", staff.username, PASSWORD, ATTACKER, HTTP_X_FORWARDED_FOR=ELSEWHERE)
    assert refused.status_code == 429


def test_behind_one_trusted_proxy_the_address_it_appended_counts(client, staff, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}  # as TRUSTED_PROXY_COUNT=1 sets it
    proxy = "10.0.0.2"
    for _ in range(settings.SIGN_IN_FAILURE_LIMIT):
        sign_in(client, "admin", staff.username, "wrong", proxy, HTTP_X_FORWARDED_FOR=ATTACKER)
    assert sign_in(client, "admin", staff.username, PASSWORD, proxy, HTTP_X_FORWARDED_FOR=ATTACKER).status_code == 429
    # What the client wrote in front of its own address proves nothing...
    forged = sign_in(client, "admin", staff.username, PASSWORD, proxy, HTTP_X_FORWARDED_FOR=f"{ELSEWHERE}, {ATTACKER}")
    assert forged.status_code == 429
    # ...and another client behind the same proxy is not locked out.
    assert signed_in(sign_in(client, "admin", staff.username, PASSWORD, proxy, HTTP_X_FORWARDED_FOR=ELSEWHERE), "admin")


def test_throttling_goes_on_while_redis_is_unreachable(client, staff, settings):
    settings.REDIS_PORT = 9  # nothing listens there
    get_quick_redis.cache_clear()
    try:
        for _ in range(settings.SIGN_IN_FAILURE_LIMIT):
            sign_in(client, "dashboard", staff.username, "wrong", ATTACKER)
        assert sign_in(client, "dashboard", staff.username, PASSWORD, ATTACKER).status_code == 429
        assert signed_in(sign_in(client, "dashboard", staff.username, PASSWORD, ELSEWHERE), "dashboard")
    finally:
        get_quick_redis.cache_clear()


def test_a_malformed_forwarded_address_is_no_error(client, staff, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 2}  # more proxies than there are
    response = sign_in(client, "dashboard", staff.username, "wrong", ATTACKER, HTTP_X_FORWARDED_FOR="junk, 10.0.0.2")
    assert response.status_code == 200 and b"Please enter a correct username and password" in response.content


def test_the_lockout_says_what_it_locks_and_warns_of_the_failures_left(client, staff, settings):
    settings.SIGN_IN_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT = 5
    seen = []
    for _ in range(4):
        response = sign_in(client, "dashboard", staff.username, "wrong", ATTACKER)
        assert response.status_code == 200
        seen.append(response.context["form"].non_field_errors())
    assert [len(errors) for errors in seen] == [1, 2, 2, 2]  # the wrong password, then from 3 left the warning
    assert "3 more failed sign-ins with this user name from your address" in seen[1][1]
    assert "1 more failed sign-in with this user name from your address, and it must wait 15 minutes" in seen[3][1]
    locked = sign_in(client, "dashboard", staff.username, "wrong", ATTACKER)
    assert locked.status_code == 429
    assert b"Too many failed sign-ins from your address with this user name: try again in 15 minutes." in locked.content
    assert b"from any other, it can" in locked.content


def test_an_address_locked_whatever_the_user_name_is_told_so(client, staff, settings):
    settings.SIGN_IN_ADDRESS_FAILURE_LIMIT = 4
    for n in range(3):
        response = sign_in(client, "dashboard", f"nobody-{n}-{uuid.uuid4().hex[:6]}", "wrong", ATTACKER)
    warning = response.context["form"].non_field_errors()[1]
    assert warning == "1 more failed sign-in from your address, whatever the user name, and it must wait 15 minutes."
    locked = sign_in(client, "dashboard", f"nobody-{uuid.uuid4().hex[:6]}", "wrong", ATTACKER)
    assert locked.status_code == 429
    assert (
        b"Too many failed sign-ins from your address, whatever the user name: try again in 15 minutes."
        in locked.content
    )
