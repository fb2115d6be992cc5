#!/bin/bash
# Like the official image: initialise $PGDATA on first start (superuser $POSTGRES_USER with
# $POSTGRES_PASSWORD, database $POSTGRES_DB), password auth over TCP, then run the server.
set -euo pipefail
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
[[ -n "${POSTGRES_PASSWORD:-}" ]] || { echo "POSTGRES_PASSWORD must be set" >&2; exit 1; }
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
  pwfile="$(mktemp)"; printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"; chown postgres "$pwfile"
  as_pg initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 \
    --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [[ "$POSTGRES_DB" != postgres ]]; then
    as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    as_pg psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -q \
      -c "CREATE DATABASE \"$POSTGRES_DB\""
    as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi
if [[ "${1:-}" == postgres ]]; then
  shift
  exec setpriv --reuid=postgres --regid=postgres --init-groups \
    postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
