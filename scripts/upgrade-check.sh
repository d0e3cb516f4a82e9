#!/usr/bin/env bash
# `make upgrade-check`: the previous version (the newest released version in CHANGELOG.md, built
# from the commit its entry names) upgraded to this checkout under traffic, by
# `qualifier-upgrade-check` (crates/chaos/src/upgrade.rs). Arguments are passed on
# (`--rate N`, `--settle-seconds N`). The previous build is kept in target/upgrade-check/ and
# reused while the commit is the same.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-target}
# "## 0.1.0 - 2026-11-24" then "Cut from commit `cde000e`."
read -r version commit < <(python3 - <<'PY'
import re, pathlib
text = pathlib.Path("CHANGELOG.md").read_text(encoding="utf-8")
m = re.search(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}\s*\n+Cut from commit `([0-9a-f]{7,40})`", text, re.M)
if not m:
    raise SystemExit("CHANGELOG.md names no released version and commit")
print(m.group(1), m.group(2))
PY
)
work="$target/upgrade-check"
src="$work/src-$commit"
if [ ! -d "$src" ]; then
  echo "upgrade-check: building the previous version $version from commit $commit"
  mkdir -p "$src.tmp"
  git archive "$commit" | tar -x -C "$src.tmp"
  mv "$src.tmp" "$src"
fi
# Its own target directory: the same crate names would overwrite this checkout's builds.
(cd "$src" && CARGO_TARGET_DIR="$(cd ../.. && pwd)/upgrade-check/target-$commit" \
  $CARGO build -q -p lead-api -p webhook-delivery -p qualifierctl)
old="$work/target-$commit/debug"
$CARGO build -q -p lead-api -p webhook-delivery -p qualifierctl -p qualifier-chaos
new="$target/debug"
echo "upgrade-check: $version ($commit) -> $("$new/lead-api" --version)"
"$new/qualifier-upgrade-check" --old-bin "$old" --new-bin "$new" "$@"
