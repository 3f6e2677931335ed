"""A size limit for uploaded files. Django's DATA_UPLOAD_MAX_MEMORY_SIZE
leaves the files of a multipart body out of its count, and
FILE_UPLOAD_MAX_MEMORY_SIZE only decides whether a file is kept in memory or
in a temporary file: neither refuses a large file."""

import functools

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.views.decorators.csrf import csrf_exempt, csrf_protect


class UploadLimitHandler(FileUploadHandler):
    """Drops a file once it passes `max_bytes`, reading the rest of it
    without keeping it, so the request still gets an answer; the field's
    name goes into `too_large`. Goes first in request.upload_handlers, before
    anything reads request.POST (the CSRF check included)."""

    def __init__(self, request, *, max_bytes: int):
        super().__init__(request)
        self.max_bytes = max_bytes
        self.too_large: set[str] = set()

    def receive_data_chunk(self, raw_data, start):
        if start + len(raw_data) > self.max_bytes:
            self.too_large.add(self.field_name)
            raise SkipFile
        return raw_data

    def file_complete(self, file_size):
        return None  # the handlers after this one keep the file


def limit_uploads(setting: str):
    """A view decorator: the view's uploads are limited to the size the
    setting named gives (read at each request), and the view gets the
    handler as `limit` to say which fields were too large. The CSRF check
    runs after the handler is in place, since it reads request.POST."""

    def decorate(view):
        protected = csrf_protect(view)

        @csrf_exempt  # checked by `protected`
        @functools.wraps(view)
        def limited(request, *args, **kwargs):
            limit = UploadLimitHandler(request, max_bytes=getattr(settings, setting))
            request.upload_handlers.insert(0, limit)
            return protected(request, *args, limit=limit, **kwargs)

        return limited

    return decorate
