//! The settings console in a real browser (Debian's chromium, driven by Playwright for Python
//! through `scripts/console-browser.py`): an administrator sets the endpoint, rotates the
//! secret, sends a test event, creates a token, and brings back dead deliveries, and each has
//! the effect a user would check, at the receiver and through the API.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use qualifier_testkit::receiver::Behaviour;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

/// Where the pages' screenshots go (docs/console.md shows a copy of them).
fn shots_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn sign_in_link(s: &Stack) -> String {
    s.call(
        Method::POST,
        &format!("/internal/v1/orgs/{}/console-sessions", s.org),
        None,
    )
    .await["url"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs one phase of the browser script; what the pages showed.
async fn browser(args: Vec<String>) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/console-browser.py");
    let out = tokio::process::Command::new("python3")
        .arg(script)
        .args(&args)
        .output()
        .await
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "console-browser.py {args:?} failed (make test installs Playwright and chromium):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_sets_up_webhooks_and_recovers_dead_deliveries_in_the_browser() {
    let s = Stack::start().await;
    let lead = s.inbound("+447700900701").await;
    let lead_id = lead["id"].as_str().unwrap().to_owned();
    let shots = shots_dir().to_string_lossy().into_owned();
    let endpoint = format!("{}?via=console", s.receiver.url);

    let before = s.receiver.received().len();
    let page = browser(vec![
        "setup".into(),
        sign_in_link(&s).await,
        endpoint.clone(),
        shots.clone(),
    ])
    .await;

    assert_eq!(page["keyboard_reaches_url"], true, "{page}");
    assert_ne!(page["focus_outline"], "none", "focus is visible: {page}");
    // The endpoint and event types chosen on the page are the org's settings.
    let hook = s
        .call(
            Method::GET,
            &format!("/internal/v1/orgs/{}/webhook", s.org),
            None,
        )
        .await;
    assert_eq!(hook["webhook"]["url"], endpoint.as_str());
    assert_eq!(
        hook["webhook"]["event_types"],
        json!(["lead.created", "lead.stage_changed"])
    );
    // The rotated secret was read from the page, once.
    let secret = page["secret"].as_str().unwrap();
    assert!(
        secret.starts_with("qlf_whsec_") && secret != s.secret,
        "{page}"
    );
    assert_eq!(page["secret_still_shown_after_reload"], false);
    // The test event arrived, marked as a test, signed with the secret from the page.
    let got = s.receiver.wait_for(before + 1, WAIT).await;
    let test = got[before..]
        .iter()
        .find(|g| g.header("x-qualifier-test") == "true")
        .expect("the test event arrived");
    assert_eq!(
        test.header("x-qualifier-delivery"),
        page["test_delivery"].as_str().unwrap()
    );
    assert!(qualifier_signing::verify(
        secret,
        &test.body,
        test.header("x-qualifier-signature")
    ));
    assert!(!qualifier_signing::verify(
        &s.secret,
        &test.body,
        test.header("x-qualifier-signature")
    ));
    // The token created on the page reads the org's lead.
    let token = page["token"].as_str().unwrap();
    let r = s
        .http
        .get(format!("{}/api/v1/leads/{lead_id}", s.public))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // The receiver goes down: two deliveries end dead.
    s.receiver.set_secrets(vec![secret.to_owned()]);
    s.receiver.set_behaviour(Behaviour::Status(500));
    s.inbound("+447700900702").await;
    s.inbound("+447700900703").await;
    let deadline = Instant::now() + WAIT;
    let dead: Vec<String> = loop {
        let ds = s.deliveries().await;
        let dead: Vec<String> = ds
            .iter()
            .filter(|d| d["status"] == "dead")
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect();
        if dead.len() == 2 {
            break dead;
        }
        assert!(Instant::now() < deadline, "{ds:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    s.receiver.set_behaviour(Behaviour::Ok);
    let before = s.receiver.received().len();

    // Back up: one replayed from its page, the other with "Replay all dead" after its count.
    let page = browser(vec!["replay".into(), sign_in_link(&s).await, shots]).await;
    assert_eq!(page["dead_listed"], 2, "{page}");
    assert_eq!(page["attempts_shown"], 5, "{page}");
    assert!(dead.contains(&page["replayed_one"].as_str().unwrap().to_owned()));
    assert_eq!(page["count_shown"], 1, "{page}");
    for id in &dead {
        s.wait_status(id, "succeeded", WAIT).await;
    }
    let got = s.receiver.wait_for(before + 2, WAIT).await;
    let mut resent: Vec<&str> = got[before..]
        .iter()
        .map(|g| g.header("webhook-id"))
        .collect();
    resent.sort();
    let mut want: Vec<&str> = dead.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(resent, want, "each came back under its own delivery id");
}
