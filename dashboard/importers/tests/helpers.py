"""What the importers' tests share: the command run as a person runs it,
a secret in a file, a link's all-time clicks and its stored clicks."""

from io import StringIO
from pathlib import Path

from django.core.management import call_command
from django.db import connection

from links.models import Link


def import_links(*args, **options) -> str:
    """`manage.py import_links ARGS`, without a progress bar; what it printed."""
    out = StringIO()
    call_command("import_links", *args, progress=False, stdout=out, **options)
    return out.getvalue()


def secret_file(directory: Path, secret: str) -> str:
    """A file holding the secret, as --api-key-file and --token-file take it."""
    path = directory / "secret"
    path.write_text(secret + "\n")
    return str(path)


def total_clicks(link: Link) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clicks FROM link_click_totals WHERE link_id = %s", [link.pk])
        row = cursor.fetchone()
    return row[0] if row else 0


def clicks_of(link: Link) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.occurred_at, c.referer, c.referer_host, a.user_agent, c.country, c.is_bot, c.import_id"
            " FROM clicks c JOIN user_agents a ON a.id = c.user_agent_id WHERE c.link_id = %s ORDER BY 1",
            [link.pk],
        )
        return cursor.fetchall()
