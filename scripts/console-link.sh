#!/usr/bin/env bash
# `make console-link`: a fresh one-time sign-in link to the dev org's settings console, for the
# stack `make run` started (it records the org and the internal API in .dev/stack). A link
# works once, for 10 minutes (docs/console.md, "Signing in"); this mints a new one whenever
# one was used up, by a browser, a link preview or a `curl`.
#   ORG=<org id> make console-link   a link for another org of the same stack
set -euo pipefail
cd "$(dirname "$0")/.."
DEV="${QUALIFIER_DEV_DIR:-.dev}"
if [ ! -f "$DEV/stack" ] || [ ! -f "$DEV/internal_token" ]; then
  echo "console-link: no dev stack here ($DEV/stack); start one with make run" >&2
  exit 1
fi
org=$(sed -n 's/^org=//p' "$DEV/stack")
internal=$(sed -n 's/^internal=//p' "$DEV/stack")
org="${ORG:-$org}"
answer=$(curl -sS -X POST "$internal/internal/v1/orgs/$org/console-sessions" \
  -H "Authorization: Bearer $(cat "$DEV/internal_token")") || {
  echo "console-link: the internal API at $internal does not answer; is make run still running?" >&2
  exit 1
}
url=$(echo "$answer" | grep -o '"url":"[^"]*"' | cut -d'"' -f4)
if [ -z "$url" ]; then
  echo "console-link: $answer" >&2
  exit 1
fi
echo "$url"
