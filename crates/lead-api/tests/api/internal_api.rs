//! The internal API's own rules: its token, org lookups and shapes.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{TestApp, error_of};

#[tokio::test(flavor = "multi_thread")]
async fn internal_token_is_required_and_org_tokens_do_not_work() {
    let app = TestApp::spawn().await;
    let (_, org_token) = app.org().await;
    for auth in [
        None,
        Some("Bearer wrong-token-wrong-token"),
        Some(&*format!("Bearer {org_token}")),
    ] {
        let mut rb = app
            .http
            .post(format!("{}/internal/v1/orgs", app.internal))
            .json(&json!({"name": "x"}));
        if let Some(a) = auth {
            rb = rb.header("Authorization", a);
        }
        assert_eq!(
            error_of(rb.send().await.unwrap()).await,
            (401, "Unauthorized".into())
        );
    }
    // The internal API is not on the public listener at all.
    let r = app
        .http
        .post(format!("{}/internal/v1/orgs", app.public))
        .bearer_auth(crate::helpers::INTERNAL_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(r).await, (404, "Not found".into()));
}

#[tokio::test(flavor = "multi_thread")]
async fn org_and_token_shapes() {
    let app = TestApp::spawn().await;
    let org = app
        .internal_json(
            201,
            Method::POST,
            "/internal/v1/orgs",
            Some(json!({"name": "Acme Homes"})),
        )
        .await["org"]
        .clone();
    assert_eq!(org["name"], "Acme Homes");
    assert_eq!(org.as_object().unwrap().len(), 3);
    let id = org["id"].as_str().unwrap();
    let v = app.new_token(id, "hubspot").await;
    assert_eq!(v["token"]["name"], "hubspot");
    assert!(v["token"].get("secret").is_none());
    assert!(v["secret"].as_str().unwrap().starts_with("qlf_org_"));

    assert_eq!(
        app.internal_error(Method::POST, "/internal/v1/orgs", Some(json!({"name": ""})))
            .await,
        (422, "name must be a string of 1 to 200 characters".into())
    );
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("/internal/v1/orgs/{}/tokens", uuid::Uuid::new_v4()),
            None,
        )
        .await,
        (404, "Org not found".into())
    );
    assert_eq!(
        app.internal_error(Method::POST, "/internal/v1/orgs/not-a-uuid/tokens", None)
            .await,
        (404, "Org not found".into())
    );
    assert_eq!(
        app.internal_error(Method::GET, "/internal/v1/orgs", None)
            .await,
        (405, "Method not allowed".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn inbound_validates_and_scopes_to_the_org() {
    let app = TestApp::spawn().await;
    let (org_b, token_b) = app.org().await;
    let (org_a, _, a) = app.org_with_lead("+447700900123").await;
    // The same phone in another org is another contact.
    let b = app.inbound_lead(&org_b, "+447700900123").await;
    assert_ne!(a["id"], b["id"]);
    app.public_expect(
        404,
        Method::GET,
        &format!("/api/v1/leads/{}", a["id"].as_str().unwrap()),
        &token_b,
        None,
    )
    .await;
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("/internal/v1/orgs/{org_a}/inbound"),
            Some(json!({"name": "X", "phone": "+447700900555"})),
        )
        .await,
        (422, "channel is required".into())
    );
    assert_eq!(
        app.internal_error(
            Method::POST,
            &format!("/internal/v1/orgs/{}/inbound", uuid::Uuid::new_v4()),
            Some(json!({"name": "X", "phone": "+447700900555", "channel": "sms"})),
        )
        .await,
        (404, "Org not found".into())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_readiness() {
    let app = TestApp::spawn().await;
    for base in [&app.public, &app.internal] {
        let healthz = app
            .http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(healthz.status(), 200);
        // Ready once the relay has connected to RabbitMQ (a few milliseconds after start).
        let mut status = 0;
        for _ in 0..100 {
            let r = app.http.get(format!("{base}/readyz")).send().await.unwrap();
            status = r.status().as_u16();
            if status == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(status, 200);
    }
}
