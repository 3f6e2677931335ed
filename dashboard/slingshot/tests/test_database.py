import time

import pytest
from django.db import connection

from devstack.http_client import http_request
from testing.fixtures import database_url
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_kept_connection_that_postgresql_ended_is_replaced_before_a_request_uses_it(make_dashboard, user):
    # As after PostgreSQL restarts: each worker's next request gets a new
    # connection (CONN_HEALTH_CHECKS), not an error.
    _, raw = token_create(user=user, name="health", scope="read")
    port = make_dashboard({"DATABASE_URL": database_url() + "?application_name=slingshot-kept"}, workers=1)
    headers = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {raw}"}
    assert http_request(port, "/api/v1/links", headers=headers).status == 200

    kept = "FROM pg_stat_activity WHERE application_name = 'slingshot-kept'"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_terminate_backend(pid) {kept}")
        assert cursor.fetchall() == [(True,)]
        deadline = time.monotonic() + 10
        while cursor.execute(f"SELECT count(*) {kept}").fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
    for _ in range(3):
        assert http_request(port, "/api/v1/links", headers=headers).status == 200
