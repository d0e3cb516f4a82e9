#!/usr/bin/env bash
# A delivery's state has one home: every statement that writes the `deliveries` table is in
# crates/store/src/deliveries/state/ (its module comment lists them). This refuses an
# `UPDATE deliveries` or an `INSERT INTO deliveries` in any other source file of the crates
# (`crates/*/src/`, their unit tests included). The integration tests under `crates/*/tests/`
# are not checked: they stage rows in states the product reaches only slowly (a month-old
# delivery, a dead one) to test what reads them. `DELETE` (a dropped partition's rows) moves
# no state and is not checked either. Exit 1 with each offending line.
set -euo pipefail
cd "$(dirname "$0")/.."
home=crates/store/src/deliveries/state/
found=$(grep -rnIiE --include='*.rs' '(update|insert[[:space:]]+into)[[:space:]]+deliveries([^_a-z0-9]|$)' crates/*/src \
    | grep -v "^${home}" || true)
if [ -n "$found" ]; then
    echo "A delivery's state is written only in ${home} (scripts/lint-delivery-state.sh):" >&2
    echo "$found" >&2
    exit 1
fi
echo "delivery state: every write of deliveries is in ${home}"
