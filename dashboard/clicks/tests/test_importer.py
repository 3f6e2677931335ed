"""The importer against the real Redis and PostgreSQL."""
import uuid
from datetime import datetime, timezone

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from clicks.enrichment import Enricher
from clicks.importer import DEAD_LETTER_STREAM, GROUP, STREAM, ClickImporter, parse_entries
from clicks.models import Click
from links import services
from links.redis import get_redis

pytestmark = pytest.mark.django_db(transaction=True)

ENRICHER = Enricher()


@pytest.fixture(autouse=True)
def empty_streams():
    client = get_redis()
    client.delete(STREAM, DEAD_LETTER_STREAM)
    yield
    client.delete(STREAM, DEAD_LETTER_STREAM)


def make_click(slug: str, **overrides) -> dict:
    click = {
        "id": uuid.uuid4().hex,
        "ts": int(datetime.now(timezone.utc).timestamp() * 1000),
        "slug": slug,
        "ip": "198.51.100.7",
        "ua": "pytest",
        "ref": "",
    }
    click.update(overrides)
    return click


def add_entry(clicks: list) -> bytes:
    return get_redis().xadd(STREAM, {"v": "1", "clicks": orjson.dumps(clicks)})


def clicks_for(slug: str) -> int:
    return Click.objects.filter(slug=slug).count()


def test_a_batch_delivered_twice_is_stored_once():
    slug = "dup" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug) for _ in range(50)])
    importer = ClickImporter(client=get_redis(), consumer="twice", enricher=ENRICHER)
    importer.ensure_group()
    entries = get_redis().xreadgroup(GROUP, "twice", {STREAM: ">"})[0][1]

    # As if the importer died after COMMIT and before XACK: the same entries again.
    batch = parse_entries(entries, enricher=ENRICHER)
    assert importer.store(batch).clicks == 50
    assert importer.store(batch).clicks == 0
    assert clicks_for(slug) == 50


def test_clicks_are_linked_to_their_link_and_acknowledged():
    owner = get_user_model().objects.create_user("importer-owner")
    link = services.link_create(owner=owner, url="https://example.org/", slug="imp" + uuid.uuid4().hex[:6])
    add_entry([make_click(link.slug), make_click(link.slug)])

    call_command("import_clicks", "--once", "--consumer", "ack-test")

    assert set(Click.objects.filter(slug=link.slug).values_list("link_id", flat=True)) == {link.pk}
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0
    assert get_redis().xlen(STREAM) == 0


def test_pending_entries_of_a_consumer_are_imported_when_it_restarts():
    slug = "pend" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug) for _ in range(3)])
    ClickImporter(client=get_redis(), consumer="crashy", enricher=ENRICHER).ensure_group()
    # Read but never acknowledged, as by an importer killed mid-batch.
    get_redis().xreadgroup(GROUP, "crashy", {STREAM: ">"})

    call_command("import_clicks", "--once", "--consumer", "crashy")

    assert clicks_for(slug) == 3
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_a_poisoned_entry_goes_to_the_dead_letter_stream_and_its_batch_is_imported():
    slug = "dlq" + uuid.uuid4().hex[:6]
    add_entry([make_click(slug)])
    get_redis().xadd(STREAM, {"v": "1", "clicks": b"{not json"})
    get_redis().xadd(STREAM, {"v": "1", "clicks": orjson.dumps([make_click(slug, ts="yesterday")])})
    get_redis().xadd(STREAM, {"garbage": "1"})
    add_entry([make_click(slug, ua="\x00nul and invalid utf-8 \udcff".encode("utf-8", "surrogatepass").decode("utf-8", "ignore"))])

    call_command("import_clicks", "--once", "--consumer", "dlq-test")

    assert clicks_for(slug) == 2
    dead = get_redis().xrange(DEAD_LETTER_STREAM)
    reasons = sorted(fields[b"reason"].decode() for _, fields in dead)
    assert len(reasons) == 3
    assert any("not JSON" in reason for reason in reasons)
    assert any("ts is not an integer" in reason for reason in reasons)
    assert any("record version" in reason for reason in reasons)
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 0


def test_invalid_utf8_in_a_header_does_not_cost_the_entry():
    slug = "utf" + uuid.uuid4().hex[:6]
    good = make_click(slug)
    raw = orjson.dumps([good, make_click(slug)]).replace(b'"pytest"', b'"bad \xff\xfe bytes"', 1)
    get_redis().xadd(STREAM, {"v": "1", "clicks": raw})

    call_command("import_clicks", "--once", "--consumer", "utf-test")

    agents = sorted(Click.objects.filter(slug=slug).values_list("user_agent", flat=True))
    assert agents == ["bad \ufffd\ufffd bytes", "pytest"]
