"""Brings every ClickHouse node of the click store (CLICKHOUSE_URLS) to the
schema of sql/clickhouse/ (clicks.clickhouse_schema); a second run changes
nothing."""

from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from clicks.clickhouse_schema import ClickSchemaError, migrate


class Command(BaseCommand):
    help = "Apply sql/clickhouse/ to every ClickHouse node of the click store (CLICKHOUSE_URLS)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--url", action="append", dest="urls", help="a node's clickhouse:// URL (again for each); CLICKHOUSE_URLS"
        )
        parser.add_argument("--cluster", help="the cluster's name in the nodes' <remote_servers>; CLICKHOUSE_CLUSTER")

    def handle(self, *args, urls=None, cluster=None, **options):
        from clickhouse_driver import Client
        from clickhouse_driver.errors import Error as DriverError

        urls = urls or settings.CLICKHOUSE_URLS
        if not urls:
            raise CommandError("no ClickHouse node: set CLICKHOUSE_URLS (or give --url for each node)")
        clients = {}
        try:
            for url in urls:
                if not url.startswith(("clickhouse://", "clickhouses://")):
                    raise CommandError(f"{url!r} is not a clickhouse:// URL")
                clients[_node_name(url)] = Client.from_url(url)
            applied = migrate(clients, cluster=cluster or settings.CLICKHOUSE_CLUSTER)
        except ClickSchemaError as error:
            raise CommandError(str(error)) from error
        except (DriverError, OSError, EOFError) as error:
            raise CommandError(f"a ClickHouse node did not answer: {error}") from error
        finally:
            for client in clients.values():
                client.disconnect()
        if applied:
            names = ", ".join(migration.name for migration in applied)
            self.stdout.write(f"applied {names} to {len(clients)} ClickHouse nodes")
        else:
            self.stdout.write(f"the click store's schema is up to date on {len(clients)} ClickHouse nodes")


def _node_name(url: str) -> str:
    """host:port, as the messages name a node (never its password)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 9000}"
