from django.conf import settings
from django.db import models
from django.utils import timezone


class SessionUse(models.Model):
    """When a signed-in session was last used, and from which browser, so
    its person can see their sessions and a deactivation can end them
    (accounts/services.py). Written at most once a minute per session
    (accounts/middleware.py). Its table is in sql/accounts.sql."""

    session_key = models.CharField(max_length=40, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_uses")
    user_agent = models.CharField(max_length=200, blank=True)
    last_used_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user} {self.user_agent[:40]}"


class GeneratedPassword(models.Model):
    """A password Slingshot made up and showed once (manage.py ensure_admin):
    while the person's password is still that one, the pages ask them for a
    password of their own before anything else (web/middleware.py).
    `password` is the hash the password had then, so that changing it in
    any way at all (the pages, the admin, `manage.py changepassword`) ends
    the asking. Its table is made by migration 0002."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="generated_password"
    )
    password = models.CharField(max_length=128)

    def __str__(self) -> str:
        return f"{self.user}: a generated password"


class SsoIdentity(models.Model):
    """A person as the OpenID provider knows them (accounts/sso.py): the
    provider's `iss` and `sub`, which name one person for good (an e-mail
    may change hands), and the Slingshot user they sign in as. Its table is
    made by migration 0003 (sql/accounts.sql)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="accounts_sso_identity_once")]

    def __str__(self) -> str:
        return f"{self.user} as {self.subject} of {self.issuer}"


class Passkey(models.Model):
    """A WebAuthn credential of a person (accounts/passkeys.py): a second
    factor after their password, or a sign-in of its own, as the
    authenticator verifies its user. `user_handle` is the same for all of a
    person's passkeys, random rather than their id. Its table is made by
    migration 0004 (sql/accounts.sql)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="passkeys")
    name = models.CharField(max_length=100)
    credential_id = models.BinaryField(max_length=1023)
    public_key = models.BinaryField()
    user_handle = models.BinaryField(max_length=64)
    sign_count = models.BigIntegerField(default=0)
    transports = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["credential_id"], name="accounts_passkey_once")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} of {self.user}"
