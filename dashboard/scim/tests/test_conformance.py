"""The SCIM service against scim2-tester, a SCIM conformance checker from
PyPI (python-scim's, unmodified): it discovers the service from its own
endpoints, then makes, reads, lists, replaces, patches and deletes Users and
Groups filled with what their schemas allow, and checks every answer
against RFC 7643 and 7644. Through Django's whole WSGI stack, in process."""

import pytest
from django.core.wsgi import get_wsgi_application
from scim2_client.engines.wsgi import WSGISCIMClient
from scim2_tester import Status, check_server

from scim.tokens import token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_service_passes_the_conformance_checker(settings):
    settings.ALLOWED_HOSTS = ["testserver", "localhost"]
    _, raw = token_create(name="conformance")
    client = WSGISCIMClient(
        get_wsgi_application(), base_url="http://localhost/scim/v2", headers={"Authorization": f"Bearer {raw}"}
    )
    results = check_server(client)
    failed = [f"{r.title}: {r.reason}" for r in results if r.status not in (Status.SUCCESS, Status.SKIPPED)]
    passed = [r for r in results if r.status == Status.SUCCESS]
    print(f"\n{len(passed)} checks passed, {len(failed)} failed")
    assert passed and not failed, "\n".join(failed)
