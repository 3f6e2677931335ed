"""Bulk import from CSV: every row checked on upload, then created in chunks."""

import csv
import io
import time
import urllib.request
from datetime import datetime, timezone

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from links.models import Link, LinkImport
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)


def upload(client, content: str | bytes, name: str = "links.csv"):
    content = content.encode() if isinstance(content, str) else content
    return client.post(reverse("web:link-import"), {"file": SimpleUploadedFile(name, content, "text/csv")})


def test_upload_checks_every_row_then_imports_in_chunks(signed_in, user, settings):
    settings.WEB_IMPORT_CHUNK_ROWS = 2
    taken = make_link(owner=user, url="https://example.com/", slug=fresh())
    good = [fresh() for _ in range(3)]
    text = "\n".join(
        [
            "url,slug,title,tags,is_active",
            f'https://example.com/1,{good[0]},One,"a,b",',
            "ftp://example.com/2,,Bad scheme,,",
            f"https://example.com/3,{taken.slug},Taken,,",
            f"https://example.com/4,{good[1]},Four,,false",
            f"https://example.com/5,{good[1]},Twice,,",
            f"https://example.com/6,{good[2]},Six,,",
        ]
    )
    response = upload(signed_in, text)
    link_import = LinkImport.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == reverse(
        "web:link-import-detail", args=[link_import.pk]
    )
    assert not Link.objects.filter(slug__in=good).exists()  # checking creates nothing

    page = signed_in.get(response["Location"])
    assert page.context["valid"] == 3 and page.context["import"].failed == 3
    errors = {row["line"]: row["errors"] for row in page.context["error_rows"]}
    assert errors == {
        3: {"url": ["Only http and https URLs can be shortened."]},
        4: {"slug": ["Link with this Slug already exists."]},
        6: {"slug": ["This slug appears on an earlier row of the file."]},
    }
    assert b"Only http and https URLs can be shortened." in page.content

    run = reverse("web:link-import-run", args=[link_import.pk])
    states = [signed_in.post(run, HTTP_ACCEPT="application/json").json() for _ in range(3)]
    assert [(s["position"], s["created"], s["done"]) for s in states] == [(2, 1, False), (4, 2, False), (6, 3, True)]
    links = {link.slug: link for link in Link.objects.filter(slug__in=good)}
    assert set(links) == set(good)
    assert links[good[0]].tags == ["a", "b"] and links[good[0]].is_active is True
    assert links[good[1]].title == "Four" and links[good[1]].is_active is False
    assert signed_in.post(run).status_code == 302  # without JavaScript: back to the page; nothing left to do
    assert LinkImport.objects.get(pk=link_import.pk).created == 3


def test_a_file_with_passwords_is_refused_rather_than_imported_without_them(signed_in, user):
    slug = fresh()
    for header in ("url,slug,password", "URL,Slug, Password "):
        response = upload(signed_in, f"{header}\nhttps://example.com/,{slug},hunter2\n")
        assert response.status_code == 200
        assert (
            "The file has a password column, and passwords are not imported"
            in response.context["form"].errors["file"][0]
        )
    assert b"set each password on its link&#x27;s Edit page" in response.content
    assert not LinkImport.objects.filter(owner=user).exists() and not Link.objects.filter(slug=slug).exists()


def test_a_row_refused_at_import_time_gets_its_error(signed_in, user, make_user):
    slug = fresh()
    upload(signed_in, f"url,slug\nhttps://example.com/,{slug}\n")
    link_import = LinkImport.objects.get(owner=user)
    make_link(owner=make_user(), url="https://example.com/other", slug=slug)  # taken since the upload
    state = signed_in.post(reverse("web:link-import-run", args=[link_import.pk]), HTTP_ACCEPT="application/json").json()
    assert (state["created"], state["failed"], state["done"]) == (0, 1, True)
    assert LinkImport.objects.get(pk=link_import.pk).rows[0]["errors"] == {
        "slug": ["Link with this Slug already exists."]
    }


@pytest.mark.parametrize(
    "content, message",
    [
        ("slug,title\nabc,x\n", "The first row must name the columns, one of them `url`."),
        ("url\n", "The file has no rows below its header."),
        ("url,title\nhttps://example.com/,a\x00b\n", "The file holds null characters: save it as CSV text in UTF-8."),
        ("url\nhttps://example.com/\n".encode("utf-16"), "The file is not UTF-8 text: line 1 is not."),
    ],
)
def test_files_that_are_not_link_lists_are_refused(signed_in, content, message):
    response = upload(signed_in, content)
    assert response.status_code == 200 and response.context["form"].errors["file"] == [message]


def test_someone_elses_import_is_not_found(signed_in, make_user):
    someone = make_user()
    theirs = LinkImport.objects.create(owner=someone, team=someone.personal_team, filename="x.csv", rows=[])
    assert signed_in.get(reverse("web:link-import-detail", args=[theirs.pk])).status_code == 404
    assert signed_in.post(reverse("web:link-import-run", args=[theirs.pk])).status_code == 404


def test_an_export_imports_back_as_it_was(signed_in, user):
    fields = dict(
        url="https://example.com/r?a=1",
        slug=fresh(),
        title="Round, trip",
        tags=["x", "y"],
        redirect_status=308,
        expires_at=datetime(2030, 1, 2, 3, 4, tzinfo=timezone.utc),
        forward_query=True,
        is_active=False,
    )
    make_link(owner=user, **fields)
    exported = b"".join(signed_in.get(reverse("web:link-export")).streaming_content).decode()
    Link.objects.filter(owner=user).delete()

    upload(signed_in, exported)
    link_import = LinkImport.objects.get(owner=user)
    assert link_import.failed == 0
    signed_in.post(reverse("web:link-import-run", args=[link_import.pk]))
    link = Link.objects.get(owner=user)
    assert {name: getattr(link, name) for name in fields} == fields


def test_a_10000_row_file_is_checked_at_once(signed_in, user, make_user, django_assert_max_num_queries, monkeypatch):
    # The domains' hosts are read once for the file: a process keeps them 5 s, which a loaded
    # machine's upload outlasted (12 queries in a run of 2026-11-29), and that is not what is counted.
    monkeypatch.setattr("links.validation._DOMAIN_HOSTS_TTL", 3600.0)
    # So are the screening lists' (the staff's bans among them: asked even with no SCREEN_LISTS).
    monkeypatch.setattr("screening.screen.RELOAD_SECONDS", 3600.0)
    taken = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    prefix = fresh("k")
    rows = [f'https://example.com/{i},{prefix}-{i},Row {i},"a,b",302,,false,true' for i in range(10_000)]
    bad = {  # line number (the header is line 1) -> (row, errors)
        2: ("ftp://example.com/0,,,,,,,", {"url": ["Only http and https URLs can be shortened."]}),
        101: (f"https://example.com/99,{taken.slug},,,,,,", {"slug": ["Link with this Slug already exists."]}),
        1002: (
            f"https://example.com/1000,{prefix}-5,,,,,,",
            {"slug": ["This slug appears on an earlier row of the file."]},
        ),
        5001: ("https://example.com/4999,admin,,,,,,", {"slug": ["'admin' is reserved."]}),
        7001: ("https://example.com/6999,,,,999,,,", {"redirect_status": ["Value 999 is not a valid choice."]}),
        8001: (
            "https://example.com/7999,,,,,next week,,",
            {
                "expires_at": [
                    "Enter a date and time as 2030-01-31T12:00:00Z (ISO 8601; UTC unless an offset is given)."
                ]
            },
        ),
        9001: (
            "https://example.com/8999,,,bad tag!,,,,",
            {"tags": ["Tags are 1 to 50 letters, digits, '.', '-' or '_': 'bad tag!' is not."]},
        ),
        10001: ("https://example.com/9999,,,,,,,maybe", {"is_active": ["Use true or false."]}),
    }
    for line, (row, _) in bad.items():
        rows[line - 2] = row
    text = "\n".join(["url,slug,title,tags,redirect_status,expires_at,forward_query,is_active", *rows])

    started = time.perf_counter()
    # session, user, the current team and the role in it, the domains, their hosts for the loop check
    # (kept a few seconds), the file's taken slugs, the import's row (and a savepoint or two around it)
    with django_assert_max_num_queries(9):
        response = upload(signed_in, text)
    print(f"\n10,000-row upload checked in {time.perf_counter() - started:.2f} s")

    link_import = LinkImport.objects.get(owner=user)
    assert response.status_code == 302 and link_import.total == 10_000
    assert {row["line"]: row["errors"] for row in link_import.rows if row["errors"]} == {
        line: errors for line, (_, errors) in bad.items()
    }
    assert not Link.objects.filter(owner=user).exists()
    page = signed_in.get(reverse("web:link-import-detail", args=[link_import.pk]))
    assert page.context["valid"] == 10_000 - len(bad)


def test_a_file_over_the_size_limit_is_a_form_error(signed_in, user, settings):
    settings.WEB_IMPORT_MAX_BYTES = 100_000
    big = "url\n" + "".join(f"https://example.com/{i:020d}\n" for i in range(5_000))  # ~200 kB
    response = upload(signed_in, big)
    assert response.status_code == 200
    assert response.context["form"].errors["file"] == ["The file is larger than 97.7\xa0KB: split it."]
    assert not response.wsgi_request.FILES  # dropped while it was read, not kept whole and refused after
    assert not LinkImport.objects.filter(owner=user).exists()
    assert upload(signed_in, big[:90_000].rsplit("\n", 1)[0]).status_code == 302  # under the limit


def test_a_large_upload_to_the_live_server_gets_an_answer(live_server, user, settings):
    """A real HTTP request: the body is read to its end and answered with the
    form's error, not a reset connection, whatever Django's in-memory limits."""
    from django.test import Client
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    session = Client()
    session.force_login(user)
    csrf = "a" * 32  # a CSRF secret of our own, as cookie and as form field
    content = b"url\n" + b"https://example.com/a-long-enough-path-to-fill-the-file\n" * 200_000  # 11 MB
    assert len(content) > max(
        settings.WEB_IMPORT_MAX_BYTES, settings.FILE_UPLOAD_MAX_MEMORY_SIZE, settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    )
    body = encode_multipart(
        BOUNDARY, {"csrfmiddlewaretoken": csrf, "file": SimpleUploadedFile("big.csv", content, "text/csv")}
    )
    request = urllib.request.Request(
        live_server.url + reverse("web:link-import"),
        data=body,
        method="POST",
        headers={
            "Content-Type": MULTIPART_CONTENT,
            "Cookie": f"sessionid={session.cookies['sessionid'].value}; csrftoken={csrf}",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        assert "The file is larger than 5.0\xa0MB: split it." in response.read().decode()
    assert not LinkImport.objects.filter(owner=user).exists()


def test_the_upload_still_needs_its_csrf_token(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert upload(client, "url\nhttps://example.com/\n").status_code == 403
    assert not LinkImport.objects.filter(owner=user).exists()


def test_cells_that_cannot_be_read_get_their_errors(signed_in, user):
    text = "\n".join(
        [
            "url,title,redirect_status,expires_at,forward_query,is_active",
            ",no url,,,,",
            "https://example.com/2,,three,,,",
            "https://example.com/3,,,2030-01-02T00:00:00+16:00,,",
            "https://example.com/4,,,,perhaps,",
            "https://example.com/5,fine,301,2030-01-02,YES,Off",
        ]
    )
    upload(signed_in, text)
    link_import = LinkImport.objects.get(owner=user)
    assert [row["errors"] for row in link_import.rows] == [
        {"url": ["This field is required."]},
        {"redirect_status": ["Enter a whole number."]},
        {"expires_at": ["The UTC offset must be within ±15:59."]},
        {"forward_query": ["Use true or false."]},
        {},
    ]
    signed_in.post(reverse("web:link-import-run", args=[link_import.pk]))
    link = Link.objects.get(owner=user)
    assert (link.title, link.redirect_status, link.forward_query, link.is_active) == ("fine", 301, True, False)
    assert link.expires_at == datetime(2030, 1, 2, tzinfo=timezone.utc)


def test_the_export_neutralises_formulas_and_imports_back(signed_in, user):
    typed = {  # title -> what the export's cell holds
        '=HYPERLINK("https://evil.example","click")': '\'=HYPERLINK("https://evil.example","click")',
        "+1+2": "'+1+2",
        "-3": "'-3",
        "@SUM(A1)": "'@SUM(A1)",
        "\tcmd": "'\tcmd",
        "\rcmd": "'\rcmd",
        "'=already quoted": "''=already quoted",
        "it's fine": "it's fine",
        "'plain": "'plain",
    }
    slugs = {}
    for i, title in enumerate(typed):
        slug = f"-{fresh()}" if i == 0 else fresh()
        slugs[slug] = title
        make_link(owner=user, url=f"https://example.com/{i}", slug=slug, title=title, tags=["-minus", "x"])
    exported = b"".join(signed_in.get(reverse("web:link-export")).streaming_content).decode()
    cells = {row["slug"]: row for row in csv.DictReader(io.StringIO(exported, newline=""))}
    assert {cells["'" + slug if slug.startswith("-") else slug]["title"] for slug in slugs} == set(typed.values())
    assert {row["tags"] for row in cells.values()} == {"'-minus,x"}
    for row in cells.values():  # nothing a spreadsheet would run
        assert not any(value.startswith(("=", "+", "-", "@", "\t", "\r")) for value in row.values()), row

    Link.objects.filter(owner=user).delete()
    upload(signed_in, exported)
    link_import = LinkImport.objects.get(owner=user)
    assert link_import.failed == 0
    signed_in.post(reverse("web:link-import-run", args=[link_import.pk]))
    assert {link.slug: link.title for link in Link.objects.filter(owner=user)} == slugs
    assert {tuple(link.tags) for link in Link.objects.filter(owner=user)} == {("-minus", "x")}


@pytest.mark.parametrize("confirmed", [False, True])
def test_a_row_whose_expiry_has_passed_is_imported_only_once_confirmed(signed_in, user, confirmed):
    over, later = fresh("ov"), fresh("lt")
    upload(
        signed_in,
        f"url,slug,expires_at\nhttps://example.com/over,{over},2020-01-01T00:00:00Z\n"
        f"https://example.com/later,{later},2099-01-01T00:00:00Z\n",
    )
    link_import = LinkImport.objects.get(owner=user)
    page = signed_in.get(reverse("web:link-import-detail", args=[link_import.pk]))
    assert page.context["valid"] == 2 and page.context["expired_count"] == 1
    assert b"1 row expires at a time that has passed (line 2)" in page.content
    assert b'name="expired_ok"' in page.content

    run = reverse("web:link-import-run", args=[link_import.pk])
    signed_in.post(run, {"expired_ok": "on"} if confirmed else {})
    assert Link.objects.filter(slug=later).exists()
    assert Link.objects.filter(slug=over).exists() is confirmed
    link_import.refresh_from_db()
    assert link_import.failed == (0 if confirmed else 1)
    page = signed_in.get(reverse("web:link-import-detail", args=[link_import.pk]))
    assert b'name="expired_ok"' not in page.content
    if not confirmed:
        assert b"This time has passed: the short URL would answer 410 Gone from the start." in page.content
