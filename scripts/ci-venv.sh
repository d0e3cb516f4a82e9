#!/usr/bin/env bash
# Prints the path of the Python venv with CI's checkers (schemathesis, kubernetes-validate,
# squawk), creating it on first use. Versions are pinned by major so a run is reproducible
# enough.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${CI_VENV:-target/ci-venv}"
mkdir -p "$(dirname "$VENV")"
if [ ! -x "$VENV/bin/schemathesis" ] || [ ! -x "$VENV/bin/kubernetes-validate" ] || [ ! -x "$VENV/bin/squawk" ]; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q 'schemathesis>=4,<5' 'kubernetes-validate>=1.30' 'squawk-cli>=2.70,<3' >&2
fi
echo "$VENV"
