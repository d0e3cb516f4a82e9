#!/usr/bin/env python3
"""`make run` as a newcomer meets it (README, "Two commands"), checked by `make test`.

Runs scripts/run-dev.sh beside the default services, on ports, a database, a topology prefix
and a .dev directory of its own, reads what it prints, and does what the newcomer would:

  - runs the printed internal change (a rename) and sees the dev receiver print
    "lead.updated ... signature=valid";
  - opens the printed console link twice: the second time the page says how to get a new link
    (make console-link), and the link that command prints signs in, in Chromium.

Everything it made is removed afterwards, whatever happened.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG = os.environ.get("QUALIFIER_DEV_PG", "postgres://postgres:postgres@127.0.0.1:5432")
BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get(url):
    """(status, body) of a GET that follows no redirect, as a link preview would."""
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Output:
    """run-dev.sh's output, read on a thread, line by line."""

    def __init__(self, proc):
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def until(self, pattern, seconds=120):
        deadline = time.time() + seconds
        with self.cond:
            while True:
                for line in self.lines:
                    if re.search(pattern, line):
                        return line
                left = deadline - time.time()
                if left <= 0:
                    raise AssertionError(f"no line matching {pattern!r} in:\n" + "\n".join(self.lines))
                self.cond.wait(left)


def printed_command(lines, comment):
    """The command printed after the comment line holding `comment`, its continuation lines
    joined, as a shell would read it when pasted."""
    for i, line in enumerate(lines):
        if comment in line:
            cmd = ""
            for nxt in lines[i + 1:]:
                text = nxt.strip()
                if text.endswith("\\"):
                    cmd += text[:-1] + " "
                    continue
                return cmd + text
    raise AssertionError(f"no command after {comment!r}")


def sign_in_in_chromium(url):
    from playwright.sync_api import expect, sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed (scripts/ensure-test-deps.sh installs it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = b.new_page()
        page.goto(url)
        expect(page).to_have_url(url.split("/console/")[0] + "/console")
        expect(page.get_by_role("heading", name="Webhook")).to_be_visible()
        b.close()


def main():
    tag = uuid.uuid4().hex[:10]
    dev = tempfile.mkdtemp(prefix="qualifier-run-dev-")
    db = f"qualifier_check_run_{tag}"
    prefix = f"check-run-{tag}"
    env = dict(
        os.environ,
        QUALIFIER_DEV_DIR=dev,
        QUALIFIER_DEV_DB=db,
        QUALIFIER_HTTP_ADDR=f"127.0.0.1:{free_port()}",
        QUALIFIER_INTERNAL_ADDR=f"127.0.0.1:{free_port()}",
        QUALIFIER_DELIVERY_ADDR=f"127.0.0.1:{free_port()}",
        QUALIFIER_DEV_RECEIVER_PORT=str(free_port()),
        QUALIFIER_TOPOLOGY_PREFIX=prefix,
        QUALIFIER_LOG_FORMAT="json",
    )
    log = open(os.path.join(dev, "run-dev.stderr"), "w+")
    proc = subprocess.Popen(
        ["scripts/run-dev.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=log, text=True, start_new_session=True,
    )
    out = Output(proc)
    try:
        try:
            out.until(r"qualifier listen --token")
        except AssertionError:
            log.seek(0)
            sys.exit("check-run-dev: make run printed no dev org; its last words:\n"
                     + log.read()[-3000:])
        lines = list(out.lines)

        # The printed rename, run as pasted: the receiver shows lead.updated, signature valid.
        rename = printed_command(lines, "The AI agent renames the contact")
        assert "/internal/v1/orgs/" in rename, rename
        r = subprocess.run(["bash", "-c", rename], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0 and '"Ada King"' in r.stdout, (rename, r.stdout, r.stderr)
        line = out.until(r"lead\.updated .*signature=")
        assert "✔" in line and "signature=valid" in line, line

        # The printed console link, opened twice.
        link = next(l.split()[-1] for l in lines if l.strip().startswith("settings"))
        assert "make console-link" in "\n".join(lines)
        status, _ = get(link)
        assert status == 303, status
        status, page = get(link)
        assert status == 401 and "make console-link" in page, (status, page)

        # The way the page names: a new link, which signs in in Chromium.
        r = subprocess.run(["make", "-s", "console-link"], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        fresh = r.stdout.strip().splitlines()[-1]
        assert fresh.startswith("http") and fresh != link, fresh
        sign_in_in_chromium(fresh)
        print("check-run-dev: the printed rename arrived signed; a used console link names "
              "make console-link, whose link signs in")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        if os.path.exists(f"{BIN}/qualifierctl"):
            # The retry queues' names carry their waits: run-dev.sh's own.
            amqp = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
            delays = env.get("QUALIFIER_RETRY_DELAYS_MS", "2000,8000,32000,128000")
            subprocess.run(
                [f"{BIN}/qualifierctl", "delete-topology", "--prefix", prefix],
                env=dict(env, AMQP_URL=amqp, QUALIFIER_RETRY_DELAYS_MS=delays),
                capture_output=True,
            )
        subprocess.run(["psql", f"{PG}/postgres", "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"],
                       capture_output=True)
        shutil.rmtree(dev, ignore_errors=True)


if __name__ == "__main__":
    main()
