"""The CSV rules on their own; uploads and exports through the pages are in web/tests/test_import.py."""

from datetime import datetime, timedelta, timezone

import pytest

from links.fields import LinkFields
from links.imports import CSV_COLUMNS
from links.imports import row_arguments as read_row
from slingshot.csv_text import neutralise, unquote

TRICKY = ["=1+2", "+1", "-1", "@A1", "\tx", "\rx", "'=x", "''=x", "'x", "x'", "", "'", "''", "plain", "a=b", "'-'"]


@pytest.mark.parametrize("value", TRICKY)
def test_unquote_gives_back_what_neutralise_wrote(value):
    written = neutralise(value)
    assert unquote(written) == value
    assert not written.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_unquote_takes_a_quote_off_formulas_only():
    assert [unquote(value) for value in ["'=SUM(A1)", "'@x", "'-5", "'plain", "it's", "''"]] == [
        "=SUM(A1)",
        "@x",
        "-5",
        "'plain",
        "it's",
        "''",
    ]


def fields(**cells):
    return {name: cells.get(name, "") for name in CSV_COLUMNS}


DEFAULT, OTHER = object(), object()  # stand-ins for Domain rows: row_arguments only passes them on


def row_arguments(cells):
    """The row's arguments with two domains known (no query)."""
    return read_row(cells, {"": DEFAULT, "go.example.com": OTHER})


def test_row_arguments_types_the_cells():
    arguments, errors = row_arguments(
        fields(
            url="https://example.com/",
            slug="s",
            title="T",
            tags=" a, b ,,c ",
            redirect_status="301",
            expires_at="2030-01-02 03:04",
            forward_query="Yes",
            is_active="0",
        )
    )
    assert errors == {}
    assert arguments == LinkFields(
        domain=DEFAULT,
        url="https://example.com/",
        slug="s",
        title="T",
        tags=["a", "b", "c"],
        redirect_status=301,
        expires_at=datetime(2030, 1, 2, 3, 4, tzinfo=timezone.utc),
        forward_query=True,
        is_active=False,
    )
    defaults, _ = row_arguments(fields(url="https://example.com/", expires_at="2030-01-02T00:00:00+05:30"))
    assert (defaults.slug, defaults.tags, defaults.redirect_status, defaults.forward_query, defaults.is_active) == (
        None,
        [],
        302,
        False,
        True,
    )
    assert defaults.expires_at.utcoffset() == timedelta(hours=5, minutes=30)
    assert row_arguments(fields(url="https://example.com/", expires_at="2030-01-02"))[0].expires_at == datetime(
        2030, 1, 2, tzinfo=timezone.utc
    )
    # A domain cell as people write it: any case, a trailing dot.
    assert row_arguments(fields(url="https://example.com/", domain="Go.Example.com."))[0].domain is OTHER


def test_row_arguments_says_which_cells_cannot_be_read():
    arguments, errors = row_arguments(
        fields(domain="nowhere.example", redirect_status="3O2", expires_at="2030-02-30", is_active="y")
    )
    assert arguments is None
    assert errors == {
        "url": ["This field is required."],
        "domain": ["No such domain: nowhere.example."],
        "redirect_status": ["Enter a whole number."],
        "expires_at": ["Enter a date and time as 2030-01-31T12:00:00Z (ISO 8601; UTC unless an offset is given)."],
        "is_active": ["Use true or false."],
    }
