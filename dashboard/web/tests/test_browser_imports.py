"""The Import page in a real browser (test_browser.py's Chromium): a YOURLS
dump uploaded, the job worked in the background by run_imports while the
job's page polls it (app.js, under the page's CSP), its summary shown when
it ends; only the chosen source's fields shown, and every source's, each
under its name, without JavaScript; at a desktop's width and a phone's."""

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from importers.models import ImportJob, Source
from links.models import Link

from .test_browser import SCREENSHOTS, browser, page  # noqa: F401 (fixtures)
from .test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

DUMP = Path(__file__).resolve().parents[2] / "importers" / "tests" / "data" / "yourls-1.10.sql"


def sideways(tab) -> bool:
    sizes = tab.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})"
    )
    return sizes["scroll"] > sizes["client"]


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_a_yourls_dump_imported_from_the_page(page, user, width, height):  # noqa: F811 (a fixture)
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/links/")
    page.get_by_role("button", name="Import from another shortener").click()
    page.locator("#id_source").select_option("yourls")
    page.get_by_label("YOURLS: mysqldump (SQL)").set_input_files(str(DUMP))
    assert not sideways(page)
    page.get_by_role("button", name="Start the import").click()
    expect(page.locator("#source-import-state")).to_contain_text("Waiting for a worker")

    call_command("run_imports", "--once")

    # The page learns it ended by itself, and shows the summary.
    expect(page.locator("#source-import-summary")).to_contain_text("7 stored", timeout=15_000)
    expect(page.locator("#source-import-state")).to_have_text("Done.")
    expect(page.locator("#source-import-progress")).to_have_attribute("value", "1")
    assert not sideways(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"import-job-{width}.png", full_page=True)
    job = ImportJob.objects.get(owner=user)
    assert job.state == "done" and Link.objects.filter(team=job.team, slug="spring").exists()


# Each source's fields, by a label of theirs.
FIELDS = {
    "shlink": ["Server address", "API key"],
    "yourls": ["YOURLS: mysqldump (SQL)", "YOURLS: yourls_url as CSV", "YOURLS: yourls_log as CSV", "Table prefix"],
    "kutt": ["Server address", "API key"],
    "bitly": ["Access token", "Bitly group GUID", "Bitly: the CSV its Links page exports"],
    "csv": ["Slingshot's links export (CSV)"],
}


def shown_fields(tab) -> dict[str, bool]:
    """Whether each source's fieldset shows."""
    return {source: tab.locator(f"fieldset[data-source={source}]").is_visible() for source in FIELDS}


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_the_import_page_shows_only_the_chosen_sources_fields(page, width, height):  # noqa: F811 (a fixture)
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/import/")

    for source in ["yourls", "shlink", "bitly", "csv", "kutt"]:
        page.locator("#id_source").select_option(source)

        assert shown_fields(page) == {name: name == source for name in FIELDS}, source
        for label in FIELDS[source]:
            expect(page.locator("fieldset:visible").get_by_label(label)).to_be_visible()
        assert not sideways(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"import-form-{width}.png", full_page=True)

    # What another source's field held is not sent: the YOURLS import gets no Bitly token.
    page.locator("#id_source").select_option("bitly")
    page.get_by_label("Access token").fill("a-bitly-token")
    page.locator("#id_source").select_option("yourls")
    page.get_by_label("YOURLS: mysqldump (SQL)").set_input_files(str(DUMP))
    page.get_by_role("button", name="Start the import").click()
    expect(page.locator("#source-import-state")).to_contain_text("Waiting for a worker")
    job = ImportJob.objects.get()
    assert job.source == "yourls" and bytes(job.secret) == b"" and list(job.options["files"]) == ["sql"]
    assert violations == []


@pytest.fixture
def page_without_script(browser, live_server, user):  # noqa: F811 (a fixture)
    context, tab = sign_in(browser, live_server, user, {"width": 390, "height": 844}, java_script_enabled=False)
    yield tab
    context.close()


def test_without_javascript_every_source_shows_under_its_name_and_the_form_works(page_without_script, user):
    tab = page_without_script
    tab.goto("/import/")

    assert shown_fields(tab) == dict.fromkeys(FIELDS, True)
    legends = tab.locator("fieldset[data-source] legend").all_inner_texts()
    assert legends == [label for _, label in Source.choices]
    assert not sideways(tab)
    tab.locator("#id_source").select_option("yourls")
    tab.locator("fieldset[data-source=yourls]").get_by_label("YOURLS: mysqldump (SQL)").set_input_files(str(DUMP))
    tab.get_by_role("button", name="Start the import").click()
    expect(tab.locator("#source-import-state")).to_contain_text("Waiting for a worker")

    call_command("run_imports", "--once")

    tab.reload()
    expect(tab.locator("#source-import-summary")).to_contain_text("7 stored")
    assert Link.objects.filter(team=ImportJob.objects.get(owner=user).team, slug="spring").exists()
