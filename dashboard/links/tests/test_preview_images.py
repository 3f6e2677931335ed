"""Images uploaded for links' previews (links/preview_images.py): the type
and size read from the image itself, metadata dropped, each kept once by
its hash, set and removed by editors with the audit saying so, published
as the path the edge serves, and collected once no link shows them."""

import io
import json
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from PIL import Image

from links import preview_images
from links.models import Link, PreviewImage
from links.publishing import link_payload
from teams.models import AuditEntry
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db


def image_bytes(kind: str = "PNG", size=(1200, 630), **save) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 60)).save(out, format=kind, **save)
    return out.getvalue()


@pytest.mark.parametrize(
    ("kind", "stored_type", "extension"),
    [
        ("PNG", "image/png", "png"),
        ("JPEG", "image/jpeg", "jpg"),
        ("WEBP", "image/webp", "webp"),
        ("GIF", "image/png", "png"),  # its first frame
    ],
)
def test_each_type_taken_is_kept_by_its_hash_as_its_own_type(kind, stored_type, extension):
    read = preview_images.read_image(image_bytes(kind))
    assert read.content_type == stored_type and read.name.endswith("." + extension)
    assert (read.width, read.height) == (1200, 630)
    assert Image.open(io.BytesIO(read.content)).size == (1200, 630)


def test_a_photos_place_and_camera_are_dropped():
    exif = Image.Exif()
    exif[0x010F] = "Camera Maker"  # Make
    exif[0x8825] = {2: (52.0, 31.0, 12.0)}  # GPSInfo: a latitude
    photo = image_bytes("JPEG", exif=exif.tobytes())
    assert b"Camera Maker" in photo
    read = preview_images.read_image(photo)
    assert b"Camera Maker" not in read.content
    assert not Image.open(io.BytesIO(read.content)).getexif()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "empty"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "unreadable"),
        (b"GIF89a not really", "unreadable"),
        (b"%PDF-1.4", "unreadable"),
    ],
)
def test_what_is_not_a_taken_image_is_refused_saying_why(data, code):
    with pytest.raises(ValidationError) as refused:
        preview_images.read_image(data)
    assert refused.value.error_dict["preview_image"][0].code == code


def test_a_type_not_taken_an_image_too_large_or_too_wide_is_refused(settings):
    tiff = io.BytesIO()
    Image.new("RGB", (10, 10)).save(tiff, format="TIFF")
    for data, code in ((tiff.getvalue(), "type"), (image_bytes(size=(4097, 10)), "dimensions")):
        with pytest.raises(ValidationError) as refused:
            preview_images.read_image(data)
        assert refused.value.error_dict["preview_image"][0].code == code
    settings.PREVIEW_IMAGE_MAX_BYTES = 1000
    with pytest.raises(ValidationError) as refused:
        preview_images.read_image(image_bytes("PNG", size=(600, 600), compress_level=0))
    assert refused.value.error_dict["preview_image"][0].code == "too_large"


def test_set_published_audited_removed_and_collected():
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/", preview_image_url="https://cdn.example/card.png")
    other = make_link(owner=owner, url="https://example.com/other")
    data = image_bytes()
    preview_images.preview_image_set(link=link, actor=owner, data=data)
    preview_images.preview_image_set(link=other, actor=owner, data=data)
    assert PreviewImage.objects.count() == 1  # the same image kept once
    name = Link.objects.get(pk=link.pk).preview_image
    published = json.loads(link_payload(Link.objects.get(pk=link.pk)))
    assert published["preview_image"] == f"/_preview/{name}"  # before preview_image_url
    entry = AuditEntry.objects.filter(link_id=link.pk, action="link.changed").latest("pk")
    assert entry.changes == {"preview_image": [None, name]}
    preview_images.preview_image_remove(link=link, actor=owner)
    assert json.loads(link_payload(Link.objects.get(pk=link.pk)))["preview_image"] == "https://cdn.example/card.png"
    PreviewImage.objects.update(created_at=timezone.now() - timedelta(hours=2))
    preview_images.preview_image_remove(link=other, actor=owner)
    assert not PreviewImage.objects.exists()  # no link shows it: collected


def test_only_an_editor_sets_one():
    link = make_link(owner=make_user(), url="https://example.com/")
    with pytest.raises(PermissionDenied):
        preview_images.preview_image_set(link=link, actor=make_user(), data=image_bytes())
    assert not PreviewImage.objects.exists()
