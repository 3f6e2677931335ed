"""Clicks by UTM campaign and source (clicks/campaigns.py, /api/v1/campaigns):
each click under the campaign of the target that served it, a rule's or a
split destination's or the link's own, from what the importer stored."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from clicks.campaigns import CampaignRow, campaign_clicks
from links.models import Link
from teams.services import personal_team
from testing.factories import api_client, make_link, make_user
from testing.streams import importer as make_importer

from .test_visits import BOT, START, click, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups")]

SPRING = "https://shop.example/spring?utm_source=newsletter&utm_medium=email&utm_campaign=spring"
INSTAGRAM = "https://shop.example/spring?utm_campaign=spring&utm_source=instagram"
IOS = {"type": "device", "value": "ios"}


@pytest.fixture
def importer():
    return make_importer("campaigns-" + uuid.uuid4().hex[:6])


@pytest.fixture
def campaign(importer):
    owner = make_user()
    ruled = make_link(owner=owner, url=SPRING, rules=[{"url": INSTAGRAM, "conditions": [IOS]}])
    alike = make_link(owner=owner, url=SPRING + "&utm_content=footer")
    plain = make_link(owner=owner, url="https://shop.example/")
    split = make_link(
        owner=owner,
        url="https://shop.example/ab",
        split=[
            {"url": "https://shop.example/a?utm_campaign=ab&utm_source=a", "weight": 1},
            {"url": "https://shop.example/b?utm_campaign=ab&utm_source=b", "weight": 1},
        ],
    )
    theirs = make_link(owner=make_user(), url=SPRING)
    store(
        importer,
        [
            *(click(ruled, n) for n in range(3)),
            *(click(ruled, 10 + n, rule="1") for n in range(2)),
            click(alike, 20),
            click(plain, 30),
            click(plain, 31, BOT),
            *(click(split, 40 + n, rule="ab1") for n in range(2)),
            click(split, 50, rule="ab2"),
            click(theirs, 60),
        ],
    )
    return owner


def test_each_click_counts_under_the_target_that_served_it(campaign):
    links = Link.objects.filter(owner=campaign)
    rows = campaign_clicks(links, start=START - timedelta(days=3), end=timezone.now())
    assert rows == [
        CampaignRow("spring", "newsletter", 4, 2),
        CampaignRow("ab", "a", 2, 1),
        CampaignRow("spring", "instagram", 2, 1),
        CampaignRow("", "", 1, 1),
        CampaignRow("ab", "b", 1, 1),
    ]
    with_bots = campaign_clicks(links, start=START - timedelta(days=3), end=timezone.now(), include_bots=True)
    assert CampaignRow("", "", 2, 1) in with_bots
    # The range counts: an hour before the first click holds none.
    assert campaign_clicks(links, start=START - timedelta(days=3), end=START) == []


def test_the_api_answers_a_teams_campaigns_and_refuses_what_it_cannot_read(campaign):
    api = api_client(campaign, scope="read")
    start = (START - timedelta(days=1)).isoformat()
    answer = api.get("/api/v1/campaigns", {"from": start})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["clicks"] == 10 and body["include_bots"] is False
    assert body["rows"][0] == {"utm_campaign": "spring", "utm_source": "newsletter", "links": 2, "clicks": 4}
    assert api.get("/api/v1/campaigns", {"from": start, "team": personal_team(campaign).pk}).json()["clicks"] == 10
    outsider = api_client(make_user(), scope="read")
    assert outsider.get("/api/v1/campaigns", {"team": personal_team(campaign).pk}).status_code == 404
    assert outsider.get("/api/v1/campaigns", {"from": start}).json()["rows"] == []
    backwards = api.get("/api/v1/campaigns", {"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"})
    assert backwards.status_code == 400 and "from" in backwards.json()
    assert api.get("/api/v1/campaigns", {"from": "yesterday"}).status_code == 400
    assert (
        api.get("/api/v1/campaigns", {"from": "2020-01-01T00:00:00Z", "to": "2030-01-01T00:00:00Z"}).status_code == 400
    )
