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
$CARGO build -q --workspace --all-targets  # the Makefile's DEV_BUILD: nothing to compile after `make build-all`
new="$target/debug"
echo "upgrade-check: $version ($commit) -> $("$new/lead-api" --version)"
"$new/qualifier-upgrade-check" --old-bin "$old" --new-bin "$new" "$@"
