from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"

    def ready(self) -> None:
        from links.signals import link_deleted

        from .services import clicks_delete_for_link

        link_deleted.connect(clicks_delete_for_link, dispatch_uid="clicks go with their link")
