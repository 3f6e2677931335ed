"""The link form's options: schedule, limit, password, crawlable, the UTM
builder; the link page and the list show the state."""

from datetime import timedelta

import pytest
from django.contrib.auth.hashers import check_password
from django.urls import reverse
from django.utils import timezone

from links.models import Link
from slingshot.contract import visits_key
from slingshot.redis import get_redis
from testing.factories import fresh, make_link
from web.link_forms import with_utm

pytestmark = pytest.mark.django_db(transaction=True)


def test_utm_values_are_set_in_the_target():
    assert with_utm("https://e.com/p?a=1&utm_source=old#f", {"utm_source": "news", "utm_medium": ""}) == (
        "https://e.com/p?a=1&utm_source=news#f"
    )
    assert with_utm("https://e.com/", {}) == "https://e.com/"


def test_create_with_every_option(signed_in):
    slug = fresh()
    since = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    response = signed_in.post(
        reverse("web:link-create"),
        {
            "url": "https://example.com/launch",
            "slug": slug,
            "description": "For the launch",
            "redirect_status": "302",
            "valid_since": since.strftime("%Y-%m-%dT%H:%M"),
            "max_visits": "50",
            "crawlable": "on",
            "password": "pw",
            "is_active": "on",
            "utm_source": "newsletter",
            "utm_campaign": "launch",
        },
    )
    assert response.status_code == 302, response.context and response.context["form"].errors
    link = Link.objects.get(slug=slug)
    assert link.url == "https://example.com/launch?utm_source=newsletter&utm_campaign=launch"
    assert (link.description, link.max_visits, link.crawlable, link.valid_since) == ("For the launch", 50, True, since)
    assert check_password("pw", link.password)
    page = signed_in.get(reverse("web:link-detail", args=[slug]))
    state = page.content.decode()
    assert "Scheduled" in state and "0 of 50 visits" in state and "password protected" in state
    assert "For the launch" in state


def test_editing_keeps_the_password_unless_changed_or_removed(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), password="old")
    form = {"url": link.url, "slug": link.slug, "redirect_status": "302", "is_active": "on"}
    edit = reverse("web:link-edit", args=[link.slug])
    assert signed_in.post(edit, form).status_code == 302
    link.refresh_from_db()
    assert check_password("old", link.password)
    signed_in.post(edit, {**form, "password": "new"})
    link.refresh_from_db()
    assert check_password("new", link.password)
    signed_in.post(edit, {**form, "remove_password": "on"})
    link.refresh_from_db()
    assert link.password == ""


def test_the_list_shows_each_links_state(signed_in, user):
    active = make_link(owner=user, url="https://example.com/a", slug=fresh())
    limited = make_link(owner=user, url="https://example.com/l", slug=fresh(), max_visits=1)
    expired = make_link(
        owner=user, url="https://example.com/e", slug=fresh(), expires_at=timezone.now() - timedelta(hours=1)
    )
    get_redis().set(visits_key(limited.pk), 1)
    page = signed_in.get(reverse("web:link-list"))
    states = {link.slug: link.state for link in page.context["page"]}
    assert states == {active.slug: "active", limited.slug: "limit reached", expired.slug: "expired"}
    assert '<span class="state state-limit-reached">Limit reached</span>' in page.content.decode()
