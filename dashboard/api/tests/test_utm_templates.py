"""/api/v1/utm-templates: a team's UTM templates, read by its members,
made, changed and deleted by its editors, audited; another team's are a
404, a viewer's change a 403, bad input a 400 and a taken name a 409."""

import pytest
from rest_framework.test import APIClient

from links.models import UtmTemplate
from teams.models import AuditEntry, Role
from teams.services import member_add, team_create
from testing.factories import api_client, fresh, make_user

pytestmark = pytest.mark.django_db

SPRING = {"name": "Spring newsletter", "utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "spring"}


def signed_in(user) -> APIClient:
    """A session of the person's, whose role in each team is theirs (a token reaches one team)."""
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def team_and_people():
    editor, viewer, outsider = make_user(), make_user(), make_user()
    team = team_create(actor=editor, name=fresh("utm-team"))
    member_add(actor=editor, team=team, username=viewer.username, role=Role.VIEWER)
    return team, editor, viewer, outsider


def test_an_editor_makes_changes_and_deletes_one_and_the_audit_says_so(team_and_people):
    team, editor, _, _ = team_and_people
    api = api_client(editor, team=team)
    made = api.post("/api/v1/utm-templates", {**SPRING, "team": team.pk}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert {name: body[name] for name in SPRING} == SPRING and body["team"] == team.pk
    assert body["utm_term"] == "" and body["utm_content"] == ""
    changed = api.patch(f"/api/v1/utm-templates/{body['id']}", {"utm_campaign": "spring-2027"}, format="json")
    assert changed.status_code == 200 and changed.json()["utm_campaign"] == "spring-2027"
    listed = api.get(f"/api/v1/utm-templates?team={team.pk}")
    assert [item["name"] for item in listed.json()] == ["Spring newsletter"]
    assert api.delete(f"/api/v1/utm-templates/{body['id']}").status_code == 204
    assert not UtmTemplate.objects.filter(team=team).exists()
    actions = list(
        AuditEntry.objects.filter(team=team, action__startswith="utm_template.")
        .order_by("pk")
        .values_list("action", "changes")
    )
    assert actions == [
        (
            "utm_template.created",
            {"utm_source": [None, "newsletter"], "utm_medium": [None, "email"], "utm_campaign": [None, "spring"]},
        ),
        ("utm_template.changed", {"utm_campaign": ["spring", "spring-2027"]}),
        ("utm_template.deleted", {}),
    ]


def test_a_viewer_reads_but_does_not_change_and_an_outsider_sees_nothing(team_and_people):
    team, editor, viewer, outsider = team_and_people
    made = (
        api_client(editor, team=team).post("/api/v1/utm-templates", {**SPRING, "team": team.pk}, format="json").json()
    )
    as_viewer = signed_in(viewer)
    assert as_viewer.get(f"/api/v1/utm-templates/{made['id']}").status_code == 200
    refused = as_viewer.patch(f"/api/v1/utm-templates/{made['id']}", {"name": "Mine"}, format="json")
    assert refused.status_code == 403
    assert as_viewer.post("/api/v1/utm-templates", {**SPRING, "team": team.pk}, format="json").status_code == 403
    assert as_viewer.delete(f"/api/v1/utm-templates/{made['id']}").status_code == 403
    as_outsider = api_client(outsider)
    assert as_outsider.get(f"/api/v1/utm-templates/{made['id']}").status_code == 404
    assert as_outsider.get("/api/v1/utm-templates").json() == []
    assert as_outsider.get(f"/api/v1/utm-templates?team={team.pk}").status_code == 404
    read_only = api_client(editor, scope="read", team=team)
    assert read_only.post("/api/v1/utm-templates", SPRING, format="json").status_code == 403
    assert read_only.get("/api/v1/utm-templates").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "", "utm_source": "x"}, "name"),
        ({"name": "x" * 101, "utm_source": "x"}, "name"),
        ({"name": "Empty"}, "utm_source"),
        ({"name": "Long", "utm_source": "x" * 201}, "utm_source"),
        ({"name": "Number", "utm_source": 5}, "utm_source"),
        ({"name": "Nul", "utm_campaign": "a\x00b"}, "utm_campaign"),
        ({"name": "Unknown", "utm_source": "x", "utm_id": "1"}, "utm_id"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(team_and_people, body, field):
    team, editor, _, _ = team_and_people
    answer = api_client(editor, team=team).post("/api/v1/utm-templates", {**body, "team": team.pk}, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert not UtmTemplate.objects.filter(team=team).exists()


def test_a_name_the_team_has_is_a_409_and_another_team_may_have_it(team_and_people):
    team, editor, _, _ = team_and_people
    api = api_client(editor, team=team)
    assert api.post("/api/v1/utm-templates", {**SPRING, "team": team.pk}, format="json").status_code == 201
    taken = api.post("/api/v1/utm-templates", {**SPRING, "team": team.pk}, format="json")
    assert taken.status_code == 409 and "name" in taken.json()
    # Another of the editor's teams, their personal one, may have the name too.
    assert signed_in(editor).post("/api/v1/utm-templates", SPRING, format="json").status_code == 201
