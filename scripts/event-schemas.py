#!/usr/bin/env python3
"""Writes docs/schemas/<event type>.schema.json, one self-contained JSON Schema (2020-12) per
webhook event, from the `Event*` schemas of docs/openapi.yaml (the one source; the lead object is
the API's own `Lead`). `--check` fails when the files are not what the OpenAPI document says, so
the two published forms cannot drift; a delivery test validates real deliveries against them.
"""
import copy
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
OUT = ROOT / "docs" / "schemas"
COMPONENTS = SPEC["components"]["schemas"]
PREFIX = "#/components/schemas/"


def refs(node, found):
    if isinstance(node, dict):
        r = node.get("$ref", "")
        if r.startswith(PREFIX) and r[len(PREFIX):] not in found:
            found.add(r[len(PREFIX):])
            refs(COMPONENTS[r[len(PREFIX):]], found)
        for v in node.values():
            refs(v, found)
    elif isinstance(node, list):
        for v in node:
            refs(v, found)


def rewrite(node):
    if isinstance(node, dict):
        return {
            k: ("#/$defs/" + v[len(PREFIX):] if k == "$ref" and v.startswith(PREFIX) else rewrite(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [rewrite(v) for v in node]
    return node


def schemas():
    out = {}
    for event_type, item in SPEC["webhooks"].items():
        ref = item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        root = copy.deepcopy(COMPONENTS[ref[len(PREFIX):]])
        used = set()
        refs(root, used)
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://qualifier.example/schemas/{event_type}.schema.json",
            "title": event_type,
            **rewrite(root),
            "$defs": {name: rewrite(COMPONENTS[name]) for name in sorted(used)},
        }
        out[f"{event_type}.schema.json"] = json.dumps(doc, indent=2, sort_keys=False) + "\n"
    return out


def main():
    want = schemas()
    if "--check" in sys.argv:
        stale = [n for n, text in want.items() if not (OUT / n).exists() or (OUT / n).read_text() != text]
        extra = [p.name for p in OUT.glob("*.schema.json") if p.name not in want]
        if stale or extra:
            sys.exit(f"docs/schemas is not what docs/openapi.yaml says: {stale + extra}; run scripts/event-schemas.py")
        print(f"event schemas: {len(want)} files match docs/openapi.yaml")
        return
    OUT.mkdir(exist_ok=True)
    for name, text in want.items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(want)} schemas to {OUT}")


if __name__ == "__main__":
    main()
