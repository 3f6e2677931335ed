"""What a SCIM request does to Slingshot's people and their groups.

The protocol's resources are scim2-models' (validated on the way in as the
RFC's request contexts say, patched by its PatchOp, dumped with the
client's `attributes` and `excludedAttributes` on the way out); these
functions keep them:

- a User is a Django user (userName, name, primary e-mail and active
  mirrored into it) and a ScimUser beside it holding the resource as last
  written; every person but the superusers is a User here, so a provider
  finds the accounts that exist (`filter=userName eq "..."`) before it
  makes any. `active: false` deactivates the person: their sessions end at
  once, their API tokens are refused from the next request. DELETE
  deactivates them too and hides them from SCIM; their links and audit
  entries stay.
- a Group is a ScimGroup, its displayName the group that teams.GroupRole
  maps to a role: every change of its members makes theirs follow
  (teams.groups.follow_groups), before they ever sign in.
"""

import uuid
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from pydantic import ValidationError as PydanticError
from scim2_models import (
    Context,
    Error,
    Group,
    InvalidValueException,
    NotFoundException,
    PatchOp,
    SCIMException,
    UniquenessException,
    User,
)

from accounts.services import end_sessions
from teams.groups import follow_groups
from teams.models import suspended

from .models import ScimGroup, ScimMembership, ScimUser
from .selectors import groups_of

# Kept in ScimUser.resource: what the provider wrote, less what the server owns.
SERVER_OWNED = ("id", "meta", "groups", "password")


class BadRequest(SCIMException):
    """A payload scim2-models refused: its first error, as the RFC names it."""

    def __init__(self, error: Error):
        super().__init__(detail=error.detail)
        self.status, self.scim_type, self._error = error.status, error.scim_type or "", error

    def to_error(self) -> Error:
        return self._error


def _validated(model, payload, context: Context):
    try:
        return model.model_validate(payload, scim_ctx=context)
    except PydanticError as exc:
        raise BadRequest(Error.from_validation_errors(exc)[0]) from None


def _patched(model, payload: dict, current):
    """`current` (a resource of `model`) with the PatchOp `payload` applied, validated again."""
    operation = _validated(PatchOp[model], payload, Context.RESOURCE_PATCH_REQUEST)
    try:
        operation.patch(current)
    except PydanticError as exc:
        raise BadRequest(Error.from_validation_errors(exc)[0]) from None
    return _validated(model, current.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE), Context.DEFAULT)


def _kept(resource) -> dict:
    data = resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    for name in SERVER_OWNED:
        data.pop(name, None)
    return data


def scim_users():
    """The people SCIM sees: all but the superusers and those it deleted."""
    return (
        get_user_model()
        .objects.filter(is_superuser=False)
        .exclude(scim__deleted_at__isnull=False)
        .select_related("scim")
        .order_by("pk")
    )


def user_of(user_id: str):
    if not user_id.isdigit():
        raise NotFoundException(detail=f"No User {user_id}.")
    user = scim_users().filter(pk=int(user_id)).first()
    if user is None:
        raise NotFoundException(detail=f"No User {user_id}.")
    return user


def group_of(group_id: str) -> ScimGroup:
    try:
        group = ScimGroup.objects.filter(pk=uuid.UUID(group_id)).first()
    except ValueError:
        group = None
    if group is None:
        raise NotFoundException(detail=f"No Group {group_id}.")
    return group


def _mirror(user, resource: User) -> None:
    """Copies what Slingshot itself uses of the resource into the Django user."""
    user.username = resource.user_name
    name = resource.name
    user.first_name = ((name.given_name if name else None) or "")[:150]
    user.last_name = ((name.family_name if name else None) or "")[:150]
    emails = resource.emails or []
    primary = next((email for email in emails if email.primary), emails[0] if emails else None)
    user.email = (primary.value if primary and primary.value else "")[:254]
    # `active` left out is a person's default here: active (false deactivates
    # them). A person the staff suspended stays inactive whatever it says.
    user.is_active = resource.active is not False and not suspended(user)


def _taken(username: str, but=None) -> bool:
    others = get_user_model().objects.filter(username__iexact=username)
    return (others.exclude(pk=but.pk) if but is not None else others).exists()


@transaction.atomic
def user_create(payload: dict):
    resource = _validated(User, payload, Context.RESOURCE_CREATION_REQUEST)
    User_ = get_user_model()
    revived = (
        User_.objects.filter(username__iexact=resource.user_name, scim__deleted_at__isnull=False)
        .select_related("scim")
        .first()
    )
    if revived is None and _taken(resource.user_name):
        raise UniquenessException(detail=f"userName {resource.user_name!r} is taken.")
    user = revived or User_()
    if revived is None:
        user.set_unusable_password()
    user.is_active = True
    _mirror(user, resource)
    user.save()
    now = datetime.now(UTC)
    ScimUser.objects.update_or_create(
        user=user,
        defaults={
            "external_id": resource.external_id or "",
            "resource": _kept(resource),
            "created_at": now,
            "updated_at": now,
            "deleted_at": None,
        },
    )
    return user


def _replace(user, resource: User):
    if _taken(resource.user_name, but=user):
        raise UniquenessException(detail=f"userName {resource.user_name!r} is taken.")
    was_active = user.is_active
    _mirror(user, resource)
    user.save()
    ScimUser.objects.update_or_create(
        user=user,
        defaults={
            "external_id": resource.external_id or "",
            "resource": _kept(resource),
            "updated_at": datetime.now(UTC),
        },
    )
    if was_active and not user.is_active:
        end_sessions(user)
    return user


@transaction.atomic
def user_replace(user, payload: dict):
    resource = _validated(User, payload, Context.RESOURCE_REPLACEMENT_REQUEST)
    return _replace(user, resource)


@transaction.atomic
def user_patch(user, payload: dict, current: User):
    return _replace(user, _patched(User, payload, current))


@transaction.atomic
def user_delete(user) -> None:
    user.is_active = False
    user.save(update_fields=["is_active"])
    end_sessions(user)
    now = datetime.now(UTC)
    ScimUser.objects.update_or_create(user=user, defaults={"deleted_at": now, "updated_at": now})
    ScimMembership.objects.filter(user=user).delete()
    follow_groups(user=user, groups=[])


def _members(resource: Group) -> list:
    ids = []
    for member in resource.members or []:
        value = str(member.value or "")
        if not value.isdigit():
            raise InvalidValueException(detail=f"members: {value!r} is no User of this service.")
        ids.append(int(value))
    people = {user.pk: user for user in scim_users().filter(pk__in=ids)}
    missing = [value for value in ids if value not in people]
    if missing:
        raise InvalidValueException(detail=f"members: no User {missing[0]} here.")
    return list(people.values())


def _save_group(group: ScimGroup, resource: Group) -> ScimGroup:
    others = ScimGroup.objects.filter(display_name=resource.display_name)
    if group.pk:
        others = others.exclude(pk=group.pk)
    if others.exists():
        raise UniquenessException(detail=f"displayName {resource.display_name!r} is taken.")
    before = set(ScimMembership.objects.filter(group=group).values_list("user_id", flat=True)) if group.pk else set()
    renamed = bool(group.pk) and group.display_name != resource.display_name
    members = _members(resource)
    group.display_name = resource.display_name
    group.external_id = resource.external_id or ""
    group.resource = _kept(resource)  # members' display names too, shown back as given
    group.updated_at = datetime.now(UTC)
    group.save()
    after = {user.pk for user in members}
    ScimMembership.objects.filter(group=group).exclude(user_id__in=after).delete()
    ScimMembership.objects.bulk_create(
        [ScimMembership(group=group, user=user) for user in members if user.pk not in before],
        ignore_conflicts=True,
    )
    changed = (before ^ after) | (before | after if renamed else set())
    for user in get_user_model().objects.filter(pk__in=changed):
        follow_groups(user=user, groups=groups_of(user))
    return group


@transaction.atomic
def group_create(payload: dict) -> ScimGroup:
    resource = _validated(Group, payload, Context.RESOURCE_CREATION_REQUEST)
    return _save_group(ScimGroup(), resource)


@transaction.atomic
def group_replace(group: ScimGroup, payload: dict) -> ScimGroup:
    resource = _validated(Group, payload, Context.RESOURCE_REPLACEMENT_REQUEST)
    return _save_group(group, resource)


@transaction.atomic
def group_patch(group: ScimGroup, payload: dict, current: Group) -> ScimGroup:
    return _save_group(group, _patched(Group, payload, current))


@transaction.atomic
def group_delete(group: ScimGroup) -> None:
    members = list(get_user_model().objects.filter(scim_memberships__group=group))
    group.delete()
    for user in members:
        follow_groups(user=user, groups=groups_of(user))
