from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.sessions.models import Session
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from tokens.models import ApiToken

from .models import GeneratedPassword, Passkey, SessionUse


def users_for_management(*, search: str = "") -> QuerySet:
    """Every person (whose user name or e-mail address contains `search`,
    case aside), with how many teams they are in, by name."""
    people = get_user_model().objects.all()
    if search:
        people = people.filter(Q(username__icontains=search) | Q(email__icontains=search))
    return people.annotate(
        teams=Count("memberships"),
        second_factor=Exists(TOTPDevice.objects.filter(user=OuterRef("pk"), confirmed=True))
        | Exists(Passkey.objects.filter(user=OuterRef("pk"))),
    ).order_by("username")


def sessions_of(user: AbstractBaseUser) -> QuerySet[SessionUse]:
    """The person's sessions that have not ended, last used first."""
    alive = Session.objects.filter(expire_date__gt=timezone.now()).values("session_key")
    return SessionUse.objects.filter(user=user, session_key__in=alive).order_by("-last_used_at")


def tokens_of(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).select_related("team").order_by("-created_at")


def password_change_due(user: AbstractBaseUser) -> bool:
    """Whether the person still has the password Slingshot generated for
    them (accounts.models.GeneratedPassword); one query."""
    return GeneratedPassword.objects.filter(user_id=user.pk, password=user.password).exists()
