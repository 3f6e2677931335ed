"""Sign in and out, password change, tokens, overview. Sign-in throttling:
slingshot/tests/test_signin.py."""

import pytest
from django.urls import reverse

from accounts.services import superuser_create_with_generated_password
from testing.factories import PASSWORD, fresh, make_link
from tokens.models import ApiToken
from tokens.services import token_authenticate, token_create

from .conftest import import_clicks

pytestmark = pytest.mark.django_db(transaction=True)


def test_home_sends_visitors_to_sign_in_and_back(client, user):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/sign-in/?next=/"
    page = client.get(response["Location"])
    assert b'name="csrfmiddlewaretoken"' in page.content and b'<label for="id_username">' in page.content
    response = client.post("/sign-in/?next=/", {"username": user.username, "password": PASSWORD, "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post(reverse("web:sign-out")).status_code == 302
    assert client.get("/").status_code == 302


def test_password_change(signed_in, user):
    new = "a much longer new passphrase"
    response = signed_in.post(
        reverse("web:password-change"), {"old_password": PASSWORD, "new_password1": new, "new_password2": new}
    )
    assert response.status_code == 302 and response["Location"] == reverse("web:password-change-done")
    user.refresh_from_db()
    assert user.check_password(new)


def test_a_generated_password_is_replaced_at_the_first_sign_in(client):
    """The first admin of `make run`, whose password was shown once in its
    banner: every page, the admin's too, asks for a new one first."""
    admin = superuser_create_with_generated_password(username=fresh("admin-"), password=PASSWORD)
    response = client.post("/sign-in/", {"username": admin.username, "password": PASSWORD, "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    for path in ("/", "/links/", "/admin/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == reverse("web:password-change"), path
    page = client.get(reverse("web:password-change"))
    assert page.status_code == 200 and b"Choose a password of your own" in page.content
    new = "a password of my very own"
    response = client.post(
        reverse("web:password-change"), {"old_password": PASSWORD, "new_password1": new, "new_password2": new}
    )
    assert response.status_code == 302 and response["Location"] == reverse("web:password-change-done")
    assert client.get("/").status_code == 200
    assert client.get("/admin/").status_code == 200
    # Signed in again later: nothing asked any more.
    client.post(reverse("web:sign-out"))
    client.post("/sign-in/", {"username": admin.username, "password": new, "next": "/"})
    assert client.get("/links/").status_code == 200


def test_a_password_chosen_beforehand_is_not_asked_for_again(client, user):
    client.post("/sign-in/", {"username": user.username, "password": PASSWORD, "next": "/"})
    assert client.get("/links/").status_code == 200


def test_token_shown_once_then_revoked(signed_in, user, make_user):
    created = signed_in.post(reverse("web:tokens"), {"name": "ci", "scope": "write"})
    assert created.status_code == 302 and created["Location"] == reverse("web:tokens")  # post/redirect/get
    page = signed_in.get(reverse("web:tokens"))
    raw = page.context["created"]["raw"]
    assert raw.encode() in page.content and token_authenticate(raw).user == user
    reloaded = signed_in.get(reverse("web:tokens"))  # shown once; a reload creates nothing
    assert raw.encode() not in reloaded.content and ApiToken.objects.filter(user=user).count() == 1
    token = ApiToken.objects.get(user=user)
    assert token.scope == "write"

    assert signed_in.post(reverse("web:token-revoke", args=[token.pk])).status_code == 302
    assert token_authenticate(raw) is None
    assert b"revoked" in signed_in.get(reverse("web:tokens")).content

    their_token, _ = token_create(user=make_user(), name="theirs")
    assert signed_in.post(reverse("web:token-revoke", args=[their_token.pk])).status_code == 404


def test_token_form_errors(signed_in):
    page = signed_in.post(reverse("web:tokens"), {"name": "", "scope": "admin"})
    assert set(page.context["form"].errors) == {"name", "scope"}


def test_overview_totals_and_top_links(signed_in, user, django_assert_max_num_queries):
    busy = make_link(owner=user, url="https://example.com/b", slug=fresh())
    make_link(owner=user, url="https://example.com/q", slug=fresh())
    import_clicks(busy, 4)
    # session, user, the links' ids, the series, the totals, the top links, the live version, the teams
    with django_assert_max_num_queries(8):
        page = signed_in.get("/")
    totals = page.context["totals"]
    assert (totals.links, totals.clicks_today, totals.clicks_7d, totals.clicks_30d) == (2, 4, 4, 4)
    assert [(link.slug, clicks) for link, clicks in totals.top_links] == [(busy.slug, 4)]
    chart = page.context["chart"]["data"]
    assert len(chart["clicks"]) == 30 and chart["clicks"][-1] == 4 and sum(chart["clicks"]) == 4
    assert "lag" not in page.context  # staff only
    assert b'href="/api/v1/docs/"' in page.content  # the API's docs, from every page's navigation


def test_overview_for_staff_shows_importer_lag_and_edge_health(client, make_user, edge, settings):
    client.force_login(make_user(is_staff=True))
    settings.EDGE_HEALTH_URL = edge.url + "/healthz"
    page = client.get("/")
    assert page.context["edge"].ok is True and page.context["lag"].backlog >= 0
    assert b"healthy" in page.content and b"Click importer" in page.content

    settings.EDGE_HEALTH_URL = "http://127.0.0.1:9/healthz"
    page = client.get("/")
    assert page.context["edge"].ok is False and b"unhealthy" in page.content
