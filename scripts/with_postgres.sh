#!/usr/bin/env bash
# Runs a command against a throw-away PostgreSQL server: initdb in a temporary directory, a server listening
# only on a Unix socket there, DATABASE_URL exported for the command, everything removed afterwards.
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user.
# PG_SERVER_OPTIONS adds server options, e.g. "-c shared_preload_libraries=pg_stat_statements" to see what a
# benchmark's statements cost.
set -euo pipefail

find_pg_bin() {
  local candidate
  for candidate in "$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || echo /nonexistent)")")" /usr/lib/postgresql/*/bin; do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ] && [ -x "$candidate/postgres" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! PG_BIN=$(find_pg_bin); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "with_postgres: PostgreSQL server binaries missing, installing Debian's postgresql" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    PG_BIN=$(find_pg_bin) || { echo "with_postgres: initdb/pg_ctl/postgres not found after install" >&2; exit 2; }
  else
    echo "with_postgres: initdb/pg_ctl/postgres not found; install PostgreSQL server binaries" >&2
    exit 2
  fi
fi

as_db_user=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  as_db_user=(runuser -u postgres --)
fi

PGTMP=$(mktemp -d /tmp/brokerage-pg.XXXXXX)
chmod 755 "$PGTMP"
[ ${#as_db_user[@]} -gt 0 ] && chown postgres "$PGTMP"
PGDATA="$PGTMP/data"
PGPORT=${PGPORT:-5432}

cleanup() {
  "${as_db_user[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PGTMP"
}
trap cleanup EXIT INT TERM

"${as_db_user[@]}" "$PG_BIN/initdb" -D "$PGDATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$PGTMP/initdb.log" 2>&1 \
  || { cat "$PGTMP/initdb.log" >&2; exit 2; }
# Only the Unix socket: no TCP port is opened, so parallel runs never collide.
"${as_db_user[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGTMP/server.log" -w -t 60 \
  -o "-k $PGTMP -c listen_addresses='' -p $PGPORT -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 ${PG_SERVER_OPTIONS:-}" \
  start >/dev/null || { cat "$PGTMP/server.log" >&2; exit 2; }

if [ -x "$PG_BIN/createdb" ]; then
  "$PG_BIN/createdb" -h "$PGTMP" -p "$PGPORT" -U postgres brokerage
fi
export DATABASE_URL="postgres://postgres@/brokerage?host=$PGTMP&port=$PGPORT"
echo "with_postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on $PGTMP" >&2
set +e
"$@"
status=$?
set -e
exit $status
