#!/bin/sh
# The seed-000 walkthrough from a shell: store and read strong state, compare-and-swap,
# create-only writes, TTLs, listing, and the lock lifecycle with fencing — with curl and
# jq against a running node (`npm start`), plus the `parley` command for a few steps.
# Any agent that can send HTTP can do the same.
#
# Usage: sh examples/shell-client/walkthrough.sh
#   PARLEY_ENDPOINT (default http://127.0.0.1:4000), PARLEY_API_TOKEN if the node requires one.
set -eu
EP=${PARLEY_ENDPOINT:-http://127.0.0.1:4000}
export PARLEY_ENDPOINT="$EP"
API="$EP/api/v1"
PARLEY="node $(dirname "$0")/../../packages/cli/bin/parley.js"
NS=shell-walkthrough

# req METHOD PATH [JSON] -> sets $STATUS and $BODY
req() {
  if [ -n "${PARLEY_API_TOKEN:-}" ]; then set -- "$@" -H "Authorization: Bearer $PARLEY_API_TOKEN"; fi
  method=$1 path=$2
  shift 2
  if [ $# -ge 1 ] && [ "${1#-H}" = "$1" ]; then data=$1; shift; else data=""; fi
  if [ -n "$data" ]; then
    out=$(curl -sS -X "$method" -H 'Content-Type: application/json' -d "$data" -w '\n%{http_code}' "$@" "$API$path")
  else
    out=$(curl -sS -X "$method" -w '\n%{http_code}' "$@" "$API$path")
  fi
  STATUS=$(printf '%s' "$out" | tail -n 1)
  BODY=$(printf '%s' "$out" | sed '$d')
}
expect() { # expected-status what
  if [ "$STATUS" != "$1" ]; then echo "FAIL $2: expected $1, got $STATUS $BODY" >&2; exit 1; fi
  echo "ok   $2 -> $STATUS $(printf '%s' "$BODY" | jq -c '.error // .data | if type == "object" then del(.created_at, .updated_at, .expires_at, .acquired_at) else . end')"
}

echo "== store and read"
req DELETE "/distributed-state/$NS?confirm=true"
req POST "/distributed-state/$NS/feature-flag" '{"value":{"enabled":true,"rollout":25},"ttl_seconds":3600}'
expect 201 "create feature-flag"
V1=$(printf '%s' "$BODY" | jq -r .data.version)
req GET "/distributed-state/$NS/feature-flag"
expect 200 "read it back"
$PARLEY --output json distributed-state get -n "$NS" -k feature-flag | jq -c '{cli_read: .value}'

echo "== compare-and-swap"
req POST "/distributed-state/$NS/feature-flag" "{\"value\":{\"enabled\":true,\"rollout\":50},\"if_version_matches\":\"$V1\"}"
expect 200 "CAS with the current version"
req POST "/distributed-state/$NS/feature-flag" "{\"value\":{\"enabled\":false},\"if_version_matches\":\"$V1\"}"
expect 409 "CAS with a stale version (re-read and retry)"

echo "== create-only"
req POST "/distributed-state/$NS/schema" '{"value":"v1","if_not_exists":true}'
expect 201 "first creator wins"
req POST "/distributed-state/$NS/schema" '{"value":"v2","if_not_exists":true}'
expect 409 "second creator loses"

echo "== TTL"
req POST "/distributed-state/$NS/ephemeral" '{"value":"soon gone","ttl_seconds":1}'
expect 201 "write with a 1 s TTL"
i=0
while :; do
  req GET "/distributed-state/$NS/ephemeral"
  [ "$STATUS" = 404 ] && break
  i=$((i + 1)); [ "$i" -le 50 ] || { echo "FAIL: ephemeral did not expire" >&2; exit 1; }
  sleep 0.2
done
expect 404 "expired: reads as key_not_found"

echo "== list"
req GET "/distributed-state/$NS?q=feature&limit=20"
expect 200 "list with q=feature"

echo "== locks and fencing"
req POST "/locks/$NS/rollout" '{"owner":"worker-a","ttl_seconds":30}'
expect 200 "worker-a takes the lock"
FA=$(printf '%s' "$BODY" | jq -r .data.fence)
req POST "/locks/$NS/rollout" '{"owner":"worker-b"}'
expect 409 "worker-b is refused while it is held"
req POST "/distributed-state/$NS/rollout-state" "{\"value\":\"started by a\",\"fence\":{\"namespace\":\"$NS\",\"key\":\"rollout\",\"fence\":$FA}}"
expect 201 "worker-a writes with its fence"
req POST "/locks/$NS/rollout/release" "{\"owner\":\"worker-a\",\"fence\":$FA}"
expect 200 "worker-a releases"
req POST "/locks/$NS/rollout" '{"owner":"worker-b","ttl_seconds":30}'
expect 200 "worker-b takes it, with a higher fence"
FB=$(printf '%s' "$BODY" | jq -r .data.fence)
req POST "/distributed-state/$NS/rollout-state" "{\"value\":\"late write by a\",\"fence\":{\"namespace\":\"$NS\",\"key\":\"rollout\",\"fence\":$FA}}"
expect 409 "worker-a's late write with its old fence is refused"
req GET "/distributed-state/$NS/rollout-state"
expect 200 "the state still holds worker-a's fenced write"
req POST "/locks/$NS/rollout/release" "{\"owner\":\"worker-b\",\"fence\":$FB}"
expect 200 "worker-b releases"

echo "== clean up"
$PARLEY distributed-state delete-namespace -n "$NS" --confirm
echo "walkthrough complete"
