//! Lead revisions and conditional requests (docs/api.md, "Revisions and conditional requests"):
//! what a CRM keeping its own copy relies on to never apply an older state over a newer one.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of};

/// A public request with extra headers.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Response {
    let url = format!("{}{path}", app.public);
    let mut rb = qualifier_testkit::authorized(&reqwest::Client::new(), method, url, token, body);
    for (k, v) in headers {
        rb = rb.header(*k, *v);
    }
    rb.send().await.unwrap()
}

fn etag(r: &Response) -> String {
    r.headers()
        .get("etag")
        .expect("an ETag")
        .to_str()
        .unwrap()
        .to_owned()
}

async fn lead_of(r: Response) -> Value {
    r.json::<Value>().await.unwrap()["lead"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_change_is_a_revision_and_if_match_makes_a_patch_conditional() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let r = send(
        &app,
        Method::POST,
        "/api/v1/leads",
        &token,
        Some(json!({"name": "Ada", "phone": "+447700900123"})),
        &[],
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(etag(&r), "\"1\"");
    let lead = lead_of(r).await;
    assert_eq!(lead["revision"], 1);
    let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());

    let r = send(&app, Method::GET, &path, &token, None, &[]).await;
    assert_eq!((r.status().as_u16(), etag(&r)), (200, "\"1\"".into()));

    // A change: revision 2. The same change again changes nothing and keeps it.
    for _ in 0..2 {
        let r = send(
            &app,
            Method::PATCH,
            &path,
            &token,
            Some(json!({"ai_paused": true})),
            &[],
        )
        .await;
        assert_eq!((r.status().as_u16(), etag(&r)), (200, "\"2\"".into()));
        assert_eq!(lead_of(r).await["revision"], 2);
    }

    // A stale If-Match: 412, the current tag, and nothing written.
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"ai_paused": false})),
        &[("If-Match", "\"1\"")],
    )
    .await;
    assert_eq!(etag(&r), "\"2\"");
    assert_eq!(error_of(r).await, (412, "Lead has changed".into()));
    let now = lead_of(send(&app, Method::GET, &path, &token, None, &[]).await).await;
    assert_eq!(
        (now["ai_paused"].clone(), now["revision"].clone()),
        (json!(true), json!(2))
    );

    // Tags of ours that do not match, or that are not ours: refused the same way.
    for stale in ["W/\"2\"", "\"3\", \"4\"", "2", "\"abc\"", "\"02\"", ""] {
        let r = send(
            &app,
            Method::PATCH,
            &path,
            &token,
            Some(json!({"ai_paused": false})),
            &[("If-Match", stale)],
        )
        .await;
        assert_eq!(
            error_of(r).await,
            (412, "Lead has changed".into()),
            "{stale:?}"
        );
    }

    // The current tag, among others: applied.
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"ai_paused": false})),
        &[("If-Match", "\"9\", \"2\"")],
    )
    .await;
    assert_eq!((r.status().as_u16(), etag(&r)), (200, "\"3\"".into()));
    // `*`: any lead that exists.
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"external_ref": {"system": "hubspot", "id": "9001"}})),
        &[("If-Match", "*")],
    )
    .await;
    assert_eq!((r.status().as_u16(), etag(&r)), (200, "\"4\"".into()));

    // If-None-Match with the current tag: 304, no body; with an older one: the lead.
    for current in ["\"4\"", "W/\"4\"", "\"1\", \"4\"", "*"] {
        let r = send(
            &app,
            Method::GET,
            &path,
            &token,
            None,
            &[("If-None-Match", current)],
        )
        .await;
        assert_eq!(
            (r.status().as_u16(), etag(&r)),
            (304, "\"4\"".into()),
            "{current}"
        );
        assert!(r.bytes().await.unwrap().is_empty());
    }
    let r = send(
        &app,
        Method::GET,
        &path,
        &token,
        None,
        &[("If-None-Match", "\"3\"")],
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(lead_of(r).await["revision"], 4);

    // The order of checks: a field error before the condition, the lookup before it too.
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"ai_paused": "yes"})),
        &[("If-Match", "\"1\"")],
    )
    .await;
    assert_eq!(r.status(), 422);
    let unknown = format!("/api/v1/leads/{}", uuid::Uuid::now_v7());
    let r = send(
        &app,
        Method::PATCH,
        &unknown,
        &token,
        Some(json!({"ai_paused": true})),
        &[("If-Match", "\"1\"")],
    )
    .await;
    assert_eq!(error_of(r).await, (404, "Lead not found".into()));

    // Another org's lead is not found, whatever the tags say, and its revision is unchanged.
    let (_, other) = app.org().await;
    for (method, header) in [(Method::PATCH, "If-Match"), (Method::GET, "If-None-Match")] {
        for tag in ["\"4\"", "*"] {
            let body = (method == Method::PATCH).then(|| json!({"ai_paused": true}));
            let r = send(&app, method.clone(), &path, &other, body, &[(header, tag)]).await;
            assert_eq!(error_of(r).await, (404, "Lead not found".into()));
        }
    }
    let now = lead_of(send(&app, Method::GET, &path, &token, None, &[]).await).await;
    assert_eq!(now["revision"], 4);
    assert_eq!(now["ai_paused"], false);

    // A replayed idempotent PATCH answers the same tag as the original.
    let key = [("Idempotency-Key", "rev-replay-1")];
    let first = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"status": "closed"})),
        &key,
    )
    .await;
    let again = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"status": "closed"})),
        &key,
    )
    .await;
    assert_eq!(etag(&first), "\"5\"");
    assert_eq!(etag(&again), "\"5\"");
    assert_eq!(again.headers()["idempotency-replayed"], "true");

    // A change that leaves the revision as it was (a hand edit; every release that can run
    // beside this one raises it) is refused, so no If-Match can match a changed lead; one
    // that raises it moves the ETag: an If-Match taken before no longer matches.
    let c = app.db.client().await;
    let id = lead["id"].as_str().unwrap();
    let refused = c
        .execute(
            "UPDATE leads SET ai_paused = true WHERE id = $1::text::uuid",
            &[&id],
        )
        .await
        .unwrap_err();
    let message = refused
        .as_db_error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(message.contains("must raise its revision"), "{refused:?}");
    let r = send(&app, Method::GET, &path, &token, None, &[]).await;
    assert_eq!(etag(&r), "\"5\"", "nothing changed");
    c.execute(
        "UPDATE leads SET ai_paused = true, revision = revision + 1 WHERE id = $1::text::uuid",
        &[&id],
    )
    .await
    .unwrap();
    let r = send(&app, Method::GET, &path, &token, None, &[]).await;
    assert_eq!(etag(&r), "\"6\"");
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &token,
        Some(json!({"ai_paused": false})),
        &[("If-Match", "\"5\"")],
    )
    .await;
    assert_eq!(error_of(r).await, (412, "Lead has changed".into()));
    let _ = org;
}

/// API PATCHes and the agent's updates on one lead at once: every change gets its own revision,
/// and the events' snapshots, in the order their changes committed (the feed's), carry strictly
/// increasing revisions, the last one the lead's.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_writers_get_distinct_revisions_in_commit_order() {
    let app = TestApp::spawn_with(|c| {
        c.rate_limit_per_minute = 100_000;
        c.db_pool_size = 8;
    })
    .await;
    let (org, token, lead) = app.org_with_lead("+447700900777").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    const ROUNDS: usize = 12;
    let mut tasks = Vec::new();
    let lead_id = id.clone();
    for w in 0..4 {
        // The CRM: write-backs that always change something (a new external id each time).
        let (app_public, token, id) = (app.public.clone(), token.clone(), lead_id.clone());
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..ROUNDS {
                let r = http
                    .patch(format!("{app_public}/api/v1/leads/{id}"))
                    .bearer_auth(&token)
                    .json(&json!({"external_ref": {"system": "crm", "id": format!("{w}-{i}")}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        }));
        // The agent: profile changes, each a `lead.updated`.
        let (app_internal, org, id) = (app.internal.clone(), org.clone(), lead_id.clone());
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..ROUNDS {
                let r = http
                    .patch(format!("{app_internal}/internal/v1/orgs/{org}/leads/{id}"))
                    .bearer_auth(crate::helpers::INTERNAL_TOKEN)
                    .json(&json!({"profile": {format!("agent{w}"): i}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // A last agent change, so the last event is the lead's latest state.
    app.internal(
        Method::PATCH,
        &format!("/internal/v1/orgs/{org}/leads/{id}"),
        Some(json!({"profile": {"done": true}})),
    )
    .await;
    let changes = 8 * ROUNDS + 1;
    let now = app
        .public(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
        .await;
    let now = lead_of(now).await;
    assert_eq!(
        now["revision"],
        1 + changes as i64,
        "one revision per change"
    );

    // The feed, once every event is relayed, in commit order.
    let want = 1 + 4 * ROUNDS + 1;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let events = loop {
        let r = app
            .public(Method::GET, "/api/v1/events?limit=500", &token, None)
            .await;
        let v: Value = r.json().await.unwrap();
        let events = v["events"].as_array().unwrap().clone();
        if events.len() >= want {
            break events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} events relayed",
            events.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(events.len(), want);
    let revisions: Vec<i64> = events
        .iter()
        .map(|e| e["data"]["lead"]["revision"].as_i64().unwrap())
        .collect();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing in commit order: {revisions:?}"
    );
    assert_eq!(revisions[0], 1);
    assert_eq!(
        *revisions.last().unwrap(),
        now["revision"].as_i64().unwrap()
    );
    assert_eq!(events.last().unwrap()["data"]["lead"], now);
    // Each snapshot is the state of its revision: an agent's counter never goes back, and each
    // event's `previous` holds the counter value the event before it had.
    let mut last: HashMap<String, i64> = events[0]["data"]["lead"]["profile"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_i64()?)))
        .collect();
    for e in &events[1..] {
        let profile = e["data"]["lead"]["profile"].as_object().unwrap();
        for (k, v) in profile {
            if let Some(n) = v.as_i64() {
                let before = last.insert(k.clone(), n);
                assert!(before.is_none_or(|b| b <= n), "{k}: {before:?} then {n}");
                // Named in `previous` exactly when this change moved it, with the value before.
                let prev = e["data"]["previous"]["profile"].get(k);
                assert_eq!(prev.is_some(), before != Some(n), "{k}: {e}");
                if let Some(prev) = prev {
                    assert_eq!(prev.as_i64(), before, "{k}");
                }
            }
        }
    }
}
