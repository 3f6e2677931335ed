#!/bin/sh
# Run once by the postgres image, as its superuser, when the data volume is
# first initialised: the hll extension goes into template1 (so the database
# made from it has it too), then the application's role, which is not a
# superuser, and its database. Migrations run as that role.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname template1 -c 'CREATE EXTENSION IF NOT EXISTS hll'
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
     -v role="$SLINGSHOT_DB_USER" -v password="$SLINGSHOT_DB_PASSWORD" <<'SQL'
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'password';
CREATE DATABASE slingshot OWNER :"role";
SQL
# With a replication password (docker-compose.scale-out.yml), a role that may
# stream the WAL to replicas, and nothing else.
if [ -n "${SLINGSHOT_REPLICATION_PASSWORD:-}" ]; then
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
       -v password="$SLINGSHOT_REPLICATION_PASSWORD" <<'SQL'
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD :'password';
SQL
  echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
fi
