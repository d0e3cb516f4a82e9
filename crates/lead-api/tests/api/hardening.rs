//! The hardening rules of docs/reliability.md, "Hostile input", each tried as an attacker would: made-up methods,
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
    let patch = |body: Value, field| (Method::PATCH, lead_path.clone(), body, field);
    let inbound_path = format!("/internal/v1/orgs/{org}/inbound");
    let inbound = |body: Value, field| (Method::POST, inbound_path.clone(), body, field);
    let endpoints_path = format!("/internal/v1/orgs/{org}/endpoints");
    // An endpoint whose destination has `v` in one field, every other field valid.
    let to = |destination: Value, field| {
        let body = json!({"destination": destination, "event_types": ["lead.created"]});
        (Method::POST, endpoints_path.clone(), body, field)
    };
    let broker = "amqps://crm:pw@broker.example.com/leads";
    let queue = "https://sqs.eu-west-1.amazonaws.com/123456789012/leads";
    let aws = |kind: &str, more: Value| {
        let mut d = json!({"type": kind, "region": "eu-west-1"});
        for (k, x) in more.as_object().unwrap() {
            d[k] = x.clone();
        }
        d
    };
    let mut rows = vec![
        // Destinations: every field a receiver types in.
        to(
            json!({"type": "amqp", "url": format!("{broker}{v}"), "exchange": "x", "routing_key": "k"}),
            "destination.url",
        ),
        to(
            json!({"type": "amqp", "url": broker, "exchange": v, "routing_key": "k"}),
            "destination.exchange",
        ),
        to(
            json!({"type": "amqp", "url": broker, "exchange": "x", "routing_key": v}),
            "destination.routing_key",
        ),
        to(
            aws("sqs", json!({"queue_url": format!("{queue}{v}")})),
            "destination.queue_url",
        ),
        to(
            json!({"type": "sqs", "queue_url": queue, "region": format!("eu-west-1{v}")}),
            "destination.region",
        ),
        to(
            aws(
                "sqs",
                json!({"queue_url": queue, "endpoint_url": format!("https://sqs.example.com/{v}")}),
            ),
            "destination.endpoint_url",
        ),
        to(
            aws(
                "sqs",
                json!({"queue_url": queue,
                              "credentials": {"access_key_id": v, "secret_access_key": "s"}}),
            ),
            "destination.credentials",
        ),
        to(
            aws("eventbridge", json!({"event_bus": v})),
            "destination.event_bus",
        ),
        to(
            aws("eventbridge", json!({"event_bus": "crm", "source": v})),
            "destination.source",
        ),
        to(aws("s3", json!({"bucket": v})), "destination.bucket"),
        to(
            aws("s3", json!({"bucket": "crm-events", "prefix": v})),
            "destination.prefix",
        ),
    ];
    rows.extend(vec![
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
        inbound(
            json!({"name": v, "phone": "+447700900112", "channel": "sms"}),
            "name",
        ),
        inbound(
            json!({"name": "B", "phone": "+447700900112", "channel": "sms", "email": v}),
            "email",
        ),
        inbound(
            json!({"name": "B", "phone": "+447700900112", "channel": v}),
            "channel",
        ),
        inbound(
            json!({"name": "B", "phone": "+447700900112", "channel": "sms", "profile": {"budget": v}}),
            "profile.budget",
        ),
        patch(json!({"name": v}), "name"),
        patch(json!({"email": v}), "email"),
        patch(json!({"phone": v}), "phone"),
        patch(json!({"route_target": v}), "route_target"),
        patch(json!({"qualification_stage": v}), "qualification_stage"),
        patch(json!({"profile": {"area": v}}), "profile.area"),
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
    ]);
    rows
}

#[tokio::test(flavor = "multi_thread")]
async fn control_characters_in_any_text_field_are_a_422_naming_it() {
    let app = TestApp::spawn().await;
    let (org, token, lead) = app.org_with_lead("+447700900123").await;
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
    app.internal_expect(
        200,
        Method::POST,
        &format!("/internal/v1/orgs/{org}/leads/{lead_id}/handoffs/{handoff}/accept"),
        Some(json!({"operator": "op-7"})),
    )
    .await;
    app.public_expect(
        200,
        Method::PATCH,
        &format!("/api/v1/leads/{lead_id}"),
        &token,
        Some(json!({"external_ref": {"system": "crm", "id": "a\tb"}})),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_never_finishes_gets_408_within_ten_seconds() {
    let app = TestApp::spawn().await;
    let (_, token, lead) = app.org_with_lead("+447700900123").await;
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
    let r = app.get_lead(&token, &lead).await;
    assert_eq!(r.json::<Value>().await.unwrap()["lead"]["ai_paused"], false);
}

/// Sessions of this test's database waiting on a lock.
async fn sessions_waiting_on_a_lock(c: &tokio_postgres::Client) -> i64 {
    qualifier_testkit::sql::one(
        c,
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
        &[],
    )
    .await
}

/// Waits until the service listens for token notifications (its filter is then loaded).
async fn wait_for_token_listener(c: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = qualifier_testkit::sql::one(
            c,
            "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND query LIKE '%LISTEN qualifier_tokens%'",
            &[],
        )
        .await;
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
    app.public_expect(404, Method::GET, &path, &token, None)
        .await;
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

/// docs/reliability.md, "Strangers, quotas and pages": quotas where one org could load everyone. Test events: 10 a minute per
/// org, API and console together, then 429 with Retry-After. Tokens: 100 unrevoked per org.
#[tokio::test(flavor = "multi_thread")]
async fn the_eleventh_test_event_in_a_minute_and_the_hundred_and_first_token_are_refused() {
    let app = crate::console::app().await;
    let (org, _) = app.org().await;
    app.internal_expect(200, Method::PUT,
            &format!("/internal/v1/orgs/{org}/webhook"),
            Some(serde_json::json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"]}))).await;
    let test = format!("/internal/v1/orgs/{org}/webhook/test");
    for i in 0..9 {
        assert_eq!(
            app.internal(Method::POST, &test, None).await.status(),
            202,
            "test event {i}"
        );
    }
    // The tenth through the console, the eleventh through either is refused.
    let cookie = crate::console::sign_in(&app, &org).await;
    let (_, page) = crate::console::get(&app, Some(&cookie), "/console").await;
    let csrf = crate::console::csrf_of(&page);
    let (status, _, _) =
        crate::console::post(&app, &cookie, "/console/webhook/test", &[("csrf", &csrf)]).await;
    assert_eq!(status, 303);
    let r = app.internal_expect(429, Method::POST, &test, None).await;
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "Rate limit exceeded"
    );
    let (status, html, _) =
        crate::console::post(&app, &cookie, "/console/webhook/test", &[("csrf", &csrf)]).await;
    assert_eq!(status, 429);
    assert!(html.contains("At most 10 test events a minute"), "{html}");
    let pg = app.db.client().await;
    let n: i64 = qualifier_testkit::sql::one(
        &pg,
        "SELECT count(*) FROM outbox WHERE org_id = $1::text::uuid AND is_test",
        &[&org],
    )
    .await;
    assert_eq!(n, 10, "the refused ones wrote nothing");

    // Tokens: the org has one; 99 more fit, the next does not, a revocation makes room.
    let tokens = format!("/internal/v1/orgs/{org}/tokens");
    let mut last = String::new();
    for i in 0..99 {
        let r = app.internal(Method::POST, &tokens, None).await;
        assert_eq!(r.status(), 201, "token {i}");
        last = r.json::<Value>().await.unwrap()["token"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    let r = app.internal_expect(422, Method::POST, &tokens, None).await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "Token limit reached"
    );
    app.internal_expect(204, Method::DELETE, &format!("{tokens}/{last}"), None)
        .await;
    assert_eq!(
        app.internal(Method::POST, &tokens, None).await.status(),
        201
    );
}

/// docs/reliability.md, "Strangers, quotas and pages": the public listener does not spend the database on strangers. A flood
/// of forged console cookies, made-up sign-in tickets and `/readyz` holds at most 2 database
/// connections at a time (read from pg_stat_activity), and the API's own GETs keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strangers_hold_at_most_two_database_connections() {
    use crate::helpers::base62;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let app = Arc::new(
        TestApp::spawn_with(|c| {
            c.db_pool_size = 16;
            c.http_workers = 2;
            c.rate_limit_per_minute = 10_000_000;
        })
        .await,
    );
    let (_, token, lead) = app.org_with_lead("+447700900555").await;
    let lead_path = format!("/api/v1/leads/{}", lead["id"].as_str().unwrap());
    let gets = |n: usize| {
        let (app, token, path) = (app.clone(), token.clone(), lead_path.clone());
        async move {
            let mut ms = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                let r = app.public(Method::GET, &path, &token, None).await;
                assert_eq!(r.status(), 200, "the API keeps answering");
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            ms.sort_by(f64::total_cmp);
            ms[ms.len() * 99 / 100]
        }
    };
    let quiet_p99 = gets(200).await;
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let mut flood = Vec::new();
    for i in 0..48 {
        let (app, stop, sent) = (app.clone(), stop.clone(), sent.clone());
        flood.push(tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            while !stop.load(Ordering::Relaxed) {
                let rb = match i % 3 {
                    0 => http
                        .get(format!("{}/console", app.public))
                        .header("cookie", format!("qlf_console={}", base62(43))),
                    1 => http.get(format!(
                        "{}/console/login?ticket=qlf_ct_{}",
                        app.public,
                        base62(40)
                    )),
                    _ => http.get(format!("{}/readyz", app.public)),
                };
                let _ = rb.send().await;
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Strangers' statements in flight, sampled as fast as PostgreSQL answers.
    let sampler = {
        let (db, stop) = (app.db.client().await, stop.clone());
        tokio::spawn(async move {
            let mut most = 0i64;
            let mut samples = 0;
            while !stop.load(Ordering::Relaxed) {
                let n: i64 = qualifier_testkit::sql::one(
                    &db,
                    "SELECT count(*) FROM pg_stat_activity
                         WHERE datname = current_database() AND pid <> pg_backend_pid()
                           AND state <> 'idle'
                           AND (query ILIKE '%console_sessions%' OR query ILIKE '%console_tickets%'
                                OR query = 'SELECT 1')",
                    &[],
                )
                .await;
                most = most.max(n);
                samples += 1;
            }
            (most, samples)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let flooded_p99 = gets(200).await;
    stop.store(true, Ordering::Relaxed);
    for f in flood {
        f.await.unwrap();
    }
    let (most, samples) = sampler.await.unwrap();
    println!(
        "strangers sent {} requests; at most {most} of their statements in flight over {samples} samples; API GET p99 {quiet_p99:.1} ms quiet, {flooded_p99:.1} ms flooded",
        sent.load(Ordering::Relaxed)
    );
    assert!(samples > 100, "the sampler kept up: {samples}");
    assert!(most <= 2, "strangers held {most} connections at once");
    assert!(
        flooded_p99 < 2000.0,
        "API GET p99 under the flood: {flooded_p99:.1} ms"
    );
}

/// A PEM file holding the certificate and its key, pasted whole into the certificate field, is
/// refused with a 422 that says so, and no column keeps the key in clear (docs/decisions.md, "A 2xx
/// is a commit"); what is kept of an accepted certificate is the chain made again from its
/// certificates.
#[tokio::test(flavor = "multi_thread")]
async fn a_private_key_pasted_into_the_certificate_field_is_never_stored() {
    let app = crate::console::app().await;
    let (org, _) = app.org().await;
    app.loopback_webhook(&org).await;
    let ca = qualifier_testkit::receiver::TestCa::new("Receiver Corp client CA");
    let (cert, key) = ca.issue("qualifier-client", 30);
    let path = format!("/internal/v1/orgs/{org}/webhook/client-certificate");
    for certificate in [format!("{cert}{key}"), format!("{key}\n{cert}")] {
        let r = app
            .internal(
                Method::PUT,
                &path,
                Some(json!({"certificate": certificate, "private_key": key})),
            )
            .await;
        let (status, message) = error_of(r).await;
        assert_eq!(status, 422);
        assert!(message.contains("holds a private key"), "{message}");
    }
    // With a note before it, as some tools write: accepted, and only the certificate is kept.
    let r = app
        .internal(
            Method::PUT,
            &path,
            Some(
                json!({"certificate": format!("subject=CN = qualifier-client\n{cert}"),
                        "private_key": key}),
            ),
        )
        .await;
    assert_eq!(r.status(), 200);
    let kept: String = qualifier_testkit::sql::one(
        &app.db.client().await,
        "SELECT client_cert_pem FROM webhooks WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await;
    assert!(kept.starts_with("-----BEGIN CERTIFICATE-----"), "{kept}");
    assert!(!kept.contains("subject="), "{kept}");
    let dump = app.db.data_dump();
    // The key's first two lines hold its secret (the rest of a PKCS#8 EC key is the public
    // key, which the certificate holds too).
    assert!(!dump.contains("PRIVATE KEY"));
    for line in key.lines().filter(|l| !l.starts_with("-----")).take(2) {
        assert!(
            !dump.contains(line),
            "the key's text {line} is in the database"
        );
    }
}

/// The test-event quota is the org's under concurrency: tests asked for at once on three
/// endpoints of one org, with nine already in the minute, pass once between them. The test
/// holds the outbox so that every request has counted before any inserts (without the org's
/// lock each counted nine and all three went through).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_test_events_on_several_endpoints_keep_to_the_orgs_quota() {
    let app = crate::console::app().await;
    let (org, _) = app.org().await;
    let hook =
        serde_json::json!({"url": "https://127.0.0.1:9443/hook", "event_types": ["lead.created"]});
    app.internal_expect(
        200,
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook"),
        Some(hook.clone()),
    )
    .await;
    let mut tests = vec![format!("/internal/v1/orgs/{org}/webhook/test")];
    for _ in 0..2 {
        let r = app
            .internal_expect(
                201,
                Method::POST,
                &format!("/internal/v1/orgs/{org}/endpoints"),
                Some(hook.clone()),
            )
            .await;
        let id = r.json::<Value>().await.unwrap()["endpoint"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        tests.push(format!("/internal/v1/orgs/{org}/endpoints/{id}/test"));
    }
    for _ in 0..9 {
        app.internal_expect(202, Method::POST, &tests[0], None)
            .await;
    }
    let holder = app.db.client().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE outbox IN SHARE MODE")
        .await
        .unwrap();
    let asked: Vec<_> = tests
        .iter()
        .map(|path| {
            let (http, url) = (app.http.clone(), format!("{}{path}", app.internal));
            tokio::spawn(async move {
                qualifier_testkit::authorized(
                    &http,
                    Method::POST,
                    url,
                    crate::helpers::INTERNAL_TOKEN,
                    None,
                )
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
            })
        })
        .collect();
    crate::helpers::until_waiting_on_locks(&holder, 3).await;
    holder.batch_execute("COMMIT").await.unwrap();
    let mut statuses = Vec::new();
    for a in asked {
        statuses.push(a.await.unwrap());
    }
    statuses.sort();
    assert_eq!(
        statuses,
        vec![202, 429, 429],
        "one of the three fits the org's ten"
    );
    let n: i64 = qualifier_testkit::sql::one(
        &holder,
        "SELECT count(*) FROM outbox WHERE org_id = $1::text::uuid AND is_test",
        &[&org],
    )
    .await;
    assert_eq!(n, 10);
}

/// 503 only for what a retry can cure: a write PostgreSQL refuses whatever the moment (a data
/// exception in a trigger, here a division by zero) answers 500 without detail and no
/// `Retry-After`, and stores nothing; a deadlock-free retry would meet it again forever.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_that_can_never_succeed_is_a_500_not_a_503() {
    let app = crate::console::app().await;
    let (org, _) = app.org().await;
    let pg = app.db.client().await;
    pg.batch_execute(
        "CREATE FUNCTION qualifier_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM 1 / 0; RETURN NEW; END $$;
         CREATE TRIGGER qualifier_test_refuse BEFORE INSERT ON leads
         FOR EACH ROW EXECUTE FUNCTION qualifier_test_refuse()",
    )
    .await
    .unwrap();
    let r = app
        .internal(
            Method::POST,
            &format!("/internal/v1/orgs/{org}/inbound"),
            Some(json!({"name": "Ada", "phone": "+447700900999", "channel": "sms"})),
        )
        .await;
    assert_eq!(r.status(), 500);
    assert!(r.headers().get("retry-after").is_none());
    let body = r.text().await.unwrap();
    assert!(!body.contains("division"), "no detail: {body}");
    let n: i64 = qualifier_testkit::sql::one(
        &pg,
        "SELECT count(*) FROM leads WHERE org_id = $1::text::uuid",
        &[&org],
    )
    .await;
    assert_eq!(n, 0);
}
