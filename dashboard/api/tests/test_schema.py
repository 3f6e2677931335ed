import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_schema_describes_every_endpoint_with_errors(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    paths = schema["paths"]
    for path in [
        "/api/v1/links",
        "/api/v1/links/{slug}",
        "/api/v1/links/{slug}/stats",
        "/api/v1/links/bulk",
        "/api/v1/clicks",
        "/api/v1/domains",
        "/api/v1/domains/{host}",
        "/api/v1/tokens",
        "/api/v1/tokens/{id}",
        "/api/v1/teams",
        "/api/v1/teams/{id}",
        "/api/v1/teams/{team_id}/members",
        "/api/v1/teams/{team_id}/members/{username}",
        "/api/v1/audit",
    ]:
        assert path in paths, path
        for operation in paths[path].values():
            assert operation.get("summary"), (path, operation)
            assert {"401", "429", "503"} <= set(operation["responses"]), path
    assert {"409", "413"} <= set(paths["/api/v1/links"]["post"]["responses"])
    assert "413" not in paths["/api/v1/links"]["get"]["responses"]
    assert {"patch", "delete"} <= set(paths["/api/v1/teams/{id}"]) and "put" not in paths["/api/v1/teams/{id}"]
    assert "409" in paths["/api/v1/teams/{id}"]["delete"]["responses"]
    # A UTM template's name its team has already (schemathesis found it undocumented).
    assert "409" in paths["/api/v1/utm-templates"]["post"]["responses"]
    assert "409" in paths["/api/v1/utm-templates/{id}"]["patch"]["responses"]
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert paths["/api/v1/links"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    listed = {parameter["name"] for parameter in paths["/api/v1/links"]["get"]["parameters"]}
    assert listed == {
        "search",
        "domain",
        "tag",
        "is_active",
        "broken",
        "created_after",
        "created_before",
        "ordering",
        "page",
        "team",
    }
    assert {parameter["name"] for parameter in paths["/api/v1/links/{slug}/stats"]["get"]["parameters"]} == {
        "slug",
        "domain",
        "from",
        "to",
        "interval",
        "include_bots",
        "team",
        "tz",
        "referer_host",
        "browser",
        "os",
        "device",
        "country",
        "rule",
    }


def test_interactive_docs_work_offline(client):
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "http://" not in html.replace("http://testserver", "") and "https://" not in html
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html


def test_unknown_api_paths_answer_json_404():
    response = APIClient().get("/api/v1/no/such/thing")
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}
