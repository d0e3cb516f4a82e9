#!/usr/bin/env bash
# `make run`: services, a dev database, migrations, both services, and a dev org and token.
set -euo pipefail
cd "$(dirname "$0")/.."
# Binaries from `cargo build` (CARGO_TARGET_DIR respected).
BIN="${CARGO_TARGET_DIR:-target}/debug"
scripts/ensure-services.sh

mkdir -p .dev
[ -f .dev/secret_key ] || "$BIN"/qualifierctl gen-secret-key | sed 's/.*"secret_key":"\([^"]*\)".*/\1/' > .dev/secret_key
[ -f .dev/internal_token ] || head -c 24 /dev/urandom | base64 | tr -d '/+=' > .dev/internal_token

export PGBASE="${QUALIFIER_DEV_PG:-postgres://postgres:postgres@127.0.0.1:5432}"
export DATABASE_URL="$PGBASE/qualifier_dev"
export AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}"
export QUALIFIER_SECRET_KEY="$(cat .dev/secret_key)"
export QUALIFIER_INTERNAL_TOKEN="$(cat .dev/internal_token)"
export QUALIFIER_HTTP_ADDR="${QUALIFIER_HTTP_ADDR:-127.0.0.1:8080}"
export QUALIFIER_LOG_FORMAT="${QUALIFIER_LOG_FORMAT:-pretty}"
# Compact storage (docs/operations.md, "Compact storage"): one process of each, all started
# here from the same build, so no earlier version shares the database, whichever created it.
export QUALIFIER_PAYLOAD_STORAGE="${QUALIFIER_PAYLOAD_STORAGE:-compressed}"
# The dev receiver (`make receiver`) listens on loopback; allow it in development only.
export QUALIFIER_WEBHOOK_ALLOW_CIDRS="${QUALIFIER_WEBHOOK_ALLOW_CIDRS:-127.0.0.0/8}"

psql "$PGBASE/postgres" -Atqc "SELECT 1 FROM pg_database WHERE datname='qualifier_dev'" | grep -q 1 \
  || psql "$PGBASE/postgres" -qc "CREATE DATABASE qualifier_dev"
"$BIN"/qualifierctl migrate >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; }
trap cleanup EXIT INT TERM

# The dev receiver: a local HTTPS endpoint that prints each event and checks its signature.
"$BIN"/dev-receiver --port 9443 --dir .dev & pids+=($!)
for _ in $(seq 1 50); do [ -f .dev/receiver-cert.pem ] && break; sleep 0.1; done
export QUALIFIER_WEBHOOK_CA_FILE="$PWD/.dev/receiver-cert.pem"
export QUALIFIER_RETRY_DELAYS_MS="${QUALIFIER_RETRY_DELAYS_MS:-2000,8000,32000,128000}"

"$BIN"/lead-api & pids+=($!)
"$BIN"/webhook-delivery & pids+=($!)
for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:8081/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

dev=$("$BIN"/qualifierctl bootstrap-dev)
first_id() { grep -o '"id":"[0-9a-f-]*"' | head -n1 | cut -d'"' -f4; }
org=$(echo "$dev" | first_id)
token=$(echo "$dev" | grep -o '"secret":"[^"]*"' | cut -d'"' -f4)
# Point the dev org's webhook at the dev receiver and hand the receiver the signing secret.
"$BIN"/qualifierctl set-webhook --org "$org" --url https://127.0.0.1:9443/hooks/qualifier \
  | grep -o '"signing_secret":"[^"]*"' | cut -d'"' -f4 > .dev/receiver-secret

lead=$(curl -fsS -X POST "http://127.0.0.1:8081/internal/v1/orgs/$org/inbound" \
  -H "Authorization: Bearer $QUALIFIER_INTERNAL_TOKEN" -H 'Content-Type: application/json' \
  -d '{"name":"Ada Lovelace","phone":"+447700900123","channel":"whatsapp","profile":{"budget":"500k"}}' \
  | first_id)
# A one-time sign-in link to the settings console (valid 10 minutes; mint another with the
# same call).
console=$(curl -fsS -X POST "http://127.0.0.1:8081/internal/v1/orgs/$org/console-sessions" \
  -H "Authorization: Bearer $QUALIFIER_INTERNAL_TOKEN" | grep -o '"url":"[^"]*"' | cut -d'"' -f4)

cat <<MSG

Qualifier is running (Ctrl-C stops it).
  public API    http://$QUALIFIER_HTTP_ADDR/api/v1
  internal API  http://127.0.0.1:8081/internal/v1   (token in .dev/internal_token)
  receiver      https://127.0.0.1:9443/hooks/qualifier (events print below)
  dev org       $org
  org token     $token
  a lead        $lead
  settings      $console
                (one-time sign-in link to Integrations → Webhook, valid 10 minutes)

Try:
  curl -s http://$QUALIFIER_HTTP_ADDR/api/v1/leads/$lead -H 'Authorization: Bearer $token'
  curl -s -X PATCH http://$QUALIFIER_HTTP_ADDR/api/v1/leads/$lead -H 'Authorization: Bearer $token' \\
       -H 'Content-Type: application/json' -d '{"status":"closed"}'
  # then watch "✔ lead.stage_changed ... signature=valid" arrive here
  curl -s http://127.0.0.1:8081/internal/v1/orgs/$org/deliveries -H "Authorization: Bearer \$(cat .dev/internal_token)"

Your own receiver on this machine, signed as in production (in another terminal):
  $BIN/qualifier listen --token $token --forward-to http://127.0.0.1:4242/webhook
MSG
wait -n "${pids[@]}"
