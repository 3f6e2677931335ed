"""Slingshot across several hosts, on one machine: processes stand in for
hosts (`make multinode`, tests/test_multinode.py, docs/scale-out.md).

- Redis: a primary, two replicas and three Sentinels, for links and their
  change feed; and one click store per edge, a Redis of the edge's own.
- PostgreSQL: a primary and a streaming replica that reports read.
- Two edges, each reading links from its own replica, writing clicks to its
  own store, and finding the primary (visit limits) through the Sentinels.
- Two importer hosts, each running one `import_clicks --store` per click
  store; a store's importers share its consumer group.
- The publisher, which waits for a replica (WAIT) before a change counts as
  delivered, and the dashboard; both find the primary through the Sentinels.

`Scenario.run` sends visitors to both edges, to a plain link and to one with
a visit limit (each of its visits asks the primary, found through the
Sentinels), kills the Redis primary and keeps it away (`away` seconds) while
Sentinel promotes a replica, changes a link and makes a new one while there
is no primary, holds the new primary's replica still so that the
publisher's WAIT fails and is retried, kills one importer host while one of
its batches is open, restarts one edge, and then waits until every redirect
served is one click stored.
"""
