from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from slingshot.text import shown, unstorable
from teams import access
from teams.models import Team
from tokens.models import ApiToken
from tokens.services import token_create
from tokens.signatures import token_signature


class Command(BaseCommand):
    help = (
        "Create an API token for a user and print it once (only its hash is stored). It reaches one team: "
        "--team (its id, or its name among the user's teams), else the user's personal team."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--scope", choices=[ApiToken.Scope.READ, ApiToken.Scope.WRITE], default=ApiToken.Scope.READ)
        parser.add_argument("--name", default="command line")
        parser.add_argument("--team", default="", help="a team's id or name; default: the user's personal team")
        parser.add_argument(
            "--signature",
            action="store_true",
            help="also print the token's signature, on a second line: what YOURLS clients sign with",
        )

    def handle(self, *args, username, scope, name, team, signature, **options):
        for value in (username, name, team):
            if unstorable(value):  # bytes that are not UTF-8 come as surrogates (Python's surrogateescape)
                raise CommandError(f"{shown(value)!r} is not UTF-8 text")
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        chosen = self._team(user, team) if team else None
        try:
            token, raw = token_create(user=user, name=name, scope=scope, team=chosen)
        except (ValidationError, PermissionDenied) as exc:
            raise CommandError("; ".join(getattr(exc, "messages", None) or [str(exc)])) from None
        self.stderr.write(
            f"Created {scope} token {token.name!r} for {username} in team {token.team.name!r} "
            f"(id {token.team_id}). It is shown only now:"
        )
        self.stdout.write(raw)
        if signature:
            self.stdout.write(token_signature(token))

    def _team(self, user, wanted: str) -> Team:
        teams = access.teams_of(user)
        matches = list(teams.filter(pk=int(wanted)) if wanted.isdigit() else teams.filter(name=wanted)[:2])
        if len(matches) != 1:
            found = "several teams are" if matches else "no team is"
            raise CommandError(f"{found} named {wanted!r} among {user.get_username()}'s teams; give its id")
        return matches[0]
