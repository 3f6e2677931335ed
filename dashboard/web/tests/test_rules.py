"""Redirect rules and an A/B split in the link form: typed as JSON, kept
normalised, a bad one shown as the form's error on its field."""

import json

import pytest
from django.urls import reverse

from links.models import Link
from testing.factories import fresh, make_link
from web.link_forms import LinkForm

from .conftest import import_clicks

pytestmark = pytest.mark.django_db(transaction=True)

RULES = [{"url": "https://ios.example/", "conditions": [{"type": "device", "value": "iOS"}]}]
SPLIT = [{"url": "https://a.example/", "weight": 1}, {"url": "https://b.example/", "weight": 3}]


def form_data(slug: str, **fields) -> dict:
    return {"url": "https://example.com/", "slug": slug, "redirect_status": "302", "is_active": "on", **fields}


def test_create_and_edit_with_rules_and_a_split(signed_in):
    slug = fresh()
    response = signed_in.post(
        reverse("web:link-create"), form_data(slug, rules=json.dumps(RULES), split=json.dumps(SPLIT))
    )
    assert response.status_code == 302, response.context and response.context["form"].errors
    link = Link.objects.get(slug=slug)
    assert link.rules == [{"url": "https://ios.example/", "conditions": [{"type": "device", "value": "ios"}]}]
    assert link.split == SPLIT

    page = signed_in.get(reverse("web:link-edit", args=[slug])).content.decode()
    assert "https://ios.example/" in page and "rules-editor" in page

    response = signed_in.post(reverse("web:link-edit", args=[slug]), form_data(slug, rules="", split=""))
    assert response.status_code == 302, response.context and response.context["form"].errors
    link.refresh_from_db()
    assert link.rules == [] and link.split == []


@pytest.mark.parametrize(
    "fields, field, reason",
    [
        ({"rules": "[{"}, "rules", "Enter a valid JSON."),
        ({"rules": json.dumps([{"url": "https://e.example/", "conditions": [{"type": "os"}]}])}, "rules", "rules[0]"),
        ({"split": json.dumps(SPLIT[:1])}, "split", "split: must hold 2 to 10"),
    ],
)
def test_bad_rules_are_a_form_error(signed_in, fields, field, reason):
    slug = fresh()
    response = signed_in.post(reverse("web:link-create"), form_data(slug, **fields))
    assert response.status_code == 200
    assert any(reason in error for error in response.context["form"].errors[field]), response.context["form"].errors
    assert not Link.objects.filter(slug=slug).exists()


def test_link_page_shows_the_rules(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), rules=RULES, split=SPLIT)
    page = signed_in.get(reverse("web:link-detail", args=[link.slug])).content.decode()
    assert "https://ios.example/" in page and "device is ios" in page and "No rule matched" not in page
    assert "https://b.example/" in page and "75%" in page
    plain = make_link(owner=user, url="https://example.com/", slug=fresh())
    assert 'id="link-rules"' not in signed_in.get(reverse("web:link-detail", args=[plain.slug])).content.decode()


def test_link_page_counts_clicks_per_rule(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), rules=RULES)
    import_clicks(link, 3, rule="1")
    import_clicks(link, 2)
    response = signed_in.get(reverse("web:link-detail", args=[link.slug]))
    rows = [(served.label, served.url, clicks) for served, clicks in response.context["rule_clicks"]]
    assert rows == [("1", "https://ios.example/", 3), ("", "https://example.com/", 2)]
    assert "Rule 1: device is ios" in response.content.decode()


def test_an_edit_that_leaves_the_rules_alone_does_not_change_them(user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh())
    form = LinkForm(form_data(link.slug, title="New title", rules="", split=""), initial=LinkForm.initial_for(link))
    assert form.is_valid(), form.errors
    assert set(form.changes()) == {"title"}
