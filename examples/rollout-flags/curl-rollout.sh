#!/bin/sh
# Several curl writers raise the same flag at once; no update is lost.
# Usage: curl-rollout.sh [writers=3] [steps=10]   against `npm start` (or $PARLEY_ENDPOINT)
set -eu
WRITERS=${1:-3}
STEPS=${2:-10}
DIR=$(dirname "$0")
EP=${PARLEY_ENDPOINT:-http://127.0.0.1:4000}
AUTH=""
[ -n "${PARLEY_API_TOKEN:-}" ] && AUTH="Authorization: Bearer $PARLEY_API_TOKEN"
curl -sS -X DELETE -H "${AUTH:-X-No-Auth: 1}" "$EP/api/v1/distributed-state/flags/checkout-v2" >/dev/null
pids=""
w=0
while [ "$w" -lt "$WRITERS" ]; do
  sh "$DIR/curl-writer.sh" "curl-$w" "$STEPS" &
  pids="$pids $!"
  w=$((w + 1))
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
[ "$fail" -eq 0 ] || exit 1
curl -sS -H "${AUTH:-X-No-Auth: 1}" "$EP/api/v1/distributed-state/flags/checkout-v2" | jq -c '.data.value'
