//! Compact storage (`QUALIFIER_PAYLOAD_STORAGE=compressed`): envelopes compressed
//! (crates/store/src/payload.rs) and attempt entries with short keys
//! (crates/domain/src/delivery.rs). Receivers, the feed, the console and erasure see each
//! envelope exactly as it was signed, and the delivery log each attempt in full, whichever form
//! its row is stored in.

use std::collections::HashMap;
use std::time::Duration;

use qualifier_store::payload::unpack;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);
const PHONE: &str = "+447700900555";

/// Each stored envelope of the stack's org, by event id.
async fn stored(s: &Stack) -> HashMap<String, Vec<u8>> {
    s.db.pairs("SELECT event_id::text, payload FROM outbox", &[])
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn compressed_envelopes_reach_receivers_the_feed_the_console_and_erasure_as_signed() {
    let s = Stack::start_tuned(
        |a| a.compress_payloads = Some(true),
        |d| d.compact_storage = Some(true),
    )
    .await;
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": [
        "lead.created", "lead.stage_changed", "lead.erased"
    ], "enabled": true}))
        .await;
    let lead = s.inbound(PHONE).await;
    let id = lead["id"].as_str().unwrap().to_owned();
    s.close_lead(&id, None).await;
    let got = s.receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2);

    // Stored at well under half the size; read back, the very bytes the receiver verified.
    let rows = stored(&s).await;
    for g in &got {
        assert_eq!(g.verified_with, Some(0), "signature verifies");
        let row = &rows[g.json()["id"].as_str().unwrap()];
        assert_eq!(row[0], 0x01, "stored compressed");
        assert!(
            row.len() * 2 < g.body.len(),
            "{} bytes stored for {}",
            row.len(),
            g.body.len()
        );
        assert_eq!(unpack(row).unwrap(), g.body.as_slice());
    }

    // The feed holds each body byte for byte.
    let raw = s.feed_holding(100, got.len()).await;
    for g in &got {
        assert!(raw.contains(std::str::from_utf8(&g.body).unwrap()), "{raw}");
    }

    // The console's delivery page shows the envelope, not the stored bytes.
    let created = got
        .iter()
        .find(|g| g.header("x-qualifier-event") == "lead.created")
        .unwrap();
    let delivery = created.header("x-qualifier-delivery").to_owned();
    let url = format!("{}/console/deliveries/{delivery}", s.public);
    let cookie = s.console_cookie().await;
    let html = qualifier_testkit::text_200(s.http.get(url).header("cookie", cookie)).await;
    assert!(html.contains(PHONE), "the payload's phone is on the page");

    // Its attempt is stored compact and shown in full, with the headers it was sent with.
    let log = attempt_log(&s, &delivery, 1).await;
    assert_eq!(log[0]["n"], 1, "{log}");
    assert!(log[0].get("attempt").is_none(), "{log}");
    let shown = s
        .org_call(Method::GET, &format!("deliveries/{delivery}"), None)
        .await;
    let entry = &shown["delivery"]["attempt_log"][0];
    assert_eq!(entry["attempt"], 1, "{shown}");
    assert_eq!(entry["status_code"], 200, "{shown}");
    let headers = entry["request_headers"].as_array().unwrap();
    assert!(
        headers
            .iter()
            .any(|h| h[0] == "X-Qualifier-Delivery" && h[1] == delivery.as_str()),
        "{shown}"
    );

    // A row stored as it is (by a replica with compression off, or before it existed) is
    // replayed as it is, beside compressed ones.
    let event_id = created.json()["id"].as_str().unwrap().to_owned();
    s.db.client()
        .await
        .execute(
            "UPDATE outbox SET payload = $1 WHERE event_id = $2::text::uuid",
            &[&created.body, &event_id],
        )
        .await
        .unwrap();
    s.wait_status(&delivery, "succeeded", WAIT).await;
    s.org_call(Method::POST, &format!("deliveries/{delivery}/replay"), None)
        .await;
    let again = s.receiver.wait_for(3, WAIT).await;
    assert_eq!(again.len(), 3);
    assert_eq!(again[2].header("x-qualifier-delivery"), delivery);
    assert_eq!(again[2].body, created.body);
    assert_eq!(again[2].verified_with, Some(0));

    // Erasure reads each stored form and leaves reduced envelopes, with the original times.
    assert_eq!(s.erase(&id).await, 204);
    let erased = s.receiver.wait_for(4, WAIT).await;
    assert_eq!(erased.len(), 4);
    assert_eq!(erased[3].header("x-qualifier-event"), "lead.erased");
    assert_eq!(erased[3].verified_with, Some(0));
    let rows = stored(&s).await;
    assert_eq!(rows.len(), 3);
    for g in &got {
        let before = g.json();
        let row = &rows[before["id"].as_str().unwrap()];
        let env = unpack(row).unwrap();
        assert!(
            !String::from_utf8_lossy(&env).contains(&PHONE[1..]),
            "the contact is gone"
        );
        let after: Value = serde_json::from_slice(&env).unwrap();
        assert_eq!(after["erased"], true);
        assert_eq!(after["occurred_at"], before["occurred_at"]);
        assert_eq!(after["data"]["lead"]["id"], id.as_str());
    }
    // Erasure drops each compact attempt's answer and signatures, as it does in the full form.
    let log = attempt_log(&s, &delivery, 2).await;
    assert_eq!(log.as_array().unwrap().len(), 2, "{log}");
    for e in log.as_array().unwrap() {
        assert!(e.get("b").is_none() && e.get("g").is_none(), "{log}");
        assert!(e.get("n").is_some() && e.get("s").is_some(), "{log}");
    }
}

/// A delivery's attempt log as stored.
/// The delivery's stored attempt log, once it holds `at_least` entries (the receiver has the
/// body a moment before the worker records the outcome), or as it is after 10 s.
async fn attempt_log(s: &Stack, delivery: &str, at_least: usize) -> Value {
    let c = s.db.client().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text: String = qualifier_testkit::sql::one(
            &c,
            "SELECT attempt_log::text FROM deliveries WHERE delivery_id = $1::text::uuid",
            &[&delivery],
        )
        .await;
        let log: Value = serde_json::from_str(&text).unwrap();
        if log.as_array().map_or(0, Vec::len) >= at_least || std::time::Instant::now() > deadline {
            return log;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
