from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, which also answers a body nested too deeply for
    Python's json module (a RecursionError) with a 400, as for any other
    malformed body."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None


class ImageParser(parsers.BaseParser):
    """An image as the body (a link's preview image): its bytes, read up to
    one byte past PREVIEW_IMAGE_MAX_BYTES, so that links/preview_images.py
    refuses a larger one without the server holding all of it."""

    media_type = "image/*"

    def parse(self, stream, media_type=None, parser_context=None):
        from django.conf import settings

        return stream.read(settings.PREVIEW_IMAGE_MAX_BYTES + 1) if stream is not None else b""
