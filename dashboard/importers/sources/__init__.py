"""The sources an import reads (importers/models.py Source), each a
module: what each brings and what it cannot is in docs/importing.md."""

from collections.abc import Callable
from datetime import datetime

from ..files import Opener
from .base import Source, SourceError
from .bitly import API, BitlyApiSource, BitlyCsvSource
from .kutt import KuttSource
from .shlink import ShlinkSource
from .slingshot_csv import SlingshotCsvSource
from .yourls import YourlsSource

__all__ = ["Source", "SourceError", "source_for"]


def source_for(
    kind: str, *, options: dict, secret: str, opener: Callable[[str], Opener | None], until: datetime
) -> Source:
    """The source of a job: its kind, options (importers.models.ImportJob),
    secret in clear, and a function opening its files by name."""
    name = options.get("name", "")
    public_only = bool(options.get("public_only"))  # started from the Import page
    if kind == "shlink":
        return ShlinkSource(url=options.get("url", ""), api_key=secret, until=until, public_only=public_only)
    if kind == "kutt":
        return KuttSource(url=options.get("url", ""), api_key=secret, public_only=public_only)
    if kind == "yourls":
        return YourlsSource(
            dump=opener("sql"),
            url_csv=opener("url_csv"),
            log_csv=opener("log_csv"),
            prefix=options.get("table_prefix") or "yourls_",
            name=name,
        )
    if kind == "bitly":
        if csv_file := opener("csv"):
            return BitlyCsvSource(csv_file=csv_file)
        return BitlyApiSource(
            token=secret, group=options.get("group", ""), base=options.get("url") or API, public_only=public_only
        )
    if kind == "csv":
        csv_file = opener("csv")
        if csv_file is None:
            raise SourceError("A links CSV is needed.")
        return SlingshotCsvSource(csv_file=csv_file, name=name)
    raise SourceError(f"No source {kind!r}.")
