"""Writes of the pages' own settings (web.Preferences)."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from clicks.calendar import zone_named

from .models import Preferences


@transaction.atomic
def preferences_set_time_zone(*, user: AbstractBaseUser, time_zone: str, only_if_unset: bool = False) -> Preferences:
    """Sets the person's time zone (an IANA name); with only_if_unset, only
    when they have none yet (the browser's guess never overrides a choice)."""
    try:
        zone_named(time_zone)
    except ValueError:
        raise ValidationError({"time_zone": f"{time_zone!r} is not a time zone this server knows."}) from None
    preferences, _ = Preferences.objects.select_for_update().get_or_create(user=user)
    if not (only_if_unset and preferences.time_zone):
        preferences.time_zone = time_zone
        preferences.save(update_fields=["time_zone"])
    return preferences
