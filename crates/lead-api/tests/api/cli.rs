//! `qualifier`, the integrator's command line, as an integrator runs it: the real binary
//! against a live `lead-api`, forwarding to a plain-HTTP receiver on loopback (a laptop's), and
//! verified with the PyPI `standardwebhooks` library.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use qualifier_testkit::local::{LocalReceiver, standard_webhooks_verifies};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestApp;

const WAIT: Duration = Duration::from_secs(20);

/// The `qualifier` binary of this build: cargo puts it beside the test's own directory
/// (`target/<profile>/`); built here when `cargo test` was asked for this crate only.
fn qualifier_bin() -> std::path::PathBuf {
    let dir = qualifier_testkit::procs::own_dir();
    let bin = dir
        .parent()
        .expect("the profile's directory")
        .join("qualifier");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "-p", "qualifier", "--bin", "qualifier"])
            .status()
            .expect("cargo runs");
        assert!(ok.success(), "cargo build -p qualifier");
    }
    bin
}

fn qualifier(app: &TestApp, token: &str) -> Command {
    let mut c = Command::new(qualifier_bin());
    c.env("QUALIFIER_API_URL", &app.public)
        .env("QUALIFIER_TOKEN", token)
        .env_remove("QUALIFIER_LISTEN_SECRET");
    c
}

/// A running `qualifier listen`, its stdout read line by line.
struct Listener {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Listener {
    fn start(mut cmd: Command) -> Listener {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("qualifier runs");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Listener {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line of its output holding `needle` (the lines before it are kept in `seen`).
    fn until(&mut self, needle: &str) -> String {
        loop {
            let l = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("no line with {needle:?}; saw {:#?}", self.seen));
            self.seen.push(l.clone());
            if l.contains(needle) {
                return l;
            }
        }
    }

    /// Ctrl-C, as a person stops it; the cursor it printed to resume from.
    fn interrupt(&mut self) -> String {
        let ok = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let line = self.until("Resume with:");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "Ctrl-C is a clean stop: {status}");
        line.rsplit("--after ").next().unwrap().trim().to_owned()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The feed's envelopes, each as the bytes the API sent.
async fn feed(app: &TestApp, token: &str) -> Vec<String> {
    let r = app
        .public(Method::GET, "/api/v1/events?limit=500", token, None)
        .await;
    let text = r.text().await.unwrap();
    #[derive(serde::Deserialize)]
    struct Page {
        events: Vec<Box<serde_json::value::RawValue>>,
    }
    let page: Page = serde_json::from_str(&text).unwrap();
    page.events.iter().map(|e| e.get().to_owned()).collect()
}

/// Waits until the feed shows `n` events: it shows an event once the relay has placed it in
/// commit order, a moment after its commit.
async fn feed_holds(app: &TestApp, token: &str, n: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    while feed(app, token).await.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "fewer than {n} events in the feed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_forwards_signed_events_skips_none_while_the_receiver_is_down_and_resumes_after_ctrl_c()
 {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    // Before `listen` starts: without --after it begins from now, so this is not forwarded.
    let lead = app.inbound_lead(&org, "+447700900101").await;
    let lead_id = lead["id"].as_str().unwrap().to_owned();
    // "From now" is what the feed shows when listen starts.
    feed_holds(&app, &token, 1).await;
    let mut receiver = LocalReceiver::start().await;

    let mut cmd = qualifier(&app, &token);
    cmd.args(["listen", "--forward-to", &receiver.url()]);
    let mut listen = Listener::start(cmd);
    let secret_line = listen.until("Signing secret:");
    let secret = secret_line.split_whitespace().nth(2).unwrap().to_owned();
    let standard_line = listen.until("Standard Webhooks secret:");
    let standard = standard_line.split_whitespace().nth(3).unwrap().to_owned();
    assert!(secret.starts_with("qlf_whsec_") && standard.starts_with("whsec_"));
    listen.until("from now on");

    // The printed PATCH of `make run`: closing the lead emits lead.stage_changed.
    app.public_expect(
        200,
        Method::PATCH,
        &format!("/api/v1/leads/{lead_id}"),
        &token,
        Some(json!({"status": "closed"})),
    )
    .await;
    let got = receiver.wait_for(1, WAIT).await;
    let first = &got[0];
    let envelopes = feed(&app, &token).await;
    assert_eq!(envelopes.len(), 2, "lead.created, then lead.stage_changed");
    // The same bytes as the feed (and so as a delivery), signed as a delivery is.
    assert_eq!(first.body, envelopes[1].as_bytes());
    let event: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(event["type"], "lead.stage_changed");
    assert_eq!(first.header("x-qualifier-event"), "lead.stage_changed");
    assert_eq!(first.header("webhook-id"), event["id"].as_str().unwrap());
    assert_eq!(
        first.header("x-qualifier-delivery"),
        first.header("webhook-id")
    );
    assert_eq!(first.header("user-agent"), "Qualifier-Webhooks/1");
    assert!(qualifier_signing::verify(
        &secret,
        &first.body,
        first.header("x-qualifier-signature")
    ));
    assert!(
        standard_webhooks_verifies(&standard, |h| first.header(h).to_owned(), &first.body),
        "standardwebhooks refused what listen sent"
    );
    let wrong = qualifier_signing::standard::secret(&qualifier_signing::new_secret());
    assert!(!standard_webhooks_verifies(
        &wrong,
        |h| first.header(h).to_owned(),
        &first.body
    ));
    let line = listen.until("lead.stage_changed");
    assert!(line.contains(&lead_id) && line.contains(" 200 "), "{line}");

    // The receiver goes down; two events commit meanwhile.
    receiver.down().await;
    let second = app.inbound_lead(&org, "+447700900102").await;
    let third = app.inbound_lead(&org, "+447700900103").await;
    // listen has found it down (and says so) before it comes back.
    listen.until("no answer");
    listen.until("retrying in");
    receiver.up();
    let got = receiver.wait_for(3, Duration::from_secs(60)).await;
    let leads_in_order: Vec<String> = got[1..]
        .iter()
        .map(|g| serde_json::from_slice::<Value>(&g.body).unwrap()["data"]["lead"]["id"].clone())
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        leads_in_order,
        vec![
            second["id"].as_str().unwrap().to_owned(),
            third["id"].as_str().unwrap().to_owned()
        ],
        "none skipped, in the feed's order"
    );
    // Its line for the last one is printed after the answer and before it asks the feed again.
    listen.until(third["id"].as_str().unwrap());
    let cursor = listen.interrupt();

    // While it is stopped, one more event; resuming after the cursor forwards it, and only it.
    let fourth = app.inbound_lead(&org, "+447700900104").await;
    let mut cmd = qualifier(&app, &token);
    cmd.args([
        "listen",
        "--forward-to",
        &receiver.url(),
        "--after",
        &cursor,
        "--secret",
        &standard,
    ]);
    let mut again = Listener::start(cmd);
    again.until(fourth["id"].as_str().unwrap());
    let got = receiver.wait_for(4, WAIT).await;
    let last: Value = serde_json::from_slice(&got[3].body).unwrap();
    assert_eq!(last["data"]["lead"]["id"], fourth["id"]);
    // Given the whsec_ form, it signs with the same key.
    assert!(qualifier_signing::verify(
        &secret,
        &got[3].body,
        got[3].header("x-qualifier-signature")
    ));
    let resumed = again.interrupt();
    assert!(!resumed.is_empty());
    assert_eq!(receiver.received().len(), 4, "nothing forwarded twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_prints_the_apis_json_and_its_errors() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900201").await;
    let id = lead["id"].as_str().unwrap();
    let run = |args: &[&str]| {
        let out = qualifier(&app, &token).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };

    let (ok, out, _) = run(&["leads", "get", id]);
    assert!(ok);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["lead"]["id"], lead["id"]);
    let revision = got["lead"]["revision"].as_i64().unwrap();

    // A stale revision: the API's message, a non-zero exit, nothing written.
    let stale = (revision + 5).to_string();
    let (ok, out, err) = run(&[
        "leads",
        "patch",
        id,
        "--status",
        "closed",
        "--if-match",
        &stale,
    ]);
    assert!(!ok && out.is_empty());
    assert!(
        err.contains("Lead has changed") && err.contains("412"),
        "{err}"
    );
    let (ok, out, _) = run(&[
        "leads",
        "patch",
        id,
        "--status",
        "closed",
        "--external-ref",
        r#"{"system":"hubspot","id":"9001"}"#,
        "--if-match",
        &revision.to_string(),
    ]);
    assert!(ok);
    let patched: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(patched["lead"]["qualification_stage"], "closed");
    assert_eq!(patched["lead"]["external_ref"]["id"], "9001");

    let (ok, out, _) = run(&["leads", "list"]);
    assert!(ok);
    assert_eq!(out.lines().count(), 1);

    feed_holds(&app, &token, 2).await;
    let (ok, out, err) = run(&["events"]);
    assert!(ok);
    let types: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types, ["lead.created", "lead.stage_changed"]);
    assert!(err.starts_with("next_cursor: "), "{err}");
    let (ok, out, _) = run(&["events", "--types", "lead.stage_changed"]);
    assert!(ok && out.lines().count() == 1);

    // Wrong token, wrong URL, unknown lead: the message says which.
    let wrong_token = "qlf_org_notarealtokennotarealtokennotarealtok";
    let cases: [(&str, &[&str], &[&str]); 3] = [
        (wrong_token, &["events"], &["Unauthorized", "--token"]),
        (
            &token,
            &["listen", "--forward-to", "localhost:4242"],
            &["--forward-to"],
        ),
        (
            &token,
            &["--api-url", "http://127.0.0.1:1", "events"],
            &["cannot reach the API"],
        ),
    ];
    for (token, args, says) in cases {
        let out = qualifier(&app, token).args(args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(says.iter().all(|w| err.contains(w)), "{args:?}: {err}");
    }
    let (ok, _, err) = run(&["leads", "get", "00000000-0000-0000-0000-000000000000"]);
    assert!(!ok && err.contains("Lead not found"), "{err}");
}

/// The resume line Ctrl-C prints is a command that works pasted as is in the same shell: the
/// program as it was invoked, the token when it was given on the command line (the shell's
/// history already holds it; one read from `QUALIFIER_TOKEN` is left there), the same signing
/// secret, and the cursor. Run through `bash -c`, it forwards the next event and only it.
#[tokio::test(flavor = "multi_thread")]
async fn the_resume_line_pasted_in_the_same_shell_resumes_with_the_next_event() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let receiver = LocalReceiver::start().await;
    let mut cmd = qualifier(&app, &token);
    cmd.env_remove("QUALIFIER_TOKEN").args([
        "--token",
        &token,
        "listen",
        "--forward-to",
        &receiver.url(),
    ]);
    let mut listen = Listener::start(cmd);
    listen.until("from now on");
    let first = app.inbound_lead(&org, "+447700900201").await;
    listen.until(first["id"].as_str().unwrap());
    let ok = Command::new("kill")
        .args(["-INT", &listen.child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let line = listen.until("Resume with:");
    let resume = line.split_once("Resume with: ").unwrap().1.to_owned();
    assert!(
        resume.starts_with(&qualifier_bin().display().to_string()),
        "{resume}"
    );
    assert!(resume.contains("--token"), "{resume}");

    let second = app.inbound_lead(&org, "+447700900202").await;
    let mut pasted = Command::new("bash");
    pasted
        .arg("-c")
        .arg(&resume)
        .env("QUALIFIER_API_URL", &app.public)
        .env_remove("QUALIFIER_TOKEN")
        .env_remove("QUALIFIER_LISTEN_SECRET");
    let mut again = Listener::start(pasted);
    again.until(second["id"].as_str().unwrap());
    let got = receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2, "the first, then the second only");
    let last: Value = serde_json::from_slice(&got[1].body).unwrap();
    assert_eq!(last["data"]["lead"]["id"], second["id"]);
}

/// Whatever stops `listen`, it prints where it got to: here an event it cannot read (a feed
/// answer without an event's id and type, from a stand-in for the API).
#[tokio::test(flavor = "multi_thread")]
async fn an_event_it_cannot_read_stops_listen_with_the_resume_line() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", api.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = api.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let body = if head.contains("after=c0") {
                    r#"{"events":[{"not":"an event"}],"next_cursor":"c1"}"#
                } else {
                    r#"{"events":[],"next_cursor":"c0"}"#
                };
                let _ = s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    let out = Command::new(qualifier_bin())
        .env("QUALIFIER_API_URL", &base)
        .env("QUALIFIER_TOKEN", "qlf_org_stand-in")
        .args(["listen", "--forward-to", "http://127.0.0.1:9/hook"])
        .output()
        .expect("qualifier runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("Resume with:") && stdout.contains("--after c0"),
        "{stdout}"
    );
}
