from django.apps import AppConfig


class ClicksConfig(AppConfig):
    name = "clicks"

    def ready(self) -> None:
        from links.signals import link_deleted, link_deleting

        from .services import clicks_delete_for_link, clicks_deletion_begin

        link_deleting.connect(clicks_deletion_begin, dispatch_uid="clicks' deletion takes its turn")
        link_deleted.connect(clicks_delete_for_link, dispatch_uid="clicks go with their link")
