#!/usr/bin/env bash
# with-pg.sh CMD...: run CMD with DATABASE_URL and TEST_DATABASE_URL pointing at a Postgres.
#
# When DATABASE_URL is already set it is used as it is. Otherwise a throwaway cluster is started
# in $PGDIR (default .pg/ in the project) and stopped again when CMD ends, however it ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "${DATABASE_URL:-}" ]; then
  export TEST_DATABASE_URL=${TEST_DATABASE_URL:-$DATABASE_URL}
  exec "$@"
fi

dir=${PGDIR:-$here/../.pg}
"$here/pg.sh" stop "$dir"   # a cluster left behind by a killed run: start clean
trap '"$here/pg.sh" stop "$dir"' EXIT
DATABASE_URL=$("$here/pg.sh" start "$dir")
export DATABASE_URL TEST_DATABASE_URL=$DATABASE_URL
"$@"
