"""The raw clicks as a file, a line at a time: CSV (formulas neutralised as
the links' CSV export does, slingshot.csv_text.neutralise) or JSON lines. The
lines are streamed from a QuerySet's iterator, or with CLICK_STORE=clickhouse
from the cluster a block at a time (clickhouse_export.py), so memory stays
flat however many clicks there are."""

import json
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

from slingshot.csv_text import csv_line, neutralise
from slingshot.db import reports_db

from .clickhouse_clicks import using_clickhouse
from .clickhouse_export import export_clicks
from .models import Click
from .selectors import ClickFilter

COLUMNS = (
    "occurred_at",
    "slug",
    "ip",
    "country",
    "referer",
    "referer_host",
    "browser",
    "os",
    "device",
    "is_bot",
    "user_agent",
)
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}
CHUNK = 2000  # rows per fetch of the server-side cursor


def _record(click: Click) -> dict:
    return {
        "occurred_at": click.occurred_at.isoformat(),
        "slug": click.slug,
        "ip": click.ip,
        "country": click.country,
        "referer": click.referer,
        "referer_host": click.referer_host,
        "browser": click.browser,
        "os": click.os,
        "device": click.device,
        "is_bot": click.is_bot,
        "user_agent": click.agent.user_agent if click.agent_id else "",
    }


def _cell(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return neutralise(value) if isinstance(value, str) else str(value)


def csv_lines(clicks: Iterable[Click]) -> Iterator[str]:
    line = csv_line(_cell)
    yield line(COLUMNS)
    for click in clicks:
        record = _record(click)
        yield line(["" if record[name] is None else record[name] for name in COLUMNS])


def jsonl_lines(clicks: Iterable[Click]) -> Iterator[str]:
    for click in clicks:
        yield json.dumps(_record(click), ensure_ascii=False) + "\n"


def export_lines(clicks: Iterable[Click], kind: str) -> Iterator[str]:
    """`kind` is a key of FORMATS."""
    return csv_lines(clicks) if kind == "csv" else jsonl_lines(clicks)


def export_response(selection: ClickFilter, kind: str, *, name: str) -> StreamingHttpResponse:
    """The selected clicks, oldest first (ties by click id), as the
    attachment `name`.`kind`, streamed from a server-side cursor on the
    reports' database (slingshot/db.py), or from the ClickHouse cluster:
    the API's and the link page's exports alike."""
    if using_clickhouse():
        rows = export_clicks(selection)
    else:
        clicks = selection.queryset().using(reports_db()).order_by("occurred_at", "click_id")
        rows = clicks.iterator(chunk_size=CHUNK)
    response = StreamingHttpResponse(export_lines(rows, kind), content_type=FORMATS[kind])
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response
