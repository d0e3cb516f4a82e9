//! Standard Webhooks: deliveries verify with the off-the-shelf `standardwebhooks` library
//! (PyPI), with no code of ours, and `webhook-id` is the delivery id on every attempt.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use qualifier_testkit::receiver::{Behaviour, Received};
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

/// Runs the PyPI `standardwebhooks` library on a received request; true when it accepts it.
pub fn python_verifies(standard_secret: &str, got: &Received) -> bool {
    qualifier_testkit::local::standard_webhooks_verifies(
        standard_secret,
        |h| got.header(h).to_owned(),
        &got.body,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_verify_with_the_standard_webhooks_library() {
    let s = Stack::start().await;
    // The secret in the form the libraries take, as the API hands it out.
    let r = s
        .org_call(Method::POST, "webhook/rotate-secret", None)
        .await;
    let secret = r["signing_secret"].as_str().unwrap().to_owned();
    let standard = r["standard_webhooks_secret"].as_str().unwrap().to_owned();
    assert!(standard.starts_with("whsec_"), "{r}");
    s.receiver.set_secrets(vec![secret.clone()]);
    // Two failures first: the retries must carry the same webhook-id.
    s.receiver.script(vec![
        Behaviour::Status(500),
        Behaviour::Status(503),
        Behaviour::Ok,
    ]);
    s.inbound("+447700900901").await;
    let got = s.receiver.wait_for(3, WAIT).await;
    assert_eq!(got.len(), 3);
    for g in &got {
        assert_eq!(g.header("webhook-id"), g.header("x-qualifier-delivery"));
        let ts: i64 = g.header("webhook-timestamp").parse().unwrap();
        let iso = time::OffsetDateTime::parse(
            g.header("x-qualifier-timestamp"),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert_eq!(ts, iso.unix_timestamp(), "the same instant");
        assert!(python_verifies(&standard, g), "standardwebhooks refused it");
    }
    assert_eq!(got[0].header("webhook-id"), got[2].header("webhook-id"));
    // And a wrong secret is refused by the library (the check can fail).
    let wrong = qualifier_signing::standard::secret("qlf_whsec_not_the_secret_at_all_000000");
    assert!(!python_verifies(&wrong, &got[2]));
}

#[tokio::test(flavor = "multi_thread")]
async fn during_a_rotations_grace_window_both_secrets_verify_and_without_one_only_the_new() {
    let s = Stack::start().await;
    let old = qualifier_signing::standard::secret(&s.secret);
    let rotate = |grace: Value| {
        let s = &s;
        async move {
            s.org_call(
                Method::POST,
                "webhook/rotate-secret",
                Some(json!({ "grace_seconds": grace })),
            )
            .await
        }
    };
    // With a window: the new secret's entry first, the retiring one's second.
    let r = rotate(json!(3600)).await;
    let new = r["standard_webhooks_secret"].as_str().unwrap().to_owned();
    let expires = r["previous_secret_expires_at"].as_str().unwrap();
    assert!(expires.ends_with('Z'), "{r}");
    s.receiver
        .set_secrets(vec![r["signing_secret"].as_str().unwrap().to_owned()]);
    s.inbound("+447700900902").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    let g = got.last().unwrap();
    assert_eq!(g.header("webhook-signature").split(' ').count(), 2);
    assert!(python_verifies(&new, g), "the new secret verifies");
    assert!(
        python_verifies(&old, g),
        "the previous secret still verifies"
    );
    assert_eq!(
        g.verified_with,
        Some(0),
        "X-Qualifier-Signature: the new secret only"
    );

    // Without a window: only the new one, at once.
    let r = rotate(json!(0)).await;
    assert!(r["previous_secret_expires_at"].is_null(), "{r}");
    let newest = r["standard_webhooks_secret"].as_str().unwrap().to_owned();
    s.receiver
        .set_secrets(vec![r["signing_secret"].as_str().unwrap().to_owned()]);
    s.inbound("+447700900903").await;
    let got = s.receiver.wait_for(2, WAIT).await;
    let g = got.last().unwrap();
    assert_eq!(g.header("webhook-signature").split(' ').count(), 1);
    assert!(python_verifies(&newest, g));
    assert!(
        !python_verifies(&new, g),
        "the retired secret no longer verifies"
    );
    assert!(!python_verifies(&old, g));

    // The window is validated.
    for bad in [json!(-1), json!(604_801), json!("1h"), json!(1.5)] {
        let path = format!("/internal/v1/orgs/{}/webhook/rotate-secret", s.org);
        let r = s
            .request(Method::POST, &path, Some(json!({ "grace_seconds": bad })))
            .await;
        assert_eq!(r.status(), 422, "{bad}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["error"],
            "grace_seconds must be an integer from 0 to 604800"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_event_arrives_signed_marked_and_in_the_delivery_log() {
    let s = Stack::start().await;
    let test = |body: Option<Value>| {
        let s = &s;
        async move {
            let path = format!("/internal/v1/orgs/{}/webhook/test", s.org);
            s.request(Method::POST, &path, Some(body.unwrap_or(json!({}))))
                .await
        }
    };
    // A type the webhook is not subscribed to: asked for by name, so it is sent.
    let r = test(Some(json!({"event_type": "handoff.accepted"}))).await;
    assert_eq!(r.status(), 202);
    let v: Value = r.json().await.unwrap();
    let id = v["delivery"]["id"].as_str().unwrap().to_owned();
    assert_eq!(v["delivery"]["event_type"], "handoff.accepted");
    let got = s.receiver.wait_for(1, WAIT).await;
    let g = &got[0];
    assert_eq!(g.header("x-qualifier-test"), "true");
    assert_eq!(g.header("x-qualifier-delivery"), id);
    assert_eq!(g.verified_with, Some(0), "signed like any delivery");
    let standard = qualifier_signing::standard::secret(&s.secret);
    assert!(python_verifies(&standard, g));
    let env = g.json();
    assert_eq!(env["type"], "handoff.accepted");
    assert_eq!(
        env["data"]["lead"]["id"],
        "00000000-0000-0000-0000-000000000000"
    );
    assert_eq!(env["data"]["handoff"]["state"], "accepted");
    let d = s.wait_status(&id, "succeeded", WAIT).await;
    assert_eq!(d["attempt_log"][0]["status_code"], 200);
    // No type given: the first subscribed type. A real event carries no test header.
    let r = test(None).await;
    assert_eq!(r.status(), 202);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["delivery"]["event_type"], "lead.created");
    s.inbound("+447700900904").await;
    let got = s.receiver.wait_for(3, WAIT).await;
    let real = got
        .iter()
        .find(|g| g.json()["data"]["lead"]["phone"] == "+447700900904")
        .unwrap();
    assert_eq!(real.header("x-qualifier-test"), "");

    // 422 for an unknown type, 409 when disabled, 404 when not configured.
    let r = test(Some(json!({"event_type": "lead.deleted"}))).await;
    assert_eq!(r.status(), 422);
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": ["lead.created"], "enabled": false}))
        .await;
    let r = test(None).await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "Webhook is disabled"
    );
    let other = s.new_org("Bare").await;
    let r = s
        .request(
            Method::POST,
            &format!("/internal/v1/orgs/{other}/webhook/test"),
            None,
        )
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "Webhook not configured"
    );
}

/// Validates `body` against `docs/schemas/<event type>.schema.json` with the PyPI `jsonschema`
/// library (an implementation of JSON Schema that is not ours); the error when it fails.
fn schema_errors(event_type: &str, body: &[u8]) -> Option<String> {
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(format!("{event_type}.schema.json"));
    let script = "import json, sys\n\
                  from jsonschema import Draft202012Validator\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  errors = [e.message for e in Draft202012Validator(schema).iter_errors(json.load(sys.stdin))]\n\
                  print('; '.join(errors)); sys.exit(1 if errors else 0)\n";
    let mut child = Command::new("python3")
        .args(["-c", script, schema.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().expect("python3 ends");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn delivered_events_of_every_type_validate_against_the_published_schemas() {
    let s = Stack::start().await;
    let url = s.receiver.url.clone();
    let all = [
        "lead.created",
        "lead.updated",
        "lead.stage_changed",
        "lead.qualified",
        "handoff.created",
        "handoff.accepted",
        "handoff.released",
    ];
    s.put_webhook(json!({"url": url, "event_types": all, "enabled": true}))
        .await;
    let org = s.org.clone();
    // created, then updated (profile), stage_changed + qualified, then a handoff's three steps.
    let lead = s.inbound("+447700900905").await;
    let id = lead["id"].as_str().unwrap().to_owned();
    let path = format!("/internal/v1/orgs/{org}/leads/{id}");
    s.call(
        Method::PATCH,
        &path,
        Some(json!({"profile": {"area": "Soho", "bedrooms": 3}})),
    )
    .await;
    s.call(
        Method::PATCH,
        &path,
        Some(json!({"qualification_stage": "qualified"})),
    )
    .await;
    let h = s
        .call(
            Method::POST,
            &format!("{path}/handoffs"),
            Some(json!({"reason": "asks"})),
        )
        .await;
    let hid = h["handoff"]["id"].as_str().unwrap().to_owned();
    s.call(
        Method::POST,
        &format!("{path}/handoffs/{hid}/accept"),
        Some(json!({"operator": "op-7"})),
    )
    .await;
    s.call(
        Method::POST,
        &format!("{path}/handoffs/{hid}/release"),
        None,
    )
    .await;
    // And a test event, which must validate too.
    s.call(
        Method::POST,
        &format!("/internal/v1/orgs/{org}/webhook/test"),
        Some(json!({"event_type": "lead.stage_changed"})),
    )
    .await;
    let got = s.receiver.wait_for(8, WAIT).await;
    assert_eq!(got.len(), 8);
    let mut seen = std::collections::BTreeSet::new();
    for g in &got {
        let t = g.header("x-qualifier-event").to_owned();
        if let Some(e) = schema_errors(&t, &g.body) {
            panic!(
                "{t} does not match its schema: {e}\n{}",
                String::from_utf8_lossy(&g.body)
            );
        }
        seen.insert(t);
    }
    assert_eq!(seen.len(), all.len(), "every type was delivered: {seen:?}");
    // The check can fail: a revision that is not a number, or a field outside `data`.
    let t = got[0].header("x-qualifier-event");
    let mut bad = got[0].json();
    bad["data"]["lead"]["revision"] = json!("2");
    assert!(schema_errors(t, bad.to_string().as_bytes()).is_some());
    let mut bad = got[0].json();
    bad["surprise"] = json!(1);
    assert!(schema_errors(t, bad.to_string().as_bytes()).is_some());
    // Additions inside `data` and `data.lead` are accepted: receivers ignore what they do not
    // know, so a new field is not a breaking change.
    let mut added = got[0].json();
    added["data"]["surprise"] = json!(1);
    added["data"]["lead"]["surprise"] = json!({"nested": true});
    assert_eq!(schema_errors(t, added.to_string().as_bytes()), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn delivered_snapshots_carry_their_revision_and_what_changed() {
    let s = Stack::start().await;
    let url = s.receiver.url.clone();
    s.put_webhook(json!({"url": url, "event_types": [
        "lead.created", "lead.updated", "lead.stage_changed", "lead.qualified"
    ], "enabled": true}))
        .await;
    let org = s.org.clone();
    let lead = s.inbound("+447700900906").await;
    let path = format!(
        "/internal/v1/orgs/{org}/leads/{}",
        lead["id"].as_str().unwrap()
    );
    for change in [
        // Keys added.
        json!({"profile": {"area": "Soho", "bedrooms": 3}}),
        // One changed, one removed, one added.
        json!({"profile": {"area": "Mayfair", "bedrooms": null, "pets": true}}),
        // Contact fields.
        json!({"name": "Ada King", "email": "ada@new.example"}),
        // The stage.
        json!({"qualification_stage": "qualified"}),
    ] {
        s.call(Method::PATCH, &path, Some(change)).await;
    }
    let got = s.receiver.wait_for(6, WAIT).await;
    let mut events: Vec<(i64, String, Value)> = got
        .iter()
        .map(|g| {
            let t = g.header("x-qualifier-event").to_owned();
            assert_eq!(schema_errors(&t, &g.body), None, "{t}");
            let v = g.json();
            (
                v["data"]["lead"]["revision"].as_i64().expect("a revision"),
                t,
                v["data"]["previous"].clone(),
            )
        })
        .collect();
    events.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let want = [
        (1, "lead.created", Value::Null),
        (
            2,
            "lead.updated",
            json!({"profile": {"area": null, "bedrooms": null}}),
        ),
        (
            3,
            "lead.updated",
            json!({"profile": {"area": "Soho", "bedrooms": 3, "pets": null}}),
        ),
        (
            4,
            "lead.updated",
            json!({"name": "Ada Lovelace", "email": null}),
        ),
        (
            5,
            "lead.qualified",
            json!({"qualification_stage": "qualifying"}),
        ),
        (
            5,
            "lead.stage_changed",
            json!({"qualification_stage": "qualifying"}),
        ),
    ];
    let got: Vec<(i64, &str, &Value)> =
        events.iter().map(|(r, t, p)| (*r, t.as_str(), p)).collect();
    let want: Vec<(i64, &str, &Value)> = want.iter().map(|(r, t, p)| (*r, *t, p)).collect();
    assert_eq!(got, want);
}
