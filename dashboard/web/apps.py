from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "web"
    verbose_name = "Dashboard pages"

    def ready(self):
        from . import middleware  # noqa: F401  its sign-in receiver keeps the person's zone in the session
