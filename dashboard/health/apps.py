from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "health"

    def ready(self) -> None:
        from links.signals import link_changed

        from .services import forget_other_destination

        link_changed.connect(forget_other_destination, dispatch_uid="health.forget_other_destination")
