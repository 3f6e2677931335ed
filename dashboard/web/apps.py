from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "web"
    verbose_name = "Dashboard pages"

    def ready(self):
        from clicks.signals import batch_stored

        from . import (
            live,
            middleware,  # noqa: F401  its sign-in receiver keeps the person's zone in the session
        )

        batch_stored.connect(live.on_batch_stored, dispatch_uid="web.live")
