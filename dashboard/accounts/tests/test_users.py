"""People managed from the dashboard: invitations, deactivation, password
links, and each person's sessions and tokens with their last use."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import SessionUse
from teams.models import Membership
from testing.factories import PASSWORD, make_user
from tokens.services import token_create

pytestmark = pytest.mark.django_db


def signed_in(user, agent="Firefox/120.0") -> Client:
    client = Client(HTTP_USER_AGENT=agent)
    response = client.post(reverse("web:sign-in"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302
    return client


def set_password(link: str, password: str) -> Client:
    visitor = Client()
    form = visitor.get(link, follow=True)
    assert form.status_code == 200 and form.context["validlink"]
    done = visitor.post(form.redirect_chain[-1][0], {"new_password1": password, "new_password2": password})
    assert done.status_code == 302 and done["Location"] == reverse("web:sign-in")
    return visitor


def test_a_superuser_invites_someone_who_chooses_a_password_once():
    boss = signed_in(make_user(is_superuser=True))
    page = boss.post(reverse("web:users"), {"username": "newcomer", "email": ""})
    assert page.status_code == 200
    link = page.context["link"]["url"]
    newcomer = get_user_model().objects.get(username="newcomer")
    assert not newcomer.has_usable_password()
    assert Membership.objects.get(user=newcomer).team.personal_for_id == newcomer.pk  # a personal team
    set_password(link, "a new and long passphrase")
    assert (
        Client()
        .post(reverse("web:sign-in"), {"username": "newcomer", "password": "a new and long passphrase"})
        .status_code
        == 302
    )
    again = Client().get(link, follow=True)
    assert not again.context["validlink"]  # used once


def test_the_people_page_pages_and_searches_by_name_or_address(django_assert_max_num_queries):
    from web.account_views import USERS_PER_PAGE

    boss = signed_in(make_user(is_superuser=True))
    get_user_model().objects.bulk_create(
        get_user_model()(username=f"crowd-{n:03}", email=f"crowd{n}@example.com") for n in range(USERS_PER_PAGE + 5)
    )
    with django_assert_max_num_queries(10):  # one count and one page, whatever the number of people
        first = boss.get(reverse("web:users"))
    assert len(first.context["page"]) == USERS_PER_PAGE
    second = boss.get(reverse("web:users"), {"page": "2"})
    people = [p.username for p in first.context["page"]] + [p.username for p in second.context["page"]]
    assert len(set(people)) == get_user_model().objects.count() == USERS_PER_PAGE + 6  # everyone once
    found = boss.get(reverse("web:users"), {"q": "CROWD7@EXAMPLE"})
    assert [p.username for p in found.context["page"]] == ["crowd-007"]
    assert boss.get(reverse("web:users"), {"q": "a\x00b"}).status_code == 200  # a bad search is left out


def test_only_superusers_manage_people():
    staff = signed_in(make_user(is_staff=True))
    someone = make_user()
    assert staff.get(reverse("web:users")).status_code == 403
    assert staff.post(reverse("web:user-active", args=[someone.pk]), {"active": "false"}).status_code == 403
    assert staff.post(reverse("web:user-password-link", args=[someone.pk])).status_code == 403
    assert get_user_model().objects.get(pk=someone.pk).is_active


def test_deactivating_ends_sessions_and_tokens_at_once():
    boss = signed_in(make_user(is_superuser=True))
    person = make_user()
    browser = signed_in(person)
    assert browser.get(reverse("web:link-list")).status_code == 200
    [key] = SessionUse.objects.filter(user=person).values_list("session_key", flat=True)
    _, raw = token_create(user=person, name="ci", scope="read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/links").status_code == 200

    assert boss.post(reverse("web:user-active", args=[person.pk]), {"active": "false"}).status_code == 302
    response = browser.get(reverse("web:link-list"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("web:sign-in"))
    assert not Session.objects.filter(session_key=key).exists()  # ended, not only refused
    assert api.get("/api/v1/links").status_code == 401


def test_a_password_link_resets_a_password():
    boss = signed_in(make_user(is_superuser=True))
    person = make_user()
    page = boss.post(reverse("web:user-password-link", args=[person.pk]))
    assert re.search(r"/password/set/[^/]+/[^/]+/$", page.context["link"]["url"])
    set_password(page.context["link"]["url"], "another long passphrase")
    person.refresh_from_db()
    assert person.check_password("another long passphrase")


def test_people_see_their_sessions_and_tokens_with_their_last_use():
    person = make_user()
    signed_in(person, agent="Chromium/131 on a phone")
    browser = signed_in(person, agent="Firefox/120.0")
    token, raw = token_create(user=person, name="reports", scope="read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    api.get("/api/v1/links")
    page = browser.get(reverse("web:account"))
    assert [session.user_agent for session in page.context["sessions"]] == ["Firefox/120.0", "Chromium/131 on a phone"]
    assert b"(this one)" in page.content
    [listed] = page.context["tokens"]
    assert listed.name == "reports" and listed.last_used_at is not None


def test_a_sign_out_and_prune_sessions_leave_no_record_of_ended_sessions():
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    person = make_user()
    leaving, expiring, staying = signed_in(person), signed_in(person), signed_in(person)
    assert SessionUse.objects.filter(user=person).count() == 3
    keys = {
        name: client.session.session_key
        for name, client in [("leaving", leaving), ("expiring", expiring), ("staying", staying)]
    }
    leaving.post(reverse("web:sign-out"))
    assert not SessionUse.objects.filter(session_key=keys["leaving"]).exists()
    Session.objects.filter(session_key=keys["expiring"]).update(expire_date=timezone.now() - timedelta(seconds=1))
    call_command("prune_sessions", stdout=io.StringIO())
    assert set(SessionUse.objects.filter(user=person).values_list("session_key", flat=True)) == {keys["staying"]}
    assert not Session.objects.filter(session_key=keys["expiring"]).exists()
    assert staying.get(reverse("web:account")).status_code == 200  # the live one is untouched
