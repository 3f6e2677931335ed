from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from .signals import give_new_user_a_personal_team

        post_save.connect(give_new_user_a_personal_team, sender=get_user_model(), dispatch_uid="teams.personal_team")
