#!/usr/bin/env bash
# `make dev-endpoint NAME=crm`: one more endpoint of the dev org, served by the dev receiver that
# `make run` started, at https://127.0.0.1:<its port>/hooks/<NAME> with a signing secret of its
# own (docs/receivers.md, "A second endpoint on your laptop"). The receiver checks each
# endpoint's deliveries with that endpoint's secret and prints which endpoint each arrived at.
#   TYPES=lead.created,lead.stage_changed make dev-endpoint NAME=crm   only those event types
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:-}"
if ! [[ "$name" =~ ^[a-z0-9-]{1,40}$ ]] || [ "$name" = qualifier ]; then
  echo "dev-endpoint: NAME is a short word of a-z, 0-9 and - (not 'qualifier', the webhook's): make dev-endpoint NAME=crm" >&2
  exit 2
fi
DEV="${QUALIFIER_DEV_DIR:-.dev}"
if [ ! -f "$DEV/stack" ] || [ ! -f "$DEV/internal_token" ]; then
  echo "dev-endpoint: no dev stack here ($DEV/stack); start one with make run" >&2
  exit 1
fi
org=$(sed -n 's/^org=//p' "$DEV/stack")
internal=$(sed -n 's/^internal=//p' "$DEV/stack")
port=$(sed -n 's/^receiver_port=//p' "$DEV/stack")
types="${TYPES:-lead.created,lead.updated,lead.stage_changed,lead.qualified,lead.erased,handoff.created,handoff.accepted,handoff.released}"
types_json=$(printf '"%s",' ${types//,/ })
url="https://127.0.0.1:$port/hooks/$name"
answer=$(curl -sS -X POST "$internal/internal/v1/orgs/$org/endpoints" \
  -H "Authorization: Bearer $(cat "$DEV/internal_token")" -H 'Content-Type: application/json' \
  -d "{\"url\":\"$url\",\"description\":\"$name\",\"event_types\":[${types_json%,}]}") || {
  echo "dev-endpoint: the internal API at $internal does not answer; is make run still running?" >&2
  exit 1
}
secret=$(echo "$answer" | grep -o '"signing_secret":"[^"]*"' | cut -d'"' -f4)
id=$(echo "$answer" | grep -o '"id":"[0-9a-f-]*"' | head -n1 | cut -d'"' -f4)
if [ -z "$secret" ]; then
  echo "dev-endpoint: $answer" >&2
  exit 1
fi
mkdir -p "$DEV/receivers"
(umask 077 && printf '%s' "$secret" > "$DEV/receivers/$name.secret")
echo "endpoint $id ($name) gets ${types//,/, }"
echo "  at $url, checked with its own secret ($(cd "$DEV" && pwd)/receivers/$name.secret)"
echo "  its deliveries in the console: Endpoints, then $name (make console-link signs in)"
