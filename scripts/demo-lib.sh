# demo-lib.sh: what scripts/demo.sh and scripts/demo-social.sh share; sourced, not run. The
# demos need bash, coreutils, grep and sed besides Go and Postgres: nothing else (no python3,
# no jq), which .ci/run checks by running `make demo` with a PATH holding only those
# (scripts/minimal-path.sh).

# step TEXT: a heading, bold on a terminal only: piped or logged output carries no escape codes.
if [ -t 1 ]; then
  step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  step() { printf '\n== %s\n' "$*"; }
fi
