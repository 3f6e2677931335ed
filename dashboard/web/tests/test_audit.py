"""The audit log's page: each entry's changes as people read them, a short
one on its line, more folded under the names of the fields they changed
(its layout at 1280 and 390 px: test_browser_tables.py)."""

import re

import pytest
from django.urls import reverse

from links.services import link_update
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db


def changes_cells(page) -> list[str]:
    """The Changes cell of each entry, newest first, its tags and spaces made plain."""
    cells = re.findall(r'<td class="changes">(.*?)</td>', page.content.decode(), flags=re.S)
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip() for cell in cells]


def test_a_short_change_is_on_its_line_and_a_new_links_fields_are_folded_with_their_values(signed_in, user):
    link = make_link(owner=user, url="https://example.com/audit", slug=fresh("au"), tags=["spring", "sale"])
    link_update(link=link, actor=user, is_active=False)
    link_update(link=link, actor=user, title="A title " * 12)
    page = signed_in.get(reverse("web:team-audit", args=[user.personal_team.pk]))
    assert page.status_code == 200
    retitled, disabled, created = changes_cells(page)
    # A long value folds even alone; a short one reads as it is, in words.
    assert retitled.startswith("1 field: title title : – → A title A title") and "<details>" in page.content.decode()
    assert disabled == "is_active : yes → no"
    # A new link's fields with their values alone, none left empty, its tags as a list.
    summary = re.match(r"(\d+) fields: url, slug, tags,", created)
    assert summary and int(summary[1]) == created.count(" : "), created
    assert "url : https://example.com/audit" in created and "tags : spring, sale" in created
    assert "description" not in created and "→" not in created
