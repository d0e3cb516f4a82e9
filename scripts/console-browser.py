#!/usr/bin/env python3
"""Drives the settings console in Debian's chromium with Playwright, as an administrator would:
by the visible labels of docs/console.md, never by CSS paths. Called by the browser test in
crates/webhook-delivery/tests/delivery/console_browser.rs, which checks the effects (the
receiver, the API); this script reports what the pages showed, as JSON on stdout, and saves a
screenshot of each page into the given directory.

  console-browser.py setup  <sign-in url> <endpoint url> <screenshot dir>
  console-browser.py replay <sign-in url> <screenshot dir>
  console-browser.py destination_amqp <sign-in url> <broker url> <exchange> <queue url> <service url> <screenshot dir>
  console-browser.py endpoints_add <sign-in url> <endpoint url> <screenshot dir>
  console-browser.py endpoints_delete <sign-in url> <endpoint page url> <screenshot dir>
  console-browser.py receiver_credentials <sign-in url> <screenshot dir>
  console-browser.py filter_editor <sign-in url> <screenshot dir>
  console-browser.py debug  <sign-in url> <delivery id> <screenshot dir>
                            <allowed port> <frame sign-in url> <refused port> <frame sign-in url>
  console-browser.py cross_site <org A sign-in url> <org B sign-in url> <port> <screenshot dir>
"""

import contextlib
import http.server
import json
import shutil
import sys
import threading
import time

from playwright.sync_api import expect, sync_playwright

EVENT_TYPES = ["lead.created", "lead.updated", "lead.stage_changed", "lead.qualified",
               "handoff.created", "handoff.accepted", "handoff.released", "lead.erased"]


def browser(p):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        sys.exit("chromium is not installed (scripts/ensure-test-deps.sh installs it)")
    # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
    return p.chromium.launch(executable_path=exe, args=["--no-sandbox"])


def shot(page, shots, name):
    page.screenshot(path=f"{shots}/{name}.png", full_page=True)


def sign_in(page, url):
    page.goto(url)
    expect(page).to_have_url(url.split("/console/")[0] + "/console")
    expect(page.get_by_role("heading", name="Webhook")).to_be_visible()


@contextlib.contextmanager
def signed_in(login):
    """A page of a new browser, signed in with `login`; the browser closes after."""
    with sync_playwright() as p:
        b = browser(p)
        try:
            page = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
            sign_in(page, login)
            yield page
        finally:
            b.close()


def wait_for_text(page, text, seconds=30):
    """Reloads until the page shows `text` (a delivery's status changes server-side)."""
    deadline = time.time() + seconds
    while text not in page.content():
        if time.time() > deadline:
            raise AssertionError(f"page never showed {text!r}")
        time.sleep(0.3)
        page.reload()


def setup(login, endpoint, shots):
    out = {}
    with sync_playwright() as p:
        b = browser(p)
        page = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
        sign_in(page, login)
        # Keyboard use: Tab reaches the first field, and its focus ring is visible.
        out["keyboard_reaches_url"] = False
        for _ in range(12):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement && document.activeElement.id") == "url":
                out["keyboard_reaches_url"] = True
                break
        out["focus_outline"] = page.evaluate(
            "getComputedStyle(document.activeElement).outlineStyle")
        # Every placeholder fits its box: its text measured in the box's own font against the
        # room inside the box's padding, less a number box's spin buttons (Chromium draws them
        # inside it, about 16 px): a cut "No limi" read as a word.
        out["placeholders_cut"] = page.evaluate("""() => {
            const ctx = document.createElement('canvas').getContext('2d');
            return [...document.querySelectorAll('input[placeholder]')].filter(el => {
                const cs = getComputedStyle(el);
                ctx.font = cs.font;
                const spin = el.type === 'number' ? 16 : 0;
                const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - spin;
                return ctx.measureText(el.placeholder).width > room;
            }).map(el => el.id || el.name);
        }""")
        page.get_by_label("Endpoint URL").fill(endpoint)
        for t in EVENT_TYPES:
            box = page.get_by_label(t, exact=True)
            if t in ("lead.created", "lead.stage_changed"):
                box.check()
            else:
                box.uncheck()
        page.get_by_label("Enabled").check()
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("Saved")
        shot(page, shots, "webhook")

        page.get_by_role("button", name="Rotate secret").click()
        secret = page.locator("[data-secret]")
        expect(secret).to_be_visible()
        out["secret"] = secret.inner_text().strip()
        expect(page.get_by_role("button", name="Copy")).to_be_visible()
        shot(page, shots, "secret-rotated")
        # The page answering the rotation names its own address: a reload shows the page,
        # not the secret again, and posts nothing.
        out["url_after_rotate"] = page.url
        page.reload()
        out["secret_still_shown_after_reload"] = out["secret"] in page.content()

        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        out["test_delivery"] = page.url.rsplit("/", 1)[-1]
        wait_for_text(page, "succeeded")
        shot(page, shots, "delivery-test-event")

        page.get_by_role("link", name="API tokens").click()
        page.get_by_label("Token name").fill("CRM sync")
        page.get_by_role("button", name="Create token").click()
        token = page.locator("[data-secret]")
        expect(token).to_be_visible()
        out["token"] = token.inner_text().strip()
        shot(page, shots, "tokens")
        b.close()
    return out


def replay(login, shots):
    out = {}
    with sync_playwright() as p:
        b = browser(p)
        page = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
        sign_in(page, login)
        page.get_by_role("link", name="Deliveries", exact=True).click()
        page.get_by_label("Status").select_option("dead")
        page.get_by_role("button", name="Filter").click()
        shot(page, shots, "deliveries-dead")
        rows = page.locator("tbody tr a")
        out["dead_listed"] = rows.count()
        rows.first.click()
        expect(page.get_by_role("heading", name="Attempts")).to_be_visible()
        out["replayed_one"] = page.url.rsplit("/", 1)[-1]
        out["attempts_shown"] = page.locator("[data-attempt]").count()
        shot(page, shots, "delivery-dead")
        page.get_by_role("button", name="Replay").click()
        expect(page.get_by_role("status")).to_contain_text("Queued again")

        page.get_by_role("link", name="Deliveries", exact=True).click()
        page.get_by_role("link", name="Replay all dead").click()
        count = page.get_by_role("status").locator("strong")
        out["count_shown"] = int(count.inner_text())
        shot(page, shots, "replay-all-dead")
        page.get_by_role("button", name="Replay all dead").click()
        expect(page.get_by_role("status")).to_contain_text("queued again")
        shot(page, shots, "deliveries")
        b.close()
    return out


def serve(port, html):
    """Serves `html` on http://127.0.0.1:<port> until shutdown()."""
    body = html.encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def frame_host(port, src):
    """A page on http://127.0.0.1:<port> (another origin than the console) that frames `src`,
    as a product's own settings page would."""
    return serve(port, f'<!doctype html><title>Product settings</title><h1>Integrations</h1>'
                       f'<iframe src="{src}" width="1000" height="700"></iframe>')


def debug(login, delivery_id, shots, allowed_port, allowed_src, refused_port, refused_src):
    out = {}
    with sync_playwright() as p:
        b = browser(p)
        page = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
        sign_in(page, login)
        page.get_by_role("link", name="Deliveries", exact=True).click()
        totals = page.locator("[data-day-totals]")
        expect(totals).to_be_visible()
        out["chart_bars"] = page.locator("svg.day rect").count()
        out["totals"] = {k: int(totals.get_attribute(f"data-{k}")) for k in
                         ["succeeded", "failed-attempts", "dead", "skipped", "in-progress"]}
        rate = page.locator("[data-success-rate]")
        out["success_rate"] = int(rate.get_attribute("data-success-rate")) if rate.count() else None
        shot(page, shots, "deliveries-chart")

        # The id from the receiver's log, pasted in upper case as some loggers print it.
        page.get_by_label("Search").fill(delivery_id.upper())
        page.get_by_role("button", name="Search").click()
        rows = page.locator("tbody tr")
        out["search_rows"] = rows.count()
        shot(page, shots, "deliveries-search")
        rows.first.locator("a").click()
        expect(page.get_by_role("heading", name="Payload")).to_be_visible()
        out["delivery_page_id"] = page.locator("[data-delivery-id]").inner_text().strip()
        out["payload"] = page.locator("[data-payload]").inner_text()
        out["attempt_labels"] = [t.strip() for t in
                                 page.locator("[data-attempt-label]").all_inner_texts()]
        # Response bodies are in <details>, open for failed attempts.
        out["response_bodies"] = page.locator("[data-response-body]").all_text_contents()
        shot(page, shots, "delivery-debug")

        page.get_by_role("link", name="Event types").click()
        expect(page.get_by_role("heading", name="Event types")).to_be_visible()
        sections = page.locator("[data-event-type]")
        out["catalogue_types"] = [sections.nth(i).get_attribute("data-event-type")
                                  for i in range(sections.count())]
        accepted = page.locator('[data-event-type="handoff.accepted"]')
        accepted.get_by_text("Schema", exact=True).click()
        out["schema_title"] = json.loads(accepted.locator("[data-schema]").inner_text())["title"]
        shot(page, shots, "event-types")
        accepted.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        out["test_delivery"] = page.url.rsplit("/", 1)[-1]
        wait_for_text(page, "succeeded")
        out["test_event_type"] = json.loads(page.locator("[data-payload]").inner_text())["type"]

        # Embedded in the product's settings page: allowed from one origin, not from another.
        servers = [frame_host(allowed_port, allowed_src), frame_host(refused_port, refused_src)]
        for name, port in [("allowed", allowed_port), ("refused", refused_port)]:
            host = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
            host.goto(f"http://127.0.0.1:{port}/")
            heading = host.frame_locator("iframe").get_by_role("heading", name="Webhook")
            try:
                expect(heading).to_be_visible(timeout=5000)
                out[f"framed_{name}"] = True
            except AssertionError:
                out[f"framed_{name}"] = False
            shot(host, shots, f"embedded-{name}")
        for srv in servers:
            srv.shutdown()
        b.close()
    return out


def link_host(port, href):
    """A page served on port <port>, opened as http://localhost:<port>: another *site* than the
    console on 127.0.0.1 (an IP and a name are never the same site), as an e-mail's web view, a
    chat or any web page would be, holding a sign-in link."""
    return serve(port, f'<!doctype html><title>Mail</title><h1>Your settings link</h1>'
                       f'<p><a href="{href}">Open the integration settings</a></p>')


def cross_site(login_a, login_b, port, shots):
    """Signed in to org A, the administrator follows org B's sign-in link from another site."""
    out = {}
    with sync_playwright() as p:
        b = browser(p)
        page = b.new_context(viewport={"width": 1100, "height": 900}).new_page()
        sign_in(page, login_a)
        out["signed_in_to"] = page.locator("[data-org]").inner_text()
        console = login_a.split("/console/")[0] + "/console"
        server = link_host(port, login_b)
        page.goto(f"http://localhost:{port}/")
        page.get_by_role("link", name="Open the integration settings").click()
        page.wait_for_load_state()
        switch = page.get_by_role("button", name="Switch organisation")
        out["asked"] = switch.count() == 1
        out["target_named"] = (page.locator("[data-target-org]").inner_text()
                               if page.locator("[data-target-org]").count() else None)
        shot(page, shots, "switch-from-another-site")
        # Nothing changed until the button: the console is still org A's.
        probe = b.contexts[0].new_page()
        probe.goto(console)
        out["before_click"] = probe.locator("[data-org]").inner_text()
        probe.close()
        if out["asked"]:
            switch.click()
            expect(page.get_by_role("heading", name="Webhook")).to_be_visible()
            out["after_click"] = page.locator("[data-org]").inner_text()
        server.shutdown()
        b.close()
    return out


def endpoints_add(login, endpoint, shots):
    """Adds a second endpoint, sends it a test event, edits its types and rotates its secret."""
    out = {}
    with signed_in(login) as page:
        page.get_by_role("link", name="Endpoints", exact=True).click()
        page.get_by_role("link", name="Add endpoint").click()
        expect(page.get_by_role("heading", name="Add endpoint")).to_be_visible()
        page.get_by_label("Endpoint URL").fill(endpoint)
        page.get_by_label("Description").fill("Data warehouse")
        for t in EVENT_TYPES:
            box = page.get_by_label(t, exact=True)
            if t == "lead.stage_changed":
                box.check()
            else:
                box.uncheck()
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.get_by_role("heading", name="Endpoint: Data warehouse")).to_be_visible()
        secret = page.locator("[data-secret]")
        expect(secret).to_be_visible()
        out["first_secret"] = secret.inner_text().strip()
        # The new endpoint's page, at its own address (a reload would not add it again).
        out["url_after_add"] = page.url
        shot(page, shots, "endpoint-added")

        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        out["test_delivery"] = page.url.rsplit("/", 1)[-1]
        wait_for_text(page, "succeeded")

        # Back through Endpoints, which lists every endpoint, the primary first and marked,
        # each with its name, state and deliveries.
        page.get_by_role("link", name="Endpoints", exact=True).click()
        rows = page.locator("tr[data-endpoint]")
        out["listed"] = rows.count()
        out["listed_ids"] = [r.get_attribute("data-endpoint") for r in rows.all()]
        out["primary_marked"] = [r.get_attribute("data-primary") is not None for r in rows.all()]
        out["states"] = [r.locator("td[data-state]").inner_text() for r in rows.all()]
        out["deliveries_links"] = [r.get_by_role("link", name="Deliveries").count() for r in rows.all()]
        shot(page, shots, "endpoints")
        page.get_by_role("link", name="Data warehouse", exact=True).click()
        expect(page.get_by_label("Description")).to_have_value("Data warehouse")
        # The added page answered its POST; this is the endpoint's own address.
        out["endpoint_page"] = page.url
        page.get_by_label("lead.created", exact=True).check()
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("Saved")

        page.get_by_label("Grace window").select_option("0")
        page.get_by_role("button", name="Rotate secret").click()
        rotated = page.locator("[data-secret]")
        expect(rotated).to_be_visible()
        out["rotated_secret"] = rotated.inner_text().strip()

        # The sign-in link again, used already, in this browser still signed in: refused (401),
        # saying the session goes on, and its link leads back to the settings, signed in.
        out["used_link_status"] = page.goto(login).status
        out["used_link_notice"] = page.get_by_role("status").inner_text()
        page.get_by_role("link", name="Back to the settings").click()
        out["used_link_still_signed_in"] = page.get_by_role("heading", name="Webhook").count() == 1
    return out


def endpoints_delete(login, endpoint_page, shots):
    """The endpoint's deliveries (the list filtered to it), then `Delete endpoint`."""
    out = {}
    with signed_in(login) as page:
        page.goto(endpoint_page)
        page.get_by_role("link", name="This endpoint's deliveries").click()
        expect(page.get_by_role("heading", name="Deliveries", exact=True)).to_be_visible()
        out["filtered_url"] = page.url
        out["delivery_ids"] = [a.get_attribute("href").rsplit("/", 1)[-1]
                               for a in page.locator("tbody tr a").all()]
        shot(page, shots, "endpoint-deliveries")
        page.goto(endpoint_page)
        # The endpoint's page only links to the question; its Cancel leaves the endpoint as it
        # was, and only the question's button deletes.
        out["buttons_on_page"] = page.get_by_role("button", name="Delete endpoint").count()
        page.get_by_role("link", name="Delete endpoint…").click()
        expect(page.get_by_role("status")).to_contain_text("cannot be undone")
        out["question"] = page.get_by_role("status").inner_text()
        shot(page, shots, "endpoint-delete-question")
        page.get_by_role("link", name="Cancel").click()
        out["after_cancel"] = page.url
        out["listed_after_cancel"] = page.get_by_role("link", name="Delete endpoint…").count()
        page.get_by_role("link", name="Delete endpoint…").click()
        page.get_by_role("button", name="Delete endpoint").click()
        expect(page.get_by_role("status")).to_contain_text("Endpoint deleted")
        out["listed_after"] = page.locator("tr[data-endpoint]").count()
        # Its page is gone.
        out["page_after"] = page.goto(endpoint_page).status
    return out


def receiver_credentials(login, shots):
    """On the first endpoint's page: its own headers (one secret) and a bearer token, saved,
    shown masked, a reserved header refused, then a test event."""
    out = {}
    with signed_in(login) as page:
        form = page.locator("section[aria-labelledby=receiver-h]")
        expect(form.get_by_role("heading", name="Headers and credentials")).to_be_visible()
        page.get_by_label("Header 1 name").fill("X-Api-Key")
        page.get_by_label("Header 1 value").fill("console-key-5521")
        page.get_by_label("Header 1 is secret").check()
        page.get_by_label("Header 2 name").fill("X-Team")
        page.get_by_label("Header 2 value").fill("crm")
        page.get_by_label("Authentication").select_option("bearer")
        # Only the chosen kind's fields show.
        out["basic_hidden"] = page.locator("fieldset[data-auth=basic]").is_hidden()
        page.get_by_label("Token", exact=True).fill("console-token-7781")
        page.get_by_role("button", name="Save headers and credentials").click()
        expect(page.get_by_role("status")).to_contain_text("Headers and credentials saved")
        out["secret_value_shown"] = page.get_by_label("Header 1 value").input_value()
        out["plain_value_shown"] = page.get_by_label("Header 2 value").input_value()
        out["token_shown"] = page.get_by_label("Token", exact=True).input_value()
        out["page_has_secrets"] = any(x in page.content() for x in ("console-key-5521", "console-token-7781"))
        shot(page, shots, "receiver-credentials")
        # A header the sender sets is refused, naming it, and nothing changes.
        page.get_by_label("Header 3 name").fill("Host")
        page.get_by_label("Header 3 value").fill("evil.example")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.get_by_role("button", name="Save headers and credentials").click()
        out["refused_status"] = posted.value.status
        out["refused_message"] = page.locator("#receiver-error").inner_text()
        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        wait_for_text(page, "succeeded")
    return out


AMQP_CHOICE = "AMQP: a signed message on your RabbitMQ exchange (the URL above is not used)"


def destination_amqp(login, broker_url, exchange, queue_url, service_url, shots):
    """Adds an endpoint that sends to a RabbitMQ exchange: a plain amqp:// url to a public
    address refused beside its field, then the broker's url saved, shown with its password
    masked, and a test event confirmed by the broker. Then one that sends to an SQS queue (an
    AWS-compatible service's address), its keys masked, and a test event AWS took."""
    out = {}
    with signed_in(login) as page:
        page.get_by_role("link", name="Endpoints", exact=True).click()
        page.get_by_role("link", name="Add endpoint").click()
        page.get_by_label("Description").fill("CRM queue")
        page.get_by_label(AMQP_CHOICE).check()
        page.get_by_label("Broker URL").fill("amqp://u:p@8.8.8.8/")
        page.get_by_label("Exchange", exact=True).fill(exchange)
        page.get_by_label("Routing key").fill("leads")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.get_by_role("button", name="Add endpoint").click()
        out["refused_status"] = posted.value.status
        out["refused_message"] = page.locator("#destination-error").inner_text()
        page.get_by_label("Broker URL").fill(broker_url)
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.get_by_role("heading", name="Endpoint: CRM queue")).to_be_visible()
        out["url_shown"] = page.get_by_label("Broker URL").input_value()
        out["amqp_checked"] = page.get_by_label(AMQP_CHOICE).is_checked()
        out["page_has_password"] = broker_url.split(":")[2].split("@")[0] in page.content()
        shot(page, shots, "endpoint-amqp")
        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        wait_for_text(page, "succeeded")
        out["broker_answer_shown"] = "confirmed by the broker" in page.content()
        page.get_by_role("link", name="Endpoints", exact=True).click()
        out["listed_target"] = page.locator("tr[data-endpoint]").nth(1).locator("td").nth(1).inner_text()

        page.get_by_role("link", name="Add endpoint").click()
        page.get_by_label("Description").fill("CRM SQS")
        page.get_by_label("Amazon SQS", exact=True).check()
        page.get_by_label("Queue URL (SQS)").fill(queue_url)
        page.get_by_label("Region", exact=True).fill("us-east-1")
        page.get_by_label("Service address (optional, an AWS-compatible service)").fill(service_url)
        page.get_by_label("Access key ID (optional: else the worker's own AWS credentials)").fill("AKIDCONSOLE")
        page.get_by_label("Secret access key").fill("console-aws-secret-2290")
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.get_by_role("heading", name="Endpoint: CRM SQS")).to_be_visible()
        out["sqs_checked"] = page.get_by_label("Amazon SQS", exact=True).is_checked()
        out["sqs_key_shown"] = page.get_by_label("Secret access key").input_value()
        out["sqs_page_has_secret"] = "console-aws-secret-2290" in page.content()
        shot(page, shots, "endpoint-sqs")
        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("heading", name="Delivery")).to_be_visible()
        wait_for_text(page, "succeeded")
        out["sqs_answer_shown"] = "MessageId " in page.content()
    return out


def filter_editor(login, shots):
    """On the first endpoint's page: a filter refused, one tested against the org's recent
    events, then saved."""
    out = {}
    with signed_in(login) as page:
        box = page.get_by_label("Filter (JSON)")
        box.fill('{"data.lead.channel": {"$regex": "sms"}}')
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            page.get_by_role("button", name="Save filter").click()
        out["refused_status"] = posted.value.status
        out["refused_message"] = page.locator("#filter-error").inner_text()
        page.get_by_label("Filter (JSON)").fill('{"data.lead.channel": "sms"}')
        page.get_by_role("button", name="Test against recent events").click()
        rows = page.locator("table[data-tested] tbody tr")
        expect(rows.first).to_be_visible()
        out["tested"] = [
            {"result": r.locator("td").nth(3).inner_text(), "lead": r.locator("td").nth(2).inner_text()}
            for r in rows.all()
        ]
        shot(page, shots, "filter-tested")
        page.get_by_role("button", name="Save filter").click()
        expect(page.get_by_role("status")).to_contain_text("Filter saved")
        out["saved_text"] = page.get_by_label("Filter (JSON)").input_value()
    return out


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "setup":
        out = setup(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "endpoints_add":
        out = endpoints_add(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "endpoints_delete":
        out = endpoints_delete(*sys.argv[2:])
    elif len(sys.argv) == 8 and sys.argv[1] == "destination_amqp":
        out = destination_amqp(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "filter_editor":
        out = filter_editor(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "receiver_credentials":
        out = receiver_credentials(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "replay":
        out = replay(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 9 and sys.argv[1] == "debug":
        out = debug(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "cross_site":
        out = cross_site(*sys.argv[2:])
    else:
        sys.exit(__doc__)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
