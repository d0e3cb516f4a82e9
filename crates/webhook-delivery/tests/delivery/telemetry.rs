//! What operators see: one trace from the API request to the webhook attempt, metrics that move,
//! and logs that never carry a token or a signing secret.

use std::time::Duration;

use qualifier_testkit::receiver::Behaviour;
use qualifier_testkit::telemetry::{captured_logs, metric, wait_for_spans};
use reqwest::Method;

use crate::stack::{INTERNAL_TOKEN, Stack};

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_and_the_webhook_it_causes_share_one_trace() {
    let s = Stack::start().await;
    let lead = s.inbound("+447700900555").await;
    let id = lead["id"].as_str().unwrap();
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    s.close_lead(id, Some(&traceparent)).await;
    let got = s.receiver.wait_for(2, WAIT).await;
    let delivery_id = got
        .iter()
        .find(|g| g.header("x-qualifier-event") == "lead.stage_changed")
        .expect("stage_changed delivered")
        .header("x-qualifier-delivery")
        .to_owned();

    let attempts = wait_for_spans("delivery.attempt", &trace_id, WAIT).await;
    assert_eq!(attempts.len(), 1, "one attempt span in the PATCH's trace");
    let attr = |k: &str| {
        attempts[0]
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attr("delivery_id").as_deref(), Some(delivery_id.as_str()));
    let requests = wait_for_spans("http", &trace_id, WAIT).await;
    assert_eq!(requests.len(), 1, "the PATCH request's own span");
    // The lead.created event came from a request without a trace context: another trace.
    let created = got
        .iter()
        .find(|g| g.header("x-qualifier-event") == "lead.created")
        .unwrap();
    assert_ne!(created.header("x-qualifier-delivery"), delivery_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_of_both_services_move_with_traffic() {
    let s = Stack::start().await;
    let delivery_metrics = format!("http://{}/metrics", s.delivery.as_ref().unwrap().addr);
    let api_metrics = format!("{}/metrics", s.internal);
    let page = |url: String| {
        let http = s.http.clone();
        async move {
            let r = http.get(url).send().await.unwrap();
            assert_eq!(r.status(), 200);
            assert!(
                r.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("text/plain")
            );
            r.text().await.unwrap()
        }
    };
    let before_api = page(api_metrics.clone()).await;
    let before_delivery = page(delivery_metrics.clone()).await;
    // Both pages say which build is running (a rolling upgrade shows as two versions).
    let build = format!(
        "qualifier_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    assert!(before_api.contains(&build), "{before_api}");
    assert!(before_delivery.contains(&build), "{before_delivery}");

    let lead = s.inbound("+447700900556").await;
    let id = lead["id"].as_str().unwrap();
    s.close_lead(id, None).await;
    s.receiver.wait_for(2, WAIT).await;

    let deadline = std::time::Instant::now() + WAIT;
    let (api, delivery) = loop {
        let api = page(api_metrics.clone()).await;
        let delivery = page(delivery_metrics.clone()).await;
        let delivered =
            |p: &str| metric(p, "qualifier_deliveries_total", &[("outcome", "delivered")]);
        let depth_seen = delivery.contains("qualifier_queue_depth{queue=\"work\"}");
        let backlog_seen = api.contains("qualifier_outbox_backlog ");
        // The relay counts a batch after its commit, which can come after the worker already
        // delivered it (the API page is also read first): wait for both counters.
        let published = |p: &str| metric(p, "qualifier_outbox_published_total", &[]);
        let relayed = published(&api) >= published(&before_api) + 2.0;
        if (delivered(&delivery) >= delivered(&before_delivery) + 2.0
            && relayed
            && depth_seen
            && backlog_seen)
            || std::time::Instant::now() > deadline
        {
            break (api, delivery);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    let patch = [
        ("route", "/api/v1/leads/{lead_id}"),
        ("method", "PATCH"),
        ("status", "200"),
    ];
    assert!(
        metric(&api, "qualifier_http_requests_total", &patch)
            >= metric(&before_api, "qualifier_http_requests_total", &patch) + 1.0
    );
    assert!(
        metric(
            &api,
            "qualifier_http_request_duration_seconds_count",
            &patch
        ) >= 1.0
    );
    assert!(
        metric(&api, "qualifier_outbox_published_total", &[])
            >= metric(&before_api, "qualifier_outbox_published_total", &[]) + 2.0
    );
    for name in [
        "qualifier_rate_limited_total",
        "qualifier_outbox_backlog",
        "qualifier_outbox_oldest_age_seconds",
    ] {
        assert!(
            api.contains(&format!("# TYPE {name}")),
            "{name} missing:\n{api}"
        );
    }
    assert!(
        metric(
            &delivery,
            "qualifier_deliveries_total",
            &[("outcome", "delivered")]
        ) >= metric(
            &before_delivery,
            "qualifier_deliveries_total",
            &[("outcome", "delivered")]
        ) + 2.0
    );
    assert!(
        metric(&delivery, "qualifier_event_to_delivery_seconds_count", &[])
            >= metric(
                &before_delivery,
                "qualifier_event_to_delivery_seconds_count",
                &[]
            ) + 2.0
    );
    assert!(
        metric(
            &delivery,
            "qualifier_delivery_attempt_duration_seconds_count",
            &[("result", "success")]
        ) >= 2.0
    );
    for q in ["work", "retry", "dead"] {
        assert!(
            delivery.contains(&format!("qualifier_queue_depth{{queue=\"{q}\"}}")),
            "{q} depth missing:\n{delivery}"
        );
    }
    assert!(delivery.contains("# TYPE qualifier_delivery_in_flight gauge"));
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_and_secrets_never_reach_the_logs_or_error_bodies() {
    let s = Stack::start().await;
    let lead = s.inbound("+447700900557").await;
    let id = lead["id"].as_str().unwrap();
    // A failing attempt first (its error path logs), then success.
    s.receiver.script(vec![Behaviour::Status(500)]);
    s.close_lead(id, None).await;
    // A wrong token and a wrong internal token: refused without echoing them.
    let wrong = format!("qlf_org_{}", uuid::Uuid::new_v4().simple());
    for (url, tok) in [
        (format!("{}/api/v1/leads/{id}", s.public), wrong.as_str()),
        (
            format!("{}/internal/v1/orgs/{}/deliveries", s.internal, s.org),
            "not-the-internal-token",
        ),
    ] {
        let r = s.http.get(url).bearer_auth(tok).send().await.unwrap();
        assert_eq!(r.status(), 401);
        let body = r.text().await.unwrap();
        assert_eq!(body, r#"{"error":"Unauthorized"}"#);
    }
    let rotated = s
        .org_call(Method::POST, "webhook/rotate-secret", None)
        .await["signing_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    s.receiver
        .set_secrets(vec![s.secret.clone(), rotated.clone()]);
    for d in s.deliveries().await {
        s.wait_status(d["id"].as_str().unwrap(), "succeeded", WAIT)
            .await;
    }

    let logs = captured_logs();
    // The capture works: this test's org appears in the logs (so the test can fail).
    assert!(logs.contains(&s.org), "the capture holds this test's lines");
    for (what, secret) in [
        ("org token", s.token.as_str()),
        ("wrong token", wrong.as_str()),
        ("internal token", INTERNAL_TOKEN),
        ("signing secret", s.secret.as_str()),
        ("rotated secret", rotated.as_str()),
        ("secret key", s.key_b64.as_str()),
    ] {
        assert!(!logs.contains(secret), "the {what} was logged");
    }
}
