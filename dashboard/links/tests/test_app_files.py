"""A domain's app-link files (links/app_files.py): checked against the
shapes Apple and Google document, set by staff on the domain's page and
through /api/v1/domains, and published for the edge to serve."""

import copy
import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from links import domains
from links.app_files import validate_apple_app_site_association, validate_assetlinks
from slingshot.contract import app_file_key
from slingshot.redis import get_redis
from testing.factories import fresh

pytestmark = pytest.mark.django_db(transaction=True)

# Apple's example (Supporting associated domains), and an older form of it.
AASA = {
    "applinks": {
        "details": [
            {
                "appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"],
                "components": [{"#": "no_universal_links", "exclude": True}, {"/": "/buy/*"}],
            }
        ]
    },
    "webcredentials": {"apps": ["ABCDE12345.com.example.app"]},
    "appclips": {"apps": ["ABCDE12345.com.example.MyApp.Clip"]},
}
AASA_OLD = {"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.app", "paths": ["/buy/*"]}]}}
# Google's example (Verify Android App Links).
ASSETLINKS = [
    {
        "relation": ["delegate_permission/common.handle_all_urls"],
        "target": {
            "namespace": "android_app",
            "package_name": "com.example",
            "sha256_cert_fingerprints": [
                "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
            ],
        },
    },
    {
        "relation": ["delegate_permission/common.get_login_creds"],
        "target": {"namespace": "web", "site": "https://example.com"},
    },
]


def test_the_documented_shapes_are_taken():
    for value in (AASA, AASA_OLD, None):
        validate_apple_app_site_association(value)
    validate_assetlinks(ASSETLINKS)
    validate_assetlinks(None)


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda v: v.update(apps=[]), "An object of applinks"),
        (lambda v: v["applinks"]["details"][0].update(appIDs=["com.example.app"]), "is not an app id"),
        (lambda v: v["applinks"].update(details={}), "is a list"),
        (lambda v: v["webcredentials"].pop("apps"), '"webcredentials" is an object with "apps"'),
        (lambda v: v["applinks"]["details"][0].update(components="/*"), "is a list of objects"),
    ],
)
def test_an_apple_file_out_of_shape_is_refused_saying_why(change, said):
    value = copy.deepcopy(AASA)
    change(value)
    with pytest.raises(ValidationError, match=said):
        validate_apple_app_site_association(value)


@pytest.mark.parametrize(
    "value, said",
    [
        ({"relation": []}, "A list of statements"),
        ([], "A list of statements"),
        ([{"relation": "x", "target": ASSETLINKS[0]["target"]}], '"relation" is a list of strings'),
        ([{**ASSETLINKS[0], "target": {"namespace": "ios_app"}}], '"namespace" is "android_app" or "web"'),
        (
            [{**ASSETLINKS[0], "target": {**ASSETLINKS[0]["target"], "sha256_cert_fingerprints": ["14:6d"]}}],
            "is not a SHA-256 fingerprint",
        ),
        ([{**ASSETLINKS[0], "target": {**ASSETLINKS[0]["target"], "package_name": "example"}}], "package_name"),
        ([{**ASSETLINKS[0], "extra": 1}], "an object of"),
    ],
)
def test_an_android_file_out_of_shape_is_refused_saying_why(value, said):
    with pytest.raises(ValidationError, match=said):
        validate_assetlinks(value)


def test_a_file_past_apples_size_is_refused():
    big = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "paths": ["/" + "a" * 200_000]}]}}
    with pytest.raises(ValidationError, match="At most 128 KB"):
        validate_apple_app_site_association(big)


@pytest.fixture
def domain():
    made = domains.domain_create(host=f"{fresh('apps')}.example")
    yield made
    domains.domain_delete(domain=made)


def test_staff_set_and_clear_them_through_the_api_and_redis_follows(domain, make_user):
    staff, person = APIClient(), APIClient()
    staff.force_authenticate(make_user(is_staff=True))
    person.force_authenticate(make_user())
    url = f"/api/v1/domains/{domain.host}"
    assert person.patch(url, {"assetlinks": ASSETLINKS}, format="json").status_code == 403
    answer = staff.patch(url, {"apple_app_site_association": AASA, "assetlinks": ASSETLINKS}, format="json")
    assert answer.status_code == 200 and answer.json()["assetlinks"] == ASSETLINKS
    assert json.loads(get_redis().get(app_file_key("apple-app-site-association", domain.host))) == AASA
    assert json.loads(get_redis().get(app_file_key("assetlinks.json", domain.host))) == ASSETLINKS
    bad = staff.patch(url, {"assetlinks": [{"relation": ["x"], "target": {"namespace": "nope"}}]}, format="json")
    assert bad.status_code == 400 and "namespace" in json.dumps(bad.json()["assetlinks"])
    assert json.loads(get_redis().get(app_file_key("assetlinks.json", domain.host))) == ASSETLINKS  # kept
    assert (
        staff.patch(url, {"apple_app_site_association": None}, format="json").json()["apple_app_site_association"]
        is None
    )
    assert get_redis().get(app_file_key("apple-app-site-association", domain.host)) is None
    assert staff.get(url).json()["assetlinks"] == ASSETLINKS


def test_the_domain_page_takes_them_as_json_and_says_what_is_wrong(domain, make_user, client):
    client.force_login(make_user(is_staff=True))
    page = f"/domains/{domain.host}/edit/"
    form = {"root_url": "", "not_found_url": "", "apple_app_site_association": "{not json", "assetlinks": ""}
    answer = client.post(page, form)
    assert answer.status_code == 200 and "Enter a valid JSON" in answer.content.decode()
    form["apple_app_site_association"] = json.dumps({"applinks": {"details": [{"appIDs": ["nope"]}]}})
    assert "is not an app id" in client.post(page, form).content.decode()
    form["apple_app_site_association"] = json.dumps(AASA)
    assert client.post(page, form).status_code == 302
    domain.refresh_from_db()
    assert domain.apple_app_site_association == AASA and domain.assetlinks is None
