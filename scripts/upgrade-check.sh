#!/usr/bin/env bash
# `make upgrade-check`: the previous release (scripts/previous-release.sh: the newest version in
# CHANGELOG.md before this checkout's, built once from the commit its entry names and kept
# outside the clone) upgraded to this checkout under traffic, by `qualifier-upgrade-check`
# (crates/chaos/src/upgrade.rs). Arguments are passed on (`--rate N`, `--settle-seconds N`).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-target}
read -r version commit < <(scripts/previous-release.sh --describe)
old=$(scripts/previous-release.sh dev)
$CARGO build -q -p lead-api -p webhook-delivery -p qualifierctl -p qualifier-chaos
new="$target/debug"
echo "upgrade-check: $version ($commit) -> $("$new/lead-api" --version)"
"$new/qualifier-upgrade-check" --old-bin "$old" --new-bin "$new" "$@"
