"""The dashboard's /metrics (slingshot/metrics.py): requests by method, view
and status and their latency, for allowed addresses only, added up over
every gunicorn worker."""

import ipaddress
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import request

pytestmark = pytest.mark.django_db(transaction=True)

SIGN_IN_OK = ("slingshot_dashboard_requests_total", {"method": "GET", "view": "web:sign-in", "status": "200"})


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict, name: str, labels: dict[str, str]) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def scrape(client, **extra) -> dict:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content.decode())


def test_requests_are_counted_by_method_view_and_status_and_timed(client):
    before = scrape(client)
    client.get("/sign-in/")
    client.get("/sign-in/")
    client.post("/sign-in/", {"username": "nobody", "password": "x"})
    client.get("/no/such/page")
    client.get("/healthz")
    after = scrape(client)

    def grew(name, labels=None, **more):
        labels = {**(labels or {}), **more}
        return value(after, name, labels) - value(before, name, labels)

    assert grew(*SIGN_IN_OK) == 2
    assert grew("slingshot_dashboard_requests_total", method="POST", view="web:sign-in", status="200") == 1
    assert grew("slingshot_dashboard_requests_total", method="GET", view="unresolved", status="404") == 1
    assert grew("slingshot_dashboard_requests_total", method="GET", view="healthz", status="200") == 1
    assert grew("slingshot_dashboard_request_duration_seconds_count", method="GET", view="web:sign-in") == 2
    assert grew("slingshot_dashboard_request_duration_seconds_bucket", method="GET", view="web:sign-in", le="+Inf") == 2


def test_only_allowed_addresses_may_read_them(client, settings):
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.7").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    settings.DASHBOARD_METRICS_ALLOW = [ipaddress.ip_network("203.0.113.0/24")]
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.7").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_behind_a_proxy_the_client_is_who_the_proxy_says(client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # The proxy itself is on the loopback; the client it forwards is not.
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200


def test_metrics_only_answer_get(client):
    assert client.post("/metrics").status_code == 405


def test_every_gunicorn_worker_counts_into_one_scrape(make_dashboard, tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_999999.db").write_bytes(b"left over from an earlier run")  # unreadable: must be cleared
    port = make_dashboard({"PROMETHEUS_MULTIPROC_DIR": str(folder)}, workers=2)
    assert not (folder / "counter_999999.db").exists()

    with ThreadPoolExecutor(max_workers=4) as pool:  # at once, so that both workers answer some
        statuses = list(pool.map(lambda _: request(port, "/sign-in/").status, range(24)))
    assert statuses == [200] * 24
    for _ in range(4):  # whichever worker answers the scrape, it reports every worker's counts
        response = request(port, "/metrics")
        assert response.status == 200, response.body
        assert value(samples(response.body.decode()), *SIGN_IN_OK) == 24
    assert list(folder.glob("counter_*.db")), "the workers wrote no counts to the folder"


def test_operator_endpoints_answer_whatever_the_host_header(make_dashboard):
    port = make_dashboard({"ALLOWED_HOSTS": "links.example.com"})
    for path in ("/healthz", "/metrics"):
        assert request(port, path, headers={"Host": "dashboard:8000"}).status == 200, path
    assert request(port, "/sign-in/", headers={"Host": "dashboard:8000"}).status == 400
