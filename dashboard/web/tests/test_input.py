"""Text the pages cannot keep, or that cannot be seen where it would change
what was asked for: an error on the field (or the CSV row), never a 500,
nothing stored. A form's fields cannot carry a lone surrogate (Django reads
bytes that are not UTF-8 as U+FFFD), but JSON typed in a textarea can: its
"\\ud800" escape decodes to one."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from links.models import Domain, Link, LinkImport
from testing.factories import fresh, make_link
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)

# Characters IDNA maps to nothing: dropped from a host, they would leave another host than the one typed.
INVISIBLE = ["\u3164", "\u115f", "\uffa0", "\ufe0f"]
RULE = {"url": "https://rule.example/", "conditions": [{"type": "device", "value": "ios"}]}


@pytest.fixture(autouse=True)
def edge_at(settings):
    settings.EDGE_BASE_URL = "https://sho.rt"


def link_form(slug: str, **fields) -> dict:
    return {"url": "https://example.com/", "slug": slug, "redirect_status": "302", "is_active": "on", **fields}


def field_errors(response, field: str, case, form: str = "form") -> list[str]:
    assert response.status_code == 200, (case, response.status_code)
    errors = response.context[form].errors.get(field)
    assert errors, (case, response.context[form].errors)
    assert b'class="error field-error"' in response.content
    return errors


def test_a_host_with_an_invisible_character_is_a_field_error_on_the_link_form(signed_in):
    for char in INVISIBLE:
        slug = fresh()
        split = [{"url": f"https://{char}a.example/", "weight": 1}, {"url": "https://b.example/", "weight": 1}]
        for fields, field in [
            ({"url": f"https://exa{char}mple.com/"}, "url"),
            ({"tags": f"spring,sale{char}"}, "tags"),
            ({"rules": json.dumps([{**RULE, "url": f"https://ru{char}le.example/"}])}, "rules"),
            ({"split": json.dumps(split)}, "split"),
        ]:
            errors = field_errors(signed_in.post(reverse("web:link-create"), link_form(slug, **fields)), field, fields)
            assert any(f"U+{ord(char):04X}" in error for error in errors), errors
    assert not Link.objects.exists()


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\u0000"])
def test_json_escapes_of_what_text_cannot_hold_are_a_field_error_shown_as_typed(signed_in, user, escape):
    # JSON as typed, the escape in place of "@".
    typed_rules = json.dumps([{**RULE, "url": "https://rule.example/@"}]).replace("@", escape)
    typed_split = json.dumps([{"url": "https://a.example/", "weight": 1}, {"url": "https://b@.example/", "weight": 1}])
    typed_split = typed_split.replace("@", escape)
    slug = fresh()
    page = signed_in.post(reverse("web:link-create"), link_form(slug, rules=typed_rules, split=typed_split))
    assert field_errors(page, "rules", escape) and field_errors(page, "split", escape)
    assert typed_rules.replace('"', "&quot;") in page.content.decode()  # the box keeps what was typed
    assert not Link.objects.filter(slug=slug).exists()

    link = make_link(owner=user, url="https://example.com/", slug=fresh(), rules=[RULE])
    page = signed_in.post(reverse("web:link-edit", args=[link.slug]), link_form(link.slug, rules=typed_rules))
    field_errors(page, "rules", escape)
    link.refresh_from_db()
    assert link.rules == [RULE]


def test_the_link_edit_form_refuses_a_changed_host_and_keeps_the_link(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh())
    page = signed_in.post(
        reverse("web:link-edit", args=[link.slug]), link_form(link.slug, url="https://exa\u3164mple.org/")
    )
    field_errors(page, "url", "edit")
    link.refresh_from_db()
    assert link.url == "https://example.com/"


def test_the_same_characters_in_a_path_or_a_title_are_kept_as_typed(signed_in):
    slug = fresh()
    response = signed_in.post(
        reverse("web:link-create"), link_form(slug, url="https://example.com/a\u3164b", title="Sale \u2764\ufe0f")
    )
    assert response.status_code == 302
    link = Link.objects.get(slug=slug)
    assert (link.url, link.title) == ("https://example.com/a%E3%85%A4b", "Sale \u2764\ufe0f")


@pytest.fixture
def staff(client, make_user):
    client.force_login(make_user(is_staff=True))
    return client


def test_the_domain_forms_refuse_invisible_characters_and_change_nothing(staff):
    domain = Domain.objects.create(host="go.example.org", root_url="https://root.example/")
    edit = reverse("web:domain-edit", args=[domain.host])
    for char in INVISIBLE:
        field_errors(staff.post(reverse("web:domain-list"), {"host": f"to{char}.example.org"}), "host", char)
        page = staff.post(
            reverse("web:domain-list"), {"host": "to.example.org", "root_url": f"https://r{char}.example/"}
        )
        field_errors(page, "root_url", char)
        field_errors(staff.post(edit, {"not_found_url": f"https://n{char}f.example/"}), "not_found_url", char)
    assert list(Domain.objects.exclude(host="sho.rt").values_list("host", "root_url", "not_found_url")) == [
        ("go.example.org", "https://root.example/", "")
    ]


def test_a_domain_path_that_cannot_be_a_host_is_a_404(staff):
    for host in ("go%00.example.org", "go%E3%85%A4.example.org", "%ED%A0%80"):
        assert staff.get(f"/domains/{host}/edit/").status_code == 404, host
        assert staff.post(f"/domains/{host}/delete").status_code == 404, host


def test_report_filters_that_text_cannot_hold_are_an_error_not_a_500(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh())
    for name in ("browser", "os", "referer_host", "country", "device", "rule"):
        page = signed_in.get(reverse("web:link-detail", args=[link.slug]), {name: "a\x00"})
        assert page.status_code == 200, name
        assert page.context["form"].non_field_errors() == [f"{name}: Null characters are not allowed."]
        assert f"{name}: Null characters are not allowed.".encode() in page.content
        report = signed_in.get(reverse("web:link-report", args=[link.slug]), {name: "a\x00"})
        assert report.status_code == 200, name
        export = signed_in.get(
            reverse("web:link-clicks-export", args=[link.slug]),
            {"from": "2030-01-01T00:00", "to": "2030-01-02T00:00", name: "a\x00"},
        )
        assert export.status_code == 400 and b"Null characters are not allowed." in export.content, name


def test_list_filters_and_searches_that_cannot_match_are_left_out(signed_in, user, client, make_user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), tags=["spring"])
    for value in ("a\x00", "\u3164", "%ED%A0%80"):
        for name in ("q", "tag", "domain", "sort", "status", "page"):
            page = signed_in.get(reverse("web:link-list"), {name: value})
            assert page.status_code == 200, (name, value)
            export = signed_in.get(reverse("web:link-export"), {name: value})
            assert export.status_code == 200 and b"".join(export.streaming_content), (name, value)
    assert Link.objects.get() == link
    client.force_login(make_user(is_superuser=True))
    assert client.get(reverse("web:users"), {"q": "a\x00"}).status_code == 200
    for value in ("go\x00.example.org", "go\u3164.example.org"):
        orphans = client.get(reverse("web:orphan-visits"), {"domain": value})
        assert orphans.status_code == 200 and orphans.context["form"].errors["domain"], value


def test_an_invited_name_is_kept_as_typed_or_refused(client, make_user):
    client.force_login(make_user(is_superuser=True))
    people = get_user_model().objects.count()
    for username, reason in [
        ("ann\u3164", "U+3164"),
        ("\u115fbob", "U+115F"),
        ("\uff41nn", "Would be kept as ann"),  # full-width: NFKC would make it another name
    ]:
        page = client.post(reverse("web:users"), {"username": username, "email": ""})
        errors = field_errors(page, "username", username)
        assert any(reason in error for error in errors), errors
    assert get_user_model().objects.count() == people


def csv_upload(client, content: bytes):
    return client.post(reverse("web:link-import"), {"file": SimpleUploadedFile("links.csv", content, "text/csv")})


def test_csv_rows_with_invisible_characters_get_row_errors_and_the_rest_imports(signed_in, user):
    Domain.objects.create(host="go.example.org")
    kept = fresh()
    rows = [
        "domain,slug,url,title,tags",
        f",{fresh()},https://exa\u3164mple.com/,Host,",
        f"go\u3164.example.org,{fresh()},https://example.com/,Domain,",
        f',{fresh()},https://example.com/,Tag,"a,sale\u115f"',
        f",{kept},https://example.com/p\u3164th,Title \u3164 kept,",
    ]
    response = csv_upload(signed_in, "\n".join(rows).encode())
    link_import = LinkImport.objects.get(owner=user)
    assert response.status_code == 302
    errors = {row["line"]: row["errors"] for row in link_import.rows if row["errors"]}
    assert set(errors) == {2, 3, 4}
    assert "U+3164" in errors[2]["url"][0]
    assert errors[3]["domain"] == ["No such domain: go\\u3164.example.org."]
    assert "U+115F" in errors[4]["tags"][0]
    page = signed_in.get(reverse("web:link-import-detail", args=[link_import.pk]))
    assert b"No such domain: go\\u3164.example.org." in page.content
    signed_in.post(reverse("web:link-import-run", args=[link_import.pk]))
    link = Link.objects.get()
    assert (link.slug, link.url, link.title) == (kept, "https://example.com/p%E3%85%A4th", "Title \u3164 kept")


def test_a_csv_holding_a_surrogates_bytes_is_refused_naming_its_line(signed_in):
    content = b"url,title\nhttps://example.com/,ok\nhttps://example.com/,\xed\xa0\x80\n"
    response = csv_upload(signed_in, content)
    assert response.status_code == 200
    assert response.context["form"].errors["file"] == ["The file is not UTF-8 text: line 3 is not."]
    assert not LinkImport.objects.exists()


def test_a_form_posted_empty_says_what_is_missing_and_changes_nothing(client, make_user):
    """A POST with no fields at all (a script's, or a form whose fields a
    browser extension took out) binds the form: its required fields are
    errors on the page, and nothing is created or changed."""
    person = make_user(is_staff=True, is_superuser=True)
    link = make_link(owner=person, url="https://example.com/", slug=fresh())
    team = person.memberships.get().team
    client.force_login(person)
    pages = {
        reverse("web:link-create"): "url",
        reverse("web:link-edit", args=[link.slug]): "url",
        reverse("web:domain-list"): "host",
        reverse("web:tokens"): "name",
        reverse("web:team-list"): "name",
        reverse("web:team-detail", args=[team.pk]): "username",
        reverse("web:users"): "username",
        reverse("web:time-zone"): "time_zone",
    }
    for page, field in pages.items():
        field_errors(client.post(page), field, page)
    assert client.post(reverse("web:source-import")).context["form"].errors, "import"
    link.refresh_from_db()
    assert (Link.objects.count(), link.url, link.is_active) == (1, "https://example.com/", True)
    assert not Domain.objects.exclude(host="sho.rt").exists()
    assert not ApiToken.objects.filter(user=person).exists()
