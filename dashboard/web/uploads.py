"""A size limit for uploaded files. Django's DATA_UPLOAD_MAX_MEMORY_SIZE
leaves the files of a multipart body out of its count, and
FILE_UPLOAD_MAX_MEMORY_SIZE only decides whether a file is kept in memory or
in a temporary file: neither refuses a large file."""

from django.core.files.uploadhandler import FileUploadHandler, SkipFile


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
