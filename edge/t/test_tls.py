"""HTTPS at the edge for every domain: each domain's own certificate, found
by the handshake's server name in the certificate folder, a default one for
other names, a certificate put in place served without a restart, and a
domain's plain-HTTP requests sent to HTTPS."""

import ssl
import uuid

import pytest
from edge_helpers import wait_until

from devstack.nginx import make_certificate
from links import domains
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)


def der(path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(path.read_text())


def certificate_for(edge, host: str):
    cert, _ = make_certificate(edge.cert_dir, host, hosts=(host,))
    return cert


def settled(edge, check, what: str) -> None:
    wait_until(lambda: all(check() for _ in range(4 * edge.workers)), what=what)


def test_two_domains_with_the_same_slug_each_over_https_with_its_own_certificate(edge, owner, two_domains):
    go, to = two_domains
    certificates = {domain.host: certificate_for(edge, domain.host) for domain in two_domains}
    slug = "s" + uuid.uuid4().hex[:8]
    make_link(owner=owner, url="https://example.com/go", slug=slug, domain=go)
    make_link(owner=owner, url="https://example.com/to", slug=slug, domain=to)

    def served(domain, target):
        response, peer = edge.https_request(f"/{slug}", server_name=domain.host)
        return (
            response.status == 302 and response.headers["Location"] == target and peer == der(certificates[domain.host])
        )

    settled(edge, lambda: served(go, "https://example.com/go"), "the first domain over HTTPS")
    assert served(to, "https://example.com/to")
    # A name in another case is the same name.
    _, peer = edge.https_request(f"/{slug}", server_name=go.host.upper())
    assert peer == der(certificates[go.host])


def test_other_names_get_the_default_certificate(edge):
    default = der(edge.cert_dir / "default.crt")
    for name in ("unknown-" + uuid.uuid4().hex[:6] + ".example.net", None, "default"):
        response, peer = edge.https_request("/", server_name=name)
        assert peer == default, name
        assert response.status == 404


def test_a_certificate_put_in_place_is_served_without_a_restart(make_edge):
    edge = make_edge(env={"EDGE_CERT_TTL": "0.2"})
    host = f"new-{uuid.uuid4().hex[:6]}.example.com"
    _, peer = edge.https_request("/", server_name=host)
    assert peer == der(edge.cert_dir / "default.crt")
    certificate = certificate_for(edge, host)
    wait_until(
        lambda: all(edge.https_request("/", server_name=host)[1] == der(certificate) for _ in range(4 * edge.workers)),
        what="the new certificate served",
    )
    # A broken pair is logged and the default served meanwhile.
    broken = f"broken-{uuid.uuid4().hex[:6]}.example.com"
    (edge.cert_dir / f"{broken}.crt").write_text("not a certificate")
    (edge.cert_dir / f"{broken}.key").write_text("not a key")
    assert edge.https_request("/", server_name=broken)[1] == der(edge.cert_dir / "default.crt")
    assert f"{broken}.crt" in edge.errors()


def test_a_domain_may_send_plain_http_to_https(edge, owner, two_domains):
    go, to = two_domains
    certificate_for(edge, go.host)
    slug = "h" + uuid.uuid4().hex[:8]
    make_link(owner=owner, url="https://example.com/h", slug=slug, domain=go)
    make_link(owner=owner, url="https://example.com/t", slug=slug, domain=to)
    domains.domain_update(domain=go, https_redirect=True)
    expected = f"https://{go.host}:{edge.tls_port}/{slug}?a=1"

    def redirected():
        response = edge.request(f"/{slug}?a=1", headers={"Host": go.host})
        return response.status == 308 and response.headers["Location"] == expected

    settled(edge, redirected, "plain HTTP sent to HTTPS")
    response, _ = edge.https_request(f"/{slug}", server_name=go.host)
    assert response.status == 302 and response.headers["Location"] == "https://example.com/h"
    # The other domain keeps answering plain HTTP.
    plain = edge.request(f"/{slug}", headers={"Host": to.host})
    assert plain.status == 302 and plain.headers["Location"] == "https://example.com/t"
