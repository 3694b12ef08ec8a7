#!/usr/bin/env bash
# pg.sh: a throwaway PostgreSQL 15 for `make test` and `make demo`.
#
#   scripts/pg.sh start DIR   start a cluster in DIR (created if missing), print its DATABASE_URL
#   scripts/pg.sh stop DIR    stop exactly the server started in DIR and remove DIR
#   scripts/pg.sh url DIR     print the DATABASE_URL of a running cluster in DIR
#
# The server listens on a unix socket inside DIR only (no TCP). It runs from Debian's
# postgresql-15 binaries, installed with apt-get when missing. initdb refuses to run as root,
# so as root the cluster is owned and run by the `postgres` user.
set -euo pipefail

PORT=${PGPORT_LOCAL:-54329}
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|url DIR" >&2; exit 2; }

find_bin() {
  local d
  for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

install_pg() {
  echo "pg.sh: PostgreSQL server binaries not found; installing Debian's postgresql-15" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql-15 >&2 \
    || apt-get install -y -qq --no-install-recommends postgresql >&2
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Unix socket paths are limited to 107 bytes; a deep checkout gets its socket in a short
# directory under /tmp instead, remembered in DIR/socketdir so stop and url find it.
sockdir() {
  if [ -f "$dir/socketdir" ]; then cat "$dir/socketdir"; else (cd "$dir" && pwd); fi
}
url() { echo "postgres://postgres@/postgres?host=$(sockdir)&port=$PORT"; }

case "$cmd" in
start)
  bin=$(find_bin) || { install_pg; bin=$(find_bin); }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/data/postmaster.pid" ] && kill -0 "$(head -1 "$dir/data/postmaster.pid")" 2>/dev/null; then
    url; exit 0   # already running: starting twice is harmless
  fi
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir "$dir" --shell /usr/sbin/nologin postgres
    chown postgres: "$dir"
    chmod 755 "$dir"
  fi
  if [ ! -f "$dir/socketdir" ] && [ ${#dir} -gt 80 ]; then
    s=$(mktemp -d /tmp/ingest-pg.XXXXXX); chmod 777 "$s"; echo "$s" >"$dir/socketdir"
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  # fsync and friends off: this cluster is disposable and only ever holds test data.
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
    "-p $PORT -k $(sockdir) -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c client_connection_check_interval=1s" >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  url
  ;;
stop)
  [ -d "$dir" ] || exit 0
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/data/postmaster.pid" ]; then
    pid=$(head -1 "$dir/data/postmaster.pid")
    bin=$(find_bin)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    # pg_ctl returns when postmaster.pid is gone; the process may linger a moment longer.
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -f "$dir/socketdir" ]; then rm -rf -- "$(cat "$dir/socketdir")"; fi
  rm -rf -- "$dir"
  ;;
url) url ;;
*) echo "usage: $0 start|stop|url DIR" >&2; exit 2 ;;
esac
