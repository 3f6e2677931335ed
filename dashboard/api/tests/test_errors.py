"""Whatever goes wrong, the API answers JSON with the right status."""

import json

import pytest
from django.db import InterfaceError
from django.test import RequestFactory

from slingshot.errors import server_error

pytestmark = pytest.mark.django_db


def test_json_nested_too_deeply_is_a_400(api):
    deep = '{"links": ' + "[" * 5000 + "]" * 5000 + "}"
    response = api.post("/api/v1/links/bulk", deep, content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


def test_a_body_over_the_limit_is_a_json_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post(
        "/api/v1/links", json.dumps({"url": "https://example.com/" + "a" * 2000}), content_type="application/json"
    )
    assert (response.status_code, response["Content-Type"]) == (413, "application/json")
    assert "1000 bytes" in response.json()["detail"]


def test_an_unknown_api_path_is_a_json_404(api):
    for path in ("/api/v2/nothing", "/api/v1/links%0A", "/api/v1/links/%0A/", "/api/v1/%0A"):
        response = api.get(path)
        assert (response.status_code, response["Content-Type"]) == (404, "application/json"), path


def test_a_page_that_is_not_a_page_number_is_a_404(api):
    for value in ("x", "0", "-1"):
        response = api.get("/api/v1/links", {"page": value})
        assert response.status_code == 404 and response.json()["detail"].startswith("Invalid page"), value


def test_an_error_in_the_api_is_a_json_500_and_elsewhere_a_page():
    factory = RequestFactory()
    api = server_error(factory.get("/api/v1/links"))
    assert (api.status_code, api["Content-Type"], json.loads(api.content)["detail"][:14]) == (
        500,
        "application/json",
        "Internal error",
    )
    page = server_error(factory.get("/links/"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


def test_a_database_that_does_not_answer_is_a_503_to_come_back_to_in_every_shape():
    factory = RequestFactory()
    answers = {}
    for path in ("/api/v1/links", "/links/", "/yourls-api.php?format=json", "/yourls-api.php"):
        try:
            raise InterfaceError("connection already closed")
        except InterfaceError:
            answers[path] = server_error(factory.get(path))
    assert {answer.status_code for answer in answers.values()} == {503}
    assert {answer["Retry-After"] for answer in answers.values()} == {"5"}
    assert json.loads(answers["/api/v1/links"].content)["detail"].startswith("The database does not answer")
    page = answers["/links/"]
    assert page["Content-Type"].startswith("text/html") and b"Back in a moment" in page.content
    yourls = answers["/yourls-api.php?format=json"]
    assert json.loads(yourls.content)["errorCode"] == "503"
    assert b"<errorCode>503</errorCode>" in answers["/yourls-api.php"].content


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": "https://example.com/", "slug": 7}, "slug"),
        ({"url": "https://example.com/", "is_active": "true"}, "is_active"),
        ({"url": "https://example.com/", "forward_query": 1}, "forward_query"),
        ({"url": "https://example.com/", "redirect_status": "302"}, "redirect_status"),
        ({"url": "https://example.com/", "tags": ["ok", 5]}, "tags"),
        ({"url": "https://example.com/", "tags": "sale"}, "tags"),
        ({"url": ["https://example.com/"]}, "url"),
        ({"url": "https://example.com/", "max_visits": 3, "visits_left": 3}, "visits_left"),
    ],
)
def test_fields_take_the_json_type_their_schema_says_and_unknown_fields_are_named(api, body, field):
    response = api.post("/api/v1/links", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content


def test_the_api_takes_json_only(api):
    response = api.post("/api/v1/links", {"url": "https://example.com/form"})  # multipart, as a browser form would
    assert response.status_code == 415


def test_a_page_parameter_given_empty_is_a_400(api):
    response = api.get("/api/v1/links?page=")
    assert response.status_code == 400
    assert response.json() == {"page": ["Leave the parameter out rather than empty."]}
    assert api.get("/api/v1/links?page=1").status_code == 200
    assert api.get("/api/v1/links?page=x").status_code == 404


def test_an_error_quoting_a_lone_surrogate_is_answered_with_its_escape():
    """The net under every field's own refusal: a message or a field name
    that quotes what UTF-8 has no bytes for still makes a response."""
    from rest_framework.exceptions import ValidationError
    from rest_framework.renderers import JSONRenderer

    from api.exceptions import exception_handler

    error = ValidationError({"k\ud800": ['"a\udfff" is not a valid choice.'], "url": ["fine"]})
    response = exception_handler(error, {})
    body = json.loads(JSONRenderer().render(response.data).decode("utf-8"))
    assert body == {"k\\ud800": ['"a\\udfff" is not a valid choice.'], "url": ["fine"]}
    assert response.data["url"][0].code == "invalid"
