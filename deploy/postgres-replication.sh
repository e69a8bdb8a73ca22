#!/bin/sh
# The primary's part of a streaming standby (deploy/docker-compose.standby.yml): run once by the
# postgres image when its data volume is first initialised (/docker-entrypoint-initdb.d). For a
# volume made before, run the same two steps by hand, then reload the server (SELECT pg_reload_conf()).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -c "CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '${REPLICATION_PASSWORD:?}'"
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
