"""Which addresses a request someone asked for may reach (the policy), and
a host's addresses looked up once, every one of them checked. It needs no
HTTP client: a connection of any kind can be held to it.
"""

import ipaddress
import socket
import threading
from collections.abc import Callable
from typing import Any

from urllib3.util.connection import allowed_gai_family

from .errors import AddressRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[Address], bool]


# Besides what Python's ipaddress does not call global: ranges its
# is_global calls global (or did, in a Python this may run on) that no
# server this product fetches from lives in, or that reach another network.
_NOT_PUBLIC = [
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",  # "this network": 0.0.0.0 reaches the host itself
        "100.64.0.0/10",  # carrier-grade NAT, the provider's own network
        "169.254.0.0/16",  # link-local, with the clouds' metadata service (169.254.169.254)
        "192.0.0.0/24",  # IETF protocol assignments
        "192.88.99.0/24",  # 6to4 relays
        "198.18.0.0/15",  # benchmarking
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/96",  # IPv4-compatible IPv6 (deprecated), :: and ::1 among them
        "64:ff9b:1::/48",  # NAT64 of a local network
        "100::/64",  # discard
        "2001::/32",  # Teredo: a tunnel to an IPv4 address
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4: a tunnel to an IPv4 address
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing
        "fc00::/7",  # unique local (fd00::/8 among them)
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_public_address(address: str | Address) -> bool:
    """Whether an address is one of the public internet's, which a request
    someone asked for may reach: not loopback, a private network, link-local
    (the clouds' metadata service), carrier-grade NAT, multicast, reserved,
    nor an IPv6 address that carries a non-public IPv4 one (mapped, NAT64)
    or tunnels to an IPv4 one (compatible, 6to4, Teredo). An address with an
    IPv6 zone, or that is not an address, is not public."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.version == 6:
        if ip.scope_id:
            return False
        if ip.ipv4_mapped is not None:  # a dual-stack socket connects to the IPv4 address
            return is_public_address(ip.ipv4_mapped)
        if ip in _NAT64:  # a NAT64 gateway connects to the IPv4 address in its last 32 bits
            return is_public_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if not ip.is_global or ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast:
        return False
    if ip.is_reserved or ip.is_unspecified:
        return False
    return not any(ip in network for network in _NOT_PUBLIC if network.version == ip.version)


def any_address(address: Address) -> bool:
    """The policy of a request whose caller allows private addresses (an
    import run on the server: docs/importing.md)."""
    return True


def allowed_addresses(
    host: str, port: int, *, allowed: AddressPolicy, timeout: float | None = None
) -> list[tuple[Any, ...]]:
    """The host's addresses (getaddrinfo's tuples), looked up once, within
    `timeout` seconds; AddressRefused if `allowed` refuses any of them (a
    name with a private address among its public ones is not fetched from
    either: which one a connection gets is not ours to choose)."""
    host = host.strip("[]")
    found = _lookup(host, port, timeout)
    if not found:
        raise socket.gaierror(f"no address for {host}")
    if not all(allowed(ipaddress.ip_address(info[4][0])) for info in found):
        raise AddressRefused(refused(host))
    return found


def refused(host: str) -> str:
    """Why a host is not fetched from: the same sentence whatever the
    address and whether anything listens there, so it tells nothing of the
    network behind this server."""
    return (
        f"{host} is, or resolves to, an address of a private network (loopback, RFC 1918, link-local, "
        "carrier-grade NAT, ...), which is not fetched from"
    )


def _lookup(host: str, port: int, timeout: float | None) -> list[tuple[Any, ...]]:
    if timeout is None:
        return socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
    # A resolver that does not answer cannot hold the request past its
    # deadline: the lookup runs in a thread that is left to finish alone.
    answer: dict[str, Any] = {}

    def look() -> None:
        try:
            answer["found"] = socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the caller's thread
            answer["error"] = exc

    thread = threading.Thread(target=look, name=f"lookup {host}", daemon=True)
    thread.start()
    thread.join(max(timeout, 0))
    if thread.is_alive():
        raise TimeoutError(f"looking {host} up took longer than {timeout:.0f} s")
    if "error" in answer:
        raise answer["error"]
    return answer["found"]
