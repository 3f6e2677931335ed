from django.apps import AppConfig


class ScimConfig(AppConfig):
    name = "scim"
