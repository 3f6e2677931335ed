"""Slingshot's own links CSV: an export imports into another team as it was."""

from datetime import datetime, timedelta, timezone

import pytest

from clicks.selectors import with_click_totals
from importers.models import ImportedLink
from links.fields import OPTION_NAMES
from links.imports import export_lines
from links.models import Link
from testing.factories import fresh, make_link

from .helpers import import_links as run

pytestmark = pytest.mark.django_db

NOW = datetime.now(timezone.utc).replace(microsecond=0)
RULES = [
    {"url": "https://apps.apple.com/app/id1", "conditions": [{"type": "device", "value": "ios"}]},
    {"url": "https://example.de/", "conditions": [{"type": "language", "value": "de"}]},
]
SPLIT = [{"url": "https://a.example/", "weight": 3}, {"url": "https://b.example/", "weight": 1}]


def every_option(slug: str) -> dict:
    return {
        "url": f"https://example.com/{slug}?q=1",
        "slug": slug,
        "title": '=Spring, "sale"',  # a formula, a comma and quotes: neutralised and quoted by the export
        "description": "The newsletter's link.\nTwo lines.",
        "tags": ["newsletter", "sale"],
        "redirect_status": 301,
        "valid_since": NOW - timedelta(days=2),
        "expires_at": NOW + timedelta(days=30),
        "max_visits": 500,
        "forward_query": True,
        "crawlable": True,
        "is_active": False,
        "rules": RULES,
        "split": SPLIT,
    }


def export(links) -> str:
    return "".join(export_lines(with_click_totals(Link.objects.filter(pk__in=[link.pk for link in links]))))


def options_of(link: Link) -> dict:
    return {name: getattr(link, name) for name in OPTION_NAMES if name not in ("domain", "password")}


def test_an_export_imports_into_another_team_with_every_option(user, team, other_domain, tmp_path):
    made = [
        make_link(owner=user, **every_option(fresh("rt-"))),
        make_link(owner=user, url="https://example.com/plain", slug=fresh("plain-")),
    ]
    Link.objects.filter(pk=made[0].pk).update(created_at=NOW - timedelta(days=400))
    path = tmp_path / "links.csv"
    path.write_bytes(export(made).encode())

    out = run("csv", str(path), user=user.username, team=str(team.pk), domain=other_domain.host)

    assert "2 created" in out
    for original in made:
        original.refresh_from_db()
        copy = Link.objects.get(domain=other_domain, slug=original.slug)
        assert copy.team_id == team.pk and copy.pk != original.pk
        assert options_of(copy) == options_of(original)
        assert copy.created_at == original.created_at
    # The export of the copies is the export of the originals, but for where they are.
    copies = [Link.objects.get(domain=other_domain, slug=link.slug) for link in made]
    assert export(copies).replace(other_domain.host, "HOST") == path.read_bytes().decode().replace(
        made[0].domain.host, "HOST"
    )


def test_a_second_run_adds_nothing_and_says_so(user, team, other_domain, tmp_path):
    link = make_link(owner=user, **every_option(fresh("again-")))
    path = tmp_path / "links.csv"
    path.write_bytes(export([link]).encode())
    run("csv", str(path), user=user.username, team=str(team.pk), domain=other_domain.host)

    out = run("csv", str(path), user=user.username, team=str(team.pk), domain=other_domain.host)

    assert "0 created, 1 imported before" in out
    assert "nothing new" in out
    assert Link.objects.filter(slug=link.slug).count() == 2
    assert ImportedLink.objects.filter(link__slug=link.slug).count() == 1


def test_clashing_slugs_are_reported_and_never_overwritten(user, team, tmp_path):
    link = make_link(owner=user, url="https://example.com/mine", slug=fresh("mine-"))
    path = tmp_path / "links.csv"
    path.write_bytes(export([link]).replace("https://example.com/mine", "https://evil.example/").encode())

    out = run("csv", str(path), user=user.username, team=str(team.pk))

    assert "1 clashes" in out and f"clash: {link.domain.host}/{link.slug} is another link's" in out
    link.refresh_from_db()
    assert link.url == "https://example.com/mine" and link.team_id != team.pk
    assert Link.objects.filter(slug=link.slug).count() == 1


def test_a_dry_run_writes_nothing(user, team, other_domain, tmp_path):
    link = make_link(owner=user, **every_option(fresh("dry-")))
    path = tmp_path / "links.csv"
    path.write_bytes(export([link]).encode())

    out = run("csv", str(path), user=user.username, team=str(team.pk), domain=other_domain.host, dry_run=True)

    assert "dry run: nothing written" in out and "1 would be created" in out
    assert not Link.objects.filter(domain=other_domain).exists()
