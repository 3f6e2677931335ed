import orjson
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from links.models import Link
from links.publishing import link_payload, publish_slugs
from links.redis import get_redis
from slingshot.contract import LINK_KEY_PREFIX, link_key

CHUNK = 1000


class Command(BaseCommand):
    help = "Rebuild Redis from PostgreSQL (--all), or list every difference between them (--check)."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument(
            "--all", action="store_true", help="publish every link, and delete keys of links that are gone"
        )
        group.add_argument("--check", action="store_true", help="list differences; exit 1 if there is any")

    def handle(self, *args, all, check, **options):
        if check:
            differences = list(self.differences())
            for line in differences:
                self.stdout.write(line)
            if differences:
                raise CommandError(f"{len(differences)} differences between PostgreSQL and Redis", returncode=1)
            self.stdout.write("PostgreSQL and Redis agree")
            return
        slugs = list(Link.objects.order_by("id").values_list("slug", flat=True))
        stale = set(self.redis_slugs()) - set(slugs)
        todo = slugs + sorted(stale)
        with tqdm(total=len(todo), unit="link", disable=None) as bar:
            for start in range(0, len(todo), CHUNK):
                chunk = todo[start : start + CHUNK]
                publish_slugs(chunk)
                bar.update(len(chunk))
        self.stdout.write(f"published {len(slugs)} links, removed {len(stale)} stale keys")

    def redis_slugs(self):
        prefix = len(LINK_KEY_PREFIX)
        for key in get_redis().scan_iter(match=LINK_KEY_PREFIX + "*", count=1000):
            yield key.decode()[prefix:]

    def differences(self):
        client = get_redis()
        seen = set()
        links = Link.objects.order_by("id").iterator(chunk_size=CHUNK)
        while chunk := [link for _, link in zip(range(CHUNK), links, strict=False)]:
            values = client.mget([link_key(link.slug) for link in chunk])
            for link, raw in zip(chunk, values, strict=True):
                seen.add(link.slug)
                if raw is None:
                    yield f"missing in Redis: {link.slug}"
                elif orjson.loads(raw) != orjson.loads(link_payload(link)):
                    yield f"differs: {link.slug} (Redis {raw.decode()!r}, PostgreSQL {link_payload(link)!r})"
        for slug in self.redis_slugs():
            if slug not in seen:
                yield f"not in PostgreSQL: {slug}"
