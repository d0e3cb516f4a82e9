#!/usr/bin/env bash
# Prints the directory holding the previous release's binaries (lead-api, webhook-delivery,
# qualifierctl), building them when that directory is absent.
#
# The previous release is the newest version in CHANGELOG.md that has a "Cut from commit" line
# and is not the version this checkout builds (`[workspace.package] version`): on the commit
# that cuts 0.2.0 it is 0.1.0, and so it stays until the next release is cut.
#
# Built once per version, commit and profile, and kept outside the clone
# (QUALIFIER_RELEASE_CACHE, default ~/.cache/qualifier/releases), so a fresh clone's CI does not
# compile an older dependency graph again; the directory only appears once its build succeeded.
#
# Usage: scripts/previous-release.sh [dev|release]   (default dev, the profile CI builds)
# Also: scripts/previous-release.sh --describe        prints "VERSION COMMIT"
# QUALIFIER_COMPARE_WITH=0.2.0 picks an older released version instead of the newest (a goal
# stated against a release two back: `QUALIFIER_COMPARE_WITH=0.2.0 make perf-check`).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
profile=${1:-dev}

read -r version commit < <(python3 - <<'PY'
import re, pathlib, tomllib
import os
current = tomllib.loads(pathlib.Path("Cargo.toml").read_text())["workspace"]["package"]["version"]
wanted = os.environ.get("QUALIFIER_COMPARE_WITH") or None
text = pathlib.Path("CHANGELOG.md").read_text(encoding="utf-8")
for m in re.finditer(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}\s*\n+Cut from commit `([0-9a-f]{7,40})`", text, re.M):
    if m.group(1) != current and (wanted is None or m.group(1) == wanted):
        print(m.group(1), m.group(2))
        break
else:
    raise SystemExit(f"CHANGELOG.md names no released version {wanted or 'before ' + current} with its commit")
PY
)
if [ "$profile" = --describe ]; then
  echo "$version $commit"
  exit 0
fi
case $profile in dev) sub=debug ;; release) sub=release ;; *) echo "profile: dev or release, not $profile" >&2; exit 2 ;; esac

cache=${QUALIFIER_RELEASE_CACHE:-$HOME/.cache/qualifier/releases}
out="$cache/$version-$commit/$profile"
# One build at a time per version and profile: a second caller (CI's perf check beside a
# developer's `make perf-check`) waits for the first's and then finds its binaries, instead of
# deleting the work directory the first is compiling in.
mkdir -p "$cache"
exec 9>"$cache/$version-$commit-$profile.lock"
flock 9
if [ ! -x "$out/lead-api" ] || [ ! -x "$out/webhook-delivery" ] || [ ! -x "$out/qualifierctl" ]; then
  echo "previous-release: building $version ($commit, $profile) into $out" >&2
  work="$cache/$version-$commit/build"
  rm -rf "$work"
  mkdir -p "$work/src"
  git archive "$commit" | tar -x -C "$work/src"
  flag=()
  [ "$profile" = release ] && flag=(--release)
  (cd "$work/src" && CARGO_TARGET_DIR="$work/target" \
    $CARGO build -q "${flag[@]}" -p lead-api -p webhook-delivery -p qualifierctl) >&2
  mkdir -p "$out.tmp"
  cp "$work/target/$sub/lead-api" "$work/target/$sub/webhook-delivery" \
    "$work/target/$sub/qualifierctl" "$out.tmp/"
  rm -rf "$out" "$work"
  mv "$out.tmp" "$out"
fi
echo "$out"
