"""The Import page: an import from another shortener queued as a background
job, worked by `manage.py run_imports`, its progress and summary shown."""

from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from importers.models import ImportJob
from links.models import Link
from testing.factories import make_user
from testing.listeners import SECRET, InternalService
from testing.sources import YourlsData, write_yourls_dump

pytestmark = pytest.mark.django_db(transaction=True)

DUMP = Path(__file__).resolve().parents[2] / "importers" / "tests" / "data" / "yourls-1.10.sql"
LINK = ("https://example.com/wp", "WP", datetime(2025, 1, 1, tzinfo=timezone.utc), 0)


def upload_dump(client, **fields):
    return client.post(
        reverse("web:source-import"),
        {
            "source": "yourls",
            "table_prefix": "yourls_",
            "sql": SimpleUploadedFile("yourls.sql", DUMP.read_bytes(), content_type="application/sql"),
            **fields,
        },
    )


def test_a_dry_run_then_the_import_itself_in_the_background(signed_in, user):
    page = signed_in.get(reverse("web:source-import"))
    assert page.status_code == 200 and b'id="source-import-form"' in page.content

    answer = upload_dump(signed_in, dry_run="on")

    job = ImportJob.objects.get(owner=user)
    assert answer.status_code == 302 and answer["Location"] == reverse("web:source-import-detail", args=[job.pk])
    assert (job.state, job.background, job.dry_run, job.files.count()) == ("queued", True, True, 1)
    waiting = signed_in.get(answer["Location"])
    assert b"data-status-url" in waiting.content and b"Waiting for a worker" in waiting.content

    call_command("run_imports", "--once")

    status = signed_in.get(answer["Location"], HTTP_ACCEPT="application/json").json()
    assert (status["state"], status["finished"]) == ("done", True)
    assert any("3 would be created" in line for line in status["lines"]), status
    assert not Link.objects.filter(team=job.team, slug="spring").exists()
    done = signed_in.get(answer["Location"])
    assert b"data-status-url" not in done.content and b'id="source-import-for-real"' in done.content

    signed_in.post(reverse("web:source-import-for-real", args=[job.pk]))
    call_command("run_imports", "--once")

    job.refresh_from_db()
    assert (job.state, job.dry_run, job.files.count()) == ("done", False, 0)  # the file goes with the job's end
    assert job.summary["links_created"] == 3 and job.summary["visits_stored"] == 7
    assert Link.objects.filter(team=job.team, slug="spring").exists()
    shown = signed_in.get(reverse("web:source-import-detail", args=[job.pk]))
    assert b"7 stored" in shown.content


def test_the_key_is_kept_sealed_and_a_source_without_what_it_needs_is_refused(signed_in, user, settings):
    settings.IMPORTERS_API_ATTEMPTS = 1
    refused = signed_in.post(reverse("web:source-import"), {"source": "shlink"})
    # Two fields refused, each said beside the field and in the summary at the top.
    assert refused.status_code == 200 and refused.content.count(b"This source needs it.") == 4
    assert not ImportJob.objects.exists()

    signed_in.post(
        reverse("web:source-import"),
        {"source": "shlink", "shlink_url": "http://127.0.0.1:9/", "shlink_key": "very-secret-key"},
    )
    job = ImportJob.objects.get(owner=user)
    assert job.secret and b"very-secret-key" not in bytes(job.secret)

    call_command("run_imports", "--once")

    # The page's imports fetch from public addresses only: this server's own network is not theirs to reach.
    job.refresh_from_db()
    assert job.state == "failed" and "private network" in job.error and bytes(job.secret) == b""
    shown = signed_in.get(reverse("web:source-import-detail", args=[job.pk]))
    assert b"private network" in shown.content

    settings.IMPORTERS_PRIVATE_ADDRESSES = True  # allowed: then nothing answers on port 9
    signed_in.post(
        reverse("web:source-import"),
        {"source": "shlink", "shlink_url": "http://127.0.0.1:9/", "shlink_key": "very-secret-key"},
    )
    call_command("run_imports", "--once")
    assert "does not answer" in ImportJob.objects.filter(owner=user).first().error


def test_someone_outside_the_team_sees_no_import(signed_in, client, user):
    upload_dump(signed_in, dry_run="on")
    job = ImportJob.objects.get(owner=user)
    client.force_login(make_user())
    assert client.get(reverse("web:source-import-detail", args=[job.pk])).status_code == 404
    assert client.post(reverse("web:source-import-for-real", args=[job.pk])).status_code == 404


def test_a_job_whose_worker_lost_its_database_is_taken_over_where_it_got(signed_in, user, monkeypatch):
    from django.db import OperationalError

    from clicks.importer import ClickImporter
    from importers import runner

    monkeypatch.setattr(runner, "VISITS_BATCH", 3)  # three batches of the dump's seven visits
    store, calls = ClickImporter.store, []

    def store_then_fail(self, batch):
        calls.append(batch.size)
        if len(calls) == 2:  # the second batch: the connection is lost before it commits
            raise OperationalError("server closed the connection unexpectedly")
        return store(self, batch)

    monkeypatch.setattr(ClickImporter, "store", store_then_fail)
    upload_dump(signed_in)

    call_command("run_imports", "--once")

    job = ImportJob.objects.get(owner=user)
    assert calls == [3, 3, 3, 1]  # the first batch once, the second again, then the rest
    assert (job.state, job.summary["visits_stored"], job.summary["visits_read"]) == ("done", 7, 7)
    spring = Link.objects.get(team=job.team, slug="spring")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM clicks WHERE import_id = %s", [job.pk])
        assert cursor.fetchone()[0] == 7
        cursor.execute("SELECT clicks FROM link_click_totals WHERE link_id = %s", [spring.pk])
        assert cursor.fetchone()[0] == 4


def test_a_team_has_at_most_three_imports_waiting(signed_in, user):
    for _ in range(3):
        assert upload_dump(signed_in, dry_run="on").status_code == 302

    refused = upload_dump(signed_in, dry_run="on")

    assert refused.status_code == 200 and b"3 imports waiting or running" in refused.content
    assert ImportJob.objects.filter(owner=user).count() == 3


def test_a_file_over_the_limit_is_refused_and_the_post_still_needs_its_csrf_token(signed_in, user, settings):
    from django.test import Client

    settings.IMPORTERS_UPLOAD_MAX_BYTES = 1024
    answer = upload_dump(signed_in)
    assert answer.status_code == 200 and "The file is larger than 1.0\xa0KB." in answer.content.decode()
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(user)
    settings.IMPORTERS_UPLOAD_MAX_BYTES = 10**7
    assert upload_dump(guarded).status_code == 403
    assert not ImportJob.objects.filter(owner=user).exists()


# Addresses of this server's own network, spelt so that a check of the URL
# might read another host (slingshot/outbound/urls.py).
CONFUSED = [
    "http://127.0.0.1:{port}\\@example.com/",
    "http://example.com\\@127.0.0.1:{port}/",
    "http://u@127.0.0.1:{port}/",
]
INTERNAL = [
    "http://127.0.0.1:{port}/",
    "http://localhost:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://0.0.0.0:{port}/",
]


def post_import(client, source: str, url: str):
    return client.post(reverse("web:source-import"), {"source": source, f"{source}_url": url, f"{source}_key": "key"})


@pytest.mark.parametrize("source", ["shlink", "kutt"])
def test_an_address_clients_read_differently_is_refused_beside_the_field(signed_in, user, source):
    with InternalService() as service:
        for spelling in CONFUSED:
            page = post_import(signed_in, source, spelling.format(port=service.port))

            assert page.status_code == 200 and (b"backslash" in page.content or b"user name" in page.content)
        call_command("run_imports", "--once")

        assert not ImportJob.objects.filter(owner=user).exists() and service.connections() == 0


@pytest.mark.parametrize("source", ["shlink", "kutt"])
def test_an_import_of_this_servers_network_fails_saying_so_and_shows_nothing_of_it(signed_in, user, settings, source):
    settings.IMPORTERS_API_ATTEMPTS = 1
    with InternalService() as service:
        for spelling in INTERNAL:
            assert post_import(signed_in, source, spelling.format(port=service.port)).status_code == 302
            call_command("run_imports", "--once")

            job = ImportJob.objects.filter(owner=user).first()
            page = signed_in.get(reverse("web:source-import-detail", args=[job.pk]))
            status = signed_in.get(reverse("web:source-import-detail", args=[job.pk]), HTTP_ACCEPT="application/json")
            assert job.state == "failed" and "private network" in job.error, job.error
            assert b"private network" in page.content and SECRET.encode() not in page.content + status.content
        assert service.connections() == 0

        # Allowed, the same service answers, and its answer is what the page shows (a 404's first characters).
        settings.IMPORTERS_PRIVATE_ADDRESSES = True
        post_import(signed_in, source, INTERNAL[0].format(port=service.port))
        call_command("run_imports", "--once")

        assert SECRET[:100] in ImportJob.objects.filter(owner=user).first().error
        assert service.connections() == 1


def test_a_dump_that_cannot_be_read_says_where_and_names_no_flag(signed_in, user, tmp_path):
    """What the page shows is the page's words: a field's label, never a command-line flag."""
    prefixed = write_yourls_dump(tmp_path / "wp.sql", YourlsData(links={"wp1": LINK}), prefix="wp_yourls_")
    broken = tmp_path / "broken.sql"
    broken.write_text(
        "-- a dump\nINSERT INTO `yourls_url` VALUES\n('a','https://a.example/',NULL,'2025-01-01 00:00:00','::1',0),\n('b');\n"
    )
    for dump in (prefixed, broken):
        upload_dump(signed_in, sql=SimpleUploadedFile(dump.name, dump.read_bytes()))

    call_command("run_imports", "--once")

    errors = [job.error for job in ImportJob.objects.filter(owner=user).order_by("id")]
    assert 'begin with "wp_yourls_". Set "Table prefix" to wp_yourls_ and import it again.' in errors[0]
    assert errors[1] == (
        "Line 4 of the dump could not be read: a row of yourls_url holds 1 value, not one for each of its 6 columns: "
        "«('b');»."
    )
    assert not any("--" in error for error in errors)
    first = ImportJob.objects.filter(owner=user).order_by("id").first()
    shown = signed_in.get(reverse("web:source-import-detail", args=[first.pk])).content.decode()
    assert "Set &quot;Table prefix&quot; to wp_yourls_" in shown and "--table-prefix" not in shown
