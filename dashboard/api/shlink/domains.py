"""/rest/v3/domains: the domains Slingshot serves, with their redirects,
changed by staff through links.domains as /api/v1/domains are.

Shlink has three redirects a domain; a Slingshot domain has two: `/`
(root_url, Shlink's baseUrlRedirect), and every other path that no link
serves (not_found_url), which are Shlink's invalidShortUrlRedirect and its
regular404Redirect both. So both read as not_found_url, and set together
they must agree."""

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework.response import Response

from links import domains
from links.models import Domain

from .base import ShlinkView, authority, host_named
from .problems import invalid_data

ROOT = "baseUrlRedirect"
NOT_FOUND = ("invalidShortUrlRedirect", "regular404Redirect")
FIELDS = {"root_url": ROOT, "not_found_url": NOT_FOUND[0]}


def redirects(domain: Domain) -> dict:
    return {
        ROOT: domain.root_url or None,
        "regular404Redirect": domain.not_found_url or None,
        "invalidShortUrlRedirect": domain.not_found_url or None,
    }


class DomainsView(ShlinkView):
    def get(self, request, version):
        listed = sorted(domains.domain_list(), key=lambda domain: (not domain.is_default, domain.host))
        data = [
            {"domain": authority(domain), "isDefault": domain.is_default, "redirects": redirects(domain)}
            for domain in listed
        ]
        # The default domain's redirects fall back to the edge's EDGE_ROOT_URL
        # and EDGE_NOT_FOUND_URL, which the dashboard does not know.
        defaults = {ROOT: None, "regular404Redirect": None, "invalidShortUrlRedirect": None}
        return Response({"domains": {"data": data, "defaultRedirects": defaults}})


class DomainRedirectsView(ShlinkView):
    def patch(self, request, version):
        body = self.body()
        host = body.get("domain")
        if not isinstance(host, str) or not host:
            raise invalid_data({"domain": ["Give the domain's host."]})
        host = host_named(host)
        changes = self._changes(body)
        if not domains.manages_domains(request.user):
            raise PermissionDenied("Only staff change a domain's redirects.")
        try:
            with transaction.atomic():
                try:
                    domain = domains.domain_for_host(host)
                except Domain.DoesNotExist:  # Shlink adds a domain whose redirects are set
                    domain = domains.domain_create(host=host)
                domain = domains.domain_update(domain=domain, **changes)
        except DjangoValidationError as exc:
            errors = {FIELDS.get(name, "domain"): messages for name, messages in exc.message_dict.items()}
            raise invalid_data(errors) from None
        return Response(redirects(domain))

    @staticmethod
    def _changes(body: dict) -> dict[str, str]:
        for name in (ROOT, *NOT_FOUND):
            if body.get(name) is not None and not isinstance(body[name], str):
                raise invalid_data({name: ["Enter a URL as a string, or null for none."]})
        changes = {}
        if ROOT in body:
            changes["root_url"] = body[ROOT] or ""
        given = [name for name in NOT_FOUND if name in body]
        urls = {body[name] for name in given if body[name]}
        if len(urls) > 1:
            raise invalid_data(
                {
                    NOT_FOUND[1]: [
                        "Slingshot sends every path of a domain that no link serves to one redirect: "
                        "invalidShortUrlRedirect and regular404Redirect must be the same."
                    ]
                }
            )
        if given:
            changes["not_found_url"] = urls.pop() if urls else ""
        return changes
