#!/usr/bin/env python3
"""Where each delivery's time goes, from the services' own JSON logs at debug.

Reads every `*.log` in a directory (the bench's `QUALIFIER_BENCH_LOG_DIR`, or any services'
logs) written with
`RUST_LOG=warn,lead_api::relay=debug,webhook_delivery::worker=debug`, and times each delivery
that ended 2xx step by step: its event's change to the relay's claim, the claim to the publish
confirmed, the publish to the worker's message, the message to its admission (the fair share),
the admission to the request's start (the row's read) and the request. Prints p50, p90, p99
and the slowest of each step, in milliseconds.

    scripts/delivery-steps.py DIR [--exclude-org ID]... [--split-by ORG [--slow-ms 4000]]

`--split-by ORG` splits the other deliveries into two tables: those claimed while ORG had a
request slower than `--slow-ms` under way (from a second and a half before it started), and the
rest. That is the fairness bench's loaded and idle runs when ORG is its slow org
(docs/performance.md, method 4b). The debug lines cost a little on every step, so figures read
this way are compared with each other, not with the bench's.
"""

import argparse
import datetime
import glob
import json
import os
import re
import sys

DELIVERY = re.compile(r"([0-9a-f-]{36})#\d+(?:@(\d+))?")
STEPS = [
    "change to the relay's claim",
    "claim to publish confirmed",
    "publish to the worker's message",
    "message to admission",
    "admission to the request",
    "the request",
    "change to the request's start",
]


def ms_of(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def read(directory):
    seen = {k: {} for k in ("changed", "claimed", "published", "received", "admitted", "sending")}
    done, org = {}, {}
    for path in sorted(glob.glob(os.path.join(directory, "*.log"))):
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                msg, at = j.get("message", ""), ms_of(j["timestamp"])
                span = j.get("span") or {}
                did = j.get("delivery_id") or span.get("delivery_id")
                if msg in ("claimed", "published, not yet marked"):
                    step = "claimed" if msg == "claimed" else "published"
                    for d, changed in DELIVERY.findall(j.get("deliveries", "")):
                        seen[step].setdefault(d, at)
                        if changed:
                            seen["changed"].setdefault(d, float(changed))
                elif did and msg == "message received":
                    seen["received"].setdefault(did, at)
                    org[did] = span.get("org_id")
                elif did and msg == "admitted":
                    seen["admitted"].setdefault(did, at)
                elif did and msg == "sending":
                    seen["sending"].setdefault(did, at)
                elif did and msg == "delivered":
                    done[did] = (at, float(j.get("ms", 0)))
    return seen, done, org


def rows(seen, done, org):
    out = []
    for d, (end, took) in done.items():
        if not all(d in seen[k] for k in seen):
            continue
        c, cl, pu, rc, ad, se = (
            seen[k][d] for k in ("changed", "claimed", "published", "received", "admitted", "sending")
        )
        out.append((org.get(d), cl, took, [cl - c, pu - cl, rc - pu, ad - rc, se - ad, took, end - took - c]))
    return out


def quantile(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def table(title, chosen):
    print(f"{title}: {len(chosen)} deliveries")
    if not chosen:
        return
    for i, step in enumerate(STEPS):
        v = [r[3][i] for r in chosen]
        print(
            f"  {step:32s} p50 {quantile(v, .5):7.1f}  p90 {quantile(v, .9):7.1f}"
            f"  p99 {quantile(v, .99):7.1f}  slowest {max(v):7.1f}"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory")
    ap.add_argument("--exclude-org", action="append", default=[])
    ap.add_argument("--split-by")
    ap.add_argument("--slow-ms", type=float, default=4000)
    a = ap.parse_args()
    seen, done, org = read(a.directory)
    if not done:
        sys.exit("no delivery ended 2xx in these logs: were they written at debug?")
    all_rows = rows(seen, done, org)
    if not a.split_by:
        table("every delivery", [r for r in all_rows if r[0] not in a.exclude_org])
        return
    # The windows in which the org had a slow request under way, merged.
    spans = sorted((end - took, end) for d, (end, took) in done.items()
                   if org.get(d) == a.split_by and took >= a.slow_ms)
    windows = []
    for start, end in spans:
        if windows and start <= windows[-1][1] + 3000:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    others = [r for r in all_rows if r[2] < a.slow_ms and r[0] not in a.exclude_org]
    loaded = [r for r in others if any(s - 1500 <= r[1] <= e for s, e in windows)]
    idle = [r for r in others if not any(s - 1500 <= r[1] <= e for s, e in windows)]
    for who, pick in (("other orgs", lambda r: r[0] != a.split_by), (f"{a.split_by}'s quick ones", lambda r: r[0] == a.split_by)):
        table(f"{who}, its slow requests under way", [r for r in loaded if pick(r)])
        table(f"{who}, none under way", [r for r in idle if pick(r)])


if __name__ == "__main__":
    main()
