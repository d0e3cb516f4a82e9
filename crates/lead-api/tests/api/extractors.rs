//! Each extractor's check, over every route that declares it: a handler that takes
//! `InternalAuth`, `OrgAuth`, `ConsoleSession` or `CsrfForm` is never reached without the
//! credential, whatever the route.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::console::{app, csrf_of, get, post, sign_in};

const ZERO: &str = "00000000-0000-0000-0000-000000000000";

#[tokio::test(flavor = "multi_thread")]
async fn internal_auth_refuses_every_internal_route_without_the_token() {
    let app = app().await;
    let (org, _) = app.org().await;
    let at = |rest: &str| format!("/internal/v1/orgs/{org}/{rest}");
    let routes = [
        (Method::POST, "/internal/v1/orgs".to_owned()),
        (Method::POST, at("tokens")),
        (Method::DELETE, at(&format!("tokens/{ZERO}"))),
        (Method::POST, at("console-sessions")),
        (Method::PUT, at("webhook")),
        (Method::GET, at("webhook")),
        (Method::POST, at("webhook/rotate-secret")),
        (Method::POST, at("webhook/test")),
        (Method::POST, at("inbound")),
        (Method::PATCH, at(&format!("leads/{ZERO}"))),
        (Method::POST, at(&format!("leads/{ZERO}/handoffs"))),
        (
            Method::POST,
            at(&format!("leads/{ZERO}/handoffs/{ZERO}/accept")),
        ),
        (
            Method::POST,
            at(&format!("leads/{ZERO}/handoffs/{ZERO}/release")),
        ),
        (Method::GET, at("deliveries")),
        (Method::POST, at("deliveries/replay")),
        (Method::GET, at(&format!("deliveries/{ZERO}"))),
        (Method::POST, at(&format!("deliveries/{ZERO}/replay"))),
    ];
    for (method, path) in routes {
        for token in [None, Some("wrong-token-0123456789"), Some("")] {
            let mut rb = app
                .http
                .request(method.clone(), format!("{}{path}", app.internal))
                .header("content-type", "application/json")
                .body("{}");
            if let Some(t) = token {
                rb = rb.bearer_auth(t);
            }
            let r = rb.send().await.unwrap();
            assert_eq!(
                r.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} {token:?}"
            );
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"], "Unauthorized");
        }
    }
    // The org is untouched: no token, webhook or test delivery was made by any of them.
    no_webhook(&app, &org).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn org_auth_refuses_every_public_route_without_a_valid_token() {
    let app = app().await;
    let (_, token) = app.org().await;
    let routes = [
        (Method::GET, "/api/v1/leads".to_owned()),
        (Method::POST, "/api/v1/leads".to_owned()),
        (Method::GET, "/api/v1/events".to_owned()),
        (Method::GET, format!("/api/v1/leads/{ZERO}")),
        (Method::PATCH, format!("/api/v1/leads/{ZERO}")),
    ];
    let forged = format!("qlf_org_{}", "x".repeat(40));
    let revoked_like = format!("{token}x");
    for (method, path) in routes {
        for bad in ["", "Basic abc", forged.as_str(), revoked_like.as_str()] {
            let r = app
                .public(method.clone(), &path, bad, Some(serde_json::json!({})))
                .await;
            assert_eq!(
                r.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} {bad}"
            );
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
        }
        let r = app.public(method.clone(), &path, &token, None).await;
        assert_ne!(
            r.status(),
            StatusCode::UNAUTHORIZED,
            "{method} {path} with the token"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn console_session_refuses_every_page_when_signed_out() {
    let app = app().await;
    for path in [
        "/console",
        "/console/tokens",
        "/console/deliveries",
        "/console/events",
        "/console/deliveries/replay-dead",
        &format!("/console/deliveries/{ZERO}"),
    ] {
        for cookie in [
            None,
            Some("qlf_console=forged"),
            Some(&*format!("qlf_console={}", "a".repeat(43))),
        ] {
            let (status, html) = get(&app, cookie, path).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} {cookie:?}");
            assert!(html.contains("Sign in again"), "{path}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn csrf_form_refuses_every_action_without_the_sessions_token() {
    let app = app().await;
    let (org, _) = app.org().await;
    let cookie = sign_in(&app, &org).await;
    let (_, page) = get(&app, Some(&cookie), "/console").await;
    let csrf = csrf_of(&page);
    let actions = [
        "/console/login",
        "/console/logout",
        "/console/webhook",
        "/console/webhook/rotate",
        "/console/webhook/test",
        "/console/webhook/check",
        "/console/events/test",
        "/console/tokens",
        &format!("/console/tokens/{ZERO}/revoke"),
        "/console/deliveries/replay-dead",
        &format!("/console/deliveries/{ZERO}/replay"),
    ];
    for path in actions {
        let forms: [&[(&str, &str)]; 3] = [
            &[("url", "https://example.com/h"), ("name", "x")],
            &[("csrf", ""), ("name", "x")],
            &[("csrf", "not-the-token"), ("name", "x")],
        ];
        for form in forms {
            let (status, html, _) = post(&app, &cookie, path, form).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path} {form:?}");
            assert!(html.contains("Refused"), "{path}");
        }
        // Signed out, the session check answers first.
        let (status, _, _) = post(&app, "qlf_console=none", path, &[("csrf", &csrf)]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    // Nothing happened: still signed in, no token made, no webhook saved.
    let (status, html) = get(&app, Some(&cookie), "/console/tokens").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains("Shown once"));
    no_webhook(&app, &org).await;
}

/// The org still has no webhook (nothing a refused request did made one).
async fn no_webhook(app: &crate::helpers::TestApp, org: &str) {
    let path = format!("/internal/v1/orgs/{org}/webhook");
    app.internal_expect(404, Method::GET, &path, None).await;
}
