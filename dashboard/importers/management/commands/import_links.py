import contextlib
import getpass
import os
import sys
from pathlib import Path

import redis
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from importers.files import path_opener
from importers.jobs import INTERRUPTED, RETRYABLE, job_create, job_fail, job_lock, job_run, job_unlock
from importers.models import Source
from importers.sources import SourceError
from links.domains import domain_for_host
from links.models import Domain
from teams.models import Team

# The environment variable holding each source's secret, when it has one.
SECRET_ENV = {"shlink": "SHLINK_API_KEY", "kutt": "KUTT_API_KEY", "bitly": "BITLY_TOKEN"}
FILES = ("sql", "url_csv", "log_csv", "csv")


class Command(BaseCommand):
    help = (
        "Import links and their visits from another shortener (shlink, yourls, kutt, bitly) or from a "
        "Slingshot links CSV (csv), into a team and a domain. Idempotent: a second run adds only what is new. "
        "Secrets never go on the command line: SHLINK_API_KEY, KUTT_API_KEY or BITLY_TOKEN in the environment, "
        "a file (--api-key-file, --token-file), or typed when asked (--api-key, --token). See docs/importing.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", choices=Source.values)
        parser.add_argument("file", nargs="?", help="csv: the links CSV; yourls: the dump of its database (as --sql)")
        parser.add_argument("--user", required=True, help="who creates the links: an editor of the team")
        parser.add_argument("--team", help="the team's id or name (default: the user's personal team)")
        parser.add_argument(
            "--domain", help="where the links of the source's default domain go (default: the default domain)"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="read everything, write nothing, say what a run would do"
        )
        parser.add_argument(
            "--url", help="shlink, kutt: the server's address; bitly: the API's (default https://api-ssl.bitly.com/v4)"
        )
        parser.add_argument("--api-key", action="store_true", help="shlink, kutt: type the API key when asked")
        parser.add_argument("--api-key-file", help="shlink, kutt: a file holding the API key")
        parser.add_argument("--token", action="store_true", help="bitly: type the access token when asked")
        parser.add_argument("--token-file", help="bitly: a file holding the access token")
        parser.add_argument("--group", default="", help="bitly: the group's GUID (default: the token's default group)")
        parser.add_argument(
            "--sql", help="yourls: a dump of its database (mysqldump, mariadb-dump, phpMyAdmin; gzip, bzip2, xz too)"
        )
        parser.add_argument("--url-csv", help="yourls: the yourls_url table as CSV")
        parser.add_argument("--log-csv", help="yourls: the yourls_log table as CSV")
        parser.add_argument("--table-prefix", default="yourls_", help="yourls: the tables' prefix (YOURLS_DB_PREFIX)")
        parser.add_argument("--csv", help="bitly: the CSV Bitly exports; csv: the links CSV")
        parser.add_argument(
            "--source-name",
            default="",
            help="yourls, csv: a name that tells this source from another of the same kind (two YOURLS sites)",
        )
        parser.add_argument(
            "--progress", action="store_true", default=None, help="a progress bar (default: on a terminal)"
        )
        parser.add_argument("--no-progress", action="store_false", dest="progress")

    def handle(self, *args, **options):
        try:
            self._import(**options)
        except RETRYABLE as exc:
            store, reason = connection_error(exc)
            raise CommandError(
                f"the connection to {store} failed ({reason}). Run the command again once it answers; "
                "it stores nothing twice."
            ) from None

    def _import(self, *, source, file, user, team, domain, dry_run, progress, **options):
        person = self._person(user)
        chosen_team = self._team(team, person)
        chosen_domain = self._domain(domain)
        files = {name: options.get(name) for name in FILES}
        if file:
            files["sql" if source == "yourls" else "csv"] = file
        for name, path in files.items():
            if path and not Path(path).is_file():
                raise CommandError(f"--{name.replace('_', '-')}: no file {path}")
        secret = self._secret(source, options, needed=not files["csv"])
        job_options = {
            "url": options["url"] or "",
            "group": options["group"],
            "table_prefix": options["table_prefix"],
            "name": options["source_name"],
        }
        try:
            job = job_create(
                owner=person,
                team=chosen_team,
                source=source,
                options=job_options,
                secret=secret,
                domain=chosen_domain,
                dry_run=dry_run,
            )
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from None
        job_lock(job)
        bar = Bars(enabled=sys.stderr.isatty() if progress is None else progress)
        lost = None
        try:
            summary = job_run(job, progress=bar, opener=lambda name: path_opener(files.get(name)))
        except (SourceError, PermissionDenied) as exc:
            raise CommandError(f"import #{job.pk} failed: {exc}{flag_hint(exc)}") from None
        except KeyboardInterrupt:
            job_fail(job, INTERRUPTED)
            raise CommandError(f"import #{job.pk} interrupted: run the command again to go on") from None
        except RETRYABLE as exc:
            lost = exc
        finally:
            bar.close()
            if lost is None:
                job_unlock(job)
        if lost is not None:
            raise CommandError(self._connection_lost(job, lost)) from None
        self.stdout.write(f"import #{job.pk} from {source}{' (dry run: nothing written)' if dry_run else ''}:")
        for line in summary.lines():
            self.stdout.write(f"  {line}")

    @staticmethod
    def _connection_lost(job, exc: Exception) -> str:
        """Ends the session the job was locked by, marks the job interrupted
        if PostgreSQL answers again (else the next worker to look does,
        jobs.job_claim), and says what happened."""
        connection.close()
        with contextlib.suppress(RETRYABLE):
            job_fail(job, INTERRUPTED)
        store, reason = connection_error(exc)
        return (
            f"import #{job.pk} stopped: the connection to {store} was lost ({reason}). "
            "Run the command again; it goes on, storing nothing twice."
        )

    @staticmethod
    def _person(username: str):
        try:
            return get_user_model().objects.get(username=username, is_active=True)
        except get_user_model().DoesNotExist:
            raise CommandError(f"--user: no active person {username!r}") from None

    @staticmethod
    def _team(given: str | None, person) -> Team:
        if not given:
            return person.personal_team
        found = Team.objects.filter(pk=int(given)) if given.isdigit() else Team.objects.filter(name=given)
        if found.count() != 1:
            raise CommandError(f"--team: {'no' if not found else 'more than one'} team {given!r}; give its id")
        return found.get()

    @staticmethod
    def _domain(host: str | None) -> Domain | None:
        if not host:
            return None
        try:
            return domain_for_host(host)
        except Domain.DoesNotExist:
            raise CommandError(f"--domain: Slingshot serves no domain {host!r}; add it first") from None

    @staticmethod
    def _secret(source: str, options: dict, *, needed: bool) -> str:
        env = SECRET_ENV.get(source)
        if env is None or not needed:
            return ""
        asked, path = (
            (options["token"], options["token_file"])
            if source == "bitly"
            else (options["api_key"], options["api_key_file"])
        )
        if path:
            try:
                return Path(path).read_text().strip()
            except OSError as exc:
                raise CommandError(f"cannot read the secret's file {path}: {exc.strerror}") from None
        if os.environ.get(env):
            return os.environ[env].strip()
        if asked or sys.stdin.isatty():
            return getpass.getpass(f"{source} {'access token' if source == 'bitly' else 'API key'}: ").strip()
        flag = "--token" if source == "bitly" else "--api-key"
        raise CommandError(f"{source} needs a secret: set {env}, or give {flag}-file, or {flag} to type it")


def flag_hint(exc: Exception) -> str:
    """The flag of the setting a SourceError names in the Import page's terms (SourceError.setting)."""
    setting = getattr(exc, "setting", "")
    if not setting:
        return ""
    value = getattr(exc, "value", "")
    return f" (on the command line: --{setting.replace('_', '-')}{' ' + value if value else ''})"


def connection_error(exc: Exception) -> tuple[str, str]:
    """Which store a connection error is of, and the first line of what it says."""
    store = "Redis" if isinstance(exc, redis.RedisError) else "PostgreSQL"
    text = str(exc).strip()
    return store, text.splitlines()[0] if text else type(exc).__name__


class Bars:
    """A tqdm bar per phase of an import (links, visits, orphans), on stderr."""

    def __init__(self, *, enabled: bool):
        self.enabled, self.bar, self.phase = enabled, None, None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if phase != self.phase:
            from tqdm import tqdm

            self.close()
            self.phase = phase
            self.bar = tqdm(total=total, initial=0, unit=" " + phase, desc=phase, file=sys.stderr, smoothing=0.1)
        if total and total > (self.bar.total or 0):
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
