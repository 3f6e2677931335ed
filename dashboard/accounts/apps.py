from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from django.contrib.auth.signals import user_logged_in

        from .middleware import record_sign_in

        user_logged_in.connect(record_sign_in, dispatch_uid="accounts.record_sign_in")
