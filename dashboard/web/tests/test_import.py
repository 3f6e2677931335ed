"""Bulk import from CSV: every row checked on upload, then created in chunks."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from links.models import Link
from links.services import link_create
from links.models import LinkImport

from .conftest import unique_slug

pytestmark = pytest.mark.django_db(transaction=True)


def upload(client, text: str, name: str = "links.csv"):
    return client.post(reverse("web:link-import"), {"file": SimpleUploadedFile(name, text.encode(), "text/csv")})


def test_upload_checks_every_row_then_imports_in_chunks(signed_in, user, settings):
    settings.WEB_IMPORT_CHUNK_ROWS = 2
    taken = link_create(owner=user, url="https://example.com/", slug=unique_slug())
    good = [unique_slug() for _ in range(3)]
    text = "\n".join([
        "url,slug,title,tags,is_active",
        f"https://example.com/1,{good[0]},One,\"a,b\",",
        "ftp://example.com/2,,Bad scheme,,",
        f"https://example.com/3,{taken.slug},Taken,,",
        f"https://example.com/4,{good[1]},Four,,false",
        f"https://example.com/5,{good[1]},Twice,,",
        f"https://example.com/6,{good[2]},Six,,",
    ])
    response = upload(signed_in, text)
    link_import = LinkImport.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == reverse("web:link-import-detail", args=[link_import.pk])
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


def test_a_row_refused_at_import_time_gets_its_error(signed_in, user, make_user):
    slug = unique_slug()
    upload(signed_in, f"url,slug\nhttps://example.com/,{slug}\n")
    link_import = LinkImport.objects.get(owner=user)
    link_create(owner=make_user(), url="https://example.com/other", slug=slug)  # taken since the upload
    state = signed_in.post(reverse("web:link-import-run", args=[link_import.pk]), HTTP_ACCEPT="application/json").json()
    assert (state["created"], state["failed"], state["done"]) == (0, 1, True)
    assert LinkImport.objects.get(pk=link_import.pk).rows[0]["errors"] == {"slug": ["Link with this Slug already exists."]}


@pytest.mark.parametrize("content, message", [
    ("slug,title\nabc,x\n", "The first row must name the columns, one of them `url`."),
    ("url\n", "The file has no rows below its header."),
])
def test_files_that_are_not_link_lists_are_refused(signed_in, content, message):
    response = upload(signed_in, content)
    assert response.status_code == 200 and response.context["form"].errors["file"] == [message]


def test_someone_elses_import_is_not_found(signed_in, make_user):
    theirs = LinkImport.objects.create(owner=make_user(), filename="x.csv", rows=[])
    assert signed_in.get(reverse("web:link-import-detail", args=[theirs.pk])).status_code == 404
    assert signed_in.post(reverse("web:link-import-run", args=[theirs.pk])).status_code == 404


def test_an_export_imports_back_as_it_was(signed_in, user):
    from datetime import datetime, timezone

    fields = dict(url="https://example.com/r?a=1", slug=unique_slug(), title="Round, trip", tags=["x", "y"],
                  redirect_status=308, expires_at=datetime(2030, 1, 2, 3, 4, tzinfo=timezone.utc),
                  forward_query=True, is_active=False)
    link_create(owner=user, **fields)
    exported = b"".join(signed_in.get(reverse("web:link-export")).streaming_content).decode()
    Link.objects.filter(owner=user).delete()

    upload(signed_in, exported)
    link_import = LinkImport.objects.get(owner=user)
    assert link_import.failed == 0
    signed_in.post(reverse("web:link-import-run", args=[link_import.pk]))
    link = Link.objects.get(owner=user)
    assert {name: getattr(link, name) for name in fields} == fields
