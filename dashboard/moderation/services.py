"""What the service's staff do about abuse, each step in the teams' audit
log and each undone by its opposite: a link stopped (the edge answers 451
with the staff's words) and let go on; a destination domain banned (on the
blocklist "staff bans", every link to it flagged as listed) and unbanned; a
person or a team suspended (their links stop, their tokens stop, they reach
nothing) and let back; a report dismissed or opened again.

A link's stop says what it is for (Link.blocked_for): the link itself, its
team's suspension or its owner's, so that lifting one never lets go what
another still stops (_settle)."""

import functools
import operator
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from accounts.services import end_sessions
from links.flags import flag_listed_links
from links.models import OTHER_TARGETS, Link
from links.outbox import publish_link
from links.validation import split_host
from screening import screen
from screening.formats import domain_of
from screening.services import store_bans
from teams.audit import record
from teams.models import Action, Suspension, Team

from .models import Ban, Report, Status


def _words(words: str) -> str:
    return (words or "").strip()[:500]


def _settle(links: QuerySet[Link]) -> int:
    """Sets each link's stop from what stops it now, its own first, then its
    team's suspension, then its owner's, and publishes those that changed.
    Returns how many changed."""
    now, changed = timezone.now(), 0
    suspended_owners = set(
        Suspension.objects.filter(lifted_at__isnull=True, user__isnull=False).values_list("user_id", flat=True)
    )
    for link in links.select_related("domain", "team").order_by("pk"):
        if link.blocked_for == "link":
            continue
        if link.team.suspended_at is not None:
            stop = "team"
        elif link.owner_id in suspended_owners:
            stop = "owner"
        else:
            stop = ""
        if stop == link.blocked_for:
            continue
        link.blocked_for = stop
        link.blocked_at = now if stop else None
        link.blocked = settings.MODERATION_BLOCKED_TEXT if stop else ""
        link.save(update_fields=["blocked_for", "blocked_at", "blocked"])
        publish_link(link.domain.host, link.slug)
        changed += 1
    return changed


def _handled(report: Report | None, *, actor: AbstractBaseUser, outcome: str, status: str = Status.ACTED) -> None:
    if report is None:
        return
    report.status, report.outcome = status, outcome[:200]
    report.handled_by, report.handled_at = actor, timezone.now()
    report.save(update_fields=["status", "outcome", "handled_by", "handled_at"])


@transaction.atomic
def link_block(*, link: Link, actor: AbstractBaseUser, words: str = "", report: Report | None = None) -> Link:
    """Stops the link: the edge answers 451 with `words` (or
    MODERATION_BLOCKED_TEXT, or its page's own)."""
    link.blocked_for, link.blocked_at, link.blocked = "link", timezone.now(), _words(words)
    link.save(update_fields=["blocked_for", "blocked_at", "blocked"])
    publish_link(link.domain.host, link.slug)
    record(
        team_id=link.team_id,
        actor=actor,
        action=Action.LINK_BLOCKED,
        link_id=link.pk,
        slug=link.slug,
        changes={"blocked": [None, link.blocked or "(the page's own words)"]},
    )
    _handled(report, actor=actor, outcome="stopped the link")
    return link


@transaction.atomic
def link_unblock(*, link: Link, actor: AbstractBaseUser) -> Link:
    """Lets a link the staff stopped go on (unless its team or owner is suspended)."""
    if link.blocked_for == "link":
        link.blocked_for, link.blocked_at, link.blocked = "", None, ""
        link.save(update_fields=["blocked_for", "blocked_at", "blocked"])
        _settle(Link.objects.filter(pk=link.pk))
        publish_link(link.domain.host, link.slug)
        record(team_id=link.team_id, actor=actor, action=Action.LINK_UNBLOCKED, link_id=link.pk, slug=link.slug)
    link.refresh_from_db()
    return link


def ban_domain_of(text: str) -> str:
    """The domain a ban names: a domain, or the host of a URL; ValidationError if neither."""
    text = (text or "").strip().lower()
    if "://" in text:
        text = split_host(text) or ""
    domain = domain_of(text)
    if not domain or "." not in domain:
        raise ValidationError("Give a domain name, such as phish.example, or a URL on it.", code="invalid")
    return domain


def _links_to(domain: str) -> QuerySet[Link]:
    """The links that may lead to the domain or a subdomain (a destination,
    rule or split naming it); flag_listed_links looks each up exactly."""
    pattern = re.escape(domain)
    texts = {"rules_text": Cast("rules", TextField()), "split_text": Cast("split", TextField())}
    names = ("url", *OTHER_TARGETS, "rules_text", "split_text")
    return Link.objects.annotate(**texts).filter(
        functools.reduce(operator.or_, (Q(**{f"{name}__iregex": pattern}) for name in names))
    )


def _store_bans() -> None:
    store_bans(list(Ban.objects.values_list("domain", flat=True)))


@transaction.atomic
def domain_ban(*, domain: str, actor: AbstractBaseUser, reason: str = "", report: Report | None = None) -> Ban:
    """Puts the domain on the blocklist "staff bans": no link to it may be
    made, and every link to it is flagged (the edge answers 451, or warns,
    as SCREEN_ACTION says)."""
    domain = ban_domain_of(domain)
    ban, _ = Ban.objects.get_or_create(domain=domain, defaults={"reason": _words(reason), "created_by": actor})
    _store_bans()
    flagged, _ = flag_listed_links(screen.current(), among=_links_to(domain))
    for team_id, link_id, slug in _links_to(domain).exclude(listed="").values_list("team_id", "pk", "slug"):
        record(
            team_id=team_id,
            actor=actor,
            action=Action.LINK_BLOCKED,
            link_id=link_id,
            slug=slug,
            changes={"listed": [None, f"{domain}: staff bans"]},
        )
    _handled(report, actor=actor, outcome=f"banned {domain} ({flagged} links flagged)")
    return ban


@transaction.atomic
def domain_unban(*, domain: str, actor: AbstractBaseUser) -> int:
    """Takes the domain off "staff bans"; the links to it are looked up
    again (another list may still have them). Returns how many were cleared."""
    domain = ban_domain_of(domain)
    Ban.objects.filter(domain=domain).delete()
    _store_bans()
    candidates = _links_to(domain)
    _, cleared = flag_listed_links(screen.current(), among=candidates)
    for team_id, link_id, slug in candidates.filter(listed="").values_list("team_id", "pk", "slug"):
        record(team_id=team_id, actor=actor, action=Action.LINK_UNBLOCKED, link_id=link_id, slug=slug)
    return cleared


@transaction.atomic
def user_suspend(*, user, actor: AbstractBaseUser, reason: str = "", report: Report | None = None) -> Suspension:
    """The person cannot sign in (is_active off, their sessions ended),
    their tokens stop, and the links they own stop."""
    if user.pk == actor.pk:
        raise ValidationError("You cannot suspend yourself.", code="self")
    suspension = Suspension.objects.filter(user=user, lifted_at__isnull=True).first()
    if suspension is None:
        suspension = Suspension.objects.create(user=user, reason=_words(reason), created_by=actor)
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    end_sessions(user)
    stopped = _settle(Link.objects.filter(owner=user))
    for team_id in user.memberships.values_list("team_id", flat=True):
        record(team_id=team_id, actor=actor, action=Action.MEMBER_SUSPENDED, subject=user.get_username())
    _handled(report, actor=actor, outcome=f"suspended {user.get_username()} ({stopped} links stopped)")
    return suspension


@transaction.atomic
def user_unsuspend(*, user, actor: AbstractBaseUser) -> int:
    """Lets the person back: they may sign in, and their links go on (those
    nothing else stops). Returns how many links went on."""
    Suspension.objects.filter(user=user, lifted_at__isnull=True).update(lifted_at=timezone.now())
    get_user_model().objects.filter(pk=user.pk).update(is_active=True)
    went_on = _settle(Link.objects.filter(owner=user))
    for team_id in user.memberships.values_list("team_id", flat=True):
        record(team_id=team_id, actor=actor, action=Action.MEMBER_UNSUSPENDED, subject=user.get_username())
    return went_on


@transaction.atomic
def team_suspend(*, team: Team, actor: AbstractBaseUser, reason: str = "", report: Report | None = None) -> Suspension:
    """The team's links and tokens stop, and its members reach it no more."""
    suspension = Suspension.objects.filter(team=team, lifted_at__isnull=True).first()
    if suspension is None:
        suspension = Suspension.objects.create(team=team, reason=_words(reason), created_by=actor)
    if team.suspended_at is None:
        team.suspended_at = suspension.created_at
        team.save(update_fields=["suspended_at"])
    stopped = _settle(Link.objects.filter(team=team))
    record(team_id=team.pk, actor=actor, action=Action.TEAM_SUSPENDED, subject=team.name)
    _handled(report, actor=actor, outcome=f"suspended the team {team.name} ({stopped} links stopped)")
    return suspension


@transaction.atomic
def team_unsuspend(*, team: Team, actor: AbstractBaseUser) -> int:
    Suspension.objects.filter(team=team, lifted_at__isnull=True).update(lifted_at=timezone.now())
    team.suspended_at = None
    team.save(update_fields=["suspended_at"])
    went_on = _settle(Link.objects.filter(team=team))
    record(team_id=team.pk, actor=actor, action=Action.TEAM_UNSUSPENDED, subject=team.name)
    return went_on


def report_dismiss(*, report: Report, actor: AbstractBaseUser) -> Report:
    _handled(report, actor=actor, outcome="dismissed", status=Status.DISMISSED)
    return report


def report_reopen(*, report: Report, actor: AbstractBaseUser) -> Report:
    report.status, report.outcome, report.handled_by, report.handled_at = Status.OPEN, "", None, None
    report.save(update_fields=["status", "outcome", "handled_by", "handled_at"])
    return report
