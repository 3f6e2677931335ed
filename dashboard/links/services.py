"""Writes to links. Every change goes through here so it is validated the
same way, checked against the role of the person making it
(teams/access.py), written to the team's audit log, and published to Redis
once the transaction has committed."""

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from slingshot.inserts import insert
from teams import access, audit
from teams.models import Action, Role, Team
from teams.services import default_team

from . import slugs
from .domains import default_domain
from .fields import AUDITED, OPTION_NAMES, LinkFields, values_of
from .flags import check_lookups, prefetch_lookups
from .models import Domain, Link
from .outbox import publish_domain, publish_link
from .publishing import in_robots
from .signals import link_changed, link_deleted, link_deleting
from .unlocking import PASSWORD_MAX_LENGTH, hash_password

_SLUG_ATTEMPTS = 10

# What link_update changes: the options (links/fields.py), and the team.
EDITABLE_FIELDS = frozenset({*OPTION_NAMES, "team"})
SLUG_TAKEN_MESSAGE = "Link with this Slug already exists."


def link_password(raw: str | None) -> str:
    """What Link.password keeps of a password a person chose: a salted hash
    (links.unlocking.hash_password), or "" for none (None or "")."""
    if not raw:
        return ""
    if not isinstance(raw, str) or len(raw) > PASSWORD_MAX_LENGTH:
        raise ValidationError({"password": f"A password is at most {PASSWORD_MAX_LENGTH} characters."})
    return hash_password(raw)


def _publish(link: Link, *, robots: bool = False, made_or_deleted: bool = False) -> None:
    """Records the change of the link in the outbox, in the caller's
    transaction, and of its domain's robots.txt too when it lists the link
    (or did). `made_or_deleted`: the transaction inserted or deleted the
    link's row, so its value as committed is known here (publish_link)."""
    if made_or_deleted:
        publish_link(link.domain.host, link.slug, link if link.pk is not None else None)
    else:
        publish_link(link.domain.host, link.slug)
    if robots:
        publish_domain(link.domain.host)


def _validate(link: Link) -> None:
    # Field validators and Link.clean: the owner, the team and the domain
    # (rows) come from the caller, the check constraints repeat the field
    # validators, and a taken slug is found by the unique index itself
    # (_save), which a concurrent insert cannot race.
    link.full_clean(exclude=["owner", "team", "domain"], validate_unique=False, validate_constraints=False)
    check_lookups(link)


def _slug_taken() -> ValidationError:
    return ValidationError({"slug": ValidationError(SLUG_TAKEN_MESSAGE, code="unique")})


def _save(link: Link, **save_options) -> None:
    """Saves a link that exists, in a savepoint: a taken slug is a
    ValidationError."""
    try:
        with transaction.atomic():
            link.save(**save_options)
    except IntegrityError:
        if not Link.objects.filter(domain=link.domain, slug=link.slug).exclude(pk=link.pk).exists():
            raise
        raise _slug_taken() from None


def _insert(link: Link, *, regenerate_slug: bool, slug_length: int | None = None) -> None:
    """Inserts a new link as Model.save would. A taken slug is a
    ValidationError, or, for a generated one, a new slug (of `slug_length`,
    by default LINK_SLUG_LENGTH) and another try. A taken slug inserts
    nothing, so it needs no savepoint to leave the caller's transaction as
    it was (a refused item of a bulk create)."""
    for _ in range(_SLUG_ATTEMPTS if regenerate_slug else 1):
        if insert(link, on_conflict="ON CONFLICT ON CONSTRAINT link_domain_slug DO NOTHING"):
            return
        if not regenerate_slug:
            raise _slug_taken()
        link.slug = slugs.generate_slug(slug_length or settings.LINK_SLUG_LENGTH)
    raise IntegrityError(f"could not find a free slug after {_SLUG_ATTEMPTS} attempts")


def link_validate(link_fields: LinkFields, *, slug_length: int | None = None) -> Link:
    """The link link_create would save, unsaved and without an owner or a
    team, after the same checks; raises ValidationError with messages per
    field. Reads no table, so whether a slug is taken is left to the save
    (or to links.selectors.taken_slugs, asked beforehand for many slugs at
    once). Without a slug, one is generated; without a domain, the default
    domain's; a generated slug has `slug_length` characters (by default
    LINK_SLUG_LENGTH). A password is kept hashed (link_password)."""
    values = values_of(link_fields)
    values["domain"] = values["domain"] or default_domain()
    values["slug"] = values["slug"] or slugs.generate_slug(slug_length or settings.LINK_SLUG_LENGTH)
    values["password"] = link_password(values["password"])
    link = Link(**values)
    _validate(link)
    return link


def _team_to_create_in(owner: AbstractBaseUser, team: Team | None) -> Team:
    team = team or default_team(owner)
    access.require(owner, team.pk, Role.EDITOR, to="create links")
    return team


@transaction.atomic
def link_create(
    *, owner: AbstractBaseUser, fields: LinkFields, team: Team | None = None, slug_length: int | None = None
) -> Link:
    """A new link in `team` (by default teams.services.default_team), made by
    `owner`, who must be an editor there (PermissionDenied otherwise); a
    slug generated for it has `slug_length` characters (by default
    LINK_SLUG_LENGTH)."""
    return _create(owner=owner, team=_team_to_create_in(owner, team), link_fields=fields, slug_length=slug_length)


def _create(*, owner: AbstractBaseUser, team: Team, link_fields: LinkFields, slug_length: int | None = None) -> Link:
    # In the caller's transaction, without a savepoint of its own: what can
    # be refused (the checks, a taken slug) is refused before anything is
    # written or by an insert that inserts nothing (_insert), so a refused
    # item of a bulk create leaves the transaction as it was.
    link = link_validate(link_fields, slug_length=slug_length)
    link.owner, link.team = owner, team
    _insert(link, regenerate_slug=not link_fields.slug, slug_length=slug_length)
    audit.record(
        team_id=team.pk,
        actor=owner,
        action=Action.LINK_CREATED,
        link_id=link.pk,
        slug=link.slug,
        changes=audit.changes_between({}, {name: getattr(link, name) for name in sorted(AUDITED)}),
    )
    _publish(link, robots=in_robots(link), made_or_deleted=True)
    link_changed.send(sender=Link, link=link, event="created")
    return link


class Outcome(enum.StrEnum):
    CREATED = "created"
    INVALID = "invalid"
    SLUG_TAKEN = "slug_taken"
    FORBIDDEN = "forbidden"


@dataclass(frozen=True)
class BulkResult:
    outcome: Outcome
    link: Link | None = None  # the new link, when CREATED
    errors: dict[str, list[str]] = field(default_factory=dict)  # messages per field otherwise


@transaction.atomic
def link_bulk_create(
    *, owner: AbstractBaseUser, items: Iterable[tuple[LinkFields, Team | None]], team: Team | None = None
) -> list[BulkResult]:
    """Creates a link of each item's LinkFields in the item's team (None:
    `team`, by default teams.services.default_team). An item is refused
    before it writes anything (_create), so it leaves the others be. One
    result per item, in their order; all the links commit together. The
    owner's role is looked up once per team."""
    results, teams, default = [], {}, default_domain()
    items = list(items)
    prefetch_lookups([Link(**values_of(link_fields)) for link_fields, _ in items])
    for link_fields, chosen in items:
        if link_fields.domain is None:
            link_fields = replace(link_fields, domain=default)
        chosen = chosen or team
        key = chosen.pk if chosen else None
        try:
            if key not in teams:
                try:
                    teams[key] = _team_to_create_in(owner, chosen)
                except PermissionDenied as exc:
                    teams[key] = exc
            if isinstance(teams[key], PermissionDenied):
                results.append(BulkResult(outcome=Outcome.FORBIDDEN, errors={"team": [str(teams[key])]}))
                continue
            link = _create(owner=owner, team=teams[key], link_fields=link_fields)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD_ERRORS: exc.messages}
            taken = any(error.code == "unique" for error in getattr(exc, "error_dict", {}).get("slug", []))
            results.append(BulkResult(outcome=Outcome.SLUG_TAKEN if taken else Outcome.INVALID, errors=errors))
        else:
            results.append(BulkResult(outcome=Outcome.CREATED, link=link))
    return results


def _change_action(changes: Mapping[str, list]) -> Action:
    if set(changes) == {"is_active"}:
        return Action.LINK_ENABLED if changes["is_active"][1] else Action.LINK_DISABLED
    return Action.LINK_CHANGED


@transaction.atomic
def link_update(*, link: Link, actor: AbstractBaseUser | None = None, **changes) -> Link:
    """Changes the link's fields (EDITABLE_FIELDS). `password` is the new
    password in clear, or None or "" to remove it. `actor`, who makes the
    change, must be an editor of the link's team, and of the team it moves
    to (`team`); None is the system. The change goes into the audit log of
    the link's team, and of the team it left."""
    unknown = set(changes) - EDITABLE_FIELDS
    if unknown:
        raise TypeError("not editable: " + ", ".join(sorted(unknown)))
    if "password" in changes:
        changes["password"] = link_password(changes["password"])
    before = Link.objects.select_for_update().values(*AUDITED, "team_id", "password", "listed").get(pk=link.pk)
    before["team"] = before.pop("team_id")
    was_listed = before.pop("listed")
    if actor is not None:
        access.require(actor, before["team"], Role.EDITOR, to="change links")
        if "team" in changes:
            access.require(actor, changes["team"].pk, Role.EDITOR, to="move links into a team")
    for name, value in changes.items():
        setattr(link, name, value)
    _validate(link)
    # Its targets passed the lists just now: a flag of an earlier reading goes.
    cleared = ["listed"] if was_listed or link.listed else []
    link.listed = ""
    _save(link, update_fields=[*changes, *cleared, "updated_at"])
    after = {name: getattr(link, name) for name in changes}
    if "password" in changes:  # whether there is one, never a hash (fields.Option.audited)
        had = before.pop("password")
        before["password"] = "set" if had else "none"
        after["password"] = ("replaced" if had else "set") if link.password else "none"
    changed = audit.changes_between(before, after)
    if changed:
        link_changed.send(sender=Link, link=link, event="updated")
        for team_id in {before["team"], link.team_id}:
            audit.record(
                team_id=team_id,
                actor=actor,
                action=_change_action(changed),
                link_id=link.pk,
                slug=link.slug,
                changes=changed,
            )
    moved = (link.domain_id, link.slug) != (before["domain"], before["slug"])
    if moved:
        old_host = (
            link.domain.host
            if link.domain_id == before["domain"]
            else Domain.objects.values_list("host", flat=True).get(pk=before["domain"])
        )
        publish_link(old_host, before["slug"])
        if in_robots(before):
            publish_domain(old_host)
    _publish(link, robots=in_robots(link) or (in_robots(before) and not moved))
    return link


@transaction.atomic
def link_delete(*, link: Link, actor: AbstractBaseUser | None = None) -> None:
    """Deletes the link, and with it (links.signals.link_deleted) its clicks,
    rollups and totals; `actor` must be
    an editor of its team (None: the system). Deleting the row first waits
    for any import holding the link (importer.py), so that clicks it was
    storing go too. The audit log keeps the link's id and slug."""
    if actor is not None:
        access.require(actor, link.team_id, Role.EDITOR, to="delete links")
    slug, link_id, team_id = link.slug, link.pk, link.team_id
    link_changed.send(sender=Link, link=link, event="deleted")
    link_deleting.send(sender=Link, link_id=link_id)
    link.delete()
    link_deleted.send(sender=Link, link_id=link_id)
    audit.record(team_id=team_id, actor=actor, action=Action.LINK_DELETED, link_id=link_id, slug=slug)
    _publish(link, robots=in_robots(link), made_or_deleted=True)


BULK_ACTIONS = ("tag", "untag", "disable", "enable", "delete")


@transaction.atomic
def link_bulk_change(
    *, links: Iterable[Link], action: str, tag: str = "", actor: AbstractBaseUser | None = None
) -> int:
    """Tags, untags, disables, enables or deletes each link, through
    link_update and link_delete (so each change is checked against `actor`'s
    role, audited and published through the outbox like any other), all or
    none; returns how many links changed."""
    if action not in BULK_ACTIONS:
        raise ValueError(f"action must be one of {BULK_ACTIONS}, not {action!r}")
    if action in ("tag", "untag") and not tag:
        raise ValidationError({"tag": "Give the tag to add or take away."})
    changed = 0
    for link in links:
        if action == "delete":
            link_delete(link=link, actor=actor)
        elif action in ("disable", "enable"):
            if link.is_active == (action == "enable"):
                continue
            link_update(link=link, actor=actor, is_active=action == "enable")
        elif action == "tag":
            if tag in link.tags:
                continue
            link_update(link=link, actor=actor, tags=[*link.tags, tag])
        else:
            if tag not in link.tags:
                continue
            link_update(link=link, actor=actor, tags=[name for name in link.tags if name != tag])
        changed += 1
    return changed
