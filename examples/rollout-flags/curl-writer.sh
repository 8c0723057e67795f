#!/bin/sh
# One writer of the rollout flag over HTTP: read the entry, add 1 to its rollout, write it
# back with if_version_matches; on 409 version_mismatch, re-read and retry.
# Usage: curl-writer.sh <name> <steps>   (PARLEY_ENDPOINT, PARLEY_API_TOKEN optional)
set -eu
NAME=$1
STEPS=$2
EP=${PARLEY_ENDPOINT:-http://127.0.0.1:4000}
URL="$EP/api/v1/distributed-state/flags/checkout-v2"
AUTH=""
[ -n "${PARLEY_API_TOKEN:-}" ] && AUTH="Authorization: Bearer $PARLEY_API_TOKEN"

call() { # method url [body] -> prints the response body, then the status on its own line
  if [ $# -eq 3 ]; then
    curl -sS -X "$1" -H "${AUTH:-X-No-Auth: 1}" -H 'Content-Type: application/json' -d "$3" -w '\n%{http_code}' "$2"
  else
    curl -sS -X "$1" -H "${AUTH:-X-No-Auth: 1}" -w '\n%{http_code}' "$2"
  fi
}

i=0
while [ "$i" -lt "$STEPS" ]; do
  attempts=0
  while :; do
    attempts=$((attempts + 1))
    [ "$attempts" -le 100 ] || { echo "$NAME: gave up after 100 attempts" >&2; exit 1; }
    out=$(call GET "$URL")
    status=$(printf '%s' "$out" | tail -n 1)
    body=$(printf '%s' "$out" | sed '$d')
    if [ "$status" = 404 ]; then
      # No flag yet: create it, only if nobody else did.
      req=$(jq -cn --arg n "$NAME" '{value: {pct: 1, updates: 1, lastBy: $n}, if_not_exists: true}')
    else
      req=$(printf '%s' "$body" | jq -c --arg n "$NAME" \
        '{value: (.data.value | .pct += 1 | .updates += 1 | .lastBy = $n), if_version_matches: .data.version}')
    fi
    out=$(call POST "$URL" "$req")
    status=$(printf '%s' "$out" | tail -n 1)
    case "$status" in
      200|201) break ;;
      409) continue ;; # version_mismatch or key_already_exists: re-read and retry
      *) echo "$NAME: unexpected answer $status: $(printf '%s' "$out" | sed '$d')" >&2; exit 1 ;;
    esac
  done
  i=$((i + 1))
done
echo "$NAME: $STEPS updates"
