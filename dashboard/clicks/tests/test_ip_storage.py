"""What a click keeps of its visitor's address: as its link's team chose
(Team.ip_storage), else as CLICK_IP_PRIVACY says; through the real importer
against the real Redis and PostgreSQL."""

import uuid
from datetime import datetime, timezone

import pytest
from django.core.management import call_command

from clicks.models import Click, LinkClickTotals
from links.models import Link
from teams.models import Team
from testing.factories import make_link, make_user
from testing.streams import add_entry, entry, importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams")]

V4, V6 = "198.51.100.7", "2001:DB8:abcd:12::5"


def link_of_a_team_keeping(storage: str) -> Link:
    link = make_link(owner=make_user(), url="https://example.org/", slug="ips" + uuid.uuid4().hex[:6])
    Team.objects.filter(pk=link.team_id).update(ip_storage=storage)
    return link


def click_of(link: Link, ip: str = V4) -> dict:
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    return {"ts": now, "slug": link.slug, "link": link.pk, "ip": ip, "ua": "pytest", "ref": ""}


def addresses(link: Link) -> list[str | None]:
    return sorted(Click.objects.filter(link_id=link.pk).values_list("ip", flat=True), key=str)


def test_each_team_keeps_addresses_as_it_chose_and_the_others_as_the_service_does(settings):
    settings.CLICK_IP_PRIVACY = "anonymise"
    default, nothing, whole, anonymised = (link_of_a_team_keeping(s) for s in ("", "none", "full", "anonymise"))
    add_entry([click_of(link, ip) for link in (default, nothing, whole, anonymised) for ip in (V4, V6)])

    call_command("import_clicks", "--once", "--consumer", "ip-storage")

    assert addresses(default) == ["198.51.100.0", "2001:db8:abcd::"]
    assert addresses(nothing) == [None, None]
    assert addresses(whole) == ["198.51.100.7", "2001:db8:abcd:12::5"]
    assert addresses(anonymised) == ["198.51.100.0", "2001:db8:abcd::"]
    # The reports count each click once, whatever its address.
    assert [LinkClickTotals.objects.get(link_id=link.pk).clicks for link in (default, nothing, whole)] == [2, 2, 2]


def test_a_team_anonymises_where_the_service_keeps_whole_addresses(settings):
    settings.CLICK_IP_PRIVACY = "full"
    default, anonymised = link_of_a_team_keeping(""), link_of_a_team_keeping("anonymise")
    add_entry([click_of(default), click_of(anonymised)])

    call_command("import_clicks", "--once", "--consumer", "ip-storage-full")

    assert addresses(default) == ["198.51.100.7"]
    assert addresses(anonymised) == ["198.51.100.0"]


def test_a_changed_choice_applies_to_the_next_batch_the_same_importer_stores():
    link = link_of_a_team_keeping("")
    running = importer("ip-storage-" + uuid.uuid4().hex[:6])

    assert running.store(running.maker.make([entry([click_of(link)])])) == 1
    Team.objects.filter(pk=link.team_id).update(ip_storage="full")
    # Made before the importer knew: made again as the team now chooses, and counted once.
    made = running.maker.make([entry([click_of(link, "203.0.113.9")])])
    assert made.ip_storage == {}
    assert running.store(made) == 1
    Team.objects.filter(pk=link.team_id).update(ip_storage="none")
    assert running.store(running.maker.make([entry([click_of(link, "203.0.113.10")])])) == 1
    Team.objects.filter(pk=link.team_id).update(ip_storage="")
    assert running.store(running.maker.make([entry([click_of(link, "203.0.113.11")])])) == 1

    assert addresses(link) == ["198.51.100.0", "203.0.113.0", "203.0.113.9", None]
    assert LinkClickTotals.objects.get(link_id=link.pk).clicks == 4


def test_a_batch_made_once_the_importer_knows_is_not_made_again():
    link = link_of_a_team_keeping("none")
    running = importer("ip-storage-" + uuid.uuid4().hex[:6])
    running.store(running.maker.make([entry([click_of(link)])]))

    known = running.maker.make([entry([click_of(link)])])

    assert known.ip_storage == {link.pk: 2}  # enrichment.IP_STORAGE_CODES["none"]
    assert running._as_teams_chose(known, [(link.pk, "none")]) is known
    assert running._as_teams_chose(known, [(link.pk, "")]) is not known
