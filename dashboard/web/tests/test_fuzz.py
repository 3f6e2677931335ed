"""Whatever a signed-in person sends the dashboard's pages, never a 5xx:
each page, by GET with any of the pages' filters and by POST with any
of their forms' fields, for a staff member and for someone with no
rights over what they ask for; ids and slugs that exist, do not, or are
past what PostgreSQL holds; and values at the edges of each kind, drawn
by hypothesis. The targeted cases (what is stored, what is shown) are in
test_input.py and each page's own tests."""

import inspect

import pytest
from django import forms
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from links.models import Domain
from testing.factories import make_link, make_user
from tokens.services import token_create
from web import forms as web_forms
from web import link_forms, report_forms, source_import_views

from .conftest import import_clicks

pytestmark = pytest.mark.django_db

# Every field of the pages' forms, and what views read themselves.
FIELDS = sorted(
    {
        name
        for module in (web_forms, link_forms, report_forms, source_import_views)
        for _, form in inspect.getmembers(module, inspect.isclass)
        if issubclass(form, forms.BaseForm)
        for name in form.base_fields
    }
    | {"page", "next", "team", "role", "expired_ok", "active", "fragment", "format", "download", "domain"}
)
PAGES = [
    "", "live", "links/", "links/new/", "links/export.csv", "links/bulk", "links/import/",
    "links/import/{pk}/", "links/import/{pk}/run", "import/", "import/{pk}/", "import/{pk}/import",
    "links/{slug}/", "links/{slug}/report", "links/{slug}/live", "links/{slug}/clicks", "links/{slug}/edit/",
    "links/{slug}/toggle", "links/{slug}/qr.png", "links/{slug}/qr.svg", "unlock/{slug}", "domains/",
    "domains/{host}/edit/", "tokens/", "time-zone/", "orphan-visits/", "accounting/", "tokens/{pk}/revoke",
    "users/", "users/{pk}/password-link", "account/", "teams/", "teams/switch", "teams/{pk}/",
    "teams/{pk}/rename", "teams/{pk}/visits", "teams/{pk}/audit/", "teams/{pk}/members/{name}/role",
]  # fmt: skip
# Pages whose POST ends the session or the person's rights: left out, so
# that every example runs signed in.
NOT_POSTED = {"users/{pk}/active", "teams/{pk}/delete/", "teams/{pk}/members/{name}/remove", "account/"}
NUMBERS = ["0", "1", "-1", "7", "1.5", "1e3", str(2**31), str(2**63 - 1), str(2**63), "99999999999999999999"]
MOMENTS = ["2030-01-01", "2030-02-30", "0001-01-01", "9999-12-31", "2030-01-01T00:00", "1969-12-31T23:59:59Z"]
NASTY = [
    "", " ", "on", "true", "fz", "nope", "go.example.com", "https://example.com/", "javascript:alert(1)",
    "Europe/Amsterdam", "Mars/Olympus", "hour", "day", "month", "year", "30", "365", "100000", "csv", "json",
    "admin", "editor", "viewer", '[{"url": "https://ex.com/", "weight": 1}]', "[", "\x00", "\u200b", "\u3164",
    "a/../b", "%", "x" * 3000,
]  # fmt: skip
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
value = st.sampled_from(NASTY + NUMBERS + MOMENTS) | text
fields = st.dictionaries(st.sampled_from(FIELDS) | text, value | st.lists(value, max_size=3), max_size=6)


@pytest.fixture
def world(client):
    """A staff member signed in, with a link that has a click, a domain, a
    token and a team, and someone else's link and team."""
    person = make_user(is_staff=True)
    other = make_user()
    link = make_link(owner=person, url="https://example.com/", slug="fz")
    make_link(owner=other, url="https://example.com/", slug="theirs")
    import_clicks(link)
    Domain.objects.create(host="go.example.com")
    token, _ = token_create(user=person, name="fuzz", scope="write")
    client.force_login(person)
    return {
        "person": person,
        "pk": [str(token.pk), str(person.pk), str(other.pk), "0", str(2**31), str(2**63)],
        "slug": ["fz", "theirs", "nope"],
        "host": ["go.example.com", "nowhere.example", "xn--"],
        "name": [person.username, other.username, "nobody"],
    }


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    page=st.sampled_from(PAGES),
    post=st.booleans(),
    place=st.fixed_dictionaries({name: st.integers(0, 5) for name in ("pk", "slug", "host", "name")}),
    query=fields,
    form=fields,
)
def test_no_page_is_a_5xx(client, world, page, post, place, query, form):
    get_user_model().objects.filter(pk=world["person"].pk).update(is_active=True)
    path = "/" + page.format(**{name: world[name][at % len(world[name])] for name, at in place.items()})
    if post and page not in NOT_POSTED:
        response = client.post(path, form, QUERY_STRING="")
    else:
        response = client.get(path, query)
    # unlock/ answers every path 503 on purpose (link_views.link_unlock_moved).
    assert response.status_code < 500 or page == "unlock/{slug}" and response.status_code == 503, (
        path,
        query,
        form if post else None,
    )
