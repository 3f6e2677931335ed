"""Shlink's visits: of a short URL, of a tag, of a domain, of every short
URL (non-orphan), orphan visits, the overview, and deleting a short URL's
visits or the orphan visits. Clicks are listed by clicks.visits over the
links links.selectors lets the request see; orphan visits, which belong to
no team, only to those who see the operations reports (staff), as in
/api/v1/orphan-visits."""

import functools

from babel import Locale
from django.core.exceptions import ValidationError
from rest_framework.response import Response

from clicks import services as click_services
from clicks.models import Click
from clicks.orphans import orphan_domain
from clicks.visits import (
    Counts,
    VisitsRange,
    link_click_counts,
    link_clicks,
    orphan_visit_counts,
    orphan_visits_page,
)
from links.models import Domain, Link
from links.selectors import links_visible_to, sees_operations
from links.tags import with_tags
from links.validation import default_host

from .base import DEFAULT_DOMAIN, ShlinkView, atom, domain_named, flag, host_named, moment, paging
from .problems import Problem, invalid_data
from .short_urls import link_of

# What Shlink calls Slingshot's orphan visits: every kind is a visit to a
# short URL that did not redirect (docs/contract.md). Slingshot records no
# visits to a domain's root or to paths that cannot be a slug.
ORPHAN_TYPE = "invalid_short_url"
ORPHAN_TYPES = ("invalid_short_url", "base_url", "regular_404")


@functools.cache
def _countries() -> dict[str, str]:
    return dict(Locale("en").territories)


def location(country: str) -> dict:
    """Shlink's VisitLocation of a visit: its country, all Slingshot locates;
    empty (isEmpty) for a visit that could not be located, as Shlink's."""
    known = bool(country) and country != "unknown"
    return {
        "countryCode": country if known else "",
        "countryName": _countries().get(country, country) if known else "",
        "regionName": "",
        "cityName": "",
        "latitude": 0.0,
        "longitude": 0.0,
        "timezone": "",
        "isEmpty": not known,
    }


def served_url(link: Link, rule: str | None) -> str | None:
    """Where what served a click sends visitors now: a rule's or a split
    destination's URL (its label, links.rules.Served), else the link's."""
    try:
        if rule and rule.startswith("ab"):
            return link.split[int(rule[2:]) - 1]["url"]
        if rule:
            return link.rules[int(rule) - 1]["url"]
    except (ValueError, IndexError, KeyError):
        return None
    return link.url


def visit(click: Click, link: Link) -> dict:
    return {
        "referer": click.referer,
        "date": atom(click.occurred_at),
        "userAgent": click.agent.user_agent,
        "visitLocation": location(click.country),
        "potentialBot": click.is_bot,
        "visitedUrl": f"{link.domain.base_url()}/{click.slug}",
        "redirectUrl": served_url(link, click.rule),
    }


def orphan_visit(row) -> dict:
    """Shlink's OrphanVisit of a row of orphan_visits (its referer,
    occurred_at, user_agent, country, is_bot, domain and slug)."""
    return {
        "referer": row.referer,
        "date": atom(row.occurred_at),
        "userAgent": row.user_agent,
        "visitLocation": location(row.country),
        "potentialBot": row.is_bot,
        "visitedUrl": f"{Domain(host=row.domain or default_host()).base_url()}/{row.slug}",
        "redirectUrl": None,
        "type": ORPHAN_TYPE,
    }


def summary(counts: Counts) -> dict:
    return {"total": counts.total, "nonBots": counts.total - counts.bots, "bots": counts.bots}


def visits_range(query) -> VisitsRange:
    start, end = moment(query.get("startDate"), "startDate"), moment(query.get("endDate"), "endDate")
    return VisitsRange(start=start, end=end, include_bots=not flag(query.get("excludeBots"), "excludeBots"))


class _LinkVisitsView(ShlinkView):
    """The clicks of the links `links()` gives, a page of them."""

    # `?domain=` keeps to the links of one domain (DEFAULT: the default one).
    domain_filter = False

    def links(self, request, **kwargs):
        raise NotImplementedError

    def get(self, request, version, **kwargs):
        links = self.links(request, **kwargs)
        if self.domain_filter and request.query_params.get("domain"):
            links = links.filter(domain=domain_named(request.query_params["domain"]))
        pages = paging(request.query_params, default=None)
        clicks = link_clicks(links, visits_range(request.query_params))
        page = list(clicks[pages.offset : pages.offset + pages.per_page])
        of = Link.objects.select_related("domain").in_bulk({click.link_id for click in page})
        data = [visit(click, of[click.link_id]) for click in page if click.link_id in of]
        return Response({"visits": {"data": data, "pagination": pages.of(clicks.count(), len(data))}})


class ShortUrlVisitsView(_LinkVisitsView):
    def links(self, request, short_code):
        return links_visible_to(request.user).filter(pk=link_of(request, short_code).pk)

    def delete(self, request, version, short_code):
        deleted = click_services.link_visits_delete(link=link_of(request, short_code), actor=request.user)
        return Response({"deletedVisits": deleted})


class TagVisitsView(_LinkVisitsView):
    domain_filter = True

    def links(self, request, tag):
        tagged = with_tags(links_visible_to(request.user), [tag])
        if not tagged.exists():
            raise Problem(404, "tag-not-found", "Tag not found", f'Tag with name "{tag}" could not be found', tag=tag)
        return tagged


class DomainVisitsView(_LinkVisitsView):
    def links(self, request, domain):
        return links_visible_to(request.user).filter(domain=domain_named(domain))


class NonOrphanVisitsView(_LinkVisitsView):
    domain_filter = True

    def links(self, request):
        return links_visible_to(request.user)


class OrphanVisitsView(ShlinkView):
    def get(self, request, version):
        query = request.query_params
        kind = query.get("type")
        if kind is not None and kind not in ORPHAN_TYPES:
            raise invalid_data({"type": [f"Use one of {', '.join(ORPHAN_TYPES)}."]})
        pages = paging(query, default=None)
        span = visits_range(query)
        domain = self._domain(query.get("domain"))
        if not sees_operations(request.user) or kind not in (None, ORPHAN_TYPE):
            rows, total = [], 0
        else:
            rows = orphan_visits_page(span=span, domain=domain, offset=pages.offset, limit=pages.per_page)
            total = orphan_visit_counts(span=span, domain=domain).total
        data = [orphan_visit(row) for row in rows]
        return Response({"visits": {"data": data, "pagination": pages.of(total, len(data))}})

    @staticmethod
    def _domain(host: str | None) -> str | None:
        if host in (None, ""):
            return None
        if host == DEFAULT_DOMAIN:
            return ""
        try:
            return orphan_domain(host_named(host))
        except ValidationError as exc:
            raise invalid_data({"domain": exc.messages}) from None

    def delete(self, request, version):
        deleted = click_services.orphan_visits_delete(actor=request.user)
        return Response({"deletedVisits": deleted})


class VisitsOverviewView(ShlinkView):
    def get(self, request, version):
        links = link_click_counts(links_visible_to(request.user))
        orphans = orphan_visit_counts() if sees_operations(request.user) else Counts(0, 0)
        return Response({"visits": {"nonOrphanVisits": summary(links), "orphanVisits": summary(orphans)}})
