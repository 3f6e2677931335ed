"""Writes to links. Every change goes through here so it is validated the
same way, checked against the role of the person making it
(teams/access.py), written to the team's audit log, and published to Redis
once the transaction has committed."""

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from clicks.selectors import storable_offset
from clicks.services import clicks_delete_for_link
from teams import access, audit
from teams.models import Action, Role, Team
from teams.services import default_team

from . import slugs
from .domains import default_domain
from .models import Domain, Link
from .outbox import publish_domain, publish_link
from .unlocking import PASSWORD_MAX_LENGTH, hash_password

_SLUG_ATTEMPTS = 10

EDITABLE_FIELDS = frozenset(
    {
        "domain",
        "slug",
        "url",
        "title",
        "description",
        "tags",
        "redirect_status",
        "valid_since",
        "expires_at",
        "max_visits",
        "forward_query",
        "crawlable",
        "password",
        "is_active",
        "rules",
        "split",
        "team",
    }
)
# What a link's entries in the audit log show of it.
# The password shows as whether there is one, never its hash.
AUDITED_FIELDS = EDITABLE_FIELDS - {"team", "password"}
SLUG_TAKEN_MESSAGE = "Link with this Slug already exists."


def link_password(raw: str | None) -> str:
    """What Link.password keeps of a password a person chose: a salted hash
    (links.unlocking.hash_password), or "" for none (None or "")."""
    if not raw:
        return ""
    if not isinstance(raw, str) or len(raw) > PASSWORD_MAX_LENGTH:
        raise ValidationError({"password": f"A password is at most {PASSWORD_MAX_LENGTH} characters."})
    return hash_password(raw)


def _publish(link: Link, *, robots: bool = False) -> None:
    """Records the change of the link in the outbox, in the caller's
    transaction, and of its domain's robots.txt too when it lists the link
    (or did)."""
    publish_link(link.domain.host, link.slug)
    if robots:
        publish_domain(link.domain.host)


def _validate(link: Link) -> None:
    # Field validators, and an expiry PostgreSQL can store: the owner, the
    # team and the domain (rows) come from the caller, the check constraints
    # repeat the field validators, and a taken slug is found by the unique
    # index itself (_save), which a concurrent insert cannot race.
    link.full_clean(exclude=["owner", "team", "domain"], validate_unique=False, validate_constraints=False)
    for name in ("valid_since", "expires_at"):
        moment = getattr(link, name)
        if moment is not None and not storable_offset(moment):
            raise ValidationError({name: "The UTC offset must be within ±15:59."})
    if link.valid_since and link.expires_at and link.valid_since >= link.expires_at:
        raise ValidationError({"expires_at": "Must be after valid_since."})


def _save(link: Link, *, regenerate_slug: bool, **save_options) -> None:
    """Saves in a savepoint. A taken slug is a ValidationError, or, for a
    generated one, a new slug and another try."""
    for _ in range(_SLUG_ATTEMPTS if regenerate_slug else 1):
        try:
            with transaction.atomic():
                link.save(**save_options)
            return
        except IntegrityError:
            if not Link.objects.filter(domain=link.domain, slug=link.slug).exclude(pk=link.pk).exists():
                raise
            if not regenerate_slug:
                raise ValidationError({"slug": ValidationError(SLUG_TAKEN_MESSAGE, code="unique")}) from None
            link.slug = slugs.generate_slug(settings.LINK_SLUG_LENGTH)
    raise IntegrityError(f"could not find a free slug after {_SLUG_ATTEMPTS} attempts")


def link_validate(
    *,
    url: str,
    slug: str | None = None,
    domain: Domain | None = None,
    title: str = "",
    description: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    valid_since: datetime | None = None,
    expires_at: datetime | None = None,
    max_visits: int | None = None,
    forward_query: bool = False,
    crawlable: bool = False,
    password: str | None = None,
    is_active: bool = True,
    rules: list[dict] | None = None,
    split: list[dict] | None = None,
) -> Link:
    """The link link_create would save, unsaved and without an owner or a
    team, after the same checks; raises ValidationError with messages per field. Reads
    no table, so whether a slug is taken is left to the save (or to
    links.selectors.taken_slugs, asked beforehand for many slugs at once).
    Without a slug, one is generated; without a domain, the default domain's.
    A password is kept hashed (link_password)."""
    link = Link(
        domain=domain or default_domain(),
        slug=slug or slugs.generate_slug(settings.LINK_SLUG_LENGTH),
        url=url,
        title=title,
        description=description,
        tags=list(tags or []),
        redirect_status=redirect_status,
        valid_since=valid_since,
        expires_at=expires_at,
        max_visits=max_visits,
        forward_query=forward_query,
        crawlable=crawlable,
        password=link_password(password),
        is_active=is_active,
        rules=list(rules or []),
        split=list(split or []),
    )
    _validate(link)
    return link


def _team_to_create_in(owner: AbstractBaseUser, team: Team | None) -> Team:
    team = team or default_team(owner)
    access.require(owner, team.pk, Role.EDITOR, to="create links")
    return team


@transaction.atomic
def link_create(
    *,
    owner: AbstractBaseUser,
    url: str,
    team: Team | None = None,
    slug: str | None = None,
    domain: Domain | None = None,
    title: str = "",
    description: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    valid_since: datetime | None = None,
    expires_at: datetime | None = None,
    max_visits: int | None = None,
    forward_query: bool = False,
    crawlable: bool = False,
    password: str | None = None,
    is_active: bool = True,
    rules: list[dict] | None = None,
    split: list[dict] | None = None,
) -> Link:
    """A new link in `team` (by default teams.services.default_team), made by
    `owner`, who must be an editor there (PermissionDenied otherwise)."""
    return _create(
        owner=owner,
        team=_team_to_create_in(owner, team),
        url=url,
        slug=slug,
        domain=domain,
        title=title,
        description=description,
        tags=tags,
        redirect_status=redirect_status,
        valid_since=valid_since,
        expires_at=expires_at,
        max_visits=max_visits,
        forward_query=forward_query,
        crawlable=crawlable,
        password=password,
        is_active=is_active,
        rules=rules,
        split=split,
    )


@transaction.atomic
def _create(*, owner: AbstractBaseUser, team: Team, **fields) -> Link:
    link = link_validate(**fields)
    link.owner, link.team = owner, team
    _save(link, regenerate_slug=not fields.get("slug"))
    audit.record(
        team_id=team.pk,
        actor=owner,
        action=Action.LINK_CREATED,
        link_id=link.pk,
        slug=link.slug,
        changes=audit.changes_between({}, {name: getattr(link, name) for name in sorted(AUDITED_FIELDS)}),
    )
    _publish(link, robots=link.crawlable)
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
    *, owner: AbstractBaseUser, items: Iterable[Mapping[str, Any]], team: Team | None = None
) -> list[BulkResult]:
    """Creates a link for each item (link_create's arguments but the owner;
    an item without a team goes to `team`, by default
    teams.services.default_team), each in its own savepoint, so an item refused leaves the others
    be. One result per item, in their order; all the links commit together.
    The owner's role is looked up once per team."""
    results, teams, default = [], {}, default_domain()
    for arguments in items:
        arguments = dict(arguments)
        arguments["domain"] = arguments.get("domain") or default
        chosen = arguments.pop("team", None) or team
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
            link = _create(owner=owner, team=teams[key], **arguments)
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
    before = Link.objects.select_for_update().values(*AUDITED_FIELDS, "team_id", "password").get(pk=link.pk)
    before["team"] = before.pop("team_id")
    if actor is not None:
        access.require(actor, before["team"], Role.EDITOR, to="change links")
        if "team" in changes:
            access.require(actor, changes["team"].pk, Role.EDITOR, to="move links into a team")
    for name, value in changes.items():
        setattr(link, name, value)
    _validate(link)
    _save(link, regenerate_slug=False, update_fields=[*changes, "updated_at"])
    after = {name: getattr(link, name) for name in changes}
    if "password" in changes:  # whether there is one, never a hash
        had = before.pop("password")
        before["password"] = "set" if had else "none"
        after["password"] = ("replaced" if had else "set") if link.password else "none"
    changed = audit.changes_between(before, after)
    if changed:
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
        if before["crawlable"]:
            publish_domain(old_host)
    _publish(link, robots=link.crawlable or (before["crawlable"] and not moved))
    return link


@transaction.atomic
def link_delete(*, link: Link, actor: AbstractBaseUser | None = None) -> None:
    """Deletes the link with its clicks, rollups and totals; `actor` must be
    an editor of its team (None: the system). Deleting the row first waits
    for any import holding the link (importer.py), so that clicks it was
    storing go too. The audit log keeps the link's id and slug."""
    if actor is not None:
        access.require(actor, link.team_id, Role.EDITOR, to="delete links")
    slug, link_id, team_id = link.slug, link.pk, link.team_id
    link.delete()
    clicks_delete_for_link(link_id=link_id)
    audit.record(team_id=team_id, actor=actor, action=Action.LINK_DELETED, link_id=link_id, slug=slug)
    _publish(link, robots=link.crawlable)


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
