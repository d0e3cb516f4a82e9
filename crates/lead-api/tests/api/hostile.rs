//! Hostile input over every route that takes a body or an id: generated JSON of every shape,
//! non-JSON bytes and odd path segments. Whatever arrives, the answer is a 2xx or a 4xx with the
//! documented `{"error": "..."}` body (docs/api.md), never a 5xx, and nothing stored is lost.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of};

/// Any JSON value, nested a few levels, with keys that the API knows mixed in so generated
/// objects often hit real fields with wrong types or odd values.
fn any_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("name".to_owned()),
        Just("phone".to_owned()),
        Just("email".to_owned()),
        Just("channel".to_owned()),
        Just("profile".to_owned()),
        Just("external_ref".to_owned()),
        Just("ai_paused".to_owned()),
        Just("status".to_owned()),
        Just("route_target".to_owned()),
        Just("qualification_stage".to_owned()),
        Just("url".to_owned()),
        Just("event_types".to_owned()),
        Just("enabled".to_owned()),
        Just("reason".to_owned()),
        Just("operator".to_owned()),
        Just("system".to_owned()),
        Just("id".to_owned()),
        Just("budget".to_owned()),
        Just("bedrooms".to_owned()),
        "\\PC{0,12}",
        "[a-z\\x00\\x1b\\x7f]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::String),
        // What an attacker sends: control characters (NUL, ESC, DEL, C1) among ordinary text.
        "[a-z\\x00-\\x1f\\x7f-\\x9f+@.]{1,20}".prop_map(Value::String),
        Just(json!("closed")),
        Just(json!("+447700900123")),
        Just(json!("https://example.com/hook")),
        Just(json!("https://10.0.0.1/hook")),
        Just(json!("lead.created")),
        Just(json!("x".repeat(300))),
    ];
    leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

const KNOWN_4XX: &[(u16, &str)] = &[
    (400, "Invalid JSON body"),
    (404, "Lead not found"),
    (404, "Org not found"),
    (404, "Handoff not found"),
    (404, "Webhook not configured"),
    (404, "Not found"),
    (409, "Lead already exists"),
    (409, "Handoff already open"),
    (413, "Request body too large"),
    (415, "Content-Type must be application/json"),
];

/// A 4xx must carry the documented body: a known message for its status, or for 422 (and 409
/// state conflicts) one line naming the problem.
async fn assert_contract_answer(what: &str, r: reqwest::Response) {
    let status = r.status().as_u16();
    assert!(status < 500, "{what}: {status}");
    if status >= 400 {
        let (status, msg) = error_of(r).await;
        let known = KNOWN_4XX.iter().any(|(s, m)| *s == status && *m == msg);
        let one_line = (status == 422 || status == 409)
            && !msg.is_empty()
            && !msg.contains('\n')
            && msg.len() < 200;
        assert!(known || one_line, "{what}: {status} {msg:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_bodies_never_get_a_5xx_on_any_route() {
    let app = TestApp::spawn().await;
    let (org, token, lead) = app.org_with_lead("+447700900999").await;
    let lead_id = lead["id"].as_str().unwrap().to_owned();
    let handoff = app.open_handoff(&org, &lead_id).await;

    let public = [
        (Method::POST, "/api/v1/leads".to_owned()),
        (Method::PATCH, format!("/api/v1/leads/{lead_id}")),
    ];
    let internal = [
        (Method::POST, "/internal/v1/orgs".to_owned()),
        (Method::POST, format!("/internal/v1/orgs/{org}/tokens")),
        (Method::PUT, format!("/internal/v1/orgs/{org}/webhook")),
        (Method::POST, format!("/internal/v1/orgs/{org}/inbound")),
        (
            Method::PATCH,
            format!("/internal/v1/orgs/{org}/leads/{lead_id}"),
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/leads/{lead_id}/handoffs"),
        ),
        (
            Method::POST,
            format!("/internal/v1/orgs/{org}/leads/{lead_id}/handoffs/{handoff}/accept"),
        ),
    ];
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    let strategy = any_json();
    for case in 0..48 {
        let body = strategy.new_tree(&mut runner).unwrap().current();
        for (m, path) in &public {
            let r = app
                .public(m.clone(), path, &token, Some(body.clone()))
                .await;
            assert_contract_answer(&format!("case {case} {m} {path} {body}"), r).await;
        }
        for (m, path) in &internal {
            let r = app.internal(m.clone(), path, Some(body.clone())).await;
            assert_contract_answer(&format!("case {case} {m} {path} {body}"), r).await;
        }
    }

    // Not JSON at all, and not even UTF-8.
    for raw in [
        &b"{"[..],
        b"\xff\xfe\x00",
        b"[1,2",
        b"nul",
        b"{\"a\":1}}",
        b"",
    ] {
        let r = app
            .http
            .patch(format!("{}/api/v1/leads/{lead_id}", app.public))
            .bearer_auth(&token)
            .header("Content-Type", "application/json")
            .body(raw.to_vec())
            .send()
            .await
            .unwrap();
        assert_contract_answer(&format!("raw {raw:?}"), r).await;
    }
    // Odd ids in paths: never a 5xx.
    for id in [
        "%00",
        "..%2F..",
        "ä",
        "1",
        &"9".repeat(500),
        "00000000-0000-0000-0000-000000000000",
    ] {
        let r = app
            .public(Method::GET, &format!("/api/v1/leads/{id}"), &token, None)
            .await;
        assert_contract_answer(&format!("id {id}"), r).await;
        let r = app
            .internal(
                Method::GET,
                &format!("/internal/v1/orgs/{id}/deliveries"),
                None,
            )
            .await;
        assert_contract_answer(&format!("org {id}"), r).await;
    }

    // Nothing stored was lost or corrupted along the way: the lead is still readable.
    app.public_expect(
        200,
        Method::GET,
        &format!("/api/v1/leads/{lead_id}"),
        &token,
        None,
    )
    .await;
}
