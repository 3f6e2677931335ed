from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self):
        from django.contrib.auth.signals import user_logged_in, user_logged_out

        from .middleware import forget_sign_out, record_sign_in

        user_logged_in.connect(record_sign_in, dispatch_uid="accounts.record_sign_in")
        user_logged_out.connect(forget_sign_out, dispatch_uid="accounts.forget_sign_out")
