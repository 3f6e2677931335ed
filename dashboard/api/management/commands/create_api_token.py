from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from api.models import ApiToken
from api.services import token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print it once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--scope", choices=[ApiToken.Scope.READ, ApiToken.Scope.WRITE], default=ApiToken.Scope.READ)
        parser.add_argument("--name", default="command line")

    def handle(self, *args, username, scope, name, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        try:
            token, raw = token_create(user=user, name=name, scope=scope)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stderr.write(f"Created {scope} token {token.name!r} for {username}. It is shown only now:")
        self.stdout.write(raw)
