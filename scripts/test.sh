#!/usr/bin/env bash
# test.sh: every test package once (`make test` runs it under scripts/with-pg.sh), the packages
# whose own code is concurrent with the race detector, the others without it, both sets at once.
#
# The race detector costs 3 to 6 times the CPU of a package's Go code, and on the 2-CPU machine
# make test is CPU-bound. A package runs without it only when its own code starts no goroutine
# and shares no memory between goroutines (TEST_PLAIN, from the Makefile): what such code does
# when others call it concurrently is raced in the tests of the packages that do (the engine's
# tests call the importapi client and the retry policy from its workers; the
# conformance of every catalog entity, internal/bitrix/bitrixtest, runs each entity's listers and
# translators of internal/bitrix inside the engine's concurrent get and set). A new package is
# raced until it is listed.
#
# Environment: GO, TEST_PLAIN (package directories), TEST_PARALLEL (go test -p),
# TEST_PARALLEL_TESTS (-parallel), TEST_TIMEOUT (-timeout).
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
module=$("$go" list -m) || exit 1
plain=$(for p in ${TEST_PLAIN:-}; do echo "./$p"; done)
all=$("$go" list ./... | sed "s|^$module|.|") || exit 1
race=$(echo "$all" | grep -vxF -e "${plain:-/nothing/}")
plain=$(echo "$all" | grep -xF -e "${plain:-/nothing/}")
flags=(-count=1 -p "${TEST_PARALLEL:-4}" -parallel "${TEST_PARALLEL_TESTS:-6}" -timeout "${TEST_TIMEOUT:-20m}")

status=0
# shellcheck disable=SC2086 # package lists, one word each
"$go" test -race "${flags[@]}" $race &
racing=$!
if [ -n "$plain" ]; then
  # shellcheck disable=SC2086
  "$go" test "${flags[@]}" $plain || status=1
fi
wait "$racing" || status=1
exit $status
