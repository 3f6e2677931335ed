import os
import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.services import superuser_create_with_generated_password
from slingshot.text import shown, unstorable

RECOVERY = "Lost its password? `manage.py changepassword {name}` sets a new one."


class Command(BaseCommand):
    help = (
        "Create the first admin user, once. Its name: --username, else SLINGSHOT_ADMIN_USER, else 'admin'. "
        "Its password: SLINGSHOT_ADMIN_PASSWORD from the environment (never an argument, which `ps` shows), "
        "else a generated one-time password printed once, which the first sign-in replaces. Does nothing "
        "if that user exists, nor, when no name is given, if any superuser exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="", help="default: SLINGSHOT_ADMIN_USER, else 'admin'")

    def handle(self, *args, username, **options):
        User = get_user_model()
        named = username or os.environ.get("SLINGSHOT_ADMIN_USER", "")
        password = os.environ.get("SLINGSHOT_ADMIN_PASSWORD", "")
        # Bytes that are not UTF-8 come as surrogates (Python's surrogateescape), which nothing can store.
        if unstorable(named):
            raise CommandError(f"the user name {shown(named)!r} is not UTF-8 text")
        if unstorable(password):
            raise CommandError("SLINGSHOT_ADMIN_PASSWORD is not UTF-8 text")
        if named:
            if User.objects.filter(username=named).exists():
                self.stdout.write(f"admin user {named!r} exists already. {RECOVERY.format(name=named)}")
                return
        else:
            existing = User.objects.filter(is_superuser=True).order_by("pk").values_list("username", flat=True)
            if existing:
                self.stdout.write(f"admin user {existing[0]!r} exists already. {RECOVERY.format(name=existing[0])}")
                return
            named = "admin"
        if password:
            try:
                validate_password(password, User(username=named))
            except ValidationError as exc:
                raise CommandError("SLINGSHOT_ADMIN_PASSWORD is refused: " + " ".join(exc.messages)) from None
            User.objects.create_superuser(username=named, password=password)
            self.stdout.write(f"created admin user {named!r} with the password in SLINGSHOT_ADMIN_PASSWORD")
            return
        password = secrets.token_urlsafe(12)
        superuser_create_with_generated_password(username=named, password=password)
        # devstack/stack.py finds this line (ONE_TIME_PASSWORD) and shows the password in its banner.
        self.stdout.write(f"created admin user {named!r} with one-time password: {password}")
        self.stdout.write(f"(shown only now; the first sign-in asks for a new one. {RECOVERY.format(name=named)})")
