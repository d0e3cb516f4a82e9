//! Idempotency-Key on the public POST and PATCH (docs/api.md).

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of};

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    key: &str,
    body: &Value,
) -> reqwest::Response {
    app.http
        .request(method, format!("{}{path}", app.public))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn leads_in_db(app: &TestApp) -> i64 {
    qualifier_testkit::sql::one(&app.db.client().await, "SELECT count(*) FROM leads", &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_post_creates_one_lead_and_answers_the_same() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let body = json!({"name": "Ada", "phone": "+447700900321"});
    let first = send(&app, Method::POST, "/api/v1/leads", &token, "k-1", &body).await;
    assert_eq!(first.status(), 201);
    let location = first.headers()["location"].to_str().unwrap().to_owned();
    assert!(!first.headers().contains_key("idempotency-replayed"));
    let first_body = first.text().await.unwrap();
    let again = send(&app, Method::POST, "/api/v1/leads", &token, "k-1", &body).await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotency-replayed"], "true");
    assert_eq!(again.headers()["location"], location.as_str());
    assert_eq!(
        again.text().await.unwrap(),
        first_body,
        "the same body, byte for byte"
    );
    assert_eq!(leads_in_db(&app).await, 1);
    // Without the key, the same POST is a new request: the phone is taken.
    app.public_expect(409, Method::POST, "/api/v1/leads", &token, Some(body))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_close_emits_one_event_and_another_body_is_refused() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900322").await;
    let path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());
    let close = json!({"status": "closed"});
    for _ in 0..3 {
        let r = send(&app, Method::PATCH, &path, &token, "close-1", &close).await;
        assert_eq!(r.status(), 200);
    }
    let stage_changed = app
        .outbox_types()
        .await
        .iter()
        .filter(|t| *t == "lead.stage_changed")
        .count();
    assert_eq!(stage_changed, 1);
    // The same key with another body, path or method.
    let other = json!({"status": "closed", "ai_paused": true});
    let r = send(&app, Method::PATCH, &path, &token, "close-1", &other).await;
    assert_eq!(
        error_of(r).await,
        (
            422,
            "Idempotency-Key was used with a different request".into()
        )
    );
    let r = send(
        &app,
        Method::POST,
        "/api/v1/leads",
        &token,
        "close-1",
        &close,
    )
    .await;
    assert_eq!(error_of(r).await.0, 422);
    // A kept 4xx is replayed too; keys are per org, so another org's same key is its own.
    let bad = json!({"status": "open"});
    let r = send(&app, Method::PATCH, &path, &token, "bad-1", &bad).await;
    assert_eq!(r.status(), 422);
    let r = send(&app, Method::PATCH, &path, &token, "bad-1", &bad).await;
    assert_eq!(r.headers()["idempotency-replayed"], "true");
    let (_, token_b) = app.org().await;
    let r = send(&app, Method::PATCH, &path, &token_b, "close-1", &close).await;
    assert_eq!(error_of(r).await, (404, "Lead not found".into()));
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_with_one_key_change_once() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let body = json!({"name": "Grace", "phone": "+447700900323"});
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (http, url, token, body) = (
                app.http.clone(),
                format!("{}/api/v1/leads", app.public),
                token.clone(),
                body.clone(),
            );
            tokio::spawn(async move {
                let r = http
                    .post(url)
                    .bearer_auth(token)
                    .header("Idempotency-Key", "race-1")
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let replayed = r.headers().contains_key("idempotency-replayed");
                (r.status().as_u16(), replayed)
            })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap() {
            (201, false) => created += 1,
            (201, true) | (409, _) => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(created, 1, "one request ran");
    assert_eq!(leads_in_db(&app).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_key_is_refused_after_authentication() {
    let app = TestApp::spawn().await;
    let (_, token) = app.org().await;
    let body = json!({"name": "Ada", "phone": "+447700900324"});
    for key in ["", "has space", &"k".repeat(256), "tab\there"] {
        let r = send(&app, Method::POST, "/api/v1/leads", &token, key, &body).await;
        assert_eq!(
            error_of(r).await,
            (422, "Invalid Idempotency-Key".into()),
            "{key:?}"
        );
    }
    let r = app
        .http
        .post(format!("{}/api/v1/leads", app.public))
        .header("Idempotency-Key", "has space")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "authentication comes first");
    assert_eq!(leads_in_db(&app).await, 0);
}
