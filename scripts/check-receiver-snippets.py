#!/usr/bin/env python3
"""Runs the Python and Node verification snippets of docs/receivers.md against
docs/signature-vectors.json, and the Standard Webhooks snippets (the PyPI and npm
`standardwebhooks` libraries) against vectors made fresh at each run, so the code integrators
copy is the code CI ran.

A snippet is the fenced block after a `<!-- snippet: NAME -->` line. Each verifier must return
exactly the vector's `valid` for every vector; any difference fails with the vector's name.
"""
import hashlib
import hmac
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "receivers.md").read_text(encoding="utf-8")
VECTORS = ROOT / "docs" / "signature-vectors.json"


def snippet(name: str) -> str:
    m = re.search(
        r"<!-- snippet: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)```", DOC, re.S
    )
    if not m:
        sys.exit(f"snippet {name} not found in docs/receivers.md")
    return m.group(1)


def check_python() -> int:
    scope: dict = {}
    exec(compile(snippet("verify.py"), "verify.py", "exec"), scope)
    failures = 0
    for v in json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]:
        got = scope["verify"](v["secret"], v["body"].encode("utf-8"), v["header"])
        if got is not v["valid"]:
            print(f"python: {v['name']}: got {got}, want {v['valid']}")
            failures += 1
    return failures


NODE_HARNESS = """
const fs = require("node:fs");
const { verify } = require("./verify.js");
const { vectors } = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let failures = 0;
for (const v of vectors) {
  const got = verify(v.secret, Buffer.from(v.body, "utf8"), v.header);
  if (got !== v.valid) { console.log(`node: ${v.name}: got ${got}, want ${v.valid}`); failures++; }
}
process.exit(failures ? 1 : 0);
"""


def check_node() -> int:
    with tempfile.TemporaryDirectory() as d:
        (pathlib.Path(d) / "verify.js").write_text(snippet("verify.js"), encoding="utf-8")
        harness = pathlib.Path(d) / "harness.js"
        harness.write_text(NODE_HARNESS, encoding="utf-8")
        return subprocess.run(["node", str(harness), str(VECTORS)]).returncode


def standard_vectors() -> list:
    """Standard Webhooks vectors made now (the libraries refuse timestamps over 5 minutes old),
    signed by this independent implementation of the specification."""
    import base64
    import time

    def sign(key: bytes, msg_id: str, ts: int, body: str) -> str:
        mac = hmac.new(key, f"{msg_id}.{ts}.{body}".encode(), hashlib.sha256).digest()
        return "v1," + base64.b64encode(mac).decode()

    key, old = b"qlf_whsec_" + b"A" * 40, b"qlf_whsec_" + b"B" * 40
    secret = "whsec_" + base64.b64encode(key).decode()
    body, now, msg = '{"id":"e1","type":"lead.created"}', int(time.time()), "4c1f5f0e-1c9b-4f0e-9d55-2b1f0c7e4d10"

    def vector(name, valid, headers, b=body, s=secret):
        return {"name": name, "valid": valid, "secret": s, "body": b, "headers": headers}

    good = {"webhook-id": msg, "webhook-timestamp": str(now), "webhook-signature": sign(key, msg, now, body)}
    rotating = dict(good, **{"webhook-signature": sign(b"qlf_whsec_" + b"C" * 40, msg, now, body) + " " + sign(key, msg, now, body)})
    stale = {"webhook-id": msg, "webhook-timestamp": str(now - 600), "webhook-signature": sign(key, msg, now - 600, body)}
    return [
        vector("valid", True, good),
        vector("previous secret second of two entries (rotation window)", True, rotating),
        vector("tampered body", False, good, b=body.replace("e1", "e2")),
        vector("wrong secret", False, good, s="whsec_" + base64.b64encode(old).decode()),
        vector("timestamp ten minutes old", False, stale),
        vector("signature header missing", False, {k: v for k, v in good.items() if k != "webhook-signature"}),
    ]


STANDARD_NODE_HARNESS = """
const fs = require("node:fs");
const { verifyStandard } = require("./standard.js");
const vectors = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let failures = 0;
for (const v of vectors) {
  const got = verifyStandard(v.secret, Buffer.from(v.body, "utf8"), v.headers);
  if (got !== v.valid) { console.log(`node standard: ${v.name}: got ${got}, want ${v.valid}`); failures++; }
}
process.exit(failures ? 1 : 0);
"""


def check_standard() -> int:
    vectors = standard_vectors()
    failures = 0
    scope: dict = {}
    exec(compile(snippet("standard.py"), "standard.py", "exec"), scope)
    for v in vectors:
        got = scope["verify_standard"](v["secret"], v["body"].encode(), v["headers"])
        if got is not v["valid"]:
            print(f"python standard: {v['name']}: got {got}, want {v['valid']}")
            failures += 1
    with tempfile.TemporaryDirectory() as d:
        dp = pathlib.Path(d)
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", d, "standardwebhooks@1.0.0"],
            check=True,
        )
        (dp / "standard.js").write_text(snippet("standard.js"), encoding="utf-8")
        (dp / "harness.js").write_text(STANDARD_NODE_HARNESS, encoding="utf-8")
        (dp / "vectors.json").write_text(json.dumps(vectors), encoding="utf-8")
        failures += subprocess.run(["node", str(dp / "harness.js"), str(dp / "vectors.json")], cwd=d).returncode
    print(f"standard webhooks snippets (python, node): {len(vectors)} fresh vectors, {failures} wrong")
    return failures


def apply_scenario() -> tuple:
    """Events of two leads, each change twice (a retry), shuffled, with fields the snippets have
    never seen, and one event without a revision (written before revisions existed). Returns
    (events, the revision each lead must end at)."""
    import random

    events = []
    for lead_id, last in (("L1", 6), ("L2", 3)):
        events.append({"type": "lead.created", "data": {"lead": {"id": lead_id, "name": "old"}}})
        for rev in range(1, last + 1):
            lead = {"id": lead_id, "revision": rev, "name": f"rev {rev}", "surprise": {"x": rev}}
            events.append({"type": "lead.updated", "data": {"lead": lead, "previous": {}, "new_field": 1}})
            events.append(json.loads(json.dumps(events[-1])))
    events.append({"type": "lead.updated", "data": {"other": True}})
    random.Random(7).shuffle(events)
    # The newest state first: everything after it is older or the same.
    newest = max((e for e in events if e["data"].get("lead", {}).get("id") == "L1"),
                 key=lambda e: e["data"]["lead"].get("revision", 0))
    events.remove(newest)
    events.insert(0, newest)
    return events, {"L1": 6, "L2": 3}


APPLY_NODE_HARNESS = """
const fs = require("node:fs");
const { applyEvent } = require("./apply.js");
const events = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const leads = new Map();
for (const e of events) applyEvent(leads, e);
console.log(JSON.stringify(Object.fromEntries([...leads].map(([k, v]) => [k, v.revision ?? 0]))));
"""


def check_apply() -> int:
    events, want = apply_scenario()
    failures = 0
    scope: dict = {}
    exec(compile(snippet("apply.py"), "apply.py", "exec"), scope)
    leads: dict = {}
    applied = [scope["apply_event"](leads, e) for e in events]
    got = {k: v.get("revision", 0) for k, v in leads.items()}
    # Nothing of L1 after its newest state (first) may be applied over it.
    late = [a for e, a in zip(events[1:], applied[1:]) if e["data"].get("lead", {}).get("id") == "L1"]
    if got != want or applied[0] is not True or any(late):
        print(f"python apply: ended at {got}, want {want}")
        failures += 1
    with tempfile.TemporaryDirectory() as d:
        dp = pathlib.Path(d)
        (dp / "apply.js").write_text(snippet("apply.js"), encoding="utf-8")
        (dp / "harness.js").write_text(APPLY_NODE_HARNESS, encoding="utf-8")
        (dp / "events.json").write_text(json.dumps(events), encoding="utf-8")
        out = subprocess.run(["node", str(dp / "harness.js"), str(dp / "events.json")],
                             capture_output=True, text=True)
        if out.returncode != 0 or json.loads(out.stdout or "null") != want:
            print(f"node apply: ended at {out.stdout.strip()} {out.stderr.strip()}, want {want}")
            failures += 1
    print(f"apply snippets (python, node): {len(events)} shuffled events, {failures} wrong")
    return failures


def main() -> None:
    n = len(json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"])
    failures = check_python()
    print(f"python snippet: {n} vectors, {failures} wrong")
    node = check_node()
    print(f"node snippet: {n} vectors, {'ok' if node == 0 else 'FAILED'}")
    standard = check_standard()
    apply = check_apply()
    if failures or node or standard or apply:
        sys.exit(1)


if __name__ == "__main__":
    main()
