#!/bin/sh
# A PostgreSQL streaming replica (docker-compose.scale-out.yml): on an empty
# volume, copy the primary with pg_basebackup (-R writes standby.signal and
# primary_conninfo), then run the server as the image does. The replication
# password reaches libpq through ~postgres/.pgpass, written at every start,
# never through a command line or the data volume.
set -eu
umask 077
printf '%s:5432:*:replicator:%s\n' "$PRIMARY_HOST" "$REPLICATION_PASSWORD" > /var/lib/postgresql/.pgpass
chown postgres /var/lib/postgresql/.pgpass
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" && chown postgres "$PGDATA" && chmod 700 "$PGDATA"
  until gosu postgres pg_basebackup -h "$PRIMARY_HOST" -U replicator -D "$PGDATA" -R -X stream -c fast; do
    echo "waiting for the primary to accept a base backup"; sleep 2
  done
fi
exec gosu postgres postgres
