#!/usr/bin/env bash
# demo-social.sh: social-account sync end to end on the fake Instagram Graph API and the fake
# enrichment providers: import accounts, sync them on two shards at once (a third run of a
# shard is refused by its lock), enrich, then `ingest social status`, an account and a post with
# its comments and labels. Called by scripts/demo.sh (DATABASE_URL from scripts/with-pg.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?run me through make demo}"
export LOG_FORMAT=${LOG_FORMAT:-text}

state=.demo/social
rm -rf "$state" && mkdir -p "$state"
. scripts/demo-lib.sh

# The fake Graph API holds two accounts built from the real fixtures and six generated ones,
# one per misbehaviour: an empty page that still has next, a post deleted between two pages, an
# expired token, a refused cursor, an age-gated account; every answer takes 20 ms.
bin/fakes --env-file "$state/fakes.env" --social-accounts-file "$state/accounts.csv" \
  --enrich-run-for 2s --enrich-fail-every 4 2>"$state/fakes.log" &
fakes=$!
trap 'kill $fakes 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -f "$state/fakes.env" ] && break; sleep 0.1; done
[ -f "$state/fakes.env" ] || { cat "$state/fakes.log"; echo "demo: the fakes did not start" >&2; exit 1; }
set -a; . "$state/fakes.env"; set +a
# Seals the access tokens stored in the database; in production it lives in a Secret.
SOCIAL_TOKEN_KEY=$(head -c32 /dev/urandom | base64)
export SOCIAL_TOKEN_KEY SOCIAL_BATCH_PAUSE=0s

bin/ingest migrate >/dev/null 2>&1

step "ingest social accounts import   (connected accounts with their tokens, others by username for business discovery)"
bin/ingest social accounts import "$state/accounts.csv"

step "ingest social sync run on 2 shards at once (SOCIAL_SHARDS=2, JOB_COMPLETION_INDEX 0 and 1)"
for i in 0 1; do
  SOCIAL_SHARDS=2 JOB_COMPLETION_INDEX=$i bin/ingest social sync run 2>"$state/sync-$i.log" &
  eval "shard$i=\$!"
done
sleep 0.3
code=0; SOCIAL_SHARDS=2 JOB_COMPLETION_INDEX=0 bin/ingest social sync run 2>&1 | grep -v 'msg=progress' || code=${PIPESTATUS[0]}
echo "a third run of shard 0: exit code $code (75 = the shard's lock is held)"
wait "$shard0" "$shard1"
grep -hE 'done|needs attention|failed|refused|cursor|parked' "$state"/sync-*.log | cut -c1-260

step "ingest social enrich submit, then poll until no job runs (fake providers: 2 s per job, every 4th fails: its posts wait 5 min for their retry)"
bin/ingest social enrich submit 2>&1 | grep -E 'enrichment done' | cut -c1-260
for _ in $(seq 1 12); do
  sleep 3
  bin/ingest social enrich poll 2>&1 | grep -E 'enrichment done|expired|failed' | cut -c1-260 || true
  bin/ingest social enrich submit 2>/dev/null
  # The "records by status" lines of social status: "  social_enrichments PROVIDER  STATUS  N".
  left=0
  while read -r _ _ _ n; do left=$((left + n)); done < <(bin/ingest social status --limit 1 |
    grep -E '^  social_enrichments [a-z_]+ +(enrich_pending|enrich_queued) +[0-9]+$' || true)
  echo "enrichments queued or waiting to be sent: $left"
  [ "$left" = 0 ] && break
done

step "ingest social status"
bin/ingest social status --limit 10

step "ingest show social north_coffee   (an account: profile, counts over time, calls, history; never the token)"
bin/ingest show social north_coffee | head -40

step "ingest show social 17896622936197745   (a post from the real fixtures: comments threaded, labels)"
bin/ingest show social 17896622936197745
