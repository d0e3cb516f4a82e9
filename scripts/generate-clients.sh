#!/usr/bin/env bash
# The typed clients under clients/, generated from docs/openapi.yaml:
#   clients/python      openapi-python-client (PyPI), formatted by ruff
#   clients/typescript  @hey-api/openapi-ts (npm) into src/gen, compiled by tsc into dist
# Hand-written files (each client's README, example, settings and the thin layer in
# qualifier_client/helpers.py and src/index.ts) are kept as they are.
#
#   scripts/generate-clients.sh          regenerate both in place
#   scripts/generate-clients.sh --check  regenerate into a scratch copy and fail if it differs
#                                        from what is committed (CI: the clients never drift)
#
# The generators are pinned and installed once outside the clone, like CI's checkers
# (scripts/ci-venv.sh), so their output does not change under us.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = "--check" ] && check=true

PY_TOOLS=("openapi-python-client==0.29.1" "ruff==0.14.5")
NPM_TOOLS=("@hey-api/openapi-ts@0.99.0" "typescript@5.9.3")
key=$(printf '%s\n' "${PY_TOOLS[@]}" "${NPM_TOOLS[@]}" | sha256sum | cut -c1-12)
TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/qualifier/client-generators-$key"
if [ ! -f "$TOOLS/ready" ]; then
  rm -rf "$TOOLS"
  mkdir -p "$TOOLS/npm"
  python3 -m venv "$TOOLS/venv" >&2
  "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check "${PY_TOOLS[@]}" >&2
  (cd "$TOOLS/npm" && echo '{"private":true}' > package.json \
    && npm install --silent --no-audit --no-fund "${NPM_TOOLS[@]}" >&2)
  touch "$TOOLS/ready"
fi
export PATH="$TOOLS/venv/bin:$PATH"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Python: generated whole into the scratch directory, then the hand-written files laid over it.
PY_HAND=(README.md example.py openapi-python-client.yaml qualifier_client/helpers.py)
openapi-python-client generate --path docs/openapi.yaml --meta setup \
  --config clients/python/openapi-python-client.yaml --output-path "$scratch/python" >/dev/null
rm -rf "$scratch/python/.ruff_cache"
# The generator's client is an attrs class whose printed form would show the token (a field) and
# the Authorization header (in its headers and httpx clients once used): a log line or a
# traceback that prints the client must not carry the token (clients/python/README.md), so those
# fields are left out of its repr.
python3 - "$scratch/python/qualifier_client/client.py" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
hidden = {
    "token: str\n": "token: str = field(repr=False)\n",
    '_headers: dict[str, str] = field(factory=dict, kw_only=True, alias="headers")':
        '_headers: dict[str, str] = field(factory=dict, kw_only=True, alias="headers", repr=False)',
    "_client: httpx.Client | None = field(default=None, init=False)":
        "_client: httpx.Client | None = field(default=None, init=False, repr=False)",
    "_async_client: httpx.AsyncClient | None = field(default=None, init=False)":
        "_async_client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)",
}
for old, new in hidden.items():
    if old not in text:
        sys.exit(f"generate-clients: {old!r} is no longer in the generated client.py")
    text = text.replace(old, new)
open(path, "w").write(text)
PY
for f in "${PY_HAND[@]}"; do
  mkdir -p "$(dirname "$scratch/python/$f")"
  cp "clients/python/$f" "$scratch/python/$f"
done

# TypeScript: the hand-written files copied, the generated sources added, all compiled.
TS_HAND=(README.md example.js package.json tsconfig.json src/index.ts)
for f in "${TS_HAND[@]}"; do
  mkdir -p "$(dirname "$scratch/typescript/$f")"
  cp "clients/typescript/$f" "$scratch/typescript/$f"
done
spec="$PWD/docs/openapi.yaml"
(cd "$scratch/typescript" \
  && "$TOOLS/npm/node_modules/.bin/openapi-ts" -i "$spec" -o src/gen -c @hey-api/client-fetch >/dev/null \
  && "$TOOLS/npm/node_modules/.bin/tsc" -p tsconfig.json)

if $check; then
  status=0
  for c in python typescript; do
    if ! diff -r -q -x __pycache__ -x .ruff_cache -x '*.egg-info' -x build -x node_modules \
      "clients/$c" "$scratch/$c"; then
      status=1
    fi
  done
  if [ "$status" != 0 ]; then
    echo "generate-clients: clients/ differs from what docs/openapi.yaml generates; run scripts/generate-clients.sh and commit" >&2
    exit 1
  fi
  echo "generate-clients: clients/python and clients/typescript follow docs/openapi.yaml"
else
  for c in python typescript; do
    rm -rf "clients/$c"
    cp -r "$scratch/$c" "clients/$c"
  done
  echo "generate-clients: regenerated clients/python and clients/typescript"
fi
