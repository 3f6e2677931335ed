"""People, managed from the dashboard by superusers (teams.access.manages_users):
made with an invitation link that expires, in which they choose their own
password; deactivated, which ends their sessions and stops their tokens
at once; given a link to set a new password. Every person made gets a
personal team (teams/signals.py)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sessions.models import Session
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from slingshot.text import describe, first_invisible
from teams import access
from teams.models import suspended

from .models import GeneratedPassword, SessionUse


def _require_manager(actor: AbstractBaseUser) -> None:
    if not access.manages_users(actor):
        raise PermissionDenied("Managing people takes a superuser, signed in.")


def password_link(user: AbstractBaseUser) -> str:
    """The path of a link in which `user` sets a password: it works once and
    expires after PASSWORD_RESET_TIMEOUT (Django's token generator, which
    the new password invalidates)."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("web:password-set", args=[uid, default_token_generator.make_token(user)])


def _check_username(model, username: str) -> None:
    """Refuses a name that Django would keep otherwise than typed (NFKC:
    a full-width A as A, a Hangul filler as another one), or that holds
    a character that cannot be seen: a person signs in by typing it."""
    if char := first_invisible(username):
        raise ValidationError(
            {"username": ValidationError("Holds %(char)s, which cannot be seen.", params={"char": describe(char)})}
        )
    kept = model.normalize_username(username)
    if kept != username:
        raise ValidationError(
            {"username": ValidationError("Would be kept as %(kept)s: type it that way.", params={"kept": kept})}
        )


@transaction.atomic
def user_invite(*, actor: AbstractBaseUser, username: str, email: str = "") -> tuple[AbstractBaseUser, str]:
    """A new active person without a password yet, and the path of their
    invitation link (password_link)."""
    _require_manager(actor)
    model = get_user_model()
    username = username.strip()
    _check_username(model, username)
    user = model(username=username, email=email.strip())
    user.set_unusable_password()
    user.full_clean(exclude=["password"])
    user.save()
    return user, password_link(user)


@transaction.atomic
def user_set_active(*, actor: AbstractBaseUser, user: AbstractBaseUser, active: bool) -> AbstractBaseUser:
    """Deactivating ends the person's sessions now; their tokens are refused
    from the next request (tokens.services.token_authenticate checks is_active)."""
    _require_manager(actor)
    if not active and user.pk == actor.pk:
        raise ValidationError("You cannot deactivate yourself.")
    if active and suspended(user):
        raise ValidationError("The staff suspended this person: lift the suspension in the moderation queue.")
    user.is_active = active
    user.save(update_fields=["is_active"])
    if not active:
        end_sessions(user)
    return user


def end_sessions(user: AbstractBaseUser) -> None:
    """Ends every signed-in session of the person now (a deactivation's)."""
    keys = SessionUse.objects.filter(user=user).values("session_key")
    Session.objects.filter(session_key__in=keys).delete()
    SessionUse.objects.filter(user=user).delete()


def user_password_reset(*, actor: AbstractBaseUser, user: AbstractBaseUser) -> str:
    """The path of a link in which the person sets a new password; their
    current password works until then."""
    _require_manager(actor)
    return password_link(user)


@transaction.atomic
def superuser_create_with_generated_password(*, username: str, password: str) -> AbstractBaseUser:
    """A superuser whose password was made up for them and shown once: the
    pages ask them for one of their own at their first sign-in
    (accounts.models.GeneratedPassword)."""
    user = get_user_model().objects.create_superuser(username=username, password=password)
    GeneratedPassword.objects.create(user=user, password=user.password)
    return user
