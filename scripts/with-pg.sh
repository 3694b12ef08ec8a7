#!/usr/bin/env bash
# with-pg.sh CMD...: run CMD with DATABASE_URL and TEST_DATABASE_URL pointing at a Postgres.
#
# The server is PG_URL when it is set (make passes TEST_DATABASE_URL or DEMO_DATABASE_URL there:
# a server named for this purpose, explicitly). Otherwise a throwaway cluster is started in
# $PGDIR (default .pg/ in the project) and stopped again when CMD ends, however it ends. A
# DATABASE_URL exported in the caller's environment (say, a staging server to try the CLI on)
# is never used: it is replaced for CMD.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${PG_URL:-}" ]; then
  export DATABASE_URL=$PG_URL TEST_DATABASE_URL=$PG_URL
  exec "$@"
fi

dir=${PGDIR:-$here/../.pg}
"$here/pg.sh" stop "$dir"   # a cluster left behind by a killed run: start clean
trap '"$here/pg.sh" stop "$dir"' EXIT
DATABASE_URL=$("$here/pg.sh" start "$dir")
export DATABASE_URL TEST_DATABASE_URL=$DATABASE_URL
"$@"
