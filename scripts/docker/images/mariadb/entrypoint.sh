#!/bin/bash
# Like the official image: on first start, install the data dir, start a socket-only server,
# set the root password, create $MARIADB_DATABASE and $MARIADB_USER (MYSQL_* accepted too),
# stop it, then run the real server on all interfaces.
set -euo pipefail
ROOT_PW="${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}"
DB="${MARIADB_DATABASE:-${MYSQL_DATABASE:-}}"
USER_="${MARIADB_USER:-${MYSQL_USER:-}}"
PW="${MARIADB_PASSWORD:-${MYSQL_PASSWORD:-}}"
DATA=/var/lib/mysql SOCK=/run/mysqld/mysqld.sock
sql_str() { printf "'%s'" "${1//\'/\'\'}"; }
sql_id() { printf '`%s`' "${1//\`/\`\`}"; }
mkdir -p /run/mysqld "$DATA"; chown mysql:mysql /run/mysqld "$DATA"
if [[ ! -d "$DATA/mysql" ]]; then
  [[ -n "$ROOT_PW" ]] || { echo "MARIADB_ROOT_PASSWORD (or MYSQL_ROOT_PASSWORD) must be set" >&2; exit 1; }
  mariadb-install-db --user=mysql --datadir="$DATA" --skip-test-db \
    --auth-root-authentication-method=normal >/dev/null
  mariadbd --user=mysql --datadir="$DATA" --skip-networking --socket="$SOCK" &
  pid=$!
  for _ in $(seq 1 120); do mariadb-admin --socket="$SOCK" -uroot ping >/dev/null 2>&1 && break; sleep 0.5; done
  {
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(sql_str "$ROOT_PW");"
    echo "CREATE USER 'root'@'%' IDENTIFIED BY $(sql_str "$ROOT_PW");"
    echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    [[ -z "$DB" ]] || echo "CREATE DATABASE IF NOT EXISTS $(sql_id "$DB");"
    if [[ -n "$USER_" && "$USER_" != root ]]; then
      echo "CREATE USER $(sql_str "$USER_")@'%' IDENTIFIED BY $(sql_str "$PW");"
      [[ -z "$DB" ]] || echo "GRANT ALL ON $(sql_id "$DB").* TO $(sql_str "$USER_")@'%';"
    fi
  } | mariadb --socket="$SOCK" -uroot
  mariadb-admin --socket="$SOCK" -uroot -p"$ROOT_PW" shutdown
  wait "$pid" || true
  echo "MariaDB init process done. Ready for start up."
fi
if [[ "${1:-}" == mariadbd ]]; then
  shift
  exec mariadbd --user=mysql --datadir="$DATA" --socket="$SOCK" --bind-address=0.0.0.0 \
    --port=3306 --skip-name-resolve "$@"
fi
exec "$@"
