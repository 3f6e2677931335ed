"""Click stream entries written as the edge writes them (record format 5),
for tests of the importer and of what it stores, and an importer to read them."""

import uuid

from clicks.batch import BatchMaker
from clicks.enrichment import Enricher
from clicks.importer import ClickImporter
from clicks.records import encode_entry
from clicks.stream import ClickStream
from slingshot.contract import CLICKS_STREAM
from slingshot.redis import get_redis

ENRICHER = Enricher()


def entry_fields(clicks: list[dict], *, prefix: str | None = None, first: int = 0) -> dict[str, bytes]:
    """The fields of an entry of these clicks (each a dict of `ts` in Unix ms,
    `slug`, `link` (the link's id, or None for an orphan visit), `ip`, `ua`,
    `ref`, and `rule` if one served it, or an orphan visit's `kind` and
    `domain`), numbered from `first`; sets each click's `id` as the contract
    makes it."""
    prefix = prefix or uuid.uuid4().hex[:16]
    for number, click in enumerate(clicks, start=first):
        click["id"] = f"{prefix}{number:016x}"
    return encode_entry(prefix, first, clicks)


def entry(clicks: list[dict], **numbering) -> tuple[bytes, dict]:
    """An entry as read back from the stream: (entry id, fields)."""
    fields = entry_fields(clicks, **numbering)
    return f"{uuid.uuid4().int % 10**12}-0".encode(), {key.encode(): value for key, value in fields.items()}


def add_entry(clicks: list[dict], **numbering) -> bytes:
    """XADDs an entry of these clicks to the click stream; returns its id."""
    return get_redis().xadd(CLICKS_STREAM, entry_fields(clicks, **numbering))


def importer(consumer: str, *, enricher: Enricher = ENRICHER, **stream_options) -> ClickImporter:
    return ClickImporter(
        stream=ClickStream(get_redis(), consumer=consumer, **stream_options), maker=BatchMaker(enricher)
    )
