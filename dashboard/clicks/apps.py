from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"
