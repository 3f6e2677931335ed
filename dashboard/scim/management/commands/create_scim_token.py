"""`manage.py create_scim_token NAME`: a bearer token for the identity
provider's SCIM client, printed once (docs/operations.md); `--revoke NAME`
revokes the tokens of that name."""

from django.core.management.base import BaseCommand, CommandError

from scim.tokens import token_create, token_revoke
from slingshot.text import shown, unstorable


class Command(BaseCommand):
    help = "Make a SCIM bearer token for an identity provider, printed once; --revoke revokes those of a name."

    def add_arguments(self, parser):
        parser.add_argument("name", help="what the token is for, e.g. the provider's name")
        parser.add_argument("--revoke", action="store_true", help="revoke the tokens of this name instead")

    def handle(self, *args, name: str, revoke: bool, **options):
        if unstorable(name) or not name.strip() or len(name) > 100:
            raise CommandError(f"the name {shown(name)!r} is not 1 to 100 characters of UTF-8 text")
        if revoke:
            count = token_revoke(name=name)
            if not count:
                raise CommandError(f"no SCIM token named {name!r} to revoke")
            self.stdout.write(f"revoked {count} SCIM token(s) named {name!r}")
            return
        _, raw = token_create(name=name)
        self.stdout.write(f"SCIM token {name!r}, shown only now: give it to the provider as its bearer token.\n{raw}")
