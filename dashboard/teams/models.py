from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    """What a member may do in a team; each role may do all that the one
    before it may (teams/access.py has the rule)."""

    VIEWER = "viewer", "viewer: reads links and reports"
    EDITOR = "editor", "editor: also creates, changes, disables and deletes links"
    ADMIN = "admin", "admin: also manages members and the team's tokens"


# What a team keeps of a visitor's address with each click (clicks/enrichment.py);
# '' leaves it to the service's CLICK_IP_PRIVACY.
class IpStorage(models.TextChoices):
    DEFAULT = "", "as the service keeps them (CLICK_IP_PRIVACY)"
    ANONYMISE = "anonymise", "anonymised (IPv4 /24, IPv6 /48)"
    FULL = "full", "whole"
    NONE = "none", "not at all"


# The longest a team may ask visits to be kept for; longer is keeping them.
RETENTION_DAYS_MAX = 3650
# The shortest while clicks are stored in ClickHouse: the days the
# accounting compares (clicks/accounting.py, MAX_HOURS), which a purge
# there must not reach into (clicks/clickhouse_retention.py).
RETENTION_DAYS_MIN_CLICKHOUSE = 8


class Team(models.Model):
    """A group of people who manage links together; every link belongs to
    one. Each person has a personal team (`personal_for`), made with them
    (teams/signals.py). Its tables are in sql/teams.sql."""

    name = models.CharField(max_length=100)
    personal_for = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="personal_team"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Its members sign in with single sign-on or a second factor before
    # they see anything (accounts/second_factor.py).
    require_second_factor = models.BooleanField(default=False, db_default=False)
    # Suspended by the service's staff (moderation/): its links stop, its
    # tokens stop, its members reach it no more; None while it is not.
    suspended_at = models.DateTimeField(null=True, blank=True)
    # Its raw clicks older than this many days are deleted
    # (clicks/retention.py); None keeps them.
    visit_retention_days = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(RETENTION_DAYS_MAX)],
        verbose_name="delete visits older than (days)",
        help_text="Empty keeps them.",
    )
    ip_storage = models.CharField(
        max_length=9,
        blank=True,
        choices=IpStorage.choices,
        default=IpStorage.DEFAULT,
        db_default=IpStorage.DEFAULT,
        verbose_name="visitors' addresses kept",
    )

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(visit_retention_days__gte=1), name="team_retention_positive"),
            models.CheckConstraint(condition=models.Q(ip_storage__in=IpStorage.values), name="team_ip_storage_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def ip_storage_in_effect(self) -> str:
        """What is kept of its visitors' addresses: its own choice, else the service's."""
        return self.ip_storage or settings.CLICK_IP_PRIVACY


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    # Indexed by membership_once, which starts with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", db_index=False
    )
    role = models.CharField(max_length=6, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)
    # Given by the person's groups at the OpenID provider (teams/groups.py),
    # which change it at each sign-in; False: given by hand, and kept.
    via_groups = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["team", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "team"], name="membership_once"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class GroupRole(models.Model):
    """A role in a team for the members of a group at the OpenID provider
    (teams/groups.py), set by the team's admins on its People page. Its
    table is made by migration 0004 (sql/teams.sql)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="group_roles", db_index=False)
    group = models.CharField(max_length=200)
    role = models.CharField(max_length=6, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "group"]
        constraints = [
            models.UniqueConstraint(fields=["team", "group"], name="group_role_once"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="group_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.group}: {self.role} in {self.team}"


class Action(models.TextChoices):
    TEAM_CREATED = "team.created", "created the team"
    TEAM_RENAMED = "team.renamed", "renamed the team"
    TEAM_SECOND_FACTOR = "team.second_factor", "changed whether members need a second factor"
    TEAM_RETENTION = "team.retention", "changed how long visits are kept"
    TEAM_IP_STORAGE = "team.ip_storage", "changed what is kept of visitors' addresses"
    VISITS_PURGED = "team.visits_purged", "deleted visits past the team's retention"
    LINK_CREATED = "link.created", "created a link"
    LINK_CHANGED = "link.changed", "changed a link"
    LINK_DISABLED = "link.disabled", "disabled a link"
    LINK_ENABLED = "link.enabled", "enabled a link"
    LINK_DELETED = "link.deleted", "deleted a link"
    LINK_VISITS_DELETED = "link.visits_deleted", "deleted a link's visits"
    MEMBER_ADDED = "member.added", "added a member"
    MEMBER_CHANGED = "member.changed", "changed a member's role"
    MEMBER_REMOVED = "member.removed", "removed a member"
    TOKEN_CREATED = "token.created", "created an API token"
    TOKEN_REVOKED = "token.revoked", "revoked an API token"
    LINK_BLOCKED = "link.blocked", "stopped a link (staff)"
    LINK_UNBLOCKED = "link.unblocked", "let a stopped link go on (staff)"
    TEAM_SUSPENDED = "team.suspended", "suspended the team (staff)"
    TEAM_UNSUSPENDED = "team.unsuspended", "lifted the team's suspension (staff)"
    MEMBER_SUSPENDED = "member.suspended", "suspended a person (staff)"
    MEMBER_UNSUSPENDED = "member.unsuspended", "lifted a person's suspension (staff)"
    UTM_TEMPLATE_CREATED = "utm_template.created", "made a UTM template"
    UTM_TEMPLATE_CHANGED = "utm_template.changed", "changed a UTM template"
    UTM_TEMPLATE_DELETED = "utm_template.deleted", "deleted a UTM template"


class AuditEntry(models.Model):
    """Who did what to a team's name, links, members or tokens, and when; written
    in the same transaction as the change (teams/audit.py). The link is kept
    as its id and slug, not a foreign key, so its entries outlive it; a
    team's entries go with the team (teams.services.team_delete logs it)."""

    id = models.BigAutoField(primary_key=True)
    # Indexed by audit_team_newest, which starts with it.
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit_entries", db_index=False)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)  # as it was; '' for the system
    action = models.CharField(max_length=20, choices=Action.choices)
    link_id = models.BigIntegerField(null=True)
    slug = models.CharField(max_length=64, blank=True)
    subject = models.CharField(max_length=200, blank=True)  # a member's user name, a token's name
    changes = models.JSONField(default=dict)  # {field: [before, after]}
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["team", "-id"], name="audit_team_newest")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor_name or 'system'} {self.action} {self.slug or self.subject}".strip()


class Suspension(models.Model):
    """A person or a team suspended by the service's staff (moderation/),
    and when it was lifted: the person's own links and tokens stop and they
    cannot sign in (is_active); a team's links and tokens stop
    (Team.suspended_at). Kept once lifted, as the record of it. Its table is
    in sql/teams.sql."""

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="suspensions"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="suspensions")
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=True, team__isnull=False)
                | models.Q(user__isnull=False, team__isnull=True),
                name="suspension_one_subject",
            )
        ]
        indexes = [
            models.Index(fields=["user"], condition=models.Q(lifted_at__isnull=True), name="suspension_user_active"),
        ]

    def __str__(self) -> str:
        return f"suspension of {self.user or self.team}"


def suspended(user) -> bool:
    """Whether the staff suspended the person (and have not lifted it): no
    other door makes them active again (accounts/, scim/)."""
    return user.pk is not None and Suspension.objects.filter(user_id=user.pk, lifted_at__isnull=True).exists()
