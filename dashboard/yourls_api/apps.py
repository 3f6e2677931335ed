from django.apps import AppConfig


class YourlsApiConfig(AppConfig):
    name = "yourls_api"
    verbose_name = "YOURLS API"
