#!/usr/bin/env bash
# What the tests need besides the services: the Standard Webhooks receiver library (PyPI
# `standardwebhooks`), which a delivery test uses to verify real deliveries the way an
# integrator's receiver would; `jsonschema` and `pyyaml`, with which the published event schemas
# are derived and real deliveries validated against them; Playwright for Python and Debian's
# `chromium`, which drive the settings console's browser tests (Playwright's own browser
# download is never used: the tests launch the system chromium); Debian's `squid`, the real
# forward proxy the egress tests start on ports of their own (crates/testkit/src/proxy.rs);
# moto's server mode (`moto[server]`), which the AWS destinations' tests run over HTTPS
# (scripts/moto-https.py, crates/testkit/src/moto.rs).
# Installed once, pinned.
set -euo pipefail
need() { python3 -c "import $1" 2>/dev/null || echo "$2"; }
missing=$(need standardwebhooks 'standardwebhooks==1.0.0'; need jsonschema 'jsonschema>=4.18,<5'; need yaml 'pyyaml>=6,<7'; need playwright 'playwright>=1.45,<2'; need moto.server 'moto[server]>=5.1,<6')
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086 # one requirement per word
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore $missing
fi
apt_need() { # command package why
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; }
  else
    echo "$1 is missing: sudo apt-get install -y $2 ($3)" >&2
    exit 1
  fi
}
apt_need chromium chromium "the console's browser tests need it"
apt_need squid squid "the egress tests start it as their forward proxy"
