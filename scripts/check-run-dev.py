#!/usr/bin/env python3
"""`make run` as a newcomer meets it (README, "Two commands"), checked by `make test`.

Runs `make run`'s stack (scripts/run-dev.sh) beside the default services, on ports, a database, a topology prefix
and a .dev directory of its own, reads what it prints, and does what the newcomer would:

  - runs the printed internal change (a rename) and sees the dev receiver print
    "lead.updated ... signature=valid";
  - adds a second endpoint the printed way (make dev-endpoint NAME=crm), runs the printed public
    change (the CRM closes the lead) and sees each endpoint's own signed copy arrive at its own
    path of the receiver, each with its own delivery id; every printed command is run from
    another directory, as from another terminal;
  - opens the printed console link twice: the second time the page says how to get a new link
    (make console-link), and the link that command prints signs in, in Chromium;
  - signs in with another link and checks, for each endpoint, that the Deliveries chart counts
    what the list below it shows;
  - stops it with Ctrl-C typed in its terminal (it runs as `make -s run-stack`, what `make run`
    runs once built, in a pseudo-terminal): make exits 0, and neither then nor before did
    anything print an ERROR or warn about the dev stack's plaintext connections.

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
    """What the terminal shows, read from its master side on a thread, line by line."""

    def __init__(self, master):
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(master,), daemon=True).start()

    def _read(self, master):
        pending = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has gone
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *done, pending = pending.split(b"\n")
            with self.cond:
                self.lines += [l.decode(errors="replace").rstrip("\r") for l in done]
                self.cond.notify_all()
        with self.cond:
            if pending:
                self.lines.append(pending.decode(errors="replace").rstrip("\r"))
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


def in_a_terminal(argv, env):
    """Starts `argv` as a newcomer's shell would, in a terminal of its own (a pseudo-terminal,
    its controlling one), so that a Ctrl-C written to it reaches its foreground job as the
    terminal delivers it. Returns the process and the terminal's master side."""
    import pty
    import termios
    master, slave = pty.openpty()

    import fcntl

    def take_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave,
                            preexec_fn=take_terminal, close_fds=True)
    os.close(slave)
    return proc, master


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


def charts_agree_with_lists(link):
    """Signs in with `link` and, for every endpoint on the console's first page, compares the
    Deliveries chart's count with the rows of the list under it. Returns them."""
    import http.cookiejar
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = link.split("/console/")[0]
    page = lambda path: opener.open(base + path, timeout=10).read().decode()
    opener.open(link, timeout=10).read()
    endpoints = re.findall(r'data-endpoint="([0-9a-f-]+)"', page("/console/endpoints"))
    assert len(endpoints) == 2, endpoints
    seen = []
    for e in endpoints:
        html = page(f"/console/deliveries?endpoint_id={e}")
        charted = sum(int(re.search(rf'{a}="(\d+)"', html).group(1))
                      for a in ("data-succeeded", "data-dead", "data-skipped", "data-in-progress"))
        listed = html.count("data-delivery=")
        assert charted == listed and listed > 0, (e, charted, listed)
        seen.append(listed)
    return " and ".join(f"{n} deliver{'y' if n == 1 else 'ies'}" for n in seen)


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
    # `make run` once built, in a terminal, as a newcomer runs it.
    proc, master = in_a_terminal(["make", "-s", "run-stack"], env)
    out = Output(master)
    try:
        try:
            out.until(r"qualifier listen --token")
        except AssertionError:
            sys.exit("check-run-dev: make run printed no dev org; its last words:\n"
                     + "\n".join(out.lines)[-3000:])
        lines = list(out.lines)

        # The printed rename, run as pasted: the receiver shows lead.updated, signature valid.
        rename = printed_command(lines, "The AI agent renames the contact")
        assert "/internal/v1/orgs/" in rename, rename
        elsewhere = tempfile.mkdtemp(prefix="qualifier-elsewhere-")
        r = subprocess.run(["bash", "-c", rename], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode == 0 and '"Ada King"' in r.stdout, (rename, r.stdout, r.stderr)
        line = out.until(r"lead\.updated .*signature=")
        assert "✔" in line and "signature=valid" in line, line

        # A second endpoint, the printed way, then the printed close: one signed copy each.
        add = printed_command(lines, "A second endpoint with its own secret")
        assert "dev-endpoint NAME=crm" in add, add
        r = subprocess.run(["bash", "-c", add], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode == 0 and "/hooks/crm" in r.stdout, (add, r.stdout, r.stderr)
        close = printed_command(lines, "The CRM closes the lead")
        r = subprocess.run(["bash", "-c", close], cwd=elsewhere, capture_output=True, text=True)
        assert r.returncode == 0, (close, r.stdout, r.stderr)
        copies = [out.until(r"lead\.stage_changed .*endpoint=/hooks/" + p) for p in ("qualifier", "crm")]
        for c in copies:
            assert "✔" in c and "signature=valid" in c, c
        ids = {re.search(r"delivery=(\S+)", c).group(1) for c in copies}
        assert len(ids) == 2, copies
        shutil.rmtree(elsewhere, ignore_errors=True)

        # The printed console link, opened twice.
        link = next(l.split()[-1] for l in lines if l.strip().startswith("settings"))
        assert re.search(r"make -s -C \S+ console-link", "\n".join(lines)), lines
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

        # Each endpoint's chart counts what its list shows.
        r = subprocess.run(["make", "-s", "console-link"], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        charts = charts_agree_with_lists(r.stdout.strip().splitlines()[-1])

        # Ctrl-C, typed in its terminal: a clean stop, and make's own status 0.
        os.write(master, b"\x03")
        code = proc.wait(timeout=60)
        out.until(r"^Stopped\.$", seconds=10)
        printed = "\n".join(out.lines)
        assert code == 0, f"Ctrl-C ended make run with {code}:\n{printed[-3000:]}"
        noise = [l for l in printed.splitlines()
                 if "ERROR" in l or "plaintext" in l or "sslmode" in l]
        assert not noise, "\n".join(noise)
        print("check-run-dev: the printed rename arrived signed; a second endpoint got its own "
              f"signed copy; each chart counts its list ({charts}); a used console link names "
              "make console-link, whose link signs in; Ctrl-C stopped it quietly with 0")
    finally:
        if proc.poll() is None:
            # Stopped early by a failed check: Ctrl-C as above, then nothing gentler.
            os.write(master, b"\x03")
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
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
