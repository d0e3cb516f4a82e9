#!/usr/bin/env python3
"""Every file a document names exists: README.md, CHANGELOG.md's newest section and docs/*.md
are read for paths under crates/, scripts/, docs/, migrations/, deploy/, fuzz/ and .ci/
(and the crate-relative `store/src/x.rs` form the architecture drawings use); a path that is
not in the checkout is reported with its file and line. Part of `make lint`."""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
top = ("crates/", "scripts/", "docs/", "migrations/", "deploy/", "fuzz/", ".ci/")
crates = {p.name for p in (root / "crates").iterdir() if p.is_dir()}
path_re = re.compile(r"(?<![\w./-])((?:\.ci|[a-z][\w.-]*)/[\w./-]*[\w-](?:\.[a-z]+)?)")
bad = []
for doc in docs:
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for m in path_re.finditer(line):
            p = m.group(1).rstrip(".")
            if "*" in p or "{" in p or p.startswith("http"):
                continue
            first = p.split("/")[0]
            if p.startswith(top):
                cand = [root / p]
            elif first in crates:
                rest = p.split("/", 1)[1]
                cand = [root / "crates" / p, root / "crates" / first / "src" / rest]
            elif first in ("src", "tests") or p.endswith(".rs") and "/" in p:
                continue  # relative to a crate named nearby in the sentence
            else:
                continue
            if not any(c.exists() for c in cand):
                bad.append(f"{doc.relative_to(root)}:{n}: {p}")
for b in bad:
    print(b)
if bad:
    print(f"check-doc-paths: {len(bad)} references to files that do not exist", file=sys.stderr)
    sys.exit(1)
print(f"check-doc-paths: every file named in {len(docs)} documents exists")
