"""A link's social preview (preview_title, preview_description,
preview_image_url) through the API, the audit log and a CSV round trip:
kept as given, the image URL normalised as targets are, past its bounds a
400 naming the field, cleared with an empty string, published."""

import csv
import io
import json

import pytest

from links.models import Link
from links.publishing import link_payload
from teams.models import AuditEntry
from testing.factories import fresh

pytestmark = pytest.mark.django_db

PREVIEW = {
    "preview_title": "Spring <sale>",
    "preview_description": "Every coat, until March's end.",
    "preview_image_url": "HTTPS://CDN.Example/cards/spring.jpg",
}


def test_set_read_changed_and_cleared_through_the_api(api):
    slug = fresh("pv")
    made = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, **PREVIEW}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["preview_title"], body["preview_description"]) == (
        PREVIEW["preview_title"],
        PREVIEW["preview_description"],
    )
    assert body["preview_image_url"] == "https://cdn.example/cards/spring.jpg"  # scheme and host lower-cased
    published = json.loads(link_payload(Link.objects.get(slug=slug)))
    assert published["preview_title"] == "Spring <sale>"
    assert published["preview_image"] == "https://cdn.example/cards/spring.jpg"
    changed = api.patch(f"/api/v1/links/{slug}", {"preview_title": "Summer"}, format="json")
    assert changed.status_code == 200 and changed.json()["preview_title"] == "Summer"
    entry = AuditEntry.objects.filter(action="link.changed").latest("id")
    assert entry.changes["preview_title"] == ["Spring <sale>", "Summer"]
    cleared = api.patch(
        f"/api/v1/links/{slug}",
        {"preview_title": "", "preview_description": "", "preview_image_url": ""},
        format="json",
    )
    assert cleared.status_code == 200
    published = json.loads(link_payload(Link.objects.get(slug=slug)))
    assert (published["preview_title"], published["preview_description"], published["preview_image"]) == (None,) * 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("preview_title", "x" * 201),
        ("preview_description", "x" * 501),
        ("preview_image_url", "javascript:alert(1)"),
        ("preview_image_url", "not a url"),
        ("preview_title", 5),
        ("preview_title", "nul\x00byte"),
    ],
)
def test_what_is_past_its_bounds_is_a_400_naming_the_field_and_nothing_is_made(api, field, value):
    slug = fresh("pb")
    answer = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, field: value}, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert not Link.objects.filter(slug=slug).exists()


def test_a_csv_export_carries_them_and_an_import_reads_them_back(api):
    from clicks.selectors import with_click_totals
    from links.imports import domains_by_host, export_lines, row_arguments

    slug = fresh("pc")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, **PREVIEW}, format="json")
    text = "".join(export_lines(with_click_totals(Link.objects.filter(slug=slug)).select_related("domain")))
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["preview_title"] == "Spring <sale>"
    assert row["preview_image_url"] == "https://cdn.example/cards/spring.jpg"
    fields, errors = row_arguments(row, domains_by_host())
    assert errors == {}
    assert (fields.preview_title, fields.preview_description, fields.preview_image_url) == (
        "Spring <sale>",
        "Every coat, until March's end.",
        "https://cdn.example/cards/spring.jpg",
    )


def png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (1200, 630), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def test_an_image_uploaded_as_the_body_is_shown_and_removed(api):
    slug = fresh("pi")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    uploaded = api.post(f"/api/v1/links/{slug}/preview-image", png(), content_type="image/png")
    assert uploaded.status_code == 200, uploaded.content
    name = Link.objects.get(slug=slug).preview_image
    assert uploaded.json()["preview_image"].endswith(f"/_preview/{name}")
    assert api.get(f"/api/v1/links/{slug}").json()["preview_image"] == uploaded.json()["preview_image"]
    removed = api.delete(f"/api/v1/links/{slug}/preview-image")
    assert removed.status_code == 200 and removed.json()["preview_image"] is None


def test_what_is_not_an_image_is_a_415_or_a_400_naming_it_and_nothing_changes(api, settings):
    slug = fresh("pj")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    not_image = api.post(f"/api/v1/links/{slug}/preview-image", b"hello", content_type="text/plain")
    assert not_image.status_code == 415 and "detail" in not_image.json()
    garbage = api.post(f"/api/v1/links/{slug}/preview-image", b"\x89PNG not really", content_type="image/png")
    assert garbage.status_code == 400 and "preview_image" in garbage.json()
    settings.PREVIEW_IMAGE_MAX_BYTES = 2000
    large = api.post(f"/api/v1/links/{slug}/preview-image", b"\x89PNG" + b"0" * 5000, content_type="image/png")
    assert large.status_code == 400 and "KiB" in json.dumps(large.json()["preview_image"])
    assert Link.objects.get(slug=slug).preview_image == ""


def test_a_read_only_token_cannot_upload(user):
    from testing.factories import api_client

    writer, reader = api_client(user), api_client(user, scope="read")
    slug = fresh("pk")
    writer.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    assert reader.post(f"/api/v1/links/{slug}/preview-image", png(), content_type="image/png").status_code == 403
    assert Link.objects.get(slug=slug).preview_image == ""
