"""SCIM provisioning as a provider drives it: its bearer token, people made
and found before they ever sign in, their groups giving them team roles,
and a deactivation that ends their sessions and API tokens at once."""

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from scim.tokens import token_create
from teams.groups import group_role_set
from teams.models import Membership
from teams.services import team_create
from testing.factories import fresh, make_user
from tokens.services import token_create as api_token_create

pytestmark = pytest.mark.django_db

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


class Scim:
    def __init__(self, raw: str):
        self.client, self.auth = Client(), {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    def __call__(self, method: str, path: str, body=None, **extra):
        data = json.dumps(body) if body is not None else None
        answer = getattr(self.client, method.lower())(
            f"/scim/v2/{path}", data=data, content_type="application/scim+json", **{**self.auth, **extra}
        )
        answer.json_body = json.loads(answer.content) if answer.content else None
        return answer


@pytest.fixture
def scim():
    return Scim(token_create(name="idp")[1])


def new_user(username: str, **more) -> dict:
    return {
        "schemas": [USER],
        "userName": username,
        "emails": [{"value": f"{username}@example.org", "primary": True}],
        **more,
    }


def test_a_token_is_needed_and_a_revoked_one_refused(scim, capsys):
    for answer in (
        Scim("")("GET", "Users"),
        Scim("scim_guess")("GET", "Users"),
        scim("GET", "Users", HTTP_AUTHORIZATION="Basic eDp5"),
    ):
        assert answer.status_code == 401 and answer["Content-Type"] == "application/scim+json"
        assert answer.json_body["status"] == "401" and "Bearer" in answer["WWW-Authenticate"]
    call_command("create_scim_token", "okta")
    raw = capsys.readouterr().out.strip().splitlines()[-1]
    assert Scim(raw)("GET", "ServiceProviderConfig").status_code == 200
    call_command("create_scim_token", "okta", "--revoke")
    assert Scim(raw)("GET", "ServiceProviderConfig").status_code == 401


def test_bad_input_is_a_scim_error_and_loses_nothing(scim):
    bad_json = scim.client.post("/scim/v2/Users", data=b"{", content_type="application/scim+json", **scim.auth)
    assert bad_json.status_code == 400 and json.loads(bad_json.content)["scimType"] == "invalidSyntax"
    missing = scim("POST", "Users", {"schemas": [USER]})
    assert missing.status_code == 400 and missing.json_body["schemas"] == [
        "urn:ietf:params:scim:api:messages:2.0:Error"
    ]
    assert scim("POST", "Users", new_user("ann")).status_code == 201
    taken = scim("POST", "Users", new_user("ANN"))
    assert taken.status_code == 409 and taken.json_body["scimType"] == "uniqueness"
    assert scim("GET", "Users/999999999").status_code == 404
    assert scim("GET", "Groups/not-a-uuid").status_code == 404
    assert scim("GET", "Nowhere").json_body["status"] == "404"
    unknown = scim("POST", "Groups", {"schemas": [GROUP], "displayName": "g", "members": [{"value": "999999999"}]})
    assert unknown.status_code == 400 and unknown.json_body["scimType"] == "invalidValue"


def test_the_provider_finds_people_who_exist_and_makes_the_others_before_they_sign_in(scim):
    local = make_user(username=fresh("Local-"))
    admin = make_user(is_superuser=True)
    found = scim("GET", f'Users?filter=userName eq "{local.username.lower()}"')
    assert found.status_code == 200 and found.json_body["totalResults"] == 1
    assert found.json_body["Resources"][0]["id"] == str(local.pk)
    assert scim("GET", f'Users?filter=userName eq "{admin.username}"').json_body["totalResults"] == 0  # superusers

    made = scim("POST", "Users", new_user("bea", name={"givenName": "Bea", "familyName": "Arthur"}, externalId="00u1"))
    assert made.status_code == 201 and made["Location"].endswith(f"/scim/v2/Users/{made.json_body['id']}")
    person = get_user_model().objects.get(pk=int(made.json_body["id"]))
    assert (person.username, person.email, person.first_name, person.is_active) == (
        "bea",
        "bea@example.org",
        "Bea",
        True,
    )
    assert not person.has_usable_password()
    assert scim("GET", f"Users/{person.pk}?attributes=userName").json_body.keys() >= {"id", "userName"}
    assert "emails" not in scim("GET", f"Users/{person.pk}?attributes=userName").json_body


def test_groups_give_team_roles_before_sign_in_and_take_them_away(scim):
    admin = make_user()
    team = team_create(actor=admin, name=fresh("Eng "))
    group_role_set(actor=admin, team=team, group="eng", role="editor")
    person = scim("POST", "Users", new_user("cal")).json_body
    group = scim("POST", "Groups", {"schemas": [GROUP], "displayName": "eng", "members": [{"value": person["id"]}]})
    assert group.status_code == 201
    membership = Membership.objects.get(team=team, user_id=int(person["id"]))
    assert (membership.role, membership.via_groups) == ("editor", True)
    assert scim("GET", f"Users/{person['id']}").json_body["groups"][0]["display"] == "eng"

    removed = scim(
        "PATCH",
        f"Groups/{group.json_body['id']}",
        {"schemas": [PATCH], "Operations": [{"op": "remove", "path": f'members[value eq "{person["id"]}"]'}]},
    )
    assert removed.status_code == 200, removed.json_body
    assert not Membership.objects.filter(team=team, user_id=int(person["id"])).exists()
    scim(
        "PATCH",
        f"Groups/{group.json_body['id']}",
        {"schemas": [PATCH], "Operations": [{"op": "add", "path": "members", "value": [{"value": person["id"]}]}]},
    )
    assert Membership.objects.filter(team=team, user_id=int(person["id"])).exists()
    assert scim("DELETE", f"Groups/{group.json_body['id']}").status_code == 204
    assert not Membership.objects.filter(team=team, user_id=int(person["id"])).exists()


@pytest.mark.parametrize("how", ["patch", "put", "delete"])
def test_a_deactivation_ends_sessions_and_api_tokens_at_once(scim, how):
    made = scim("POST", "Users", new_user(fresh("dee")))
    person_id = made.json_body["id"]
    person = get_user_model().objects.get(pk=int(person_id))
    browser = Client()
    browser.force_login(person)  # its session's use recorded (accounts/middleware.py)
    assert browser.get("/links/").status_code == 200
    _, raw = api_token_create(user=person, name="ci")
    assert Client().get("/api/v1/links", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200

    if how == "patch":
        answer = scim(
            "PATCH",
            f"Users/{person_id}",
            {"schemas": [PATCH], "Operations": [{"op": "replace", "path": "active", "value": False}]},
        )
        assert answer.status_code == 200 and answer.json_body["active"] is False
    elif how == "put":
        answer = scim("PUT", f"Users/{person_id}", {**new_user(person.username), "active": False})
        assert answer.status_code == 200 and answer.json_body["active"] is False
    else:
        assert scim("DELETE", f"Users/{person_id}").status_code == 204
        assert scim("GET", f"Users/{person_id}").status_code == 404

    assert browser.get("/links/").status_code == 302  # to the sign-in page: the session is gone
    assert Client().get("/api/v1/links", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    person.refresh_from_db()
    assert person.is_active is False


def test_the_provider_cannot_make_a_person_the_staff_suspended_active_again(scim):
    from moderation.services import user_suspend, user_unsuspend

    made = scim("POST", "Users", new_user(fresh("sus")))
    person = get_user_model().objects.get(pk=int(made.json_body["id"]))
    staff = make_user(is_staff=True)
    user_suspend(user=person, actor=staff, reason="phishing")
    again = scim("PUT", f"Users/{person.pk}", {**new_user(person.username), "active": True})
    assert again.status_code == 200 and again.json_body["active"] is False
    person.refresh_from_db()
    assert person.is_active is False
    user_unsuspend(user=person, actor=staff)
    assert scim("PUT", f"Users/{person.pk}", {**new_user(person.username), "active": True}).json_body["active"] is True


def test_a_django_process_starts_without_the_protocols_models_and_a_scim_request_loads_them():
    """scim2-models (pydantic) is the dearest import of a Django process's
    start: a process loads it only once it answers SCIM (urls.py), not as
    it starts its middleware, URLs and checks (a management command, a
    gunicorn worker)."""
    import os
    import subprocess
    import sys

    script = (
        "import sys, django; django.setup()\n"
        "from django.core.handlers.wsgi import WSGIHandler\n"
        "from django.core.management import call_command\n"
        "WSGIHandler(); call_command('check', '--fail-level', 'ERROR')\n"
        "print('scim2_models' in sys.modules)\n"
        "from django.test import Client\n"
        "print(Client().get('/scim/v2/ServiceProviderConfig', HTTP_HOST='localhost').status_code)\n"
        "print('scim2_models' in sys.modules)\n"
    )
    env = {"DJANGO_SETTINGS_MODULE": "slingshot.settings", **os.environ}
    dashboard = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=dashboard, capture_output=True, text=True)
    assert done.stdout.split()[-3:] == ["False", "401", "True"], done.stdout + done.stderr[-3000:]
