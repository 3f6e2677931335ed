from django.apps import AppConfig


class LinksConfig(AppConfig):
    name = "links"

    def ready(self):
        from django.db.models.signals import post_delete

        from .domains import forget_default_domain
        from .models import Domain

        post_delete.connect(forget_default_domain, sender=Domain, dispatch_uid="links.forget_default_domain")
