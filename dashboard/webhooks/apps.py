from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        # The events of the apps below, which know nothing of webhooks (events.py).
        from . import events

        events.connect()
