#!/usr/bin/env python3
"""Runs the Python and Node verification snippets of docs/receivers.md against
docs/signature-vectors.json, so the code integrators copy is the code CI ran.

A snippet is the fenced block after a `<!-- snippet: NAME -->` line. Each verifier must return
exactly the vector's `valid` for every vector; any difference fails with the vector's name.
"""
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


def main() -> None:
    n = len(json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"])
    failures = check_python()
    print(f"python snippet: {n} vectors, {failures} wrong")
    node = check_node()
    print(f"node snippet: {n} vectors, {'ok' if node == 0 else 'FAILED'}")
    if failures or node:
        sys.exit(1)


if __name__ == "__main__":
    main()
