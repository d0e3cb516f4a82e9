//! Erasing a contact (docs/api.md, "Erasing a lead"): who may, what it leaves, and what it does
//! to changes and replays racing it.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of};

/// `(type, erased, payload)` of every outbox row about `lead`, oldest first.
async fn rows_of(app: &TestApp, lead: &str) -> Vec<(String, bool, Value)> {
    let c = app.db.client().await;
    c.query(
        "SELECT event_type, erased_at IS NOT NULL, convert_from(payload, 'UTF8')
         FROM outbox WHERE lead_id = $1::text::uuid ORDER BY seq",
        &[&lead],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (
            r.get::<_, String>(0),
            r.get::<_, bool>(1),
            serde_json::from_str(r.get::<_, &str>(2)).unwrap(),
        )
    })
    .collect()
}

/// A session of the test's own, in an open transaction holding the rows of `rows` (a table and
/// the start of a condition, `handoffs WHERE id`) equal to `id`: what the concurrency tests
/// queue work behind. `ROLLBACK` on it lets go.
async fn hold_rows(app: &TestApp, rows: &str, id: &str) -> tokio_postgres::Client {
    let holder = app.db.client().await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .query(
            &format!("SELECT 1 FROM {rows} = $1::text::uuid FOR UPDATE"),
            &[&id],
        )
        .await
        .unwrap();
    holder
}

/// `DELETE` of the lead, sent from a task of its own: its status when it answers.
fn erase_in_background(app: &TestApp, token: &str, lead: &str) -> tokio::task::JoinHandle<u16> {
    let url = format!("{}/api/v1/leads/{lead}", app.public);
    tokio::spawn(qualifier_testkit::status_of(
        reqwest::Client::new().delete(url).bearer_auth(token),
    ))
}

async fn erase(app: &TestApp, token: &str, lead: &str) -> reqwest::Response {
    app.public(
        Method::DELETE,
        &format!("/api/v1/leads/{lead}"),
        token,
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_orgs_own_lead_is_erased_and_only_once() {
    let app = TestApp::spawn().await;
    let (other_org, other) = app.org().await;
    let (org, token, lead) = app.org_with_lead("+447700900555").await;
    let id = lead["id"].as_str().unwrap();

    // Another org's token, another org's path, ids that are not ids: 404, and nothing changes.
    assert_eq!(
        error_of(erase(&app, &other, id).await).await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.internal_error(
            Method::DELETE,
            &format!("/internal/v1/orgs/{other_org}/leads/{id}"),
            None,
        )
        .await,
        (404, "Lead not found".into())
    );
    for bad in [
        "not-a-uuid",
        "00000000-0000-0000-0000-000000000000",
        "%00",
        "..%2F",
    ] {
        assert_eq!(
            error_of(erase(&app, &token, bad).await).await,
            (404, "Lead not found".into()),
            "{bad}"
        );
    }
    let r = reqwest::Client::new()
        .delete(format!("{}/api/v1/leads/{id}", app.public))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = app
        .public(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
        .await;
    assert_eq!(r.status(), 200, "the lead is still there");
    assert_eq!(rows_of(&app, id).await.len(), 1);

    // Its own org: 204 with no body; then it is gone for every call.
    let r = erase(&app, &token, id).await;
    assert_eq!(r.status(), 204);
    assert!(r.bytes().await.unwrap().is_empty());
    assert_eq!(
        error_of(erase(&app, &token, id).await).await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.public_error(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
            .await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.public_error(
            Method::PATCH,
            &format!("/api/v1/leads/{id}"),
            &token,
            Some(json!({"ai_paused": true})),
        )
        .await,
        (404, "Lead not found".into())
    );
    assert_eq!(
        app.internal_error(
            Method::DELETE,
            &format!("/internal/v1/orgs/{org}/leads/{id}"),
            None,
        )
        .await,
        (404, "Lead not found".into())
    );

    // lead.created is now its reduced envelope; lead.erased follows, whole.
    let rows = rows_of(&app, id).await;
    let types: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(types, ["lead.created", "lead.erased"]);
    let reduced = &rows[0].2;
    assert!(rows[0].1);
    let keys: Vec<&String> = reduced.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "type",
            "version",
            "occurred_at",
            "org_id",
            "data",
            "erased"
        ]
    );
    assert_eq!(reduced["data"], json!({"lead": {"id": id}}));
    assert_eq!(reduced["erased"], true);
    assert!(!rows[1].1, "lead.erased is an ordinary event");
    assert_eq!(rows[1].2["type"], "lead.erased");
    assert_eq!(rows[1].2["data"]["lead"], json!({"id": id}));
    assert!(rows[1].2["data"]["erased_at"].is_string());

    // The phone is free: the same contact again is a new lead.
    let again = app.inbound_lead(&org, "+447700900555").await;
    assert_ne!(again["id"], lead["id"]);
    assert_eq!(again["revision"], 1);
}

/// Erasures racing changes of the same lead: each change either committed before (and is
/// erased with the rest) or finds no lead (404); never a 500, never an event left whole.
#[tokio::test(flavor = "multi_thread")]
async fn an_erasure_racing_changes_leaves_nothing_half_erased() {
    let app = TestApp::spawn_with(|c| {
        c.rate_limit_per_minute = 100_000;
        c.db_pool_size = 8;
    })
    .await;
    let (org, token) = app.org().await;
    for round in 0..8 {
        let phone = format!("+4477009006{round:02}");
        let lead = app.inbound_lead(&org, &phone).await;
        let id = lead["id"].as_str().unwrap().to_owned();
        let mut changes = Vec::new();
        for w in 0..4 {
            let (internal, org, id) = (app.internal.clone(), org.clone(), id.clone());
            changes.push(tokio::spawn(async move {
                let http = reqwest::Client::new();
                let mut statuses = Vec::new();
                for i in 0..5 {
                    let r = http
                        .patch(format!("{internal}/internal/v1/orgs/{org}/leads/{id}"))
                        .bearer_auth(crate::helpers::INTERNAL_TOKEN)
                        .json(&json!({"profile": {format!("w{w}"): format!("secret-{i}")}}))
                        .send()
                        .await
                        .unwrap();
                    statuses.push(r.status().as_u16());
                }
                statuses
            }));
        }
        tokio::time::sleep(Duration::from_millis(round * 3)).await;
        let r = erase(&app, &token, &id).await;
        assert_eq!(r.status(), 204);
        for c in changes {
            let statuses = c.await.unwrap();
            // Once one change is refused, every later one is too: the lead is gone.
            let first_404 = statuses.iter().position(|s| *s == 404);
            for (i, s) in statuses.iter().enumerate() {
                match first_404 {
                    Some(f) if i >= f => assert_eq!(*s, 404, "{statuses:?}"),
                    _ => assert_eq!(*s, 200, "{statuses:?}"),
                }
            }
        }
        let rows = rows_of(&app, &id).await;
        assert_eq!(rows.last().unwrap().0, "lead.erased", "erased last");
        for (t, erased, payload) in &rows[..rows.len() - 1] {
            assert!(erased, "{t} left whole");
            assert!(!payload.to_string().contains("secret-"), "{payload}");
        }
    }
}

/// An erasure racing a handoff's accept or release: the handoff's event is erased with the
/// rest or never written, never left holding the lead. Forced, not hoped for: the test holds
/// the handoff's row, the accept (or release) queues behind it, then the erasure queues too,
/// and the test lets go. Before the fix the move took the handoff's row first and read the lead
/// unlocked, so it went on while the erasure, which had already collected the lead's events,
/// waited to delete the handoff: its event kept the whole lead.
#[tokio::test(flavor = "multi_thread")]
async fn an_erasure_racing_a_handoff_move_leaves_no_snapshot() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    for (round, step) in ["accept", "release"].into_iter().enumerate() {
        let lead = app
            .inbound_lead(&org, &format!("+44770090070{round}"))
            .await;
        let id = lead["id"].as_str().unwrap().to_owned();
        let handoff = app.open_handoff(&org, &id).await;
        let path = format!("/internal/v1/orgs/{org}/leads/{id}/handoffs/{handoff}");
        if step == "release" {
            app.internal_expect(
                200,
                Method::POST,
                &format!("{path}/accept"),
                Some(json!({"operator": "agent-7"})),
            )
            .await;
        }
        let holder = hold_rows(&app, "handoffs WHERE id", &handoff).await;
        let moved = {
            let url = format!("{}{path}/{step}", app.internal);
            tokio::spawn(qualifier_testkit::status_of(
                reqwest::Client::new()
                    .post(url)
                    .bearer_auth(crate::helpers::INTERNAL_TOKEN)
                    .json(&json!({"operator": "agent-7"})),
            ))
        };
        app.until_waiting_on_locks(1).await;
        let erased = erase_in_background(&app, &token, &id);
        app.until_waiting_on_locks(2).await;
        holder.batch_execute("ROLLBACK").await.unwrap();
        let (moved, erased) = (moved.await.unwrap(), erased.await.unwrap());
        assert_eq!(erased, 204, "{step}");
        assert!(moved == 200 || moved == 404, "{step}: {moved}");
        let rows = rows_of(&app, &id).await;
        assert_eq!(rows.last().unwrap().0, "lead.erased", "{step}: erased last");
        for (t, erased, payload) in &rows[..rows.len() - 1] {
            assert!(erased, "{step}: {t} left whole: {payload}");
            let text = payload.to_string();
            assert!(
                !text.contains("Ada") && !text.contains("+4477009007"),
                "{text}"
            );
        }
    }
}

/// A replay waiting for its slot when the lead is erased is not sent; a replay asked for after
/// is refused, and a bulk replay neither counts nor sends erased events.
#[tokio::test(flavor = "multi_thread")]
async fn an_erased_event_is_never_replayed() {
    let app = TestApp::spawn_with(|c| c.replay_rate_per_second = 1).await;
    let (org, token, lead) = app.org_with_lead("+447700900556").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    let c = app.db.client().await;
    // The relay publishes it (no worker here), then it ends dead as if every attempt failed.
    app.db
        .wait_for_value(
            "never relayed",
            Duration::from_secs(10),
            "SELECT count(*) FROM deliveries d WHERE d.lead_id = $1::text::uuid
                AND (d.due_at IS NOT NULL OR EXISTS (SELECT 1 FROM deliveries_unsent u
                                WHERE u.seq = d.seq AND u.endpoint_id = d.endpoint_id))",
            &[&id],
            0i64,
        )
        .await;
    let delivery: String = qualifier_testkit::sql::one(
        &c,
        "UPDATE deliveries SET state = 'dead', attempts = 5, updated_at = clock_timestamp()
         WHERE lead_id = $1::text::uuid
         RETURNING delivery_id::text",
        &[&id],
    )
    .await;
    // Two replays: the second waits a second for its slot; the first is taken by the relay.
    let replay = format!("/internal/v1/orgs/{org}/deliveries/{delivery}/replay");
    let dead = format!("/internal/v1/orgs/{org}/deliveries/replay");
    let dry = json!({"status": ["dead", "skipped"], "dry_run": true});
    let r = app.internal(Method::POST, &dead, Some(dry.clone())).await;
    assert_eq!(r.json::<Value>().await.unwrap()["matched"], 1);
    let r = app.internal(Method::POST, &replay, None).await;
    assert!(r.status().is_success(), "{}", r.status());

    assert_eq!(erase(&app, &token, &id).await.status(), 204);
    let row = c
        .query_one(
            "SELECT state::text, due_at IS NULL, erased, last_error
             FROM deliveries WHERE delivery_id = $1::text::uuid",
            &[&delivery],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "skipped");
    assert!(
        row.get::<_, bool>(1),
        "the replay's slot is given up: nothing left for the relay"
    );
    assert!(row.get::<_, bool>(2));
    assert_eq!(row.get::<_, Option<String>>(3).as_deref(), Some("erased"));

    assert_eq!(
        app.internal_error(Method::POST, &replay, None).await,
        (409, "Event erased".into())
    );
    let r = app.internal(Method::POST, &dead, Some(dry)).await;
    assert_eq!(r.json::<Value>().await.unwrap()["matched"], 0);
    // Whoever writes the event's row later cannot put a receiver's answer back in it: the
    // database keeps it erased.
    c.execute(
        "UPDATE outbox SET attempt_log = '[{\"response_body\": \"x\"}]'
         WHERE lead_id = $1::text::uuid",
        &[&id],
    )
    .await
    .unwrap();
    let log: String = qualifier_testkit::sql::one(
        &c,
        "SELECT attempt_log::text FROM outbox WHERE lead_id = $1::text::uuid
                AND event_type = 'lead.created'",
        &[&id],
    )
    .await;
    assert_eq!(log, "[{}]");
    let d = app
        .internal(
            Method::GET,
            &format!("/internal/v1/orgs/{org}/deliveries/{delivery}"),
            None,
        )
        .await;
    assert_eq!(d.json::<Value>().await.unwrap()["delivery"]["erased"], true);
}

/// The kept Idempotency-Key answers of the org (key, whether it holds an answer).
async fn kept_keys(app: &TestApp, org: &str) -> Vec<(String, bool)> {
    app.db
        .pairs(
            "SELECT key, response_body IS NOT NULL FROM idempotency_keys
             WHERE org_id = $1::text::uuid ORDER BY key",
            &[&org],
        )
        .await
}

/// A write's answer is kept after the write committed, in a statement of its own; an erasure
/// can commit in between. Forced in that order here, for a PATCH (the key names its lead from
/// the claim on) and for a create (the answer's Location names the lead): the answer, which
/// holds the whole lead, is not kept, and the key is given up. Before, the erasure saw the key
/// with no answer yet and left it, and the answer was kept and replayed for a day.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_kept_after_the_erasure_is_not_kept() {
    use qualifier_store::idempotency::{Claim, Kept};
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let org_id = uuid::Uuid::parse_str(&org).unwrap();
    let store = app.store();
    for (key, patch) in [("race-patch", true), ("race-create", false)] {
        let lead = app
            .inbound_lead(
                &org,
                if patch {
                    "+447700900801"
                } else {
                    "+447700900802"
                },
            )
            .await;
        let id = lead["id"].as_str().unwrap();
        let lead_id = uuid::Uuid::parse_str(id).unwrap();
        let claimed = store
            .idempotency_claim(org_id, key, b"fingerprint", patch.then_some(lead_id))
            .await
            .unwrap();
        assert_eq!(claimed, Claim::Claimed);
        assert_eq!(erase(&app, &token, id).await.status(), 204);
        let kept = Kept {
            status: if patch { 200 } else { 201 },
            body: serde_json::to_vec(&json!({ "lead": lead })).unwrap(),
            location: (!patch).then(|| format!("/api/v1/leads/{id}")),
        };
        store
            .idempotency_keep(org_id, key, &kept, Some(lead_id))
            .await
            .unwrap();
        assert!(
            !kept_keys(&app, &org).await.iter().any(|(k, _)| k == key),
            "{key}: the answer about the erased lead was kept"
        );
    }
    // An answer about a lead still there is kept as before.
    let lead = app.inbound_lead(&org, "+447700900803").await;
    let r = app
        .http
        .patch(format!(
            "{}/api/v1/leads/{}",
            app.public,
            lead["id"].as_str().unwrap()
        ))
        .bearer_auth(&token)
        .header("Idempotency-Key", "kept-as-before")
        .json(&json!({"status": "closed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        kept_keys(&app, &org).await,
        [("kept-as-before".to_owned(), true)]
    );
}

/// A message from a known contact racing its erasure: the contact is new again once the
/// erasure commits, so the message creates a lead (201) rather than answering 404. Forced: the
/// test holds one of the lead's outbox rows, so the erasure waits there with the lead locked;
/// the message then finds the phone taken and waits for the lead; the test lets go.
#[tokio::test(flavor = "multi_thread")]
async fn an_inbound_message_racing_the_erasure_creates_the_contact_anew() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let phone = "+447700900811";
    let lead = app.inbound_lead(&org, phone).await;
    let id = lead["id"].as_str().unwrap().to_owned();
    // The relay marks the row published; hold it only once that is done, so that the only
    // sessions waiting are the erasure and the message.
    app.db
        .wait_for_value(
            "never published",
            Duration::from_secs(20),
            "SELECT count(*) FROM deliveries d
             WHERE d.lead_id = $1::text::uuid AND d.due_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM deliveries_unsent u
                                WHERE u.seq = d.seq AND u.endpoint_id = d.endpoint_id)",
            &[&id],
            1i64,
        )
        .await;
    let holder = hold_rows(&app, "outbox WHERE lead_id", &id).await;
    let erased = erase_in_background(&app, &token, &id);
    app.until_waiting_on_locks(1).await;
    let inbound = {
        let url = format!("{}/internal/v1/orgs/{org}/inbound", app.internal);
        tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(url)
                .bearer_auth(crate::helpers::INTERNAL_TOKEN)
                .json(&json!({"name": "Ada Again", "phone": phone, "channel": "sms"}))
                .send()
                .await
                .unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        })
    };
    app.until_waiting_on_locks(2).await;
    holder.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(erased.await.unwrap(), 204);
    let (status, body) = inbound.await.unwrap();
    assert_eq!(status, 201, "{body}");
    assert_ne!(body["lead"]["id"].as_str(), Some(id.as_str()), "a new lead");
    assert_eq!(body["lead"]["phone"], phone);
}

/// Whether every outbox row about `lead` has been handed to the broker.
async fn all_published(app: &TestApp, lead: &str) -> bool {
    let c = app.db.client().await;
    qualifier_testkit::sql::one(
        &c,
        "SELECT count(*) > 0 AND bool_and(d.due_at IS NULL AND NOT EXISTS (SELECT 1 FROM deliveries_unsent u
                                WHERE u.seq = d.seq AND u.endpoint_id = d.endpoint_id))
         FROM deliveries d WHERE d.lead_id = $1::text::uuid",
        &[&lead],
    )
    .await
}

/// An erasure holds its lead's unpublished events until it commits; the relay, which every
/// org's events go through, passes them by instead of waiting. Forced: the test holds the feed
/// so that org A's new event stays unpublished, then holds that event's row in the relay's
/// queue as an erasure does (it deletes it), and only then lets the relay go. Before the fix
/// the relay's claim waited on the held row, and org B's event was not published until the
/// holder let go.
#[tokio::test(flavor = "multi_thread")]
async fn events_held_by_an_erasure_do_not_hold_back_other_orgs() {
    let app = TestApp::spawn().await;
    let (org_a, _) = app.org().await;
    let (org_b, _) = app.org().await;
    let feed = app.db.client().await;
    feed.batch_execute("BEGIN; SELECT 1 FROM feed_head FOR UPDATE")
        .await
        .unwrap();
    let held = app.inbound_lead(&org_a, "+447700900801").await;
    let held = held["id"].as_str().unwrap().to_owned();
    let rows = app.db.client().await;
    rows.batch_execute("BEGIN").await.unwrap();
    let queued = rows
        .execute(
            "DELETE FROM deliveries_unsent u USING outbox o
             WHERE o.seq = u.seq AND o.lead_id = $1::text::uuid",
            &[&held],
        )
        .await
        .unwrap();
    assert_eq!(queued, 1);
    feed.batch_execute("ROLLBACK").await.unwrap();

    let other = app.inbound_lead(&org_b, "+447700900802").await;
    let other = other["id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !all_published(&app, &other).await {
        assert!(
            std::time::Instant::now() < deadline,
            "org B's event waited for org A's held rows"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!all_published(&app, &held).await, "held rows were skipped");

    rows.batch_execute("ROLLBACK").await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !all_published(&app, &held).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the rows let go are published"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
