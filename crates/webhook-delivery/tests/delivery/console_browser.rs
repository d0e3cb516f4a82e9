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
        s.console_link().await,
        endpoint.clone(),
        shots.clone(),
    ])
    .await;

    assert_eq!(page["keyboard_reaches_url"], true, "{page}");
    assert_ne!(page["focus_outline"], "none", "focus is visible: {page}");
    assert_eq!(
        page["placeholders_cut"],
        json!([]),
        "every placeholder fits: {page}"
    );
    // The endpoint and event types chosen on the page are the org's settings.
    let hook = s.webhook().await;
    assert_eq!(hook["url"], endpoint.as_str());
    assert_eq!(
        hook["event_types"],
        json!(["lead.created", "lead.stage_changed"])
    );
    // The rotated secret was read from the page, once.
    let secret = page["secret"].as_str().unwrap();
    assert!(
        secret.starts_with("qlf_whsec_") && secret != s.secret,
        "{page}"
    );
    assert_eq!(page["secret_still_shown_after_reload"], false);
    assert!(
        page["url_after_rotate"]
            .as_str()
            .unwrap()
            .ends_with("/console"),
        "the page's own address, not the form's: {page}"
    );
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
    let page = browser(vec!["replay".into(), s.console_link().await, shots]).await;
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

/// The morning after a receiver misbehaved: the administrator finds the delivery by
/// the id in the receiver's log, reads the payload and, per attempt, what the receiver answered
/// (attempts numbered by replay), sees the last day's chart agree with the API, sends a test
/// event of a chosen type from the catalogue, and the console opens framed in the product's
/// settings page (an allowed origin) but not in another.
#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_debugs_a_failing_receiver_in_the_browser() {
    let [allowed, refused] = qualifier_testkit::free_ports::<2>();
    let s = Stack::start_tuned(
        |c| c.console_frame_ancestors = vec![format!("http://127.0.0.1:{allowed}")],
        |_| {},
    )
    .await;
    let shots = shots_dir().to_string_lossy().into_owned();
    let error_body = r#"{"error":"crm_unavailable","detail":"HubSpot token expired"}"#;

    // Two delivered, then one that dies against a receiver answering a JSON error.
    s.inbound("+447700900801").await;
    s.inbound("+447700900802").await;
    s.receiver.wait_for(2, WAIT).await;
    s.receiver
        .set_answer_body(Some((error_body.as_bytes().to_vec(), "application/json")));
    s.receiver.set_behaviour(Behaviour::Status(500));
    s.inbound("+447700900803").await;
    let got = s.receiver.wait_for(7, WAIT).await;
    let id = got[6].header("webhook-id").to_owned();
    s.wait_status(&id, "dead", WAIT).await;
    // The receiver is fixed; the delivery is replayed and goes through.
    s.receiver.set_answer_body(None);
    s.receiver.set_behaviour(Behaviour::Ok);
    s.org_call(Method::POST, &format!("deliveries/{id}/replay"), None)
        .await;
    s.wait_status(&id, "succeeded", WAIT).await;

    let page = browser(vec![
        "debug".into(),
        s.console_link().await,
        id.clone(),
        shots,
        allowed.to_string(),
        s.console_link().await,
        refused.to_string(),
        s.console_link().await,
    ])
    .await;

    // Found by the receiver-side webhook-id.
    assert_eq!(page["search_rows"], 1, "{page}");
    assert_eq!(page["delivery_page_id"], id.as_str());
    let payload: serde_json::Value =
        serde_json::from_str(page["payload"].as_str().unwrap()).unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&got[6].body).unwrap();
    assert_eq!(payload, sent, "the payload shown is the one sent");
    // Newest first: the replay's attempt, then the five that failed.
    assert_eq!(
        page["attempt_labels"],
        json!([
            "Replay 1, attempt 1",
            "Attempt 5",
            "Attempt 4",
            "Attempt 3",
            "Attempt 2",
            "Attempt 1"
        ])
    );
    let bodies = page["response_bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), 6, "{page}");
    assert_eq!(bodies[0], "ok");
    for b in &bodies[1..] {
        assert_eq!(b, error_body, "what the receiver answered, per attempt");
    }
    // The chart's totals are the API's list of the same day (the page was read before the
    // catalogue's test event).
    let test_id = page["test_delivery"].as_str().unwrap();
    let list: Vec<Value> = s
        .deliveries()
        .await
        .into_iter()
        .filter(|d| d["id"] != test_id)
        .collect();
    let count = |status: &str| list.iter().filter(|d| d["status"] == status).count() as i64;
    let failed_attempts: i64 = {
        let d = s.delivery_in(&s.org, &id).await;
        d["attempt_log"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| !e["error"].is_null())
            .count() as i64
    };
    let totals = &page["totals"];
    assert_eq!(totals["succeeded"], count("succeeded"), "{page}");
    assert_eq!(totals["dead"], count("dead"));
    assert_eq!(totals["skipped"], count("skipped"));
    assert_eq!(totals["failed-attempts"], failed_attempts);
    assert_eq!(totals["succeeded"], 3);
    assert_eq!(
        page["success_rate"], 100,
        "every finished delivery succeeded"
    );
    assert!(page["chart_bars"].as_i64().unwrap() >= 2, "{page}");
    // The catalogue lists every type; its test event is of the type chosen.
    assert_eq!(
        page["catalogue_types"],
        json!([
            "lead.created",
            "lead.updated",
            "lead.stage_changed",
            "lead.qualified",
            "handoff.created",
            "handoff.accepted",
            "handoff.released",
            "lead.erased"
        ])
    );
    assert_eq!(page["schema_title"], "handoff.accepted");
    assert_eq!(page["test_event_type"], "handoff.accepted");
    let test = s
        .receiver
        .received()
        .into_iter()
        .find(|r| r.header("webhook-id") == test_id)
        .expect("the catalogue's test event arrived");
    assert_eq!(test.header("x-qualifier-event"), "handoff.accepted");
    assert_eq!(test.header("x-qualifier-test"), "true");
    // Framed: by the allowed origin it loads, by another the browser refuses it.
    assert_eq!(page["framed_allowed"], true, "{page}");
    assert_eq!(page["framed_refused"], false, "{page}");
}

/// Signed in to one org, an administrator follows another org's sign-in link from another site
/// (a page on `localhost`, while the console is on `127.0.0.1`: another site, as an e-mail's web
/// view or a chat would be). The console asks first, naming the other org, and the session is
/// the first org's until the console's own `Switch organisation` button is clicked. With a
/// `SameSite=Strict` cookie the link arrived without the session and signed in silently.
#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_link_from_another_site_asks_before_switching_organisation() {
    let s = Stack::start().await;
    let other = crate::stack::SecondOrg::add(&s).await;
    let link_b = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{}/console-sessions", other.org),
            None,
        )
        .await["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let [port] = qualifier_testkit::free_ports::<1>();
    let page = browser(vec![
        "cross_site".into(),
        s.console_link().await,
        link_b,
        port.to_string(),
        shots_dir().to_string_lossy().into_owned(),
    ])
    .await;
    let first = page["signed_in_to"].as_str().unwrap().to_owned();
    assert_ne!(first, "Beta", "{page}");
    assert_eq!(
        page["asked"], true,
        "the link asked before switching: {page}"
    );
    assert_eq!(page["target_named"], "Beta", "{page}");
    assert_eq!(
        page["before_click"],
        first.as_str(),
        "nothing switched before the click: {page}"
    );
    assert_eq!(page["after_click"], "Beta", "the click switched: {page}");
}

/// An administrator adds a second endpoint (a data warehouse) in the browser, subscribed to one
/// type, reads its secret once, sends it a test event, widens its types, rotates its secret
/// with no grace, follows its deliveries, then deletes it. Each step is checked where a user
/// would: at the warehouse's receiver (what arrives, signed with which secret) and through the
/// API; the first endpoint is not touched by any of it.
#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_adds_edits_rotates_and_deletes_an_endpoint_in_the_browser() {
    let s = Stack::start().await;
    let warehouse = qualifier_testkit::receiver::Receiver::start().await;
    let shots = shots_dir().to_string_lossy().into_owned();
    let primary_before = s.webhook().await;

    let page = browser(vec![
        "endpoints_add".into(),
        s.console_link().await,
        warehouse.url.clone(),
        shots.clone(),
    ])
    .await;
    let endpoints = s.org_call(Method::GET, "endpoints", None).await["endpoints"].clone();
    assert_eq!(endpoints.as_array().unwrap().len(), 2, "{endpoints}");
    let added = &endpoints[1];
    let id = added["id"].as_str().unwrap();
    assert_eq!(page["listed"], 2, "Endpoints lists both: {page}");
    assert_eq!(
        page["listed_ids"],
        json!([endpoints[0]["id"], id]),
        "the primary first: {page}"
    );
    assert_eq!(page["primary_marked"], json!([true, false]), "{page}");
    assert_eq!(page["states"], json!(["healthy", "healthy"]), "{page}");
    assert_eq!(page["deliveries_links"], json!([1, 1]), "{page}");
    assert!(
        page["url_after_add"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/console/endpoints/{id}")),
        "the new endpoint's own page: {page}"
    );
    assert_eq!(
        page["used_link_status"], 401,
        "a used link is refused: {page}"
    );
    assert!(
        page["used_link_notice"]
            .as_str()
            .unwrap()
            .contains("still signed in"),
        "{page}"
    );
    assert_eq!(page["used_link_still_signed_in"], true, "{page}");
    assert_eq!(added["url"], warehouse.url.as_str());
    assert_eq!(added["description"], "Data warehouse");
    // The types as edited on its page; the first endpoint's settings as they were.
    assert_eq!(
        added["event_types"],
        json!(["lead.created", "lead.stage_changed"])
    );
    assert_eq!(endpoints[0]["url"], primary_before["url"]);
    assert_eq!(endpoints[0]["event_types"], primary_before["event_types"]);

    // The test event reached the warehouse, signed with the secret the page showed first.
    let first = page["first_secret"].as_str().unwrap();
    let rotated = page["rotated_secret"].as_str().unwrap();
    assert!(first.starts_with("qlf_whsec_") && first != rotated && first != s.secret);
    let test = warehouse.wait_for(1, WAIT).await.remove(0);
    assert_eq!(
        test.header("webhook-id"),
        page["test_delivery"].as_str().unwrap()
    );
    assert_eq!(test.header("x-qualifier-test"), "true");
    assert!(qualifier_signing::verify(
        first,
        &test.body,
        test.header("x-qualifier-signature")
    ));

    // A new lead: the warehouse gets `lead.created` (added on its page), signed with the
    // rotated secret only (no grace window), under a delivery id of its own.
    warehouse.set_secrets(vec![rotated.to_owned()]);
    let crm_before = s.receiver.received().len();
    s.inbound("+447700900901").await;
    let got = warehouse.wait_for(2, WAIT).await;
    let created = &got[1];
    assert_eq!(created.header("x-qualifier-event"), "lead.created");
    assert_eq!(created.verified_with, Some(0), "{:?}", created.headers);
    assert!(!qualifier_signing::verify(
        first,
        &created.body,
        created.header("x-qualifier-signature")
    ));
    let crm = s.receiver.wait_for(crm_before + 1, WAIT).await;
    assert_ne!(
        crm[crm_before].header("webhook-id"),
        created.header("webhook-id")
    );
    s.wait_status(created.header("webhook-id"), "succeeded", WAIT)
        .await;

    // Its deliveries page lists its own two and not the first endpoint's.
    let endpoint_page = page["endpoint_page"].as_str().unwrap().to_owned();
    let page = browser(vec![
        "endpoints_delete".into(),
        s.console_link().await,
        endpoint_page.clone(),
        shots,
    ])
    .await;
    let mut shown: Vec<&str> = page["delivery_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    shown.sort();
    let mut want = vec![test.header("webhook-id"), created.header("webhook-id")];
    want.sort();
    assert_eq!(shown, want, "{page}");
    // One click on its page only asks: the question names it, Cancel keeps it.
    assert_eq!(page["buttons_on_page"], 0, "{page}");
    let question = page["question"].as_str().unwrap();
    assert!(question.contains("Data warehouse"), "{page}");
    assert!(question.contains(warehouse.url.as_str()), "{page}");
    assert_eq!(page["after_cancel"], endpoint_page.as_str(), "{page}");
    assert_eq!(page["listed_after_cancel"], 1, "{page}");
    assert_eq!(page["listed_after"], 1, "only the primary is left: {page}");
    assert_eq!(page["page_after"], 404, "{page}");

    // Deleted: the API no longer has it, and the next event goes to the first endpoint only.
    let endpoints = s.org_call(Method::GET, "endpoints", None).await["endpoints"].clone();
    assert_eq!(endpoints.as_array().unwrap().len(), 1, "{endpoints}");
    let crm_before = s.receiver.received().len();
    s.inbound("+447700900902").await;
    s.receiver.wait_for(crm_before + 1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(warehouse.received().len(), 2, "nothing after the delete");
}

/// An administrator gives the first endpoint a secret header, a plain one and a bearer token on
/// its page: the page shows the secrets masked and never in clear, refuses a header the sender
/// sets (422, naming it), and the test event sent from the page carries them all.
#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_sets_the_receivers_headers_and_token_in_the_browser() {
    let s = Stack::start().await;
    let shots = shots_dir().to_string_lossy().into_owned();
    let page = browser(vec![
        "receiver_credentials".into(),
        s.console_link().await,
        shots,
    ])
    .await;
    assert_eq!(page["basic_hidden"], true, "{page}");
    assert_eq!(page["secret_value_shown"], "********", "{page}");
    assert_eq!(page["plain_value_shown"], "crm", "{page}");
    assert_eq!(page["token_shown"], "********", "{page}");
    assert_eq!(page["page_has_secrets"], false, "{page}");
    assert_eq!(page["refused_status"], 422, "{page}");
    assert!(
        page["refused_message"].as_str().unwrap().contains("Host"),
        "{page}"
    );
    // Saved as shown, the refused change not applied.
    let hook = s.webhook().await;
    assert_eq!(
        hook["headers"],
        json!([{"name": "X-Api-Key", "value": "********", "secret": true},
               {"name": "X-Team", "value": "crm", "secret": false}])
    );
    assert_eq!(hook["auth"], json!({"type": "bearer", "token": "********"}));
    let test = s
        .receiver
        .wait_for(1, WAIT)
        .await
        .into_iter()
        .find(|g| g.header("x-qualifier-test") == "true")
        .expect("the test event");
    assert_eq!(test.header("x-api-key"), "console-key-5521");
    assert_eq!(test.header("x-team"), "crm");
    assert_eq!(test.header("authorization"), "Bearer console-token-7781");
}

/// An administrator adds an endpoint that sends to the receiver's RabbitMQ exchange: a plain
/// `amqp://` url to a public address is refused beside the field, the broker's url is saved
/// and shown with its password masked, and a test event is confirmed by the broker. Then one
/// that sends to an SQS queue (moto over HTTPS), its keys masked, and a test event AWS took.
#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_sends_an_endpoint_to_a_rabbitmq_exchange_in_the_browser() {
    let s = Stack::start().await;
    let broker = qualifier_testkit::their_broker::TheirBroker::new(&s.topo.prefix).await;
    let moto = qualifier_testkit::moto::Moto::start().await;
    let queue = moto.create_queue("console-leads").await;
    let shots = shots_dir().to_string_lossy().into_owned();
    let page = browser(vec![
        "destination_amqp".into(),
        s.console_link().await,
        broker.url(),
        broker.exchange.clone(),
        queue.clone(),
        moto.url.clone(),
        shots,
    ])
    .await;
    assert_eq!(page["sqs_checked"], true, "{page}");
    assert_eq!(page["sqs_key_shown"], "********", "{page}");
    assert_eq!(page["sqs_page_has_secret"], false, "{page}");
    assert_eq!(page["sqs_answer_shown"], true, "{page}");
    let on_queue = moto.wait_messages(&queue, 1, WAIT).await;
    assert_eq!(on_queue.len(), 1);
    assert_eq!(on_queue[0].attributes["X-Qualifier-Test"], "true");
    assert_eq!(page["refused_status"], 422, "{page}");
    assert!(
        page["refused_message"]
            .as_str()
            .unwrap()
            .contains("must use TLS"),
        "{page}"
    );
    assert_eq!(page["amqp_checked"], true, "{page}");
    assert!(
        page["url_shown"].as_str().unwrap().contains(":********@"),
        "{page}"
    );
    assert_eq!(page["page_has_password"], false, "{page}");
    assert_eq!(page["broker_answer_shown"], true, "{page}");
    assert!(
        page["listed_target"].as_str().unwrap().starts_with("amqp:"),
        "{page}"
    );
    // The test event is on the receiver's queue, signed like any delivery.
    let got = broker.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-qualifier-test"), "true");
    let endpoints = s.org_call(Method::GET, "endpoints", None).await;
    let saved = &endpoints["endpoints"][1];
    assert_eq!(saved["destination"]["exchange"], broker.exchange.as_str());
    assert_eq!(saved["url"], Value::Null);
}

/// An administrator writes a filter for the first endpoint on its page: a bad one is refused
/// with the API's message, a good one is tried against the org's recent events (which of them
/// it would send), then saved, and from then on the endpoint gets only what it matches.
#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_tests_and_saves_a_filter_in_the_browser() {
    let s = Stack::start().await;
    s.inbound("+447700900711").await;
    let body = json!({"name": "Grace Hopper", "phone": "+447700900712", "channel": "sms"});
    s.org_call(Method::POST, "inbound", Some(body)).await;
    s.receiver.wait_for(2, WAIT).await;
    let shots = shots_dir().to_string_lossy().into_owned();
    let page = browser(vec!["filter_editor".into(), s.console_link().await, shots]).await;
    assert_eq!(page["refused_status"], 422, "{page}");
    assert!(
        page["refused_message"]
            .as_str()
            .unwrap()
            .contains("filter.data.lead.channel.$regex"),
        "{page}"
    );
    // The two recent events, newest first: the sms lead sent, the whatsapp one left out.
    assert_eq!(
        page["tested"],
        json!([{"result": "Sent", "lead": "sms, qualifying"}, {"result": "Left out", "lead": "whatsapp, qualifying"}]),
        "{page}"
    );
    assert!(
        page["saved_text"].as_str().unwrap().contains("\"sms\""),
        "{page}"
    );
    assert_eq!(
        s.webhook().await["filter"],
        json!({"data.lead.channel": "sms"})
    );
    // Saved: a whatsapp lead is left out, an sms one sent.
    s.inbound("+447700900713").await;
    let body = json!({"name": "Grace Hopper", "phone": "+447700900714", "channel": "sms"});
    s.org_call(Method::POST, "inbound", Some(body)).await;
    let got = s.receiver.wait_for(3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.receiver.received().len(), 3, "the whatsapp lead left out");
    assert_eq!(got[2].json()["data"]["lead"]["channel"], "sms");
}
