#!/usr/bin/env bash
# Lints the database migrations with squawk (a linter made for PostgreSQL migrations; the rules
# and the accepted older migrations are in .squawk.toml, the reasons in docs/operations.md,
# "Upgrading"). A migration that would lock a busy table for long, build an index that blocks
# writes, or add a required column without a default fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(scripts/ci-venv.sh)
"$venv/bin/squawk" migrations/*/up.sql
