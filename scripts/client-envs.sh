#!/usr/bin/env bash
# Installs the typed clients as their READMEs say (`pip install ./clients/python`,
# `npm install ./clients/typescript`) into a Python venv and a Node project outside the clone,
# and prints their paths: the venv's python on the first line, the Node project on the second.
# The clients' content names the directory, so a changed client is installed afresh; a lock
# lets parallel tests share one install. Used by crates/lead-api/tests/api/clients.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
key=$(find clients -type f -not -path '*/__pycache__/*' -not -path '*/.ruff_cache/*' -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
base="${XDG_CACHE_HOME:-$HOME/.cache}/qualifier"
dir="$base/client-envs-$key"
mkdir -p "$base"
exec 9>"$base/client-envs.lock"
flock 9
if [ ! -f "$dir/ready" ]; then
  # Installs of clients as they were more than a day ago go: each change makes a new one.
  find "$base" -maxdepth 1 -name 'client-envs-*' -mtime +1 -exec rm -rf {} +
  rm -rf "$dir"
  mkdir -p "$dir/node"
  python3 -m venv "$dir/venv" >&2
  # A copy, not the clone's directory: pip builds in place otherwise and leaves build/ behind.
  cp -r "$root/clients/python" "$dir/python-src"
  "$dir/venv/bin/pip" install -q --disable-pip-version-check "$dir/python-src" >&2
  cp -r "$root/clients/typescript" "$dir/typescript-src"
  (cd "$dir/node" && echo '{"private":true}' > package.json \
    && npm install --silent --no-audit --no-fund "$dir/typescript-src" >&2)
  touch "$dir/ready"
fi
echo "$dir/venv/bin/python"
echo "$dir/node"
