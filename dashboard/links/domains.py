"""Domains: the host names the edge serves links on. Reads and writes both
live here, small as they are; every write is published through the outbox
like a link change (links/publishing.py), so the edge learns of a new
domain, its redirects and its robots.txt within a second."""

import functools

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, IntegrityError, transaction
from django.db.models import Count, QuerySet

from .models import Domain
from .outbox import publish_domain
from .validation import default_host, domain_host, forget_domain_hosts

DOMAIN_FIELDS = frozenset(
    {"root_url", "not_found_url", "expired_url", "https_redirect", "apple_app_site_association", "assetlinks"}
)


class DomainInUse(Exception):
    """A domain that links use, or the default domain, cannot be removed."""


def manages_domains(user: AbstractBaseUser) -> bool:
    """Adding, changing and removing domains: staff and superusers."""
    return bool(user and user.is_active and (user.is_staff or user.is_superuser))


# The id of the default domain's row, by host, once a transaction that
# found or made it has committed: every link made without a domain asks for
# it. The row is never removed (domain_delete) and its host never changes,
# so a process may keep the id; one made in a transaction that rolled back
# is never kept, and a row deleted anyway is forgotten (forget_default_domain).
_default_domain_ids: dict[str, int] = {}


def forget_default_domain(**_) -> None:
    """Clears the kept id: on Domain's post_delete (links/apps.py), and
    between tests, which empty the tables."""
    _default_domain_ids.clear()


def default_domain() -> Domain:
    """The default domain's row (the host of EDGE_BASE_URL), made on first
    use. Once known to this process, with only its id and host loaded: the
    other fields are read when asked for, so they are never stale."""
    host = default_host()
    if (pk := _default_domain_ids.get(host)) is not None:
        return Domain.from_db(DEFAULT_DB_ALIAS, ["id", "host"], [pk, host])
    domain = Domain.objects.filter(host=host).first()
    if domain is None:
        try:
            with transaction.atomic():
                domain = Domain.objects.create(host=host)
                publish_domain(host)
        except IntegrityError:  # made meanwhile by another request
            domain = Domain.objects.get(host=host)
    transaction.on_commit(functools.partial(_default_domain_ids.__setitem__, host, domain.pk))
    return domain


def domain_list() -> QuerySet[Domain]:
    """Every domain with the number of its links (`link_count`); everyone
    signed in may read them, to choose one for a link."""
    default_domain()
    return Domain.objects.annotate(link_count=Count("links")).order_by("host")


def domain_for_host(host: str | None) -> Domain:
    """The domain of a host as people write it (any case, IDN or punycode);
    the default domain for None, "" or its host (which may be an address,
    as in a local stack's EDGE_BASE_URL). Raises Domain.DoesNotExist."""
    try:
        host = domain_host(host)
        if host == default_host():
            return default_domain()
        return Domain.objects.get(host=host)
    except ValidationError:
        raise Domain.DoesNotExist(f"no domain {host!r}") from None


@transaction.atomic
def domain_create(*, host: str, **options) -> Domain:
    """A new domain; `options` are DOMAIN_FIELDS' (TypeError for another)."""
    unknown = set(options) - DOMAIN_FIELDS
    if unknown:
        raise TypeError("not settable: " + ", ".join(sorted(unknown)))
    domain = Domain(host=host, **options)
    domain.full_clean(validate_unique=False)
    if Domain.objects.filter(host=domain.host).exists():
        raise ValidationError({"host": ValidationError("This domain is there already.", code="unique")})
    try:
        with transaction.atomic():
            domain.save()
    except IntegrityError:
        raise ValidationError({"host": ValidationError("This domain is there already.", code="unique")}) from None
    publish_domain(domain.host)
    transaction.on_commit(forget_domain_hosts)
    return domain


@transaction.atomic
def domain_update(*, domain: Domain, **changes) -> Domain:
    unknown = set(changes) - DOMAIN_FIELDS
    if unknown:
        raise TypeError("not editable: " + ", ".join(sorted(unknown)))
    for name, value in changes.items():
        setattr(domain, name, value)
    domain.full_clean(validate_unique=False)
    domain.save(update_fields=list(changes))
    publish_domain(domain.host)
    return domain


@transaction.atomic
def domain_delete(*, domain: Domain) -> None:
    """Removes a domain no link uses; the default domain stays. Raises
    DomainInUse otherwise: its links are to be moved or deleted first."""
    domain = Domain.objects.select_for_update().get(pk=domain.pk)
    if domain.is_default:
        raise DomainInUse("The default domain (the host of EDGE_BASE_URL) cannot be removed.")
    count = domain.links.count()
    if count:
        raise DomainInUse(
            f"{count} link{'s' if count != 1 else ''} use{'s' if count == 1 else ''} {domain.host}: "
            "move them to another domain or delete them first."
        )
    host = domain.host
    domain.delete()
    publish_domain(host)
    transaction.on_commit(forget_domain_hosts)
