from devstack.http_client import Response, http_request


def request(port: int, path: str, *, headers: dict[str, str] | None = None) -> Response:
    """One request to a dashboard of a test's own, with the Host header given
    (default: the address it listens on), no redirect followed."""
    return http_request(port, path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
