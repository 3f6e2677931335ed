import pytest
from django.db import transaction

from links import services
from links.domains import default_domain
from links.models import Domain
from links.validation import default_host
from testing.factories import fresh, make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_default_domain_is_kept_once_committed_and_never_from_a_rollback(django_assert_num_queries):
    owner = make_user()
    with pytest.raises(RuntimeError), transaction.atomic():
        made = make_link(owner=owner, url="https://example.com/", slug=fresh()).domain
        raise RuntimeError("rolled back")
    assert not Domain.objects.filter(pk=made.pk).exists()

    # A kept id of the rolled-back row would fail this commit (the link's
    # foreign key is checked then).
    link = make_link(owner=owner, url="https://example.com/", slug=fresh())
    domain = Domain.objects.get(host=default_host())
    assert link.domain_id == domain.pk != made.pk
    with django_assert_num_queries(0):
        kept = default_domain()
        assert (kept.pk, kept.host) == (domain.pk, domain.host)

    # The other fields are read when asked for, as they are now.
    Domain.objects.filter(pk=domain.pk).update(root_url="https://example.com/home")
    with django_assert_num_queries(1):
        assert default_domain().root_url == "https://example.com/home"

    # A row deleted anyway (no service deletes it) is not kept.
    services.link_delete(link=link)
    Domain.objects.filter(pk=domain.pk).delete()
    again = make_link(owner=owner, url="https://example.com/", slug=fresh())
    assert again.domain_id == Domain.objects.get(host=default_host()).pk != domain.pk


def test_the_default_domain_is_kept_by_host(settings, django_assert_num_queries):
    first = default_domain()
    settings.EDGE_BASE_URL = "http://other-default.test"
    other = default_domain()
    assert other.host == "other-default.test" and other.pk != first.pk
    with django_assert_num_queries(0):
        assert default_domain().pk == other.pk
