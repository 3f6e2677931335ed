"""/rest/v3/short-urls: Shlink's short URLs are Slingshot's links, made,
listed, read, changed and deleted through links.services and
links.selectors as /api/v1's are."""

from datetime import timedelta

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils import timezone
from rest_framework.response import Response

from clicks import selectors as clicks_selectors
from links import domains, selectors, services, slugs
from links.fields import LinkFields
from links.limits import admit_creation
from links.models import Domain, Link
from links.tags import with_tags, without_tags
from links.validation import normalise_target

from .base import ShlinkView, domain_named, flag, host_named, moment, paging, whole
from .problems import Problem, invalid_data, short_url_not_found
from .shapes import FOUND_BY, SHLINK_DEFAULTS, edition, non_unique_slug, refused, short_url, slug_taken

# Shlink's orderBy fields, as clicks.selectors.link_search sorts.
ORDER_FIELDS = {
    "dateCreated": "created_at",
    "shortCode": "slug",
    "longUrl": "url",
    "title": "title",
    "visits": "clicks",
    "nonBotVisits": "human_clicks",
}
# Shlink's shortest generated short code.
MIN_SHORT_CODE_LENGTH = 4


def link_of(request, short_code: str) -> Link:
    """The link of a short code on the domain of `?domain=` (the default
    domain without it), among those the request sees, with its click totals."""
    host = request.query_params.get("domain") or None
    try:
        domain = domain_named(host)
    except Problem:
        raise short_url_not_found(short_code, host) from None
    link = (
        clicks_selectors.with_click_totals(selectors.links_visible_to(request.user))
        .filter(domain=domain or domains.default_domain(), slug=short_code)
        .first()
    )
    if link is None:
        raise short_url_not_found(short_code, host)
    return link


def answer(request, link: Link) -> Response:
    """The link as Shlink's ShortUrl, read again with its totals."""
    return Response(
        short_url(clicks_selectors.with_click_totals(selectors.links_visible_to(request.user)).get(pk=link.pk))
    )


class ShortUrlsView(ShlinkView):
    def get(self, request, version):
        query = request.query_params
        pages = paging(query, default=10)
        order = self._ordering(query.get("orderBy"))
        start, end = moment(query.get("startDate"), "startDate"), moment(query.get("endDate"), "endDate")
        try:
            domain, served = domain_named(query.get("domain")), True
        except Problem:  # a domain Slingshot does not serve has no short URLs
            domain, served = None, False
        links = clicks_selectors.link_search(
            user=request.user,
            query=query.get("searchTerm", ""),
            domain=domain,
            created_after=start,
            created_before=end + timedelta(microseconds=1) if end else None,
            ordering=order,
        )
        if not served:
            links = links.none()
        links = with_tags(links, self._tags(query, "tags"), every=self._mode(query, "tagsMode"))
        links = without_tags(links, self._tags(query, "excludeTags"), every=self._mode(query, "excludeTagsMode"))
        if flag(query.get("excludePastValidUntil"), "excludePastValidUntil"):
            links = links.exclude(expires_at__lte=timezone.now())
        if flag(query.get("excludeMaxVisitsReached"), "excludeMaxVisitsReached"):
            links = links.exclude(pk__in=self._past_limit(links))
        total = links.count()
        page = list(links[pages.offset : pages.offset + pages.per_page])
        return Response(
            {"shortUrls": {"data": [short_url(link) for link in page], "pagination": pages.of(total, len(page))}}
        )

    @staticmethod
    def _tags(query, name: str) -> list[str]:
        return [tag for tag in [*query.getlist(name + "[]"), *query.getlist(name)] if tag]

    @staticmethod
    def _mode(query, name: str) -> bool:
        mode = query.get(name) or "any"
        if mode not in ("any", "all"):
            raise invalid_data({name: ["Use any or all."]})
        return mode == "all"

    @staticmethod
    def _ordering(value: str | None) -> str:
        if not value:
            return "-created_at"
        field, _, direction = value.partition("-")
        if field not in ORDER_FIELDS or direction.upper() not in ("", "ASC", "DESC"):
            fields = ", ".join(f"{name}-ASC, {name}-DESC" for name in ORDER_FIELDS)
            raise invalid_data({"orderBy": [f"Order by one of {fields}."]})
        return ("-" if direction.upper() == "DESC" else "") + ORDER_FIELDS[field]

    @staticmethod
    def _past_limit(links) -> list[int]:
        """The links that have had every visit they were made for, as
        links.selectors.link_state tells it (the edge's counters)."""
        past = selectors.past_limit(links)
        if past is None:
            raise Problem(503, None, "Service Unavailable", "The visit counters cannot be read just now; try again.")
        return past

    def post(self, request, version):
        body = self.body()
        if "longUrl" not in body:
            raise invalid_data({"longUrl": ["A long URL is required."]})
        values = {**SHLINK_DEFAULTS, **edition(body)}
        if body.get("pathPrefix"):
            raise invalid_data({"pathPrefix": ["Slingshot's short codes are one path segment: no prefix."]})
        slug = body.get("customSlug") or None
        if slug is not None and not isinstance(slug, str):
            raise invalid_data({"customSlug": ["Enter a string."]})
        length = (
            None
            if slug
            else whole(
                body.get("shortCodeLength"), "shortCodeLength", least=MIN_SHORT_CODE_LENGTH, most=slugs.MAX_LENGTH
            )
        )
        named = body.get("domain") or None
        if named is not None and not isinstance(named, str):
            raise invalid_data({"domain": ["Enter a host name as a string."]})
        host = host_named(named) if named else None
        if flag(body.get("findIfExists"), "findIfExists"):
            found = self._existing(request, values, slug, host)
            if found is not None:
                return Response(short_url(found))
        admit_creation(owner=request.user, token=request.auth)
        try:
            with transaction.atomic():
                domain = self._domain_to_create_on(request, host)
                fields = LinkFields(slug=slug, domain=domain, **values)
                link = services.link_create(owner=request.user, fields=fields, slug_length=length)
        except DjangoValidationError as exc:
            if slug_taken(exc):
                raise non_unique_slug(slug, named) from None
            raise refused(exc) from None
        return answer(request, link)

    @staticmethod
    def _domain_to_create_on(request, host: str | None) -> Domain | None:
        """The domain of `host` (None: the default domain's); one Slingshot
        does not serve yet is added, as Shlink adds it, for a person who
        may add domains (links.domains.manages_domains)."""
        if host is None:
            return None
        try:
            return domains.domain_for_host(host)
        except Domain.DoesNotExist:
            pass
        if not domains.manages_domains(request.user):
            raise invalid_data(
                {
                    "domain": [
                        f"Slingshot does not serve {host} yet, and only staff may add domains (an API key of theirs)."
                    ]
                }
            )
        try:
            return domains.domain_create(host=host)
        except DjangoValidationError as exc:  # of the domain's host, Shlink's `domain`
            raise invalid_data({"domain": exc.messages}) from None

    @staticmethod
    def _existing(request, values: dict, slug: str | None, host: str | None) -> Link | None:
        """findIfExists: the newest link the request sees with the same long
        URL, and the same slug, domain, tags, validity and visit limit of
        those given."""
        try:
            url = normalise_target(values["url"])
            domain = domains.domain_for_host(host)
        except (DjangoValidationError, Domain.DoesNotExist):
            return None  # nothing can match: the create says why, or adds the domain
        links = clicks_selectors.with_click_totals(selectors.links_visible_to(request.user)).filter(
            url=url, domain=domain
        )
        if slug:
            links = links.filter(slug=slug)
        for option in FOUND_BY:
            if values.get(option) is not None:
                links = links.filter(**{option: values[option]})
        if values.get("tags"):
            links = links.filter(tags__contains=values["tags"], tags__contained_by=values["tags"])
        return links.order_by("-created_at", "-pk").first()


class ShortUrlView(ShlinkView):
    def get(self, request, version, short_code):
        return Response(short_url(link_of(request, short_code)))

    def patch(self, request, version, short_code):
        link = link_of(request, short_code)
        changes = edition(self.body())
        try:
            services.link_update(link=link, actor=request.user, **changes)
        except DjangoValidationError as exc:
            raise refused(exc) from None
        return answer(request, link)

    def delete(self, request, version, short_code):
        services.link_delete(link=link_of(request, short_code), actor=request.user)
        return Response(status=204)
