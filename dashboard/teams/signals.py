from django.db import transaction


def give_new_user_a_personal_team(sender, instance, created, raw=False, **kwargs):
    """Every person has a personal team from the moment they exist, however
    they were made: the dashboard, the admin, createsuperuser, ensure_admin."""
    if created and not raw:
        from .services import personal_team_create

        with transaction.atomic():
            personal_team_create(user=instance)
