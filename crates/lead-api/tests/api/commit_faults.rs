//! A success answer means the change committed (docs/reliability.md, "A 2xx is a commit"):
//! every endpoint of the public, internal and console APIs that writes, tried with its commit
//! refused and with its commit held and the backend terminated while it waits
//! (`qualifier_testkit::commit_fault`). Each must answer 503 with `Retry-After` and leave the
//! database as it was; the same request sent again once the fault is gone answers success, with
//! exactly one change and its events.
//!
//! The relay is pointed at a broker that is not there, so nothing but the request under test
//! writes while it runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};

use qualifier_testkit::commit_fault::{CommitFaults, Fault, changed};
use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};

use crate::console::{browser, csrf_of, get, sign_in};
use crate::helpers::{INTERNAL_TOKEN, TestApp};

/// What the requests act on, made before the fault is installed.
struct World {
    app: TestApp,
    org: String,
    token: String,
    token_id: String,
    lead: String,
    /// A handoff `requested` (to accept) and one `accepted` (to release), each on a lead of
    /// its own: (lead, handoff).
    requested: (String, String),
    accepted: (String, String),
    /// A delivery ended `dead`, for the replays.
    dead: String,
    /// A console session's cookie and its CSRF token.
    cookie: String,
    csrf: String,
    /// An unused console sign-in link.
    ticket: String,
    /// A client certificate and its key, not yet the endpoint's (it has another).
    fresh_pair: (String, String),
    /// A second org whose webhook filters (`channel` is `whatsapp`): its lead writes take the
    /// filtered statement, the first org's the plain one.
    filtered_org: String,
}

async fn world() -> World {
    let app = TestApp::spawn_with(|c| {
        c.allow_cidrs = vec!["127.0.0.0/8".parse().unwrap()];
        // No broker: the relay never connects, so it marks nothing while a fault is armed.
        c.brokers =
            qualifier_bus::Brokers::parse("amqp://guest:guest@127.0.0.1:9/%2f", None).unwrap();
    })
    .await;
    let (org, token) = app.org().await;
    let token_id = app.new_token(&org, "second").await["token"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.internal_expect(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook"),
        Some(json!({"url": "https://127.0.0.1:9443/hook",
                        "event_types": ["lead.created", "lead.updated", "handoff.created"]})),
    )
    .await;
    let lead = app.inbound_lead(&org, "+447700900321").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut handoffs = Vec::new();
    for phone in ["+447700900322", "+447700900323"] {
        let l = app.inbound_lead(&org, phone).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let h = app.open_handoff(&org, &l).await;
        handoffs.push((l, h));
    }
    let accepted = handoffs.pop().unwrap();
    let requested = handoffs.pop().unwrap();
    let r = app
        .internal(
            Method::POST,
            &format!(
                "/internal/v1/orgs/{org}/leads/{}/handoffs/{}/accept",
                accepted.0, accepted.1
            ),
            Some(json!({"operator": "op-1"})),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let pg = app.db.client().await;
    let dead: String = qualifier_testkit::sql::one(
        &pg,
        "UPDATE deliveries SET state = 'dead', due_at = NULL, attempts = 5
             WHERE seq = (SELECT min(seq) FROM deliveries WHERE org_id = $1::text::uuid)
             RETURNING delivery_id::text",
        &[&org],
    )
    .await;
    let cookie = sign_in(&app, &org).await;
    let (_, html) = get(&app, Some(&cookie), "/console").await;
    let csrf = csrf_of(&html);
    let ticket = crate::console::mint(&app, &org).await;
    let ca = qualifier_testkit::receiver::TestCa::new("Receiver Corp client CA");
    let (cert, key) = ca.issue("qualifier-client", 30);
    app.internal_expect(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook/client-certificate"),
        Some(json!({"certificate": cert, "private_key": key})),
    )
    .await;
    let fresh_pair = ca.issue("qualifier-client-next", 30);
    let (filtered_org, _) = app.org().await;
    app.internal_expect(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{filtered_org}/webhook"),
        Some(
            json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"],
                    "filter": {"data.lead.channel": "whatsapp"}}),
        ),
    )
    .await;
    World {
        app,
        org,
        token,
        token_id,
        lead,
        requested,
        accepted,
        dead,
        cookie,
        csrf,
        ticket,
        fresh_pair,
        filtered_org,
    }
}

type Answer = Pin<Box<dyn Future<Output = reqwest::Response> + Send>>;

impl World {
    fn internal(&self, method: Method, path: String, body: Option<Value>) -> Answer {
        let url = format!("{}{path}", self.app.internal);
        let rb = qualifier_testkit::authorized(&self.app.http, method, url, INTERNAL_TOKEN, body);
        Box::pin(async move { rb.send().await.unwrap() })
    }

    fn public(&self, method: Method, path: String, body: Option<Value>) -> Answer {
        let url = format!("{}{path}", self.app.public);
        let rb = qualifier_testkit::authorized(&self.app.http, method, url, &self.token, body);
        Box::pin(async move { rb.send().await.unwrap() })
    }

    fn console(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        let mut pairs = vec![("csrf", self.csrf.as_str())];
        pairs.extend_from_slice(form);
        let rb = browser()
            .post(format!("{}{path}", self.app.public))
            .header(header::COOKIE, &self.cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(
                url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(pairs)
                    .finish(),
            );
        Box::pin(async move { rb.send().await.unwrap() })
    }
}

/// One write path: its request, and how many events one success of it adds.
struct Case {
    request: fn(&World) -> Answer,
    events: i64,
}

/// Success as the caller reads it: a 2xx, or the console's redirect after a form.
fn succeeded(status: StatusCode) -> bool {
    status.is_success() || status == StatusCode::SEE_OTHER
}

async fn check(case: Case, fault: Fault) {
    let w = world().await;
    let faults = CommitFaults::install(&w.app.db).await;
    // The app folds the hourly totals' changes every second: folded now, so that a fold of the
    // world's own writes does not land between the two fingerprints.
    crate::helpers::fold_all(&w.app.store(), &w.app.db.client().await).await;
    let before = faults.fingerprint().await;
    let events = faults.events().await;

    faults.arm(fault).await;
    let done = AtomicBool::new(false);
    let answer = async {
        let r = (case.request)(&w).await;
        done.store(true, Ordering::SeqCst);
        r
    };
    let (r, cut) = match fault {
        Fault::Refuse => (answer.await, 0),
        Fault::Cut => tokio::join!(answer, faults.cut_held(&done)),
    };
    faults.disarm().await;
    let status = r.status();
    let retry_after = r.headers().get(header::RETRY_AFTER).cloned();
    let text = r.text().await.unwrap_or_default();
    assert!(
        fault == Fault::Refuse || cut > 0,
        "the request never held a commit"
    );
    let after = faults.fingerprint().await;
    assert_eq!(
        (
            status,
            changed(&before, &after),
            faults.events().await - events
        ),
        (StatusCode::SERVICE_UNAVAILABLE, vec![], 0),
        "{fault:?}: the answer, and what changed: {text}"
    );
    assert!(retry_after.is_some(), "503 without Retry-After");

    // Sent again, the same request makes exactly one change.
    let r = (case.request)(&w).await;
    let status = r.status();
    let text = r.text().await.unwrap_or_default();
    assert!(succeeded(status), "the retry: {status} {text}");
    let again = faults.fingerprint().await;
    assert!(
        !changed(&before, &again).is_empty(),
        "the retry changed nothing"
    );
    assert_eq!(faults.events().await - events, case.events, "{text}");
}

/// One test per write path and fault, so that each names what failed.
macro_rules! commit_faults {
    ($($name:ident: $events:expr, |$w:ident| $request:expr;)*) => {
        $(
            mod $name {
                use super::*;

                fn case() -> Case {
                    Case {
                        request: |$w: &World| $request,
                        events: $events,
                    }
                }

                #[tokio::test(flavor = "multi_thread")]
                async fn refused_at_commit() {
                    check(case(), Fault::Refuse).await;
                }

                #[tokio::test(flavor = "multi_thread")]
                async fn cut_while_committing() {
                    check(case(), Fault::Cut).await;
                }
            }
        )*
    };
}

commit_faults! {
    // The public API's writes send nothing back to the CRM that made them (the echo rule).
    public_post: 0, |w| w.public(Method::POST, "/api/v1/leads".into(),
        Some(json!({"name": "Grace", "phone": "+15550109999"})));
    public_patch: 1, |w| w.public(Method::PATCH, format!("/api/v1/leads/{}", w.lead),
        Some(json!({"status": "closed"})));
    public_erase: 1, |w| w.public(Method::DELETE, format!("/api/v1/leads/{}", w.lead), None);
    inbound: 1, |w| w.internal(Method::POST, format!("/internal/v1/orgs/{}/inbound", w.org),
        Some(json!({"name": "Alan", "phone": "+447700900999", "channel": "whatsapp"})));
    // An org with a filter: an event it lets through (a delivery row) and one it leaves out
    // (none), both from the lead write's filtered statement.
    inbound_filtered_in: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/inbound", w.filtered_org),
        Some(json!({"name": "Alan", "phone": "+447700900998", "channel": "whatsapp"})));
    inbound_filtered_out: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/inbound", w.filtered_org),
        Some(json!({"name": "Alan", "phone": "+447700900997", "channel": "sms"})));
    internal_patch: 1, |w| w.internal(Method::PATCH,
        format!("/internal/v1/orgs/{}/leads/{}", w.org, w.lead), Some(json!({"name": "Ada King"})));
    internal_erase: 1, |w| w.internal(Method::DELETE,
        format!("/internal/v1/orgs/{}/leads/{}", w.org, w.lead), None);
    create_org: 0, |w| w.internal(Method::POST, "/internal/v1/orgs".into(),
        Some(json!({"name": "Initech"})));
    create_token: 0, |w| w.internal(Method::POST, format!("/internal/v1/orgs/{}/tokens", w.org),
        Some(json!({"name": "third"})));
    revoke_token: 0, |w| w.internal(Method::DELETE,
        format!("/internal/v1/orgs/{}/tokens/{}", w.org, w.token_id), None);
    console_session: 0, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/console-sessions", w.org), None);
    put_webhook: 0, |w| w.internal(Method::PUT, format!("/internal/v1/orgs/{}/webhook", w.org),
        Some(json!({"url": "https://127.0.0.1:9443/other", "event_types": ["lead.created"]})));
    put_webhook_filter: 0, |w| w.internal(Method::PUT,
        format!("/internal/v1/orgs/{}/webhook", w.org),
        Some(json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"],
                    "filter": {"data.lead.channel": "whatsapp"}})));
    rotate_secret: 0, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/webhook/rotate-secret", w.org), None);
    test_event: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/webhook/test", w.org), None);
    create_handoff: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/leads/{}/handoffs", w.org, w.lead), None);
    accept_handoff: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/leads/{}/handoffs/{}/accept", w.org, w.requested.0,
                w.requested.1), Some(json!({"operator": "op-2"})));
    release_handoff: 1, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/leads/{}/handoffs/{}/release", w.org, w.accepted.0,
                w.accepted.1), Some(json!({})));
    replay_one: 0, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/deliveries/{}/replay", w.org, w.dead), None);
    replay_bulk: 0, |w| w.internal(Method::POST,
        format!("/internal/v1/orgs/{}/deliveries/replay", w.org), Some(json!({"status": ["dead"]})));
    console_sign_in: 0, |w| {
        let rb = browser().get(&w.ticket);
        Box::pin(async move { rb.send().await.unwrap() })
    };
    console_token: 0, |w| w.console("/console/tokens", &[("name", "from the console")]);
    console_revoke: 0, |w| w.console(&format!("/console/tokens/{}/revoke", w.token_id), &[]);
    console_replay: 0, |w| w.console(&format!("/console/deliveries/{}/replay", w.dead), &[]);
    console_sign_out: 0, |w| w.console("/console/logout", &[]);
    put_client_certificate: 0, |w| w.internal(Method::PUT,
        format!("/internal/v1/orgs/{}/webhook/client-certificate", w.org),
        Some(json!({"certificate": w.fresh_pair.0, "private_key": w.fresh_pair.1})));
    delete_client_certificate: 0, |w| w.internal(Method::DELETE,
        format!("/internal/v1/orgs/{}/webhook/client-certificate", w.org), None);
    console_webhook_save: 0, |w| w.console("/console/webhook", &[
        ("url", "https://127.0.0.1:9443/other"), ("event_types", "lead.created"),
        ("enabled", "true")]);
    console_rotate: 0, |w| w.console("/console/webhook/rotate", &[]);
    console_webhook_test: 1, |w| w.console("/console/webhook/test", &[]);
    console_events_test: 1, |w| w.console("/console/events/test", &[("event_type", "lead.created")]);
    console_certificate: 0, |w| w.console("/console/webhook/client-certificate", &[
        ("certificate", &w.fresh_pair.0), ("private_key", &w.fresh_pair.1)]);
    console_certificate_remove: 0, |w| w.console("/console/webhook/client-certificate/remove", &[]);
    console_replay_dead: 0, |w| w.console("/console/deliveries/replay-dead", &[]);
}
