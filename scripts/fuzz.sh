#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds (default 60). The machine's only toolchain is
# stable, so nightly flags are unlocked with RUSTC_BOOTSTRAP=1 for this build only; the
# sanitizer is off (the code forbids `unsafe`), libFuzzer's coverage guidance stays on.
#
# FUZZ_PROFILE=dev (`make fuzz-short`, CI) builds without optimisation: it compiles in about
# half the time and still runs tens of thousands of inputs a second, which is what a short run
# needs; `make fuzz` keeps cargo-fuzz's optimised build. The fuzz build's instrumented
# dependency graph is kept outside the clone (QUALIFIER_FUZZ_TARGET, default
# ~/.cache/qualifier/fuzz-target), like cargo's registry, so a fresh clone compiles only the
# project's own crates again; it is emptied when it passes 8 GiB.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
target_dir=${QUALIFIER_FUZZ_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/qualifier/fuzz-target}
if [ -d "$target_dir" ] && [ "$(du -sm "$target_dir" | cut -f1)" -gt 8192 ]; then
  rm -rf "$target_dir"
fi
profile=()
[ "${FUZZ_PROFILE:-release}" = dev ] && profile=(--dev)
for target in $(cargo fuzz list --fuzz-dir fuzz); do
  mkdir -p "fuzz/corpus/$target"
  echo "== fuzz $target for ${SECONDS_PER_TARGET}s =="
  log="fuzz/$target.log"
  if ! cargo fuzz run --fuzz-dir fuzz --target-dir "$target_dir" "${profile[@]}" --sanitizer none \
      "$target" "fuzz/corpus/$target" -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz $target failed (a crash is saved under fuzz/artifacts/$target)"; exit 1
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb|new_units_added)|^Done" "$log" || tail -3 "$log"
done
