"""Whatever a links CSV holds, its upload is refused with a reason
(ValidationError) or read row by row, and its import then creates each
row it found valid or gives that row its errors: never an exception, and
no row lost. Drawn by hypothesis: headers of the file's columns and
others, cells of each column's kind at their edges, text that cannot be
stored, and bytes that are not CSV or not UTF-8."""

import csv
import io

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from links.imports import CSV_COLUMNS, import_run_chunk, import_upload
from links.models import Link, LinkImport
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db

CELLS = {
    "url": ["https://example.com/", "http://ex.com/é?q=1", "javascript:alert(1)", "example.com", "http://127.0.0.1/"],
    "slug": ["fz", "taken", "a", "x" * 200, "a/b", "ünï"],
    "domain": ["", "go.example.com", "nowhere.example", "https://x"],
    "tags": ["a, b", "a,a", "x" * 200, ",,"],
    "redirect_status": ["301", "302", "307", "308", "200", "3e2", "99999999999999999999"],
    "starts_at": ["2030-01-01T00:00:00Z", "2030-02-30", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59+14:00"],
    "expires_at": ["2000-01-01T00:00:00Z", "2099-01-01", "0001-01-01T00:00:00-01:00", "tomorrow"],
    "max_visits": ["1", "0", "-1", str(2**31), str(2**63 - 1), str(2**63), "99999999999999999999", "1.5"],
    "forward_query": ["true", "false", "yes", "1", "maybe"],
    "crawlable": ["true", "FALSE", "0", "2"],
    "is_active": ["false", "true", "no"],
    "rules": ['[{"url": "https://ex.com/", "conditions": [{"type": "device", "value": "ios"}]}]', "[{}]", "[", "{}"],
    "split": ['[{"url": "https://ex.com/", "weight": 1}]', '[{"weight": 99999999999999999999}]', "[[]]"],
}
NASTY = ["", " ", "\x00", "=1+2", "'=x", "\u200b", "\u3164", "\r", "\n", '"', "null", "None", "x" * 3000]
# Any character a UTF-8 file can hold: not a lone surrogate (no UTF-8 has
# one), nor often a NUL (the file is refused whole for either).
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)
columns = st.lists(st.sampled_from(CSV_COLUMNS), min_size=1, max_size=8, unique=True).map(
    lambda names: ["url", *names] if "url" not in names else names
)


def cell(name: str) -> st.SearchStrategy[str]:
    """Most often a cell its column reads (the first of CELLS', or empty
    but for the url), so that many rows are created."""
    good = CELLS.get(name, [""])[:1] + ([] if name == "url" else [""])
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(CELLS.get(name, []) + NASTY), text)


@st.composite
def csv_files(draw) -> bytes:
    header = draw(
        columns | st.lists(st.sampled_from([*CSV_COLUMNS, "URL ", "password", "other", ""]) | text, max_size=4)
    )
    rows = draw(st.lists(st.tuples(*(cell(name.strip().lower()) for name in header)), min_size=0, max_size=5))
    out = io.StringIO()
    writer = csv.writer(out)
    for row in [header, *rows]:
        writer.writerow(row)
    return out.getvalue().encode(draw(st.sampled_from(["utf-8", "utf-8-sig"])))


@pytest.fixture
def owner():
    person = make_user()
    make_link(owner=person, url="https://example.com/", slug="taken")
    return person


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(content=csv_files() | csv_files() | csv_files() | st.binary(max_size=200))
def test_any_file_is_refused_with_a_reason_or_each_row_created_or_told_why(owner, content):
    try:
        link_import = import_upload(owner=owner, filename="links.csv", content=content)
    except ValidationError as exc:
        assert exc.messages and all(exc.messages), content
        return
    before = Link.objects.count()
    while link_import.position < link_import.total:
        link_import = import_run_chunk(link_import=link_import, size=2, expired_ok=True)
    link_import = LinkImport.objects.get(pk=link_import.pk)
    refused = [row for row in link_import.rows if row["errors"]]
    assert link_import.created == Link.objects.count() - before == link_import.total - len(refused), content
