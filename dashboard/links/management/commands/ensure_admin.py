import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create the first admin: from SLINGSHOT_ADMIN_USER / SLINGSHOT_ADMIN_PASSWORD if given, "
        "else 'admin' with a generated password printed once. Does nothing if a superuser exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="")
        parser.add_argument("--password", default="")

    def handle(self, *args, username, password, **options):
        User = get_user_model()
        if username and password:
            if User.objects.filter(username=username).exists():
                self.stdout.write(f"admin user {username!r} already exists")
                return
            User.objects.create_superuser(username=username, password=password)
            self.stdout.write(f"created admin user {username!r} with the password you set")
            return
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("an admin user exists already")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username="admin", password=password)
        self.stdout.write(f"created admin user 'admin' with one-time password: {password}")
        self.stdout.write("(shown only now: change it after signing in)")
