"""POST and DELETE /api/v1/links/{slug}/preview-image: the image a link's
preview shows, uploaded as the request's body (links/preview_images.py)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action

from links import preview_images

from .exceptions import as_api_error
from .link_serializers import LinkDomainQuerySerializer, LinkSerializer
from .parsers import ImageParser


class LinkPreviewImageMixin:
    """The preview-image action of LinkViewSet (api/links.py): `get_object` is the link's."""

    @extend_schema(
        methods=["POST"],
        summary="Upload a link's preview image",
        request={
            "image/png": OpenApiTypes.BINARY,
            "image/jpeg": OpenApiTypes.BINARY,
            "image/webp": OpenApiTypes.BINARY,
            "image/gif": OpenApiTypes.BINARY,
        },
        parameters=[LinkDomainQuerySerializer],
        responses={200: LinkSerializer},
        description="The body is the image: PNG, JPEG, WebP or GIF (its first frame, kept as PNG), at most "
        "PREVIEW_IMAGE_MAX_BYTES (1 MiB) and 4096 pixels a side, written again without its metadata. The edge "
        "serves it on the link's domain (`preview_image` in the answer), and a link-preview crawler's card shows "
        "it before `preview_image_url`. Another type is a 415; an image refused, a 400 on `preview_image`.",
    )
    @extend_schema(
        methods=["DELETE"],
        summary="Remove a link's preview image",
        parameters=[LinkDomainQuerySerializer],
        responses={200: LinkSerializer},
    )
    @action(detail=True, methods=["post", "delete"], url_path="preview-image", parser_classes=[ImageParser])
    def preview_image(self, request, slug=None):
        link = self.get_object()
        try:
            if request.method == "DELETE":
                preview_images.preview_image_remove(link=link, actor=request.user)
            else:
                preview_images.preview_image_set(link=link, actor=request.user, data=request.data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return self._output(link)
