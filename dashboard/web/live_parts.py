"""The live parts of pages, made by serve_live (web/live_server.py) to push
to every open page that shows them: the link page's report and the
overview's figures, made by the very functions that make them for the
pages' own fetches (web/report_views.py), as the person a page's token
names (web/live.py), in the zone it names. serve_live calls `make` in a
thread of its own, which keeps its own database connection."""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import close_old_connections
from django.http import Http404, HttpRequest, QueryDict
from django.utils import timezone

from clicks.calendar import zone_named

from . import report_views
from .link_views import link_or_404


def make(part: dict, user_id: int) -> str | None:
    """The part's HTML as the person sees it now; None when they may no
    longer see it (gone, deactivated, out of the link's team, or the link
    gone). Errors of the database or the part's making are raised."""
    close_old_connections()  # as Django does around a request: one gone stale or broken is replaced
    try:
        user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
        if user is None:
            return None
        request = HttpRequest()
        request.method = "GET"
        request.user = user
        request.GET = QueryDict(part.get("query", ""))
        try:
            zone = zone_named(part["zone"])
        except (KeyError, ValueError):
            zone = None
        with timezone.override(zone):
            if part["view"] == "link":
                return report_views.link_part(request, link_or_404(request, part["slug"]))
            if part["view"] == "overview" and part.get("for") == user_id:
                return report_views.overview_part(request)
            return None
    except (Http404, PermissionDenied):
        return None
    finally:
        close_old_connections()
