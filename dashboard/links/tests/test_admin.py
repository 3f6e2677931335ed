"""The Django admin shows each person the links the API and the pages show
them: model permissions given to staff apply to their own links only."""

import pytest
from django.contrib.auth.models import Permission

from links.models import Link
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db


def test_staff_with_link_permissions_reach_only_their_own_links(client):
    staff = make_user(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_link", "change_link", "delete_link"]))
    mine = make_link(owner=staff, url="https://example.com/mine")
    theirs = make_link(owner=make_user(), url="https://example.com/theirs")
    client.force_login(staff)

    listing = client.get("/admin/links/link/")
    assert listing.status_code == 200
    assert mine.slug in listing.content.decode() and theirs.slug not in listing.content.decode()
    assert client.get(f"/admin/links/link/{theirs.pk}/change/").status_code in (302, 404)
    client.post(
        f"/admin/links/link/{theirs.pk}/change/",
        {"url": "https://evil.example/", "slug": theirs.slug, "redirect_status": 302, "is_active": "on"},
    )
    client.post(f"/admin/links/link/{theirs.pk}/delete/", {"post": "yes"})
    assert Link.objects.get(pk=theirs.pk).url == "https://example.com/theirs"
    assert client.get(f"/admin/links/link/{mine.pk}/change/").status_code == 200


def test_superusers_reach_every_link_in_the_admin(client):
    theirs = make_link(owner=make_user(), url="https://example.com/theirs")
    client.force_login(make_user(is_staff=True, is_superuser=True))
    assert theirs.slug in client.get("/admin/links/link/").content.decode()
    assert client.get(f"/admin/links/link/{theirs.pk}/change/").status_code == 200
