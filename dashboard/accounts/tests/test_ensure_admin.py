"""manage.py ensure_admin, which `make run` runs before the stack starts."""

import io
import re

import pytest
from django.contrib.auth import authenticate as django_authenticate
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from accounts.selectors import password_change_due
from devstack.stack import ONE_TIME_PASSWORD

pytestmark = pytest.mark.django_db

User = get_user_model()


def authenticate(**credentials):
    """Signs in as the sign-in page does: through every backend, axes' included."""
    return django_authenticate(RequestFactory().post("/sign-in/"), **credentials)


def ensure_admin(*args: str) -> str:
    out = io.StringIO()
    call_command("ensure_admin", *args, stdout=out)
    return out.getvalue()


def one_time_password(output: str) -> str:
    return re.search(r"one-time password: (\S+)", output).group(1)


def test_without_settings_it_creates_admin_with_a_one_time_password_shown_once(monkeypatch):
    monkeypatch.delenv("SLINGSHOT_ADMIN_USER", raising=False)
    monkeypatch.delenv("SLINGSHOT_ADMIN_PASSWORD", raising=False)
    first = ensure_admin()
    admin = authenticate(username="admin", password=one_time_password(first))
    assert admin
    assert "changepassword admin" in first
    # `make run` finds the line, to show the password in its banner.
    assert ONE_TIME_PASSWORD.search(first)["password"] == one_time_password(first)
    # Until it is changed, whichever way, the pages ask for a new one.
    assert password_change_due(admin)
    admin.set_password("a password of my own choosing")
    admin.save(update_fields=["password"])
    assert not password_change_due(admin)

    again = ensure_admin()
    assert "one-time password" not in again
    assert "exists already" in again and "changepassword admin" in again


def test_a_user_name_alone_gets_that_user_a_one_time_password(monkeypatch):
    User.objects.create_superuser(username="someone-else", password="x")
    monkeypatch.setenv("SLINGSHOT_ADMIN_USER", "ops")
    monkeypatch.delenv("SLINGSHOT_ADMIN_PASSWORD", raising=False)
    output = ensure_admin()
    user = authenticate(username="ops", password=one_time_password(output))
    assert user is not None and user.is_superuser
    assert "changepassword ops" in output


def test_the_password_comes_from_the_environment_and_is_not_printed(monkeypatch):
    monkeypatch.setenv("SLINGSHOT_ADMIN_USER", "ops")
    monkeypatch.setenv("SLINGSHOT_ADMIN_PASSWORD", "correct-horse-battery-staple")
    output = ensure_admin()
    admin = authenticate(username="ops", password="correct-horse-battery-staple")
    assert admin and not password_change_due(admin)
    assert "correct-horse-battery-staple" not in output and "one-time" not in output
    assert not ONE_TIME_PASSWORD.search(output)


def test_a_weak_password_is_refused(monkeypatch):
    monkeypatch.setenv("SLINGSHOT_ADMIN_USER", "ops")
    monkeypatch.setenv("SLINGSHOT_ADMIN_PASSWORD", "123")
    with pytest.raises(CommandError, match="SLINGSHOT_ADMIN_PASSWORD is refused"):
        ensure_admin()
    assert not User.objects.filter(username="ops").exists()


def test_there_is_no_password_argument_for_ps_to_show():
    with pytest.raises(CommandError, match="unrecognized arguments"):
        call_command("ensure_admin", "--username", "ops", "--password", "secret")


def test_a_name_or_password_that_is_not_utf8_is_refused(monkeypatch):
    """The environment's bytes that are not UTF-8 come as lone surrogates."""
    monkeypatch.setenv("SLINGSHOT_ADMIN_USER", "ops\udcff")
    monkeypatch.delenv("SLINGSHOT_ADMIN_PASSWORD", raising=False)
    with pytest.raises(CommandError, match="is not UTF-8 text"):
        ensure_admin()
    monkeypatch.setenv("SLINGSHOT_ADMIN_USER", "ops")
    monkeypatch.setenv("SLINGSHOT_ADMIN_PASSWORD", "correct-horse-\udcff-staple")
    with pytest.raises(CommandError, match="SLINGSHOT_ADMIN_PASSWORD is not UTF-8 text"):
        ensure_admin()
    assert not User.objects.exists()
