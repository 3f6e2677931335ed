"""Every problem of a link at once, for a form that shows them together
(web/link_views.py): the checks links.services makes when it saves, run
before it, without saving."""

import copy
from collections.abc import Mapping

from django.core.exceptions import ValidationError

from .domains import default_domain
from .fields import OPTION_NAMES
from .models import Link
from .services import SLUG_TAKEN_MESSAGE
from .unlocking import PASSWORD_MAX_LENGTH


def link_check(*, values: Mapping, link: Link | None = None) -> None:
    """Every problem, as a ValidationError with messages per field, of a
    link made of these option values (links/fields.py), or of `link`
    changed by them: the checks link_create and link_update make, a slug
    taken on its domain included, but no password hashed. An option left out
    of `values` (one the caller found wrong already, say) is not checked.
    Raises nothing when all is well; the save checks again (a slug may be
    taken meanwhile)."""
    candidate = Link(**values) if link is None else copy.copy(link)
    if link is not None:
        for name, value in values.items():
            setattr(candidate, name, value)
    errors: dict[str, list] = {}
    password = values.get("password")
    if password and (not isinstance(password, str) or len(password) > PASSWORD_MAX_LENGTH):
        errors["password"] = [f"A password is at most {PASSWORD_MAX_LENGTH} characters."]
    candidate.password = ""
    unchecked = [name for name in OPTION_NAMES if name not in values or name == "password"]
    try:
        candidate.full_clean(
            exclude=["owner", "team", "domain", *unchecked], validate_unique=False, validate_constraints=False
        )
    except ValidationError as exc:
        errors = exc.update_error_dict(errors)
    slug, domain = values.get("slug", link and link.slug), values.get("domain") or (link and link.domain)
    if slug and "slug" not in errors:
        others = Link.objects.filter(domain=domain or default_domain(), slug=slug)
        if link is not None:
            others = others.exclude(pk=link.pk)
        if others.exists():
            errors["slug"] = [ValidationError(SLUG_TAKEN_MESSAGE, code="unique")]
    if errors:
        raise ValidationError(errors)
