from django.core.management.base import BaseCommand

from links.models import Link
from links.publishing import publish_slug


class Command(BaseCommand):
    help = "Publish links from PostgreSQL to Redis."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", required=True, help="publish every link")

    def handle(self, *args, **options):
        count = 0
        for slug in Link.objects.values_list("slug", flat=True).iterator():
            publish_slug(slug)
            count += 1
        self.stdout.write(f"published {count} links")
