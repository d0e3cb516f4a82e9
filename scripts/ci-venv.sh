#!/usr/bin/env bash
# Prints the path of the Python venv with CI's checkers (schemathesis, kubernetes-validate,
# squawk), creating it on first use. Versions are pinned by major so a run is reproducible
# enough. It lives outside the clone (like cargo's registry), so a fresh clone's CI reuses it;
# the requirements are part of its name, so changing them makes a new one, and a `ready` file
# written last tells a finished venv from one an interrupted install left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
REQS=("schemathesis>=4,<5" "kubernetes-validate>=1.30" "squawk-cli>=2.70,<3")
key=$(printf '%s\n' "${REQS[@]}" | sha256sum | cut -c1-12)
VENV="${CI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/qualifier/ci-venv-$key}"
mkdir -p "$(dirname "$VENV")"
if [ ! -f "$VENV/ready" ]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q "${REQS[@]}" >&2
  touch "$VENV/ready"
fi
echo "$VENV"
