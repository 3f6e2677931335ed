"""What yourls-api.php answers, byte for byte as YOURLS 1.10 writes it
(yourls_api/output.py), in each format."""

import json
import xml.etree.ElementTree as ET

import pytest

from yourls_api.output import php_json, php_xml


def test_version_in_every_format_as_yourls_writes_it(yourls, user, make_token):
    _, raw = make_token(user, scope="read")
    cases = {
        "json": ("application/json; charset=utf-8", '{"version":"1.10.4"}'),
        "jsonp": ("application/javascript; charset=utf-8", 'got({"version":"1.10.4","callback":"got"})'),
        "xml": (
            "application/xml; charset=utf-8",
            '<?xml version="1.0" encoding="UTF-8"?>\n<root><version>1.10.4</version></root>\n',
        ),
        "simple": ("text/plain; charset=utf-8", "1.10.4"),
        "JSON": ("text/plain; charset=utf-8", "1.10.4"),  # any other format is simple (Better YOURLS asks this)
    }
    for format_, (content_type, body) in cases.items():
        extra = {"callback": "got"} if format_ == "jsonp" else {}
        response = yourls(action="version", signature=raw, format=format_, **extra)
        assert (response.status_code, response["Content-Type"], response.content.decode()) == (
            200,
            content_type,
            body,
        ), format_


def test_xml_is_the_default_format_and_db_version_on_request(yourls, user, make_token):
    _, raw = make_token(user)
    response = yourls(action="version", signature=raw, db="1")
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    root = ET.fromstring(response.content)
    assert [(child.tag, child.text) for child in root] == [("version", "1.10.4"), ("db_version", "507")]


def test_json_escapes_slashes_and_non_ascii_as_php_does():
    assert php_json({"url": "https://ex.com/é", "n": 3}) == '{"url":"https:\\/\\/ex.com\\/\\u00e9","n":3}'


def test_xml_escapes_text_drops_control_characters_and_closes_empty_elements():
    text = php_xml({"status": "", "message": "a & <b>\x01", "url": {"keyword": "k", "ip": ""}, "n": 5})
    assert text == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<root><status/><message>a &amp; &lt;b&gt;</message><url><keyword>k</keyword><ip/></url><n>5</n></root>\n"
    )


@pytest.mark.parametrize(
    ("callback", "status"),
    [("jQuery1234_5.cb$", 200), ("", 400), ("alert(1)//", 400), ("x\\u2028", 400), ("a\nb", 400)],
)
def test_jsonp_callbacks_yourls_refuses_are_a_400(yourls, user, make_token, callback, status):
    _, raw = make_token(user)
    response = yourls(action="version", signature=raw, format="jsonp", callback=callback)
    assert response.status_code == status
    if status == 400:
        assert response.content == b'{"errorCode":"400","error":"Invalid callback parameter"}'
    else:
        assert response.content.decode().startswith(callback + "(")


def test_jsonp_takes_the_jsonp_parameter_too(yourls, user, make_token):
    _, raw = make_token(user)
    response = yourls(action="version", signature=raw, format="jsonp", jsonp="cb")
    assert response.content == b'cb({"version":"1.10.4","callback":"cb"})'


def test_unknown_or_missing_action_is_a_400_once_signed_in(yourls, user, make_token):
    _, raw = make_token(user)
    for params in ({}, {"action": "delete"}):
        response = yourls(signature=raw, format="json", **params)
        assert response.status_code == 400
        assert json.loads(response.content) == {"errorCode": "400", "message": 'Unknown or missing "action" parameter'}
    assert yourls(signature=raw, format="simple").content == b'Unknown or missing "action" parameter'


def test_a_posted_form_wins_over_the_query_string(client, user, make_token):
    _, raw = make_token(user)
    response = client.post(
        "/yourls-api.php?format=xml&action=shorturl", {"format": "json", "action": "version", "signature": raw}
    )
    assert response.content == b'{"version":"1.10.4"}'


def test_a_null_character_in_any_parameter_is_a_400(yourls, user, make_token):
    _, raw = make_token(user)
    response = yourls(action="shorturl", signature=raw, format="json", url="https://example.com/", title="a\x00b")
    assert response.status_code == 400
    assert json.loads(response.content)["errorCode"] == "400"


def test_an_unreadable_form_is_a_400(client):
    response = client.generic(
        "POST",
        "/yourls-api.php?format=json",
        b"--x\r\n",
        content_type='multipart/form-data; boundary=""',
    )
    assert response.status_code == 400
    assert json.loads(response.content)["errorCode"] == "400"


ODD_VALUES = [
    "",
    "0",
    "-1",
    "9" * 5000,
    " 12abc",
    "1e3",
    "é",
    "\u202e",
    "[]",
    "%00",
    "https://",
    "http://[::1",
    "a" * 3000,
]


@pytest.mark.parametrize("action", ["shorturl", "expand", "url-stats", "stats", "db-stats", "version", "nope"])
def test_odd_values_in_every_parameter_are_never_a_500(client, user, make_token, action):
    token, raw = make_token(user)
    for name in ("url", "keyword", "title", "shorturl", "filter", "limit", "start", "db", "format", "callback", "hash"):
        for value in ODD_VALUES:
            params = {"action": action, "signature": raw, "format": "json", name: value}
            response = client.post("/yourls-api.php", params)
            assert response.status_code < 500, (name, value, response.content[:200])
    for value in ODD_VALUES:
        for credentials in ({"signature": value}, {"timestamp": value, "signature": "0" * 32}, {"username": value}):
            assert client.get("/yourls-api.php", {"action": action, **credentials}).status_code < 500
