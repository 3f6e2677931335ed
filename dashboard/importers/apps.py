from django.apps import AppConfig


class ImportersConfig(AppConfig):
    name = "importers"
