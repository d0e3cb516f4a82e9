#!/usr/bin/env python3
"""Cross-checks of docker-compose.yml and deploy/kubernetes/ that schema validators cannot do:
every name one file uses exists in the other, every configured variable is one the services
read, probes point at the health routes, and KEDA watches the real work queue.
Needs PyYAML (installed with kubernetes-validate)."""
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "kubernetes"
errors = []


def err(msg):
    errors.append(msg)


def docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# Variables the services document (.env.example is the reference list, docs/operations.md, "Configuration").
known = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
known |= {"RUST_LOG", "QUALIFIER_LOG_FORMAT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

# --- Kubernetes ---
kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
objects = {}
for res in kust["resources"]:
    p = K8S / res
    if not p.exists():
        err(f"kustomization lists missing file {res}")
        continue
    for d in docs(p):
        objects[(d["kind"], d["metadata"]["name"])] = d
for p in K8S.glob("*.yaml"):
    if p.name != "kustomization.yaml" and p.name not in kust["resources"]:
        err(f"{p.name} is not listed in kustomization.yaml")

cm = objects.get(("ConfigMap", "qualifier-config"))
secret = objects.get(("Secret", "qualifier-secrets"))
if not cm or not secret:
    err("qualifier-config ConfigMap and qualifier-secrets Secret must exist")
else:
    for k in list(cm["data"]) + list(secret["stringData"]):
        if k not in known:
            err(f"variable {k} is not one the services read (.env.example)")
    for k in ["DATABASE_URL", "AMQP_URL", "QUALIFIER_SECRET_KEY", "QUALIFIER_INTERNAL_TOKEN"]:
        if k not in secret["stringData"]:
            err(f"required secret {k} missing from qualifier-secrets")

commands = {"lead-api", "webhook-delivery", "qualifierctl"}
for (kind, name), d in objects.items():
    if kind not in ("Deployment", "Job"):
        continue
    for c in d["spec"]["template"]["spec"]["containers"]:
        if c["command"][0] not in commands:
            err(f"{name}: unknown command {c['command']}")
        for ref in c.get("envFrom", []):
            if "configMapRef" in ref and ("ConfigMap", ref["configMapRef"]["name"]) not in objects:
                err(f"{name}: missing ConfigMap {ref['configMapRef']['name']}")
            if "secretRef" in ref and ("Secret", ref["secretRef"]["name"]) not in objects:
                err(f"{name}: missing Secret {ref['secretRef']['name']}")
        if kind == "Deployment":
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            for probe, path in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]:
                get = c.get(probe, {}).get("httpGet", {})
                if get.get("path") != path or get.get("port") not in ports:
                    err(f"{name}: {probe} must GET {path} on a declared port")

so = objects.get(("ScaledObject", "webhook-delivery"))
if not so:
    err("the webhook-delivery ScaledObject is missing")
else:
    if ("Deployment", so["spec"]["scaleTargetRef"]["name"]) not in objects:
        err("ScaledObject targets a Deployment that does not exist")
    prefix = cm["data"]["QUALIFIER_TOPOLOGY_PREFIX"] if cm else "qualifier"
    # The work queue and the relay's bundles of new deliveries: the backlog is in either.
    want = {f"{prefix}.deliveries", f"{prefix}.bundles"}
    watched = set()
    for t in so["spec"]["triggers"]:
        queue = t.get("metadata", {}).get("queueName")
        if t["type"] != "rabbitmq" or queue not in want:
            err(f"ScaledObject must watch {' and '.join(sorted(want))}, not {queue}")
        watched.add(queue)
    if not want <= watched:
        err(f"ScaledObject does not watch {', '.join(sorted(want - watched))}")
        auth = t.get("authenticationRef", {}).get("name")
        if ("TriggerAuthentication", auth) not in objects:
            err(f"ScaledObject uses missing TriggerAuthentication {auth}")
    if so["spec"]["minReplicaCount"] < 1:
        err("webhook-delivery must keep at least one replica (retries arrive without new events)")

# --- docker compose ---
compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
svcs = compose["services"]
for s in ["postgres", "rabbitmq", "migrate", "lead-api", "webhook-delivery"]:
    if s not in svcs:
        err(f"compose: service {s} missing")
if svcs.get("webhook-delivery", {}).get("deploy", {}).get("replicas") != 2:
    err("compose: webhook-delivery must run 2 replicas")
for s, d in svcs.items():
    if s in ("postgres", "rabbitmq", "lead-api", "webhook-delivery") and "healthcheck" not in d:
        err(f"compose: {s} has no healthcheck")
    if d.get("build", {}).get("dockerfile") and not (ROOT / d["build"]["dockerfile"]).exists():
        err(f"compose: {s} builds from a missing Dockerfile")
    for k in (d.get("environment") or {}):
        if k.startswith(("QUALIFIER_", "DATABASE_", "AMQP_")) and k not in known:
            err(f"compose: {s} sets unknown variable {k}")
dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
if dockerfile.count("FROM ") < 2:
    err("deploy/Dockerfile must be multi-stage")

# --- the image's build context (docs/operations.md, "Production topology") ---
# Dependencies cached in a layer of their own: the recipe (manifests and Cargo.lock) is cooked
# before the sources are copied, so a source change does not rebuild them.
build_stage = dockerfile[dockerfile.find("AS build"):]
cook = build_stage.find("cargo chef cook")
copy_all = build_stage.find("COPY . .")
if "cargo chef prepare" not in dockerfile or cook < 0 or copy_all < 0 or cook > copy_all:
    err("deploy/Dockerfile must cook dependencies (cargo chef) before copying the sources")
if "COPY --from=planner" not in build_stage or "recipe.json" not in build_stage:
    err("deploy/Dockerfile's build stage must take only the planner's recipe.json before cooking")


def dockerignore_patterns():
    pats = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            neg = line.startswith("!")
            pats.append((neg, line.lstrip("!").strip("/")))
    return pats


def ignored(rel, pats):
    """Docker's rule, for the patterns used here: a path is excluded if it or a parent matches
    (`**/` matches at any depth); the last matching pattern wins."""
    import fnmatch
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    out = False
    for neg, pat in pats:
        for pre in prefixes:
            name = pre
            if fnmatch.fnmatchcase(name, pat) or (
                pat.startswith("**/") and fnmatch.fnmatchcase(name.split("/")[-1], pat[3:])
            ) or (pat.startswith("**/") and fnmatch.fnmatchcase(name, pat[3:])):
                out = not neg
                break
    return out


if not (ROOT / ".dockerignore").exists():
    err(".dockerignore is missing: the whole target/ directory would be sent as context")
else:
    pats = dockerignore_patterns()
    import os
    size, files, leaked = 0, 0, []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = os.path.relpath(dirpath, ROOT)
        rel_dir = "" if rel_dir == "." else rel_dir
        # Docker walks into an excluded directory when a `!` pattern may re-include something
        # under it; so does this.
        def keep(d):
            rel = f"{rel_dir}/{d}".lstrip("/")
            return not ignored(rel, pats) or any(neg and p.startswith(rel + "/") for neg, p in pats)
        dirnames[:] = [d for d in dirnames if keep(d)]
        for f in filenames:
            rel = f"{rel_dir}/{f}".lstrip("/")
            if ignored(rel, pats):
                continue
            files += 1
            size += os.path.getsize(os.path.join(dirpath, f))
            if rel.startswith(("target/", ".git/")) or "/target/" in rel:
                leaked.append(rel)
    if leaked:
        err(f"the build context holds {leaked[:3]}")
    if size > 20 * 1024 * 1024:
        err(f"the build context is {size / 1e6:.1f} MB (limit 20 MB)")
    for needed in ["Cargo.toml", "Cargo.lock", "migrations/", "crates/lead-api/src/main.rs"]:
        if ignored(needed.rstrip("/"), pats):
            err(f".dockerignore excludes {needed}, which the build needs")
    # Files the code embeds at compile time must be in the context too.
    for src in ROOT.glob("crates/*/src/**/*.rs"):
        for m in re.finditer(r'(include_str!|include_bytes!|embed_migrations!)\("([^"]+)"\)', src.read_text()):
            # include_* are relative to the file, embed_migrations! to the crate's manifest.
            crate_dir = src.relative_to(ROOT).parts[:2]
            base = ROOT.joinpath(*crate_dir) if m.group(1) == "embed_migrations!" else src.parent
            target = (base / m.group(2)).resolve()
            rel = os.path.relpath(target, ROOT)
            if ignored(rel, pats):
                err(f"{src.relative_to(ROOT)} embeds {rel}, which .dockerignore excludes")
    print(f"deploy check: build context {files} files, {size / 1e6:.1f} MB")

for e in errors:
    print("deploy check:", e)
print(f"deploy check: {len(objects)} Kubernetes objects, {len(svcs)} compose services, "
      f"{len(errors)} problems")
sys.exit(1 if errors else 0)
