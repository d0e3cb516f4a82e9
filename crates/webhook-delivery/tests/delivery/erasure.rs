//! Erasing a contact end to end (docs/api.md, "Erasing a lead"): after the erasure, nothing the
//! database holds names the contact, whatever its events went through (retries against a
//! receiver that echoed it, a replay, an idempotent write-back), the CRM is told, and a delivery
//! still retrying is never sent again.

use std::time::Duration;

use qualifier_testkit::receiver::Behaviour;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

const NAME: &str = "Zelda Forgetme";
const EMAIL: &str = "zelda.forgetme@example.com";
const PHONE: &str = "+447700900987";
const BUDGET: &str = "budget-731k-forgetme";
const AREA: &str = "Forgetmeville";
const LATER_AREA: &str = "Forgetmeshire";
const EXT_ID: &str = "crm-forgetme-4242";
const EXT_URL: &str = "https://crm.example/contacts/forgetme-4242";

/// Where `needle` appears in the dump: as text (text and jsonb columns) or as the hex of its
/// bytes (how pg_dump writes bytea, such as the stored envelopes).
fn traces(dump: &str, needle: &str) -> Vec<String> {
    let hex: String = needle.bytes().map(|b| format!("{b:02x}")).collect();
    dump.lines()
        .filter(|l| l.contains(needle) || l.contains(&hex))
        .map(|l| l.chars().take(160).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_erased_contact_is_nowhere_in_the_database_and_the_crm_is_told() {
    let s = Stack::start().await;
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": [
        "lead.created", "lead.updated", "lead.stage_changed", "lead.qualified", "lead.erased"
    ], "enabled": true}))
        .await;
    // The receiver refuses everything, echoing the contact back in its error, as many do.
    let echo = format!("{{\"error\":\"cannot store {NAME} <{EMAIL}> {PHONE}\"}}");
    s.receiver
        .set_answer_body(Some((echo.into_bytes(), "application/json")));
    s.receiver.set_behaviour(Behaviour::Status(500));

    let org = s.org.clone();
    let lead = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/inbound"),
            Some(
                json!({"name": NAME, "phone": PHONE, "email": EMAIL, "channel": "whatsapp",
                        "profile": {"budget": BUDGET, "area": AREA}}),
            ),
        )
        .await["lead"]
        .clone();
    let id = lead["id"].as_str().unwrap().to_owned();
    // The CRM writes back its reference, with an Idempotency-Key (its answer is kept).
    let r = s
        .http
        .patch(format!("{}/api/v1/leads/{id}", s.public))
        .bearer_auth(&s.token)
        .header("Idempotency-Key", "write-back-forgetme")
        .json(&json!({"external_ref": {"system": "hubspot", "id": EXT_ID, "url": EXT_URL}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The agent qualifies it: lead.stage_changed and lead.qualified.
    let lead_path = format!("/internal/v1/orgs/{org}/leads/{id}");
    s.call(
        Method::PATCH,
        &lead_path,
        Some(json!({"qualification_stage": "qualified"})),
    )
    .await;
    // Every delivery so far fails five times and ends dead; one of them is replayed and
    // fails five times more.
    let deliveries = s.deliveries().await;
    assert_eq!(deliveries.len(), 3);
    for d in &deliveries {
        s.wait_status(d["id"].as_str().unwrap(), "dead", WAIT).await;
    }
    let replayed = deliveries[0]["id"].as_str().unwrap().to_owned();
    let replay = format!("/internal/v1/orgs/{org}/deliveries/{replayed}/replay");
    s.call(Method::POST, &replay, None).await;
    let deadline = std::time::Instant::now() + WAIT;
    while s.delivery_in(&org, &replayed).await["attempts"] != 10
        || s.delivery_in(&org, &replayed).await["status"] != "dead"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the replay never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // One more change, whose first attempt is told to come back in 3 s: still retrying when
    // the contact is erased.
    s.receiver.set_behaviour(Behaviour::RetryAfter(503, 3));
    s.call(
        Method::PATCH,
        &lead_path,
        Some(json!({"profile": {"area": LATER_AREA}})),
    )
    .await;
    let retrying = loop {
        let all = s.deliveries().await;
        if let Some(d) = all.iter().find(|d| d["event_type"] == "lead.updated")
            && d["status"] == "failed"
        {
            break d["id"].as_str().unwrap().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no retrying delivery");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let sent_before = s.receiver.attempts_of(&retrying);
    assert_eq!(sent_before, 1);
    // Everything the contact went through is in the database now.
    let before = s.db.data_dump();
    for needle in [
        NAME, EMAIL, PHONE, BUDGET, AREA, LATER_AREA, EXT_ID, EXT_URL,
    ] {
        assert!(!traces(&before, needle).is_empty(), "{needle} was stored");
    }

    // The CRM answers again; the contact is erased.
    s.receiver.set_answer_body(None);
    s.receiver.set_behaviour(Behaviour::Ok);
    assert_eq!(s.erase(&id).await, 204);

    // lead.erased arrives, signed, with the lead's id and when.
    let deadline = std::time::Instant::now() + WAIT;
    let erased = loop {
        if let Some(r) = s
            .receiver
            .received()
            .into_iter()
            .find(|r| r.header("x-qualifier-event") == "lead.erased")
        {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "lead.erased never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        erased.verified_with,
        Some(0),
        "signed with the org's secret"
    );
    let body = erased.json();
    assert_eq!(body["data"]["lead"], json!({"id": id}));
    assert!(body["data"]["erased_at"].is_string());

    // The retrying delivery: never sent again (its retry was due 3 s after its attempt),
    // and over.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let sent_after = s.receiver.attempts_of(&retrying);
    assert_eq!(sent_after, 1, "an erased event is never sent again");
    let d = s.delivery_in(&org, &retrying).await;
    assert_eq!(
        (d["status"].clone(), d["erased"].clone()),
        (json!("skipped"), json!(true))
    );

    // Nothing in the database names the contact any more.
    let after = s.db.data_dump();
    for needle in [
        NAME, EMAIL, PHONE, BUDGET, AREA, LATER_AREA, EXT_ID, EXT_URL,
    ] {
        let found = traces(&after, needle);
        assert!(found.is_empty(), "{needle} is still stored: {found:#?}");
    }
    // Delivery metadata stays (attempts, status codes); a delivery that had not succeeded,
    // dead included, ends skipped.
    let d = s.delivery_in(&org, &replayed).await;
    assert_eq!(
        (
            d["status"].clone(),
            d["attempts"].clone(),
            d["last_error"].clone()
        ),
        (json!("skipped"), json!(10), json!("erased"))
    );
    let detail = s
        .call(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/deliveries/{replayed}"),
            None,
        )
        .await;
    let log = detail["delivery"]["attempt_log"].as_array().unwrap();
    assert_eq!(log.len(), 10);
    for a in log {
        assert_eq!(a["status_code"], 500);
        assert!(a.get("response_body").is_none() && a.get("request_headers").is_none());
    }

    // GET and a second DELETE: 404. A replay: 409.
    for method in [Method::GET, Method::DELETE] {
        let r = s
            .http
            .request(method, format!("{}/api/v1/leads/{id}", s.public))
            .bearer_auth(&s.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    let r = s.request(Method::POST, &replay, None).await;
    assert_eq!(r.status(), 409);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "Event erased");

    // The feed: the reduced envelopes, then lead.erased.
    let feed: Value = serde_json::from_str(&s.feed_holding(100, 5).await).unwrap();
    let events = feed["events"].as_array().unwrap();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "lead.created",
            "lead.stage_changed",
            "lead.qualified",
            "lead.updated",
            "lead.erased"
        ]
    );
    for e in &events[..4] {
        assert_eq!(e["erased"], true);
        assert_eq!(e["data"], json!({"lead": {"id": id}}));
    }

    // The phone is free: the same contact again is a new lead, with lead.created.
    let again = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/inbound"),
            Some(json!({"name": NAME, "phone": PHONE, "channel": "whatsapp"})),
        )
        .await["lead"]
        .clone();
    assert_ne!(again["id"], json!(id));
}

/// An attempt that is out when the erasure commits: its outcome is recorded on the erased row
/// without the receiver's answer (in either storage form: the compact form keeps it under `b`),
/// and the delivery ends there; no retry carries the event as it was sent. Forced: the receiver
/// holds the request until the erasure has answered. Retries wait 60 s here, so a retry that
/// was published would still be in its queue when the test looks.
#[tokio::test(flavor = "multi_thread")]
async fn an_attempt_out_during_the_erasure_keeps_nothing_and_is_not_retried() {
    for compact in [true, false] {
        let mut s = Stack::start_with_retry_delays(
            vec![60_000; 4],
            |a| a.compress_payloads = Some(compact),
            |d| d.compact_storage = Some(compact),
        )
        .await;
        let echo = format!("{{\"error\":\"cannot store {NAME} <{EMAIL}>\"}}");
        s.receiver
            .set_answer_body(Some((echo.into_bytes(), "application/json")));
        s.receiver.set_behaviour(Behaviour::Status(500));
        s.receiver.hold();
        let org = s.org.clone();
        let lead = s
            .call(
                Method::POST,
                &format!("/internal/v1/orgs/{org}/inbound"),
                Some(json!({"name": NAME, "phone": PHONE, "email": EMAIL, "channel": "whatsapp"})),
            )
            .await["lead"]
            .clone();
        let id = lead["id"].as_str().unwrap().to_owned();
        assert_eq!(
            s.receiver.wait_for(1, WAIT).await.len(),
            1,
            "the attempt is out"
        );
        assert_eq!(s.erase(&id).await, 204);
        s.receiver.let_go();
        // The outcome is written before anything is published on; stopping the worker waits
        // for its attempts in flight, so whatever it would publish is published by then.
        let c = s.db.client().await;
        s.db.wait_for_value(
            "no outcome recorded",
            WAIT,
            "SELECT d.attempts FROM outbox o
               JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
             WHERE o.lead_id = $1::text::uuid AND o.event_type = 'lead.created'",
            &[&id],
            1i32,
        )
        .await;
        s.stop_delivery().await;
        let row = c
            .query_one(
                "SELECT d.state::text, d.attempt_log::text FROM outbox o
                   JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
                 WHERE o.lead_id = $1::text::uuid AND o.event_type = 'lead.created'",
                &[&id],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "skipped", "compact {compact}");
        let log: Value = serde_json::from_str(row.get::<_, &str>(1)).unwrap();
        let entries = log.as_array().unwrap();
        assert_eq!(entries.len(), 1, "{log}");
        for key in ["b", "g", "response_body", "request_headers", "signatures"] {
            assert!(
                entries[0].get(key).is_none(),
                "compact {compact}: {key} kept: {log}"
            );
        }
        assert!(!log.to_string().contains(NAME), "{log}");
        let retry = s.topo.topology().retry_queue(0);
        assert_eq!(
            s.queue_depth(&retry).await,
            0,
            "compact {compact}: a retry of the erased event was queued"
        );
    }
}

/// Whether the delivery of `lead`'s `lead.created` waits in its row for a later attempt.
async fn scheduled(s: &Stack, lead: &str) -> bool {
    qualifier_testkit::sql::one(
        &s.db.client().await,
        "SELECT coalesce(d.due_at > clock_timestamp(), false) AND d.attempts = 1
             FROM outbox o JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
             WHERE o.lead_id = $1::text::uuid AND o.event_type = 'lead.created'",
        &[&lead],
    )
    .await
}

/// A retry waits in its delivery's row, where an erasure reaches it, never as a copy of the
/// body in a broker queue (which keeps a message until it is consumed, and from which no one
/// can take one message out). Two leads' first attempts fail and their retries are a minute
/// away: no queue holds a message; one lead is erased, and its delivery ends there; the
/// other's retry, brought forward, arrives with the very bytes of its first attempt. Before
/// the fix the retry was a message in the retry queue carrying the whole envelope, kept there
/// for the retry's wait whatever the erasure did.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_retry_is_kept_only_in_its_row() {
    let s = Stack::start_with_retry_delays(vec![60_000; 4], |_| {}, |_| {}).await;
    s.receiver
        .script(vec![Behaviour::Status(500), Behaviour::Status(500)]);
    let erased = s.inbound(PHONE).await["id"].as_str().unwrap().to_owned();
    let kept = s.inbound("+447700900988").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = s.receiver.wait_for(2, WAIT).await;
    assert_eq!(first.len(), 2, "both first attempts were made");
    let deadline = std::time::Instant::now() + WAIT;
    while !(scheduled(&s, &erased).await && scheduled(&s, &kept).await) {
        assert!(
            std::time::Instant::now() < deadline,
            "retries not scheduled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let topology = s.topo.topology();
    let mut queues = vec![topology.work_queue(), topology.bundle_queue()];
    queues.extend((0..4).map(|i| topology.retry_queue(i)));
    queues.extend((0..qualifier_bus::PARK_TIERS_MS.len()).map(|t| topology.parked_queue(t)));
    for q in &queues {
        assert_eq!(s.queue_depth(q).await, 0, "{q} holds a message");
    }

    assert_eq!(s.erase(&erased).await, 204);
    assert!(
        !scheduled(&s, &erased).await,
        "the erased delivery still waits"
    );
    // Every waiting delivery of the org due now: only the kept lead's is left to send.
    let c = s.db.client().await;
    c.batch_execute(&format!(
        "UPDATE deliveries SET due_at = clock_timestamp()
         WHERE org_id = '{}' AND due_at > '-infinity';
         SELECT pg_notify('qualifier_outbox', '')",
        s.org
    ))
    .await
    .unwrap();
    let all = s.receiver.wait_for(3, WAIT).await;
    assert_eq!(all.len(), 3, "the kept lead's retry arrived");
    let retry = &all[2];
    let original = first
        .iter()
        .find(|r| r.header("X-Qualifier-Delivery") == retry.header("X-Qualifier-Delivery"))
        .expect("the retry is one of the first two deliveries");
    assert_eq!(retry.body, original.body, "the retry sends the same bytes");
    assert!(retry.verified_with.is_some(), "signed");
    assert!(
        String::from_utf8_lossy(&retry.body).contains(&kept),
        "the retry is the kept lead's"
    );
    s.wait_status_in(
        &s.org,
        original.header("X-Qualifier-Delivery"),
        "succeeded",
        WAIT,
    )
    .await;
    assert_eq!(
        s.receiver.received().len(),
        3,
        "the erased lead's was never sent again"
    );
}
