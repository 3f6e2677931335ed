"""The UTM templates page of the team chosen in the navigation: its editors
make, change and delete templates there, audited; a viewer reads them and
changes nothing (403); another team's template is a 404; the link form
offers the team's templates to its editors."""

import pytest
from django.test import Client
from django.urls import reverse

from links.models import UtmTemplate
from teams.models import AuditEntry, Role
from teams.services import member_add, team_create
from testing.factories import fresh, make_user

pytestmark = pytest.mark.django_db

SPRING = {"name": "Spring newsletter", "utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "spring"}


def in_team(user, team) -> Client:
    client = Client()
    client.force_login(user)
    client.post(reverse("web:team-switch"), {"team": team.pk})
    return client


@pytest.fixture
def team_and_people():
    editor, viewer = make_user(), make_user()
    team = team_create(actor=editor, name=fresh("utm-page"))
    member_add(actor=editor, team=team, username=viewer.username, role=Role.VIEWER)
    return team, editor, viewer


def test_an_editor_makes_changes_and_deletes_a_template_on_the_page(team_and_people):
    team, editor, _ = team_and_people
    client = in_team(editor, team)
    listing = reverse("web:utm-templates")
    refused = client.post(listing, {"name": "Empty"})
    assert refused.status_code == 200 and "Fill in at least one UTM parameter" in refused.content.decode()
    assert client.post(listing, SPRING).status_code == 302
    template = UtmTemplate.objects.get(team=team)
    assert (template.name, template.utm_campaign, template.utm_term) == ("Spring newsletter", "spring", "")
    taken = client.post(listing, SPRING)
    assert taken.status_code == 200 and UtmTemplate.objects.filter(team=team).count() == 1
    form = client.get(reverse("web:link-create")).content.decode()
    assert "Spring newsletter" in form
    edit = reverse("web:utm-template-edit", args=[template.pk])
    assert client.post(edit, {**SPRING, "utm_campaign": "spring-2027"}).status_code == 302
    template.refresh_from_db()
    assert template.utm_campaign == "spring-2027"
    assert client.post(reverse("web:utm-template-delete", args=[template.pk])).status_code == 302
    assert not UtmTemplate.objects.filter(team=team).exists()
    actions = list(
        AuditEntry.objects.filter(team=team, action__startswith="utm_template.")
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == ["utm_template.created", "utm_template.changed", "utm_template.deleted"]


def test_a_viewer_reads_the_templates_and_changes_nothing_and_another_teams_are_not_found(team_and_people):
    team, editor, viewer = team_and_people
    in_team(editor, team).post(reverse("web:utm-templates"), SPRING)
    template = UtmTemplate.objects.get(team=team)
    client = in_team(viewer, team)
    page = client.get(reverse("web:utm-templates"))
    assert page.status_code == 200 and "Spring newsletter" in page.content.decode()
    assert client.post(reverse("web:utm-templates"), {**SPRING, "name": "Mine"}).status_code == 403
    edit = reverse("web:utm-template-edit", args=[template.pk])
    assert client.post(edit, {**SPRING, "utm_campaign": "x"}).status_code == 403
    assert client.post(reverse("web:utm-template-delete", args=[template.pk])).status_code == 403
    template.refresh_from_db()
    assert UtmTemplate.objects.filter(team=team).count() == 1 and template.utm_campaign == "spring"
    outsider = make_user()
    other = Client()
    other.force_login(outsider)
    assert other.get(edit).status_code == 404
    assert other.post(reverse("web:utm-template-delete", args=[template.pk])).status_code == 404
    assert UtmTemplate.objects.filter(pk=template.pk).exists()
