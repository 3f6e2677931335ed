"""Images uploaded for links' previews: read with Pillow (the type and size
are the image's own, whatever the file is called or claims), at most
PREVIEW_IMAGE_MAX_BYTES and MAX_SIDE pixels a side, PNG, JPEG, WebP or GIF
(its first frame), and written again without their metadata (a photo's
place and camera). Each is kept once, by its SHA-256 (PreviewImage); the
edge serves it on the link's domain at /_preview/<name>, which the
dashboard answers from the table (EDGE_PATH), and a crawler shown the
link's card fetches it there."""

import hashlib
import io
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from PIL import Image, UnidentifiedImageError

from slingshot.edges import EdgePassMiddleware
from teams import access, audit
from teams.models import Action, Role

from .models import Link, PreviewImage
from .services import _publish
from .signals import link_changed

# The types taken: Pillow's format, its content type and the name's extension.
TYPES = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "WEBP": ("image/webp", "webp"),
    "GIF": ("image/gif", "gif"),
}
MAX_SIDE = 4096
# The path the dashboard answers them on, for the edge, and their names.
EDGE_PATH = "/internal/preview-image"
_NAME = re.compile(r"[0-9a-f]{64}\.(png|jpg|webp)")


@dataclass(frozen=True)
class ReadImage:
    name: str
    content: bytes
    content_type: str
    width: int
    height: int


def _refuse(message: str, code: str) -> ValidationError:
    return ValidationError({"preview_image": ValidationError(message, code=code)})


def read_image(data: bytes) -> ReadImage:
    """The image in `data` as it is kept, or a ValidationError on `preview_image` saying why not."""
    limit = settings.PREVIEW_IMAGE_MAX_BYTES
    if not data:
        raise _refuse("The file is empty.", "empty")
    if len(data) > limit:
        raise _refuse(f"The image is larger than {limit // 1024} KiB.", "too_large")
    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = image.format
            if kind not in TYPES:
                raise _refuse("Upload a PNG, JPEG, WebP or GIF image.", "type")
            width, height = image.size
            if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
                raise _refuse(f"The image must be at most {MAX_SIDE} pixels a side.", "dimensions")
            image.load()
            frame = image.convert("RGBA" if kind in ("PNG", "WEBP", "GIF") else "RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError, SyntaxError, ValueError):
        raise _refuse(
            "This is not an image Slingshot can read: upload a PNG, JPEG, WebP or GIF.", "unreadable"
        ) from None
    out = io.BytesIO()
    frame.save(out, format="PNG" if kind == "GIF" else kind, **({"quality": 90} if kind in ("JPEG", "WEBP") else {}))
    content = out.getvalue()
    content_type, extension = TYPES["PNG" if kind == "GIF" else kind]
    return ReadImage(f"{hashlib.sha256(content).hexdigest()}.{extension}", content, content_type, width, height)


# Images no link shows, uploaded more than an hour ago (a newer one may be
# on its way to a link whose transaction has not committed yet): removed at
# each change of a preview image, by the index of the links that have one.
_COLLECT = f"""
DELETE FROM {PreviewImage._meta.db_table} p
WHERE p.created_at < now() - interval '1 hour'
  AND NOT EXISTS (SELECT 1 FROM {Link._meta.db_table} l WHERE l.preview_image = p.name AND l.preview_image <> '')
"""


def _collect() -> None:
    with connection.cursor() as cursor:
        cursor.execute(_COLLECT)


def _change(link: Link, actor: AbstractBaseUser | None, name: str) -> None:
    before = link.preview_image
    if before == name:
        return
    link.preview_image = name
    link.save(update_fields=["preview_image", "updated_at"])
    _collect()
    audit.record(
        team_id=link.team_id,
        actor=actor,
        action=Action.LINK_CHANGED,
        link_id=link.pk,
        slug=link.slug,
        changes={"preview_image": [before or None, name or None]},
    )
    _publish(link)
    link_changed.send(sender=Link, link=link, event="updated")


@transaction.atomic
def preview_image_set(*, link: Link, actor: AbstractBaseUser | None, data: bytes) -> Link:
    """The link's preview shows this image (read_image's checks), an editor's change."""
    if actor is not None:
        access.require(actor, link.team_id, Role.EDITOR, to="change links")
    image = read_image(data)
    PreviewImage.objects.get_or_create(
        name=image.name,
        defaults={
            "content": image.content,
            "content_type": image.content_type,
            "width": image.width,
            "height": image.height,
        },
    )
    _change(Link.objects.select_for_update().get(pk=link.pk), actor, image.name)
    link.refresh_from_db()
    return link


@transaction.atomic
def preview_image_remove(*, link: Link, actor: AbstractBaseUser | None) -> Link:
    if actor is not None:
        access.require(actor, link.team_id, Role.EDITOR, to="change links")
    _change(Link.objects.select_for_update().get(pk=link.pk), actor, "")
    link.refresh_from_db()
    return link


def image_response(name: str, *, cache_control: str) -> HttpResponse | None:
    """The uploaded image of this name as an answer, or None for no such image."""
    image = PreviewImage.objects.filter(name=name).first() if _NAME.fullmatch(name) else None
    if image is None:
        return None
    response = HttpResponse(bytes(image.content), content_type=image.content_type)
    response["Cache-Control"] = cache_control
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response


class EdgePreviewImageMiddleware(EdgePassMiddleware):
    """An uploaded preview image, which an edge passes on from a short
    domain's /_preview/<name> (nginx.conf) as ?name=<name>: the image, kept
    for a year by whoever caches it (its name is its content's hash), or a
    404."""

    path = EDGE_PATH
    label = "edge-preview-image"

    def answer(self, request: HttpRequest, address: str) -> HttpResponse:
        response = image_response(request.GET.get("name", ""), cache_control="public, max-age=31536000, immutable")
        return response or HttpResponse("not found", status=404, content_type="text/plain")
