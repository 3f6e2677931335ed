"""Requests this server makes to an address someone gave it (an import's
source, a webhook's endpoint): they cannot be turned
against the server's own network (SSRF), and the server they go to cannot
hold them for ever or flood its memory.

Three layers, each usable without the next:

- urls.py, `check_url`: a strict reading of a URL, which two parsers
  cannot read as two hosts.
- addresses.py, `is_public_address` (the policy) and `allowed_addresses`
  (a host's addresses, resolved once, every one of them checked).
- guarded.py, `session` and `fetch`: requests whose connections go only to
  the addresses the policy allows, without redirects, under a cap of bytes
  and a deadline for the whole exchange.
- multi.py, `MultiPoster`: many POSTs at once from one thread (libcurl's
  multi interface), held to the same URL check and address policy at
  each connection, for a sender of many small requests (webhooks).

The first two, and the errors, are here; they need no HTTP client, and this
package does not import requests: guarded.py is imported by what fetches.
"""

from .addresses import Address, AddressPolicy, allowed_addresses, any_address, is_public_address
from .errors import AddressRefused, OutboundError, TooLarge, TooSlow, UrlRefused
from .urls import check_url, quoted

__all__ = [
    "Address",
    "AddressPolicy",
    "AddressRefused",
    "OutboundError",
    "TooLarge",
    "TooSlow",
    "UrlRefused",
    "allowed_addresses",
    "any_address",
    "check_url",
    "is_public_address",
    "quoted",
]
