"""Shlink's REST API v3, under /rest/ (slingshot/urls.py). Anything else
under /rest/ is Shlink's not-found problem."""

from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from . import domains, health, redirect_rules, short_urls, tags, visits
from .problems import error_answer


@csrf_exempt
def nothing_here(request, *args, **kwargs):
    return error_answer(request, 404, "Not found.", {})


def v3(route: str, view, name: str):
    """A route of version 3 (Shlink's paths carry the version, /rest/v3/...)."""
    return re_path(rf"^v3/{route}$", view.as_view(), {"version": 3}, name=name)


urlpatterns = [
    path("health", health.HealthView.as_view(), name="shlink-health"),
    v3("health", health.HealthView, "shlink-health-v3"),
    v3("short-urls", short_urls.ShortUrlsView, "shlink-short-urls"),
    v3(r"short-urls/(?P<short_code>[^/]+)", short_urls.ShortUrlView, "shlink-short-url"),
    v3(r"short-urls/(?P<short_code>[^/]+)/visits", visits.ShortUrlVisitsView, "shlink-short-url-visits"),
    v3(r"short-urls/(?P<short_code>[^/]+)/redirect-rules", redirect_rules.RedirectRulesView, "shlink-redirect-rules"),
    v3("tags", tags.TagsView, "shlink-tags"),
    v3("tags/stats", tags.TagsStatsView, "shlink-tags-stats"),
    v3(r"tags/(?P<tag>[^/]+)/visits", visits.TagVisitsView, "shlink-tag-visits"),
    v3("visits", visits.VisitsOverviewView, "shlink-visits"),
    v3("visits/orphan", visits.OrphanVisitsView, "shlink-orphan-visits"),
    v3("visits/non-orphan", visits.NonOrphanVisitsView, "shlink-non-orphan-visits"),
    v3("domains", domains.DomainsView, "shlink-domains"),
    v3("domains/redirects", domains.DomainRedirectsView, "shlink-domain-redirects"),
    v3(r"domains/(?P<domain>[^/]+)/visits", visits.DomainVisitsView, "shlink-domain-visits"),
    v3("mercure-info", health.MercureInfoView, "shlink-mercure-info"),
    # Any character, a line feed (%0A) too, which `.` would not match: no
    # path under /rest/ is Django's HTML 404.
    re_path(r"^[\s\S]*$", nothing_here),
]
