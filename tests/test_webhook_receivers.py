"""docs/webhooks.md's receivers, as a user would run them, against the
deliverer: the Node one with the Standard Webhooks spec's npm library
(tests/webhook-receiver, installed by bin/setup) and the Python one's
verification with the PyPI library (dashboard/webhooks/tests/receiver.py
does the same for the other tests). Each verifies every delivery it takes,
and answers 400 to one whose signature is not the secret's."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from devstack.net import free_port, wait_for_port
from links.services import link_delete
from teams.services import personal_team
from testing.factories import make_link, make_user
from webhooks import services
from webhooks.models import Attempt
from webhooks.tests import conftest as webhook_fixtures

pytestmark = pytest.mark.django_db(transaction=True)

RECEIVER = Path(__file__).resolve().parent / "webhook-receiver"


# The webhooks app's deliverer, as its tests run it, and the settings that let it reach loopback.
deliver, webhook_settings = webhook_fixtures.deliver, webhook_fixtures.webhook_settings


@pytest.fixture
def node_receiver(webhook_settings):
    owner = make_user()
    port = free_port()
    webhook, secret = services.webhook_create(
        actor=owner,
        team=personal_team(owner),
        url=f"http://127.0.0.1:{port}/slingshot",
        events=["link.created", "link.deleted"],
    )
    process = subprocess.Popen(
        ["node", "receiver.js"],
        cwd=RECEIVER,
        env={**os.environ, "WEBHOOK_SECRET": secret, "PORT": str(port)},  # the secret never on a command line
        stdout=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, process=process)
    yield owner, webhook, process
    process.terminate()
    process.wait(timeout=10)


def handled(process: subprocess.Popen) -> list[dict]:
    process.terminate()
    out, _ = process.communicate(timeout=10)
    return [line for line in map(json.loads, out.splitlines()) if "id" in line]


def test_the_node_receiver_verifies_each_delivery_with_the_specs_npm_library(node_receiver, deliver):
    owner, webhook, process = node_receiver
    link = make_link(owner=owner, url="https://example.org/")
    deliver()
    assert list(Attempt.objects.filter(webhook=webhook).values_list("status_code", flat=True)) == [204]
    services.webhook_rotate_secret(actor=owner, webhook=webhook)  # still signed with the old one too
    link_delete(link=link, actor=owner)
    deliver()
    events = handled(process)
    assert [event["type"] for event in events] == ["link.created", "link.deleted"]
    assert len({event["id"] for event in events}) == 2


def test_the_node_receiver_refuses_a_signature_not_of_its_secret(node_receiver, deliver):
    owner, webhook, process = node_receiver
    webhook.refresh_from_db()
    # A secret the receiver does not know, and no previous one beside it.
    new = services.webhook_rotate_secret(actor=owner, webhook=webhook)
    type(webhook).objects.filter(pk=webhook.pk).update(previous_secret=b"", previous_until=None)
    assert new
    make_link(owner=owner, url="https://example.org/")
    deliver()
    assert list(Attempt.objects.filter(webhook=webhook).values_list("status_code", flat=True)) == [400]
    assert handled(process) == []
