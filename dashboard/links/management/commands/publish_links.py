import orjson
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from links.domains import default_domain
from links.models import Domain, Link
from links.publishing import app_files_of, domain_payload, link_payload, publish_keys, redis_link_key, robots_txt
from links.validation import default_host
from slingshot.contract import (
    DOMAINS_KEY,
    LINK_CHANGES_MAXLEN,
    LINK_CHANGES_STREAM,
    LINK_KEY_PREFIX,
    ROBOTS_KEY_PREFIX,
    app_file_key,
    robots_key,
)
from slingshot.redis import get_redis

CHUNK = 1000


class Command(BaseCommand):
    help = (
        "Rebuild Redis from PostgreSQL (--all), or list every difference between them (--check): "
        "every link, every domain's settings and robots.txt."
    )

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument(
            "--all", action="store_true", help="publish every link and domain, and delete keys of those that are gone"
        )
        group.add_argument("--check", action="store_true", help="list differences; exit 1 if there is any")

    def handle(self, *args, all, check, **options):
        default_domain()
        if check:
            differences = list(self.differences())
            for line in differences:
                self.stdout.write(line)
            if differences:
                raise CommandError(f"{len(differences)} differences between PostgreSQL and Redis", returncode=1)
            self.stdout.write("PostgreSQL and Redis agree")
            return
        default = default_host()
        links = [(host, slug) for host, slug in Link.objects.order_by("id").values_list("domain__host", "slug")]
        hosts = list(Domain.objects.order_by("host").values_list("host", flat=True))
        expected = {redis_link_key(host, slug, default) for host, slug in links}
        stale_links = sorted(set(self.redis_link_keys()) - expected)
        stale_hosts = sorted((set(self.redis_hosts()) | set(self.redis_robots_hosts())) - set(hosts))
        todo = [(host, "") for host in hosts] + links + [(host, "") for host in stale_hosts]
        client = get_redis()
        with tqdm(total=len(todo) + len(stale_links), unit="key", disable=None) as bar:
            for start in range(0, len(todo), CHUNK):
                chunk = todo[start : start + CHUNK]
                publish_keys(chunk)
                bar.update(len(chunk))
            for start in range(0, len(stale_links), CHUNK):
                # Keys of links that are gone (or of a default domain since
                # changed): deleted as they are, with a change notification each.
                chunk = stale_links[start : start + CHUNK]
                pipe = client.pipeline(transaction=True)
                for key in chunk:
                    host, _, slug = key[len(LINK_KEY_PREFIX) :].rpartition("/")
                    pipe.delete(key)
                    change = {"slug": slug, "domain": host} if host else {"slug": slug}
                    pipe.xadd(LINK_CHANGES_STREAM, change, maxlen=LINK_CHANGES_MAXLEN, approximate=True)
                pipe.execute()
                bar.update(len(chunk))
        self.stdout.write(
            f"published {len(links)} links and {len(hosts)} domains, removed {len(stale_links)} stale link keys "
            f"and {len(stale_hosts)} stale domains"
        )

    def redis_link_keys(self):
        for key in get_redis().scan_iter(match=LINK_KEY_PREFIX + "*", count=1000):
            yield key.decode()

    def redis_hosts(self):
        return [host.decode() for host in get_redis().hkeys(DOMAINS_KEY)]

    def redis_robots_hosts(self):
        prefix = len(ROBOTS_KEY_PREFIX)
        return [key.decode()[prefix:] for key in get_redis().scan_iter(match=ROBOTS_KEY_PREFIX + "*", count=1000)]

    def differences(self):
        client = get_redis()
        default = default_host()
        seen = set()
        links = Link.objects.select_related("domain").order_by("id").iterator(chunk_size=CHUNK)
        while chunk := [link for _, link in zip(range(CHUNK), links, strict=False)]:
            keys = [redis_link_key(link.domain.host, link.slug, default) for link in chunk]
            for link, key, raw in zip(chunk, keys, client.mget(keys), strict=True):
                seen.add(key)
                name = key[len(LINK_KEY_PREFIX) :]
                if raw is None:
                    yield f"missing in Redis: {name}"
                elif orjson.loads(raw) != orjson.loads(link_payload(link)):
                    yield f"differs: {name} (Redis {raw.decode()!r}, PostgreSQL {link_payload(link)!r})"
        for key in self.redis_link_keys():
            if key not in seen:
                yield f"not in PostgreSQL: {key[len(LINK_KEY_PREFIX) :]}"
        published = {host.decode(): raw for host, raw in client.hgetall(DOMAINS_KEY).items()}
        for domain in Domain.objects.order_by("host"):
            raw = published.pop(domain.host, None)
            if raw is None:
                yield f"domain missing in Redis: {domain.host}"
            elif orjson.loads(raw) != orjson.loads(domain_payload(domain)):
                yield f"domain differs: {domain.host} (Redis {raw.decode()!r}, PostgreSQL {domain_payload(domain)!r})"
            robots = client.get(robots_key(domain.host))
            if robots is None or robots.decode() != robots_txt(domain):
                yield f"robots.txt differs: {domain.host}"
            for name, text in app_files_of(domain).items():
                kept = client.get(app_file_key(name, domain.host))
                if (kept.decode() if kept is not None else None) != text:
                    yield f"{name} differs: {domain.host}"
        for host in sorted(published):
            yield f"domain not in PostgreSQL: {host}"
        hosts = set(Domain.objects.values_list("host", flat=True))
        for host in sorted(set(self.redis_robots_hosts()) - hosts):
            yield f"robots.txt of a domain not in PostgreSQL: {host}"
