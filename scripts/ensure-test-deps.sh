#!/usr/bin/env bash
# What the tests need besides the services: the Standard Webhooks receiver library (PyPI
# `standardwebhooks`), which a delivery test uses to verify real deliveries the way an
# integrator's receiver would. Installed once, pinned.
set -euo pipefail
if ! python3 -c 'import standardwebhooks' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'standardwebhooks==1.0.0'
fi
