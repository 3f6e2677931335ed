"""The domains page (staff add, change and remove domains; everyone reads
them) and links on a domain in the pages: the form's choice, the link's
page, its QR code and the CSV export."""

import uuid

import orjson
import pytest
from django.urls import reverse

from links import domains
from links.models import Domain
from links.validation import default_host
from slingshot.contract import DOMAINS_KEY
from slingshot.redis import get_redis
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)


def new_host():
    return f"web-{uuid.uuid4().hex[:6]}.example.com"


@pytest.fixture
def staff(client, make_user):
    client.force_login(make_user(is_staff=True))
    return client


def test_staff_add_change_and_remove_a_domain_in_the_page(staff):
    host = new_host()
    response = staff.post(reverse("web:domain-list"), {"host": host.upper(), "root_url": "https://www.example.com"})
    assert response.status_code == 302
    domain = Domain.objects.get(host=host)
    assert domain.root_url == "https://www.example.com"
    page = staff.get(reverse("web:domain-list")).content.decode()
    assert host in page and default_host() in page and "Add a domain" in page

    bad = staff.post(reverse("web:domain-list"), {"host": "https://x.example.com/"})
    assert bad.status_code == 200 and "without a scheme" in bad.content.decode()
    again = staff.post(reverse("web:domain-list"), {"host": host})
    assert again.status_code == 200 and "there already" in again.content.decode()

    edit = reverse("web:domain-edit", args=[host])
    assert staff.post(edit, {"not_found_url": "https://www.example.com/404", "root_url": ""}).status_code == 302
    domain.refresh_from_db()
    assert (domain.root_url, domain.not_found_url) == ("", "https://www.example.com/404")

    assert staff.post(reverse("web:domain-delete", args=[host])).status_code == 302
    assert not Domain.objects.filter(host=host).exists()


def test_a_domains_expired_redirect_is_set_on_its_page_and_published(staff):
    host = new_host()
    assert staff.post(reverse("web:domain-list"), {"host": host}).status_code == 302
    edit = reverse("web:domain-edit", args=[host])
    bad = staff.post(edit, {"expired_url": "javascript:alert(1)"})
    assert bad.status_code == 200 and 'id="id_expired_url_error"' in bad.content.decode()
    assert staff.post(edit, {"expired_url": "HTTPS://Go.Example.com/over"}).status_code == 302
    assert Domain.objects.get(host=host).expired_url == "https://go.example.com/over"
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["expired_url"] == "https://go.example.com/over"
    assert "https://go.example.com/over" in staff.get(edit).content.decode()
    assert staff.post(edit, {"expired_url": ""}).status_code == 302
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["expired_url"] is None


def test_a_domain_with_links_is_kept_with_a_message(staff, make_user):
    domain = domains.domain_create(host=new_host())
    make_link(owner=make_user(), url="https://example.com/", slug=fresh(), domain=domain)
    response = staff.post(reverse("web:domain-delete", args=[domain.host]), follow=True)
    assert "1 link uses" in response.content.decode()
    assert Domain.objects.filter(pk=domain.pk).exists()


def test_people_who_are_not_staff_read_the_domains_only(signed_in):
    host = new_host()
    page = signed_in.get(reverse("web:domain-list"))
    assert page.status_code == 200 and "Add a domain" not in page.content.decode()
    assert signed_in.post(reverse("web:domain-list"), {"host": host}).status_code == 403
    assert not Domain.objects.filter(host=host).exists()
    domain = domains.domain_create(host=host)
    assert signed_in.get(reverse("web:domain-edit", args=[host])).status_code == 403
    assert signed_in.post(reverse("web:domain-delete", args=[host])).status_code == 403
    assert Domain.objects.filter(pk=domain.pk).exists()


def test_a_link_on_a_domain_from_the_form_to_its_page_qr_and_export(signed_in, user):
    domain = domains.domain_create(host=new_host())
    slug = fresh()
    form = signed_in.get(reverse("web:link-create")).content.decode()
    assert f'value="{domain.host}"' in form
    response = signed_in.post(
        reverse("web:link-create"),
        {"url": "https://example.com/d", "slug": slug, "domain": domain.host, "redirect_status": "302"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("web:link-detail", args=[slug]) + f"?domain={domain.host}"
    link = user.links.get(slug=slug)
    assert link.domain == domain
    # The same slug on the default domain is another link.
    make_link(owner=user, url="https://example.com/default", slug=slug)

    page = signed_in.get(response["Location"]).content.decode()
    assert f"//{domain.host}" in page and f"/{slug}" in page and "https://example.com/d" in page
    qr = signed_in.get(reverse("web:link-qr", args=[slug, "svg"]) + f"?domain={domain.host}")
    assert qr.status_code == 200 and qr["Content-Type"] == "image/svg+xml"
    assert signed_in.get(reverse("web:link-detail", args=[slug])).context["link"].url == "https://example.com/default"

    edit = reverse("web:link-edit", args=[slug]) + f"?domain={domain.host}"
    assert signed_in.get(edit).context["link"] == link

    export = b"".join(signed_in.get(reverse("web:link-export")).streaming_content).decode()
    header, *rows = export.splitlines()
    assert header.startswith("domain,slug,url")
    assert any(
        row.startswith(f"{domain.host},{slug},https://example.com/d") and f"://{domain.host}" in row for row in rows
    )
    assert any(row.startswith(f"{default_host()},{slug},https://example.com/default") for row in rows)

    listed = signed_in.get(reverse("web:link-list") + f"?domain={domain.host}").context["page"]
    assert [item.pk for item in listed] == [link.pk]
