"""Shlink's REST API v3 (its OpenAPI spec, docs/swagger/ in the
shlinkio/shlink repository), served under /rest/v3 and /rest/health so
that Shlink's web client, its JavaScript SDK and the tools built on them
work against Slingshot unchanged (docs/compatibility.md).

A thin adapter: each view reads Shlink's names, asks the same services and
selectors /api/v1 does (links.services with LinkFields, links.selectors,
clicks.selectors, links.tags, clicks.visits, teams.access) and writes
Shlink's shapes back.
What Shlink's API means and Slingshot cannot do is a problem document
that says so, never a silent difference (problems.py)."""
