//! Every event rule: which changes write which outbox rows, with which envelope bytes.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of};

fn assert_envelope(env: &Value, bytes: &[u8], event_type: &str, org: &str) {
    assert!(
        bytes.starts_with(b"{\"id\":\""),
        "envelope field order starts with id"
    );
    let keys: Vec<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["data", "id", "occurred_at", "org_id", "type", "version"]
    );
    assert_eq!(env["type"], event_type);
    assert_eq!(env["version"], "1");
    assert_eq!(env["org_id"], org);
    assert_eq!(env["occurred_at"].as_str().unwrap().len(), 24);
    uuid_of(&env["id"]);
}

fn uuid_of(v: &Value) {
    assert!(uuid::Uuid::parse_str(v.as_str().unwrap()).is_ok(), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn inbound_creates_with_lead_created_and_updates_with_lead_updated() {
    let app = TestApp::spawn().await;
    let (org, _, lead) = app.org_with_lead("+447700900123").await;
    let rows = app.outbox().await;
    assert_eq!(rows.len(), 1);
    let (t, env, bytes) = &rows[0];
    assert_eq!(t, "lead.created");
    assert_envelope(env, bytes, "lead.created", &org);
    assert_eq!(
        env["data"],
        json!({"lead": lead}),
        "data holds exactly the snapshot"
    );
    assert_eq!(env["occurred_at"], lead["created_at"]);

    // The same contact again with nothing new: 200, no event.
    let same = json!({"name": "Ada Lovelace", "phone": "+447700900123", "email": "ada@example.com", "channel": "whatsapp"});
    app.internal_expect(
        200,
        Method::POST,
        &format!("/internal/v1/orgs/{org}/inbound"),
        Some(same),
    )
    .await;
    assert_eq!(app.outbox().await.len(), 1);

    // A profile detail arrives: lead.updated with the merged profile.
    let more = json!({"name": "Ada Lovelace", "phone": "+447700900123", "channel": "whatsapp", "profile": {"area": "Soho", "bedrooms": null}});
    let updated = app
        .internal_json(
            200,
            Method::POST,
            &format!("/internal/v1/orgs/{org}/inbound"),
            Some(more),
        )
        .await["lead"]
        .clone();
    assert_eq!(
        updated["profile"],
        json!({"budget": "500k", "area": "Soho"})
    );
    assert_eq!(updated["id"], lead["id"]);
    let rows = app.outbox().await;
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["lead.created", "lead.updated"]
    );
    // What changed: the added key as null, the removed one with its value (contract: previous
    // values of the changed profile keys only); revision 2 after the creation's 1.
    assert_eq!(
        rows[1].1["data"],
        json!({"previous": {"profile": {"area": null, "bedrooms": 2}}, "lead": updated})
    );
    assert_eq!(lead["revision"], 1);
    assert_eq!(updated["revision"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_emits_stage_changed_once_and_write_back_emits_nothing() {
    let app = TestApp::spawn().await;
    let (org, token, lead) = app.org_with_lead("+447700900123").await;
    let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());

    for body in [
        json!({"external_ref": {"system": "hubspot", "id": "9001"}}),
        json!({"ai_paused": true}),
        json!({"ai_paused": false}),
    ] {
        assert_eq!(
            app.public(Method::PATCH, &path, &token, Some(body))
                .await
                .status(),
            200
        );
    }
    assert_eq!(app.outbox_types().await, ["lead.created"]);

    let r = app
        .public(
            Method::PATCH,
            &path,
            &token,
            Some(json!({"status": "closed"})),
        )
        .await;
    let closed = r.json::<Value>().await.unwrap()["lead"].clone();
    assert_eq!(closed["qualification_stage"], "closed");
    app.public_expect(
        200,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"status": "closed"})),
    )
    .await;
    let rows = app.outbox().await;
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["lead.created", "lead.stage_changed"]
    );
    let (_, env, bytes) = &rows[1];
    assert_envelope(env, bytes, "lead.stage_changed", &org);
    // Three write-backs and the close, each a revision; the repeated close none.
    assert_eq!(closed["revision"], 5);
    assert_eq!(
        env["data"],
        json!({
            "previous_stage": "qualifying",
            "previous": {"qualification_stage": "qualifying"},
            "lead": closed
        })
    );
    assert_eq!(
        env["data"]["lead"]["external_ref"],
        json!({"system": "hubspot", "id": "9001", "url": null})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_updates_emit_updated_stage_changed_and_qualified() {
    let app = TestApp::spawn().await;
    let (org, _, lead) = app.org_with_lead("+447700900123").await;
    let path = format!(
        "/internal/v1/orgs/{org}/leads/{}",
        lead["id"].as_str().unwrap()
    );

    let r = app
        .internal(
            Method::PATCH,
            &path,
            Some(json!({"route_target": "hotLead"})),
        )
        .await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["lead"]["route_target"],
        "hotLead"
    );
    assert_eq!(
        app.outbox_types().await,
        ["lead.created"],
        "route_target alone emits nothing"
    );

    let q = app
        .internal_json(
            200,
            Method::PATCH,
            &path,
            Some(json!({"qualification_stage": "qualified", "profile": {"bedrooms": 3}})),
        )
        .await["lead"]
        .clone();
    let rows = app.outbox().await;
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        [
            "lead.created",
            "lead.updated",
            "lead.stage_changed",
            "lead.qualified"
        ]
    );
    // One change, three events: each names everything the change altered.
    let previous = json!({"qualification_stage": "qualifying", "profile": {"bedrooms": 2}});
    assert_eq!(q["revision"], 3, "created, route_target, this change");
    assert_eq!(rows[1].1["data"], json!({"previous": previous, "lead": q}));
    assert_eq!(
        rows[2].1["data"],
        json!({"previous_stage": "qualifying", "previous": previous, "lead": q})
    );
    assert_eq!(
        rows[3].1["data"],
        json!({"previous_stage": "qualifying", "previous": previous, "lead": q})
    );
    let ids: std::collections::HashSet<_> = rows.iter().map(|r| r.1["id"].clone()).collect();
    assert_eq!(ids.len(), 4, "each event has its own id");

    // Any direction: back to qualifying emits stage_changed only; the same stage emits nothing.
    app.internal(
        Method::PATCH,
        &path,
        Some(json!({"qualification_stage": "qualifying"})),
    )
    .await;
    app.internal(
        Method::PATCH,
        &path,
        Some(json!({"qualification_stage": "qualifying"})),
    )
    .await;
    let rows = app.outbox().await;
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[4].0, "lead.stage_changed");
    assert_eq!(rows[4].1["data"]["previous_stage"], "qualified");
    // Earlier snapshots are what the lead was then, not what it is now.
    assert_eq!(
        rows[3].1["data"]["lead"]["qualification_stage"],
        "qualified"
    );

    assert_eq!(
        app.internal_error(
            Method::PATCH,
            &path,
            Some(json!({"qualification_stage": "won"})),
        )
        .await,
        (
            422,
            "qualification_stage must be one of qualifying, qualified, closed".into()
        )
    );
    let r = app.internal(Method::PATCH, &path, Some(json!({}))).await;
    assert_eq!(error_of(r).await.0, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn handoff_state_machine_and_its_events() {
    let app = TestApp::spawn().await;
    let (org, _, lead) = app.org_with_lead("+447700900123").await;
    let base = format!(
        "/internal/v1/orgs/{org}/leads/{}/handoffs",
        lead["id"].as_str().unwrap()
    );

    let h = app
        .internal_json(
            201,
            Method::POST,
            &base,
            Some(json!({"reason": "asks for a human"})),
        )
        .await["handoff"]
        .clone();
    assert_eq!(h["state"], "requested");
    assert_eq!(h["accepted_at"], Value::Null);
    let hid = h["id"].as_str().unwrap().to_owned();

    assert_eq!(
        app.internal_error(Method::POST, &base, Some(json!({})))
            .await,
        (409, "Handoff already open".into())
    );
    assert_eq!(
        app.internal_error(Method::POST, &format!("{base}/{hid}/release"), None)
            .await,
        (
            409,
            "Handoff cannot be released from state requested".into()
        )
    );

    let accepted = app
        .internal_json(
            200,
            Method::POST,
            &format!("{base}/{hid}/accept"),
            Some(json!({"operator": "op-7"})),
        )
        .await["handoff"]
        .clone();
    assert_eq!(accepted["state"], "accepted");
    assert_eq!(accepted["operator"], "op-7");
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("{base}/{hid}/accept"),
            Some(json!({"operator": "op-8"})),
        )
        .await,
        (409, "Handoff cannot be accepted from state accepted".into())
    );
    assert_eq!(
        app.internal_error(Method::POST, &base, None).await,
        (409, "Handoff already open".into())
    );

    let r = app
        .internal(Method::POST, &format!("{base}/{hid}/release"), None)
        .await;
    let released = r.json::<Value>().await.unwrap()["handoff"].clone();
    assert_eq!(released["state"], "released");
    assert!(released["released_at"].is_string());
    let r = app
        .internal(Method::POST, &format!("{base}/{hid}/release"), None)
        .await;
    assert_eq!(error_of(r).await.0, 409);
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("{base}/{}/accept", uuid::Uuid::new_v4()),
            Some(json!({"operator": "x"})),
        )
        .await,
        (404, "Handoff not found".into())
    );

    // After release a new handoff may open.
    assert_eq!(app.internal(Method::POST, &base, None).await.status(), 201);

    let rows = app.outbox().await;
    let types: Vec<_> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        types,
        [
            "lead.created",
            "handoff.created",
            "handoff.accepted",
            "handoff.released",
            "handoff.created"
        ]
    );
    assert_eq!(rows[1].1["data"], json!({"lead": lead, "handoff": h}));
    assert_eq!(rows[2].1["data"]["handoff"], accepted);
    assert_eq!(rows[3].1["data"]["handoff"], released);
    assert_envelope(&rows[3].1, &rows[3].2, "handoff.released", &org);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_change_writes_no_event() {
    let app = TestApp::spawn().await;
    let (org, _, a) = app.org_with_lead("+447700900123").await;
    app.inbound_lead(&org, "+447700900999").await;
    let path = format!(
        "/internal/v1/orgs/{org}/leads/{}",
        a["id"].as_str().unwrap()
    );
    // Taking another lead's phone fails inside the transaction: no change, no event.
    assert_eq!(
        app.internal_error(
            Method::PATCH,
            &path,
            Some(json!({"phone": "+447700900999", "qualification_stage": "qualified"})),
        )
        .await,
        (409, "Lead already exists".into())
    );
    assert_eq!(app.outbox_types().await, ["lead.created", "lead.created"]);
    let stage = app
        .db
        .client()
        .await
        .query_one(
            "SELECT qualification_stage FROM leads WHERE phone = '+447700900123'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(stage.get::<_, String>(0), "qualifying");
}

/// Changes are written by compare-and-set on the row version, then a locked transaction when
/// contended (docs/performance.md). Sixteen writers change one lead at once: each adds
/// a profile key (a lost update would drop keys) and each emits exactly one `lead.updated`
/// whose snapshot holds its own key; then eight clients close it at once and exactly one
/// `lead.stage_changed` is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_changes_of_one_lead_lose_nothing_and_emit_once_each() {
    let app = std::sync::Arc::new(TestApp::spawn().await);
    let (org, token, lead) = app.org_with_lead("+447700900777").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let (app, org, id) = (app.clone(), org.clone(), id.clone());
            tokio::spawn(async move {
                app.internal(
                    Method::PATCH,
                    &format!("/internal/v1/orgs/{org}/leads/{id}"),
                    Some(json!({"profile": {format!("k{i}"): i}})),
                )
                .await
                .status()
                .as_u16()
            })
        })
        .collect();
    for w in writers {
        assert_eq!(w.await.unwrap(), 200);
    }
    let rows = app.outbox().await;
    let updates: Vec<&Value> = rows
        .iter()
        .filter(|r| r.0 == "lead.updated")
        .map(|r| &r.1)
        .collect();
    assert_eq!(updates.len(), 16, "one event per change");
    // Each change's own snapshot holds its key, and the snapshots grow one key at a time: the
    // writes were serialised, none overwrote another.
    let mut sizes: Vec<usize> = updates
        .iter()
        .map(|e| e["data"]["lead"]["profile"].as_object().unwrap().len())
        .collect();
    sizes.sort();
    let base = lead["profile"].as_object().map_or(0, |p| p.len());
    assert_eq!(sizes, (base + 1..=base + 16).collect::<Vec<_>>());
    let c = app.db.client().await;
    let profile: String = qualifier_testkit::sql::one(
        &c,
        "SELECT profile::text FROM leads WHERE id = $1::text::uuid",
        &[&id],
    )
    .await;
    let profile: Value = serde_json::from_str(&profile).unwrap();
    assert_eq!(profile.as_object().unwrap().len(), base + 16, "{profile}");

    let closers: Vec<_> = (0..8)
        .map(|_| {
            let (app, token, id) = (app.clone(), token.clone(), id.clone());
            tokio::spawn(async move {
                app.public(
                    Method::PATCH,
                    &format!("/api/v1/leads/{id}"),
                    &token,
                    Some(json!({"status": "closed"})),
                )
                .await
                .status()
                .as_u16()
            })
        })
        .collect();
    for c in closers {
        assert_eq!(c.await.unwrap(), 200);
    }
    let closed = app
        .outbox_types()
        .await
        .into_iter()
        .filter(|t| t == "lead.stage_changed")
        .count();
    assert_eq!(closed, 1, "one close, one event");
}

/// Two first messages from one phone at once make one contact. Forced: the test's own session
/// has inserted a lead with the phone and not committed, so the message's insert waits on the
/// key; once the test commits, the message's statement fails whole on the key, which the store
/// takes as a taken phone, and the message is the known contact's: 200 with the one lead,
/// `lead.updated`, no `lead.created`, never a 500.
#[tokio::test(flavor = "multi_thread")]
async fn two_first_messages_from_one_phone_at_once_make_one_contact() {
    let app = TestApp::spawn().await;
    let (org, _) = app.org().await;
    let first = app.db.client().await;
    let id: String = {
        first.batch_execute("BEGIN").await.unwrap();
        let r = first
            .query_one(
                "INSERT INTO leads (id, org_id, name, phone, channel, qualification_stage,
                                    created_at, updated_at)
                 VALUES (gen_random_uuid(), $1::text::uuid, 'Ada', '+447700900321', 'whatsapp',
                         'qualifying', now(), now())
                 RETURNING id::text",
                &[&org],
            )
            .await
            .unwrap();
        r.get(0)
    };
    let (url, http) = (
        format!("{}/internal/v1/orgs/{org}/inbound", app.internal),
        app.http.clone(),
    );
    let message = tokio::spawn(async move {
        let body = json!({"name": "Ada Lovelace", "phone": "+447700900321",
                          "channel": "whatsapp"});
        let r = qualifier_testkit::authorized(
            &http,
            Method::POST,
            url,
            crate::helpers::INTERNAL_TOKEN,
            Some(body),
        )
        .send()
        .await
        .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    app.until_waiting_on_locks(1).await;
    first.batch_execute("COMMIT").await.unwrap();
    let (status, body) = message.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["lead"]["id"].as_str(),
        Some(id.as_str()),
        "the one contact"
    );
    assert_eq!(body["lead"]["name"], "Ada Lovelace");
    let types: Vec<String> = app.outbox().await.into_iter().map(|(t, _, _)| t).collect();
    assert_eq!(types, ["lead.updated"]);
}

/// A lead's write while this process's relay is connected wakes that relay in-process and
/// sends no `NOTIFY` (a notifying commit holds the notification queue's lock through its WAL
/// flush, so such writes commit one at a time); while it is not connected, the write notifies
/// so that another replica's relay publishes at once. Whether a notification came is read in
/// commit order: a marker notified after the write arrives after the write's own, if any.
#[tokio::test(flavor = "multi_thread")]
async fn a_lead_write_wakes_the_local_relay_and_notifies_only_when_it_is_not_connected() {
    use futures_util::StreamExt;
    use qualifier_domain::validate::{Channel, Name, Phone};
    use qualifier_store::leads::InboundContact;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let db = qualifier_testkit::TestDb::new().await;
    let c = db.client().await;
    let org = uuid::Uuid::new_v4();
    c.execute(
        "INSERT INTO orgs (id, name, created_at) VALUES ($1::text::uuid, 'wake', now())",
        &[&org.to_string()],
    )
    .await
    .unwrap();
    // A LISTEN session of the test's own, its notifications' payloads in order.
    let (listener, mut connection) = db.database().connect_raw().await.unwrap();
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = m {
                let _ = tx.send(n.payload().to_owned());
            }
        }
    });
    listener
        .batch_execute("LISTEN qualifier_outbox")
        .await
        .unwrap();
    let next = async |heard: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv())
            .await
            .expect("a notification within 10 s")
            .unwrap()
    };

    let connected = Arc::new(AtomicBool::new(true));
    let wake = Arc::new(tokio::sync::Notify::new());
    let flag = connected.clone();
    let store = crate::helpers::store_over(qualifier_store::connect(&db.database(), 2).unwrap())
        .with_local_relay(qualifier_store::LocalRelay {
            wake: wake.clone(),
            connected: Arc::new(move || flag.load(Ordering::Acquire)),
        });
    let contact = |phone: &str| InboundContact {
        name: Name::parse("name", "Ada").unwrap(),
        phone: Phone::parse(phone).unwrap(),
        email: None,
        channel: Channel::parse("sms").unwrap(),
        profile: None,
    };

    let (_, created) = store
        .leads()
        .inbound_contact(org, contact("+447700900001"))
        .await
        .unwrap();
    assert!(created);
    tokio::time::timeout(std::time::Duration::from_secs(10), wake.notified())
        .await
        .expect("the write woke the local relay");
    c.batch_execute("SELECT pg_notify('qualifier_outbox', 'marker')")
        .await
        .unwrap();
    assert_eq!(
        next(&mut heard).await,
        "marker",
        "the write sent no NOTIFY while the local relay was connected"
    );

    connected.store(false, Ordering::Release);
    let (_, created) = store
        .leads()
        .inbound_contact(org, contact("+447700900002"))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(
        next(&mut heard).await,
        "",
        "the write notified the other relays while the local one was not connected"
    );
    let events: i64 = qualifier_testkit::sql::one(&c, "SELECT count(*) FROM deliveries", &[]).await;
    assert_eq!(events, 2, "both writes' deliveries are there for a relay");
}
