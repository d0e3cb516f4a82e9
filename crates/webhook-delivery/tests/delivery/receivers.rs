//! Receivers as they are (docs/receivers.md, "Your own headers and credentials"): an
//! endpoint's own headers and its `basic`, `bearer` or OAuth 2 credentials go with every
//! request to it (deliveries, retries, replays, test events, probes), against the real HTTPS
//! test receiver and its token server; secrets are masked in every answer and absent in clear
//! from the database.

use std::time::Duration;

use qualifier_testkit::receiver::{Behaviour, Received, Receiver};
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(20);
const KEY: &str = "key-sekrit-4471";
const TOKEN: &str = "bearer-sekrit-9921";
const CLIENT_SECRET: &str = "oauth-sekrit-3310";

/// `POST …/endpoints` with `body` (the receiver's url and `lead.created` added): the answer.
async fn create(s: &Stack, receiver: &Receiver, mut body: Value) -> reqwest::Response {
    body["url"] = json!(receiver.url);
    body["event_types"] = json!(["lead.created"]);
    s.org_request(Method::POST, "endpoints", Some(body)).await
}

/// The endpoint created with `body`; the receiver verifies with its secret.
async fn endpoint(s: &Stack, receiver: &Receiver, body: Value) -> Value {
    let r = create(s, receiver, body).await;
    assert_eq!(r.status(), 201);
    let r: Value = r.json().await.unwrap();
    receiver.set_secrets(vec![r["signing_secret"].as_str().unwrap().to_owned()]);
    r["endpoint"].clone()
}

async fn put(s: &Stack, id: &str, body: Value) -> reqwest::Response {
    s.org_request(Method::PUT, &format!("endpoints/{id}"), Some(body))
        .await
}

fn carries(g: &Received, authorization: &str) {
    assert_eq!(g.header("x-api-key"), KEY, "the secret header's value");
    assert_eq!(g.header("x-team"), "crm");
    assert_eq!(g.header("authorization"), authorization);
    assert!(g.verified_with.is_some(), "still signed");
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_and_credentials_go_with_every_request_and_secrets_stay_sealed() {
    let s = Stack::start().await;
    let r = Receiver::start().await;
    let ep = endpoint(
        &s,
        &r,
        json!({
            "headers": [
                {"name": "X-Api-Key", "value": KEY, "secret": true},
                {"name": "X-Team", "value": "crm"}
            ],
            "auth": {"type": "bearer", "token": TOKEN}
        }),
    )
    .await;
    let id = ep["id"].as_str().unwrap().to_owned();
    // Masked in the answer and when read back.
    let read = s.endpoint(&id).await;
    for shown in [&ep, &read] {
        assert_eq!(
            shown["headers"],
            json!([{"name": "X-Api-Key", "value": "********", "secret": true},
                   {"name": "X-Team", "value": "crm", "secret": false}])
        );
        assert_eq!(
            shown["auth"],
            json!({"type": "bearer", "token": "********"})
        );
    }
    let bearer = format!("Bearer {TOKEN}");

    // A delivery that fails once: the attempt and its retry both carry them.
    r.script(vec![Behaviour::Status(500)]);
    s.inbound("+447700900701").await;
    let got = r.wait_for(2, WAIT).await;
    for g in &got {
        carries(g, &bearer);
    }
    let delivery = got[1].header("x-qualifier-delivery").to_owned();
    let d = s.wait_status(&delivery, "succeeded", WAIT).await;
    assert_eq!(d["attempts"], 2);
    // The attempt log keeps none of them.
    let log = d["attempt_log"].to_string();
    assert!(!log.contains(KEY) && !log.contains(TOKEN), "{log}");

    // A replay, a test event.
    let replayed = s
        .org_request(Method::POST, &format!("deliveries/{delivery}/replay"), None)
        .await;
    assert!(replayed.status().is_success());
    s.org_call(Method::POST, &format!("endpoints/{id}/test"), None)
        .await;
    let got = r.wait_for(4, WAIT).await;
    assert!(
        got[3].header("x-qualifier-test") == "true" || got[2].header("x-qualifier-test") == "true"
    );
    for g in &got[2..] {
        carries(g, &bearer);
    }

    // The masks sent back keep the stored values; basic replaces bearer.
    let saved = put(
        &s,
        &id,
        json!({"url": r.url, "event_types": ["lead.created"],
               "headers": read["headers"],
               "auth": {"type": "basic", "username": "crm-user", "password": "pa:ss"}}),
    )
    .await;
    assert_eq!(saved.status(), 200);
    let saved: Value = saved.json().await.unwrap();
    assert_eq!(
        saved["endpoint"]["auth"],
        json!({"type": "basic", "username": "crm-user", "password": "********"})
    );
    s.inbound("+447700900702").await;
    let got = r.wait_for(5, WAIT).await;
    // base64("crm-user:pa:ss"), written out here rather than computed by our own code.
    carries(&got[4], "Basic Y3JtLXVzZXI6cGE6c3M=");

    for secret in [KEY, TOKEN, "pa:ss"] {
        s.absent_from_dump(secret);
    }
    // Leaving the fields out keeps them.
    let kept = put(
        &s,
        &id,
        json!({"url": r.url, "event_types": ["lead.created"]}),
    )
    .await;
    let kept: Value = kept.json().await.unwrap();
    assert_eq!(kept["endpoint"]["headers"][0]["name"], "X-Api-Key");
    assert_eq!(kept["endpoint"]["auth"]["type"], "basic");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_headers_and_credentials_are_refused_naming_them() {
    let s = Stack::start().await;
    let r = Receiver::start().await;
    let refused = |body: Value, names: &'static str| {
        let (s, r) = (&s, &r);
        async move {
            let res = create(s, r, body.clone()).await;
            assert_eq!(res.status(), 422, "{body}");
            let text = res.text().await.unwrap();
            assert!(text.contains(names), "{body}: {text}");
        }
    };
    for name in [
        "Host",
        "Content-Type",
        "X-Qualifier-Event",
        "webhook-id",
        "User-Agent",
    ] {
        refused(json!({"headers": [{"name": name, "value": "x"}]}), name).await;
    }
    let oauth_to = |token_url: &str| {
        json!({"auth": {"type": "oauth2_client_credentials", "token_url": token_url,
                        "client_id": "c", "client_secret": "s"}})
    };
    let cases = [
        (
            json!({"headers": [{"name": "X-Evil", "value": "a\r\nX-Injected: 1"}]}),
            "X-Evil",
        ),
        (
            json!({"headers": [{"name": "Bad Name", "value": "x"}]}),
            "Bad Name",
        ),
        (
            json!({"headers": [{"name": "Authorization", "value": "Token t"}],
                   "auth": {"type": "bearer", "token": "t"}}),
            "Authorization",
        ),
        (
            json!({"headers": [{"name": "X-Key", "value": "********", "secret": true}]}),
            "X-Key",
        ),
        (
            json!({"auth": {"type": "bearer", "token": "********"}}),
            "auth.token",
        ),
        // A token url on a private address: the client secret would go there.
        (oauth_to("https://10.1.2.3/token"), "auth.token_url"),
        (oauth_to("http://auth.example.com/token"), "auth.token_url"),
    ];
    for (body, names) in cases {
        refused(body, names).await;
    }
    // Nothing was created.
    let list = s.org_call(Method::GET, "endpoints", None).await;
    assert_eq!(list["endpoints"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth2_one_token_for_many_a_new_one_on_a_401_and_a_failing_server_named() {
    let s = Stack::with_quick_health().await;
    let r = Receiver::start().await;
    r.require_oauth("crm-app", CLIENT_SECRET);
    // Slow enough that every delivery in flight finds the first fetch still running.
    r.slow_tokens(Duration::from_millis(300));
    let ep = endpoint(
        &s,
        &r,
        json!({"auth": {"type": "oauth2_client_credentials", "token_url": r.token_url(),
                        "client_id": "crm-app", "client_secret": CLIENT_SECRET,
                        "scope": "leads:write"}}),
    )
    .await;
    let id = ep["id"].as_str().unwrap().to_owned();
    assert_eq!(ep["auth"]["client_secret"], "********");
    assert_eq!(ep["auth"]["client_id"], "crm-app");

    // 50 deliveries at once: one token request, never two at a time.
    let leads = (0..50).map(|i| {
        let s = &s;
        async move { s.inbound(&format!("+4477009008{i:02}")).await }
    });
    futures_util::future::join_all(leads).await;
    let got = r.wait_for(50, WAIT).await;
    assert!(
        got.iter().all(|g| g.accepted),
        "every request had the token"
    );
    let seen = r.oauth_seen();
    assert_eq!((seen.token_requests, seen.most_at_once), (1, 1));
    assert!(
        seen.last_form
            .contains(&("scope".into(), "leads:write".into()))
    );
    assert!(
        seen.last_form
            .contains(&("client_secret".into(), CLIENT_SECRET.into()))
    );

    // The receiver stops accepting the token: a new one within the same attempt.
    r.revoke_token();
    s.inbound("+447700900899").await;
    let got = r.wait_for(52, WAIT).await;
    assert!(
        !got[50].accepted && got[51].accepted,
        "a 401, then the new token"
    );
    assert_eq!(
        got[50].header("x-qualifier-delivery"),
        got[51].header("x-qualifier-delivery")
    );
    let d = s
        .wait_status(got[51].header("x-qualifier-delivery"), "succeeded", WAIT)
        .await;
    assert_eq!(d["attempts"], 1, "one attempt: {d}");
    assert_eq!(r.oauth_seen().token_requests, 2);

    // A token server that refuses: the attempts fail naming it, and the endpoint's health
    // counts them until it is failing.
    r.refuse_tokens(Some((400, "invalid_client")));
    r.revoke_token();
    for i in 0..4 {
        s.inbound(&format!("+4477009009{i:02}")).await;
    }
    let path = format!("/internal/v1/orgs/{}/endpoints/{id}", s.org);
    let deadline = std::time::Instant::now() + WAIT;
    let health = loop {
        let h = s.call(Method::GET, &path, None).await["endpoint"]["health"].clone();
        if h["state"] == "failing" {
            break h;
        }
        assert!(std::time::Instant::now() < deadline, "never failing: {h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        health["last_error"],
        "OAuth token request failed: HTTP 400 invalid_client"
    );
    // The server mends: the next probe carries a new token, and the endpoint recovers.
    r.refuse_tokens(None);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let probed = r
            .received()
            .into_iter()
            .any(|g| g.header("x-qualifier-probe") == "true" && g.accepted);
        if probed {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no probe with a token"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.absent_from_dump(CLIENT_SECRET);
}

/// A failing endpoint's probes are requests to it like any other: they carry its headers and
/// its basic credentials, and the receiver that checks them is found healthy again.
#[tokio::test(flavor = "multi_thread")]
async fn probes_carry_the_headers_and_basic_credentials() {
    let s = Stack::with_quick_health().await;
    let r = Receiver::start().await;
    let ep = endpoint(
        &s,
        &r,
        json!({"headers": [{"name": "X-Api-Key", "value": KEY, "secret": true},
                           {"name": "X-Team", "value": "crm"}],
               "auth": {"type": "basic", "username": "crm-user", "password": "pa:ss"}}),
    )
    .await;
    let id = ep["id"].as_str().unwrap().to_owned();
    r.set_behaviour(Behaviour::Status(500));
    for i in 0..4 {
        s.inbound(&format!("+4477009006{i:02}")).await;
    }
    let path = format!("/internal/v1/orgs/{}/endpoints/{id}", s.org);
    let deadline = std::time::Instant::now() + WAIT;
    while s.call(Method::GET, &path, None).await["endpoint"]["health"]["state"] != "failing" {
        assert!(std::time::Instant::now() < deadline, "never failing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    r.set_behaviour(Behaviour::Ok);
    let deadline = std::time::Instant::now() + WAIT;
    let probe = loop {
        if let Some(p) = r
            .received()
            .into_iter()
            .find(|g| g.header("x-qualifier-probe") == "true")
        {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "no probe");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // base64("crm-user:pa:ss"), written out here.
    carries(&probe, "Basic Y3JtLXVzZXI6cGE6c3M=");
    let deadline = std::time::Instant::now() + WAIT;
    while s.call(Method::GET, &path, None).await["endpoint"]["health"]["state"] != "healthy" {
        assert!(std::time::Instant::now() < deadline, "never healthy again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
