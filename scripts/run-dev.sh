#!/usr/bin/env bash
# `make run`: services, a dev database, migrations, both services, and a dev org and token.
# Where it all lives can be moved (scripts/check-run-dev.py runs it beside the default
# services this way): QUALIFIER_DEV_DIR (.dev), QUALIFIER_DEV_DB (qualifier_dev),
# QUALIFIER_HTTP_ADDR, QUALIFIER_INTERNAL_ADDR, QUALIFIER_DELIVERY_ADDR, QUALIFIER_DEV_RECEIVER_PORT
# (9443) and QUALIFIER_TOPOLOGY_PREFIX.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# Binaries from `cargo build` (CARGO_TARGET_DIR respected). Every path printed below is
# absolute, so the commands work from any directory and any terminal.
BIN=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)
scripts/ensure-services.sh

DEV="${QUALIFIER_DEV_DIR:-.dev}"
mkdir -p "$DEV"
DEV=$(cd "$DEV" && pwd)
# The make commands printed below, run from anywhere: this checkout, and this .dev when it is
# not the default one.
MAKE_HERE="make -s -C $ROOT"
[ "$DEV" = "$ROOT/.dev" ] || MAKE_HERE="QUALIFIER_DEV_DIR=$DEV $MAKE_HERE"
[ -f "$DEV/secret_key" ] || "$BIN"/qualifierctl gen-secret-key | sed 's/.*"secret_key":"\([^"]*\)".*/\1/' > "$DEV/secret_key"
[ -f "$DEV/internal_token" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$DEV/internal_token"

export PGBASE="${QUALIFIER_DEV_PG:-postgres://postgres:postgres@127.0.0.1:5432}"
DB_NAME="${QUALIFIER_DEV_DB:-qualifier_dev}"
export DATABASE_URL="$PGBASE/$DB_NAME"
export AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}"
export QUALIFIER_SECRET_KEY="$(cat "$DEV/secret_key")"
export QUALIFIER_INTERNAL_TOKEN="$(cat "$DEV/internal_token")"
export QUALIFIER_HTTP_ADDR="${QUALIFIER_HTTP_ADDR:-127.0.0.1:8080}"
export QUALIFIER_INTERNAL_ADDR="${QUALIFIER_INTERNAL_ADDR:-127.0.0.1:8081}"
INTERNAL="http://$QUALIFIER_INTERNAL_ADDR"
RECEIVER_PORT="${QUALIFIER_DEV_RECEIVER_PORT:-9443}"
export QUALIFIER_LOG_FORMAT="${QUALIFIER_LOG_FORMAT:-pretty}"
# Compact storage (docs/operations.md, "Compact storage"): one process of each, all started
# here from the same build, so no earlier version shares the database, whichever created it.
export QUALIFIER_PAYLOAD_STORAGE="${QUALIFIER_PAYLOAD_STORAGE:-compressed}"
# The dev receiver (`make receiver`) listens on loopback; allow it in development only.
export QUALIFIER_WEBHOOK_ALLOW_CIDRS="${QUALIFIER_WEBHOOK_ALLOW_CIDRS:-127.0.0.0/8}"

psql "$PGBASE/postgres" -Atqc "SELECT 1 FROM pg_database WHERE datname='$DB_NAME'" | grep -q 1 \
  || psql "$PGBASE/postgres" -qc "CREATE DATABASE $DB_NAME"
"$BIN"/qualifierctl migrate >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait || true; }
# Ctrl-C is how this stops: every service shuts down cleanly and the script says so and exits
# 0 (`make run` runs it as a job of its own, so make exits 0 too: the Makefile, `run-stack`).
stopped() {
  trap - EXIT INT TERM
  cleanup
  # On a line of its own: the terminal has just echoed ^C without a newline.
  printf '\nStopped.\n'
  exit 0
}
trap cleanup EXIT
trap stopped INT TERM

# The dev receiver: a local HTTPS endpoint that prints each event and checks its signature.
"$BIN"/dev-receiver --port "$RECEIVER_PORT" --dir "$DEV" & pids+=($!)
for _ in $(seq 1 50); do [ -f "$DEV/receiver-cert.pem" ] && break; sleep 0.1; done
export QUALIFIER_WEBHOOK_CA_FILE="$(cd "$DEV" && pwd)/receiver-cert.pem"
export QUALIFIER_RETRY_DELAYS_MS="${QUALIFIER_RETRY_DELAYS_MS:-2000,8000,32000,128000}"

"$BIN"/lead-api & pids+=($!)
"$BIN"/webhook-delivery & pids+=($!)
for _ in $(seq 1 50); do curl -fsS "$INTERNAL/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

dev=$("$BIN"/qualifierctl bootstrap-dev)
first_id() { grep -o '"id":"[0-9a-f-]*"' | head -n1 | cut -d'"' -f4; }
org=$(echo "$dev" | first_id)
token=$(echo "$dev" | grep -o '"secret":"[^"]*"' | cut -d'"' -f4)
# `make console-link` (scripts/console-link.sh) reads where the stack is from here.
printf 'org=%s\ninternal=%s\nreceiver_port=%s\n' "$org" "$INTERNAL" "$RECEIVER_PORT" > "$DEV/stack"
# Point the dev org's webhook at the dev receiver and hand the receiver the signing secret.
"$BIN"/qualifierctl set-webhook --org "$org" --url "https://127.0.0.1:$RECEIVER_PORT/hooks/qualifier" \
  | grep -o '"signing_secret":"[^"]*"' | cut -d'"' -f4 > "$DEV/receiver-secret"

lead=$(curl -fsS -X POST "$INTERNAL/internal/v1/orgs/$org/inbound" \
  -H "Authorization: Bearer $QUALIFIER_INTERNAL_TOKEN" -H 'Content-Type: application/json' \
  -d '{"name":"Ada Lovelace","phone":"+447700900123","channel":"whatsapp","profile":{"budget":"500k"}}' \
  | first_id)
# A one-time sign-in link to the settings console (valid 10 minutes; `make console-link`
# mints another).
console=$(QUALIFIER_DEV_DIR="$DEV" scripts/console-link.sh)

cat <<MSG

Qualifier is running (Ctrl-C stops it).
  public API    http://$QUALIFIER_HTTP_ADDR/api/v1
  internal API  $INTERNAL/internal/v1   (token in $DEV/internal_token)
  receiver      https://127.0.0.1:$RECEIVER_PORT/hooks/qualifier (events print below)
  dev org       $org
  org token     $token
  a lead        $lead
  settings      $console
                (a one-time sign-in link, valid 10 minutes; $MAKE_HERE console-link prints a new one)

Try:
  curl -s http://$QUALIFIER_HTTP_ADDR/api/v1/leads/$lead -H 'Authorization: Bearer $token'
  # The CRM closes the lead (public API): "✔ lead.stage_changed ... signature=valid" arrives here
  curl -s -X PATCH http://$QUALIFIER_HTTP_ADDR/api/v1/leads/$lead -H 'Authorization: Bearer $token' \\
       -H 'Content-Type: application/json' -d '{"status":"closed"}'
  # The AI agent renames the contact (internal API): "✔ lead.updated ... signature=valid"
  curl -s -X PATCH $INTERNAL/internal/v1/orgs/$org/leads/$lead -H "Authorization: Bearer \$(cat $DEV/internal_token)" \\
       -H 'Content-Type: application/json' -d '{"name":"Ada King"}'
  curl -s $INTERNAL/internal/v1/orgs/$org/deliveries -H "Authorization: Bearer \$(cat $DEV/internal_token)"

A second endpoint with its own secret, on the same receiver at /hooks/crm (docs/receivers.md):
  $MAKE_HERE dev-endpoint NAME=crm

Your own receiver on this machine, signed as in production (in another terminal):
  $BIN/qualifier listen --token $token --forward-to http://127.0.0.1:4242/webhook
MSG
# Until Ctrl-C, or until a service ends on its own (then this ends with its status).
set +e
wait -n "${pids[@]}"
status=$?
trap - EXIT INT TERM
cleanup
exit "$status"
