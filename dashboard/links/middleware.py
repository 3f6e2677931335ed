"""Tells an API client whether the link changes its request made were live
when it answered (links/delivery.py, docs/api.md "Live at once")."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .delivery import delivery

HEADER = "Slingshot-Publish"


class PublishStatusMiddleware:
    """Adds `Slingshot-Publish: live` to the answer of a request whose link
    changes were all in Redis before it answered, and `pending` to one
    whose changes wait in the outbox (Redis away): the publisher delivers
    them once it is back, and until then the edges answer their slugs 503
    with Retry-After. Requests that change no link get no header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = delivery.set(None)
        try:
            response = self.get_response(request)
            state = delivery.get()
        finally:
            delivery.reset(started)
        if state is not None:
            response[HEADER] = state
        return response
