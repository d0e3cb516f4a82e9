//! The hardening rules of contract section 8, each tried as an attacker would: made-up methods,
//! control characters in every text field, a body that never finishes.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{TestApp, error_of};

#[tokio::test(flavor = "multi_thread")]
async fn made_up_methods_do_not_grow_the_metrics() {
    let app = TestApp::spawn().await;
    for i in 0..150 {
        // No token needed: this is what anyone on the internet can send.
        let m = Method::from_bytes(format!("PROBE{i}").as_bytes()).unwrap();
        let r = app
            .http
            .request(m, format!("{}/api/v1/leads", app.public))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error());
    }
    let page = app.metrics().await;
    let methods: HashSet<&str> = page
        .lines()
        .filter(|l| l.starts_with("qualifier_http_requests_total{"))
        .filter_map(|l| l.split("method=\"").nth(1)?.split('"').next())
        .collect();
    assert!(methods.len() <= 12, "{methods:?}");
    assert!(methods.contains("other"), "{methods:?}");
    assert!(
        !page.contains("PROBE"),
        "no client-chosen method is a label"
    );
}

/// Every text field of every body route, with `value` in it: (method, path, body, field).
fn text_fields(
    org: &str,
    lead: &str,
    handoff: &str,
    value: &str,
) -> Vec<(Method, String, Value, &'static str)> {
    let v = value;
    let lead_path = format!("/internal/v1/orgs/{org}/leads/{lead}");
    vec![
        // Public API.
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": v, "phone": "+447700900111"}),
            "name",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": v}),
            "phone",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "email": v}),
            "email",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "channel": v}),
            "channel",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "route_target": v}),
            "route_target",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "profile": {"area": v}}),
            "profile.area",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "profile": {"note": v}}),
            "profile.note",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "profile": {format!("k{v}"): 1}}),
            "profile",
        ),
        (
            Method::POST,
            "/api/v1/leads".into(),
            json!({"name": "A", "phone": "+447700900111", "external_ref": {"system": v, "id": "1"}}),
            "external_ref.system",
        ),
        (
            Method::PATCH,
            format!("/api/v1/leads/{lead}"),
            json!({"external_ref": {"system": v, "id": "1"}}),
            "external_ref.system",
        ),
        (
            Method::PATCH,
            format!("/api/v1/leads/{lead}"),
            json!({"external_ref": {"system": "crm", "id": v}}),
            "external_ref.id",
        ),
        (
            Method::PATCH,
            format!("/api/v1/leads/{lead}"),
            json!({"external_ref": {"system": "crm", "id": "1", "url": format!("https://crm.example/{v}")}}),
            "external_ref.url",
        ),
        (
            Method::PATCH,
            format!("/api/v1/leads/{lead}"),
            json!({"status": format!("closed{v}")}),
            "status",
        ),
        // Internal API.
        (
            Method::POST,
            "/internal/v1/orgs".into(),
            json!({"name": v}),
            "name",
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/tokens"),
            json!({"name": v}),
            "name",
        ),
        (
            Method::PUT,
            format!("/internal/v1/orgs/{org}/webhook"),
            json!({"url": format!("https://hooks.example.com/{v}"), "event_types": ["lead.created"]}),
            "url",
        ),
        (
            Method::PUT,
            format!("/internal/v1/orgs/{org}/webhook"),
            json!({"url": "https://hooks.example.com/", "event_types": [v]}),
            "event_types",
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/inbound"),
            json!({"name": v, "phone": "+447700900112", "channel": "sms"}),
            "name",
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/inbound"),
            json!({"name": "B", "phone": "+447700900112", "channel": "sms", "email": v}),
            "email",
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/inbound"),
            json!({"name": "B", "phone": "+447700900112", "channel": v}),
            "channel",
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/inbound"),
            json!({"name": "B", "phone": "+447700900112", "channel": "sms", "profile": {"budget": v}}),
            "profile.budget",
        ),
        (Method::PATCH, lead_path.clone(), json!({"name": v}), "name"),
        (
            Method::PATCH,
            lead_path.clone(),
            json!({"email": v}),
            "email",
        ),
        (
            Method::PATCH,
            lead_path.clone(),
            json!({"phone": v}),
            "phone",
        ),
        (
            Method::PATCH,
            lead_path.clone(),
            json!({"route_target": v}),
            "route_target",
        ),
        (
            Method::PATCH,
            lead_path.clone(),
            json!({"qualification_stage": v}),
            "qualification_stage",
        ),
        (
            Method::PATCH,
            lead_path.clone(),
            json!({"profile": {"area": v}}),
            "profile.area",
        ),
        (
            Method::POST,
            format!("{lead_path}/handoffs"),
            json!({"reason": v}),
            "reason",
        ),
        (
            Method::POST,
            format!("{lead_path}/handoffs/{handoff}/accept"),
            json!({"operator": v}),
            "operator",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn control_characters_in_any_text_field_are_a_422_naming_it() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let lead = app.inbound_lead(&org, "+447700900123").await;
    let lead_id = lead["id"].as_str().unwrap().to_owned();
    let handoff = app.open_handoff(&org, &lead_id).await;
    let before = app.outbox().await.len();
    for ch in ['\u{0}', '\u{1}', '\u{8}', '\u{1b}', '\u{7f}', '\u{85}'] {
        let value = format!("x{ch}y");
        for (method, path, body, field) in text_fields(&org, &lead_id, &handoff, &value) {
            let rb = if path.starts_with("/api/") {
                app.http
                    .request(method.clone(), format!("{}{path}", app.public))
                    .bearer_auth(&token)
            } else {
                app.http
                    .request(method.clone(), format!("{}{path}", app.internal))
                    .bearer_auth(crate::helpers::INTERNAL_TOKEN)
            };
            let r = rb.json(&body).send().await.unwrap();
            let what = format!("{method} {path} {field} with U+{:04X}", ch as u32);
            let (status, msg) = error_of(r).await;
            assert_eq!(status, 422, "{what}: {msg}");
            assert!(msg.contains(field), "{what}: {msg:?} does not name {field}");
            assert!(
                !msg.contains('\n') && !msg.chars().any(char::is_control),
                "{what}: {msg:?}"
            );
        }
    }
    assert_eq!(
        app.outbox().await.len(),
        before,
        "nothing was changed or emitted"
    );
    // Tab, CR and LF are text.
    let r = app
        .internal(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/leads/{lead_id}/handoffs/{handoff}/accept"),
            Some(json!({"operator": "op-7"})),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .public(
            Method::PATCH,
            &format!("/api/v1/leads/{lead_id}"),
            &token,
            Some(json!({"external_ref": {"system": "crm", "id": "a\tb"}})),
        )
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_never_finishes_gets_408_within_ten_seconds() {
    let app = TestApp::spawn().await;
    let (org, token) = app.org().await;
    let lead = app.inbound_lead(&org, "+447700900123").await;
    let addr = app.public.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "PATCH /api/v1/leads/{} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{{\"ai_",
        lead["id"].as_str().unwrap()
    );
    let sent = Instant::now();
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut chunk = [0u8; 1024];
        loop {
            let n = sock.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if String::from_utf8_lossy(&buf).contains("Request timeout") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer within 20 s");
    let waited = sent.elapsed();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.ends_with(r#"{"error":"Request timeout"}"#), "{text}");
    assert!(
        waited >= Duration::from_secs(9) && waited <= Duration::from_secs(11),
        "answered after {waited:?}"
    );
    // Nothing was changed by the half request.
    let r = app
        .public(
            Method::GET,
            &format!("/api/v1/leads/{}", lead["id"].as_str().unwrap()),
            &token,
            None,
        )
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["lead"]["ai_paused"], false);
}

/// Sessions of this test's database waiting on a lock.
async fn sessions_waiting_on_a_lock(c: &tokio_postgres::Client) -> i64 {
    c.query_one(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Waits until the service listens for token notifications (its filter is then loaded).
async fn wait_for_token_listener(c: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND query LIKE '%LISTEN qualifier_tokens%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if n > 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return;
        }
        assert!(Instant::now() < deadline, "lead-api never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_unknown_tokens_holds_at_most_two_database_connections() {
    // A pool large enough that the old behaviour (one admission statement per token) would put
    // eight sessions on the lock.
    let app = TestApp::spawn_with(|c| c.db_pool_size = 16).await;
    let (_, token) = app.org().await;
    let db = app.db.client().await;
    wait_for_token_listener(&db).await;
    let path = format!("/api/v1/leads/{}", uuid::Uuid::new_v4());
    // While the token table is locked, anything that looks a token up waits on the lock.
    let mut locker = app.db.client().await;
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let flood: Vec<_> = (0..40)
        .map(|i| {
            let (http, url) = (app.http.clone(), format!("{}{path}", app.public));
            tokio::spawn(async move {
                let fake = format!("qlf_org_{i:0>40}");
                http.get(url)
                    .bearer_auth(fake)
                    .send()
                    .await
                    .unwrap()
                    .status()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let waiting = sessions_waiting_on_a_lock(&db).await;
    tx.commit().await.unwrap();
    assert!(
        waiting <= lead_api::token_filter::MISS_LANE as i64,
        "{waiting} database sessions held by unknown tokens"
    );
    for f in flood {
        assert_eq!(f.await.unwrap(), 401);
    }
    // The real token never queued behind them.
    let r = app.public(Method::GET, &path, &token, None).await;
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_created_on_one_replica_works_on_another_at_once() {
    let app = TestApp::spawn().await;
    let second = lead_api::start(crate::helpers::config(&app.db, &app.topo))
        .await
        .unwrap();
    wait_for_token_listener(&app.db.client().await).await;
    let path = format!("/api/v1/leads/{}", uuid::Uuid::new_v4());
    for _ in 0..5 {
        // Created through the first, used at once on the second.
        let (_, token) = app.org().await;
        let r = app
            .http
            .get(format!("http://{}{path}", second.public_addr))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "the new token is accepted");
    }
    second.stop(false).await;
}
