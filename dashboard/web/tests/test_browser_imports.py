"""The Import page in a real browser (test_browser.py's Chromium): a YOURLS
dump uploaded, the job worked in the background by run_imports while the
job's page polls it (app.js, under the page's CSP), its summary shown when
it ends; at a desktop's width and a phone's."""

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from importers.models import ImportJob
from links.models import Link

from .test_browser import SCREENSHOTS, browser, page  # noqa: F401 (fixtures)

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
