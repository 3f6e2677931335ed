"""`manage.py prune_sessions`: deletes expired sessions (Django's
clearsessions) and the records of sessions that are gone (SessionUse).
Run it daily (docs/operations.md); it is safe to run at any time."""

from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.core.management.base import BaseCommand

from accounts.models import SessionUse


class Command(BaseCommand):
    help = "Delete expired sessions and the records of sessions that are gone."

    def handle(self, *args, **options):
        call_command("clearsessions")
        gone, _ = SessionUse.objects.exclude(session_key__in=Session.objects.values("session_key")).delete()
        self.stdout.write(f"{gone} session record{'s' if gone != 1 else ''} of ended sessions deleted")
