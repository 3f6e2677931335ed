from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection

from slingshot.release import VERSION
from slingshot.schema import schema_problems


class Command(BaseCommand):
    help = "Print this version of Slingshot, and whether the database is at its schema (exit status 1 if not)."

    def handle(self, *args, **options):
        self.stdout.write(f"Slingshot {VERSION}")
        try:
            problems = schema_problems(connection)
        except OperationalError as exc:
            raise CommandError(f"the database does not answer: {str(exc).strip()}") from None
        if problems:
            raise CommandError(" ".join(problems))
        self.stdout.write("The database is at this version's schema.")
