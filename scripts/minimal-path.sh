#!/usr/bin/env bash
# minimal-path.sh DIR: fill DIR with links to what `make demo` may use, and print DIR: Go, the
# coreutils, bash, make, grep and sed, and (as root only, to run the throwaway Postgres as its
# own user) runuser and useradd. Postgres itself is found by scripts/pg.sh under
# /usr/lib/postgresql. .ci/run runs `make demo` with PATH=DIR, so a demo that starts to need
# anything else (python3, jq, curl...) fails CI instead of a newcomer's first try.
set -euo pipefail
dir=${1:?usage: minimal-path.sh DIR}
rm -rf "$dir" && mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
goroot=$(go env GOROOT)
for f in "$goroot"/bin/*; do ln -s "$f" "$dir/"; done
# Every program of the coreutils package, wherever the distribution put it.
dpkg -L coreutils | grep -E '/s?bin/[^/]+$' | while read -r f; do
  [ -x "$f" ] && ln -sf "$f" "$dir/$(basename "$f")"
done
tools=(bash sh make grep sed)
[ "$(id -u)" = 0 ] && tools+=(runuser useradd)
for t in "${tools[@]}"; do
  p=$(command -v "$t") || { echo "minimal-path.sh: $t not found" >&2; exit 1; }
  ln -sf "$p" "$dir/$t"
done
echo "$dir"
