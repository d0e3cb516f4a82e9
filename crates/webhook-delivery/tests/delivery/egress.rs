//! Egress for receivers behind firewalls (docs/receivers.md, "Fixed addresses and client
//! certificates"): every request through a real forward proxy (Debian's squid, allowing only
//! `CONNECT`) to the address the endpoint rules checked, and client certificates presented to a
//! receiver that completes a TLS handshake only with one issued by its own CA.

use std::time::{Duration, Instant};

use qualifier_egress::proxy::EgressProxy;
use qualifier_testkit::proxy::Squid;
use qualifier_testkit::receiver::{Behaviour, Receiver, TestCa};
use reqwest::Method;
use serde_json::{Value, json};
use webhook_delivery::decide::HealthRules;

use crate::stack::Stack;

/// Credentials in the proxy's URL: squid ignores them; no log or page may show them.
const PROXY_PASSWORD: &str = "pr0xy-pa55word-never-logged";

fn proxy_config(squid: &Squid) -> EgressProxy {
    EgressProxy::parse(&format!(
        "http://egress:{PROXY_PASSWORD}@127.0.0.1:{}",
        squid.port
    ))
    .unwrap()
}

/// `PUT …/webhook/client-certificate`: status and body.
async fn put_certificate(s: &Stack, certificate: &str, private_key: &str) -> (u16, Value) {
    let path = format!("/internal/v1/orgs/{}/webhook/client-certificate", s.org);
    let body = json!({"certificate": certificate, "private_key": private_key});
    let r = s.request(Method::PUT, &path, Some(body)).await;
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Points the stack's webhook at `url`, keeping its events.
async fn point_at(s: &Stack, url: &str) {
    s.put_webhook(json!({"url": url, "event_types": ["lead.created", "lead.updated", "lead.stage_changed", "lead.qualified", "handoff.created"], "enabled": true}))
        .await;
}

async fn metric(s: &Stack, name: &str) -> f64 {
    let url = format!("http://{}/metrics", s.delivery.as_ref().unwrap().addr);
    let page = qualifier_testkit::text_200(s.http.get(url)).await;
    qualifier_testkit::telemetry::metric(&page, name, &[])
}

async fn wait_until<F: AsyncFn() -> bool>(what: &str, within: Duration, f: F) {
    let deadline = Instant::now() + within;
    while !f().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn through_the_proxy_every_request_is_a_connect_to_the_checked_address() {
    let squid = Squid::start();
    let proxy = proxy_config(&squid);
    let s = Stack::start_with(move |c| {
        c.egress_proxy = Some(proxy);
        c.health = HealthRules {
            failing_after: 3,
            failing_span: Duration::from_millis(1),
            probe_min: Duration::from_millis(200),
            probe_max: Duration::from_millis(400),
            disable_after: Duration::from_secs(3600),
        };
    })
    .await;
    // An enterprise receiver: mutual TLS, named by host (the proxy must be asked for the
    // address it resolved to, never the name).
    let ca = TestCa::new("Receiver Corp client CA");
    let mtls = Receiver::start_with_client_ca(Some(&ca.pem)).await;
    mtls.set_secrets(vec![s.secret.clone()]);
    let port = mtls.port();
    point_at(&s, &format!("https://localhost:{port}/hooks/qualifier")).await;
    let (cert, key) = ca.issue("qualifier-prod", 90);
    assert_eq!(put_certificate(&s, &cert, &key).await.0, 200);

    for i in 0..5 {
        s.inbound(&format!("+3163000{i:04}")).await;
    }
    let got = mtls.wait_for(5, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 5);
    // A test event, then a probe: make the endpoint fail three times, let the probe through.
    s.org_call(Method::POST, "webhook/test", None).await;
    mtls.wait_for(6, Duration::from_secs(20)).await;
    mtls.set_behaviour(Behaviour::Status(500));
    for i in 5..8 {
        s.inbound(&format!("+3163000{i:04}")).await;
    }
    wait_until("the endpoint fails", Duration::from_secs(20), async || {
        s.webhook().await["health"]["state"] == "failing"
    })
    .await;
    // A probe through the proxy first (answered 500): a retry sent before the endpoint was
    // found failing could otherwise meet the receiver's recovery and make it healthy with no
    // probe at all (a CI run on a busy machine did).
    wait_until(
        "a probe comes through",
        Duration::from_secs(20),
        async || {
            mtls.received()
                .iter()
                .any(|r| r.header("x-qualifier-probe") == "true")
        },
    )
    .await;
    mtls.set_behaviour(Behaviour::Ok);
    wait_until("a probe recovers it", Duration::from_secs(20), async || {
        s.webhook().await["health"]["state"] == "healthy"
    })
    .await;
    // The three deliveries that met the 500s are sent again after the recovery: count the
    // receiver's requests only once every delivery has ended, so none arrives after the count.
    wait_until(
        "every delivery succeeded",
        Duration::from_secs(60),
        async || {
            let ds = s.deliveries().await;
            ds.len() >= 8 && ds.iter().all(|d| d["status"] == "succeeded")
        },
    )
    .await;
    let all = mtls.received();
    assert!(all.iter().any(|r| r.header("x-qualifier-test") == "true"));
    assert!(all.iter().any(|r| r.header("x-qualifier-probe") == "true"));
    // Every request the receiver saw came through a CONNECT tunnel to its address: squid logs
    // a tunnel when it closes.
    let n = all.len();
    wait_until(
        "squid logged every tunnel",
        Duration::from_secs(10),
        async || squid.requests().len() >= n,
    )
    .await;
    let tunnels = squid.requests();
    for (method, target, _) in &tunnels {
        assert_eq!(method, "CONNECT", "{}", squid.all_logs());
        assert!(
            target == &format!("127.0.0.1:{port}") || target == &format!("[::1]:{port}"),
            "an address, never a name: {target}"
        );
    }
    let opened = tunnels.iter().filter(|t| t.2 == "200").count();
    assert_eq!(opened, n, "one tunnel per request: {}", squid.all_logs());
    // The password reached nothing that shows.
    let logs = qualifier_testkit::telemetry::captured_logs();
    assert!(!logs.contains(PROXY_PASSWORD));
    assert!(!squid.all_logs().contains(PROXY_PASSWORD));
    for d in s.deliveries().await {
        let d = s.delivery_in(&s.org, d["id"].as_str().unwrap()).await;
        assert!(!d.to_string().contains(PROXY_PASSWORD));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_resolving_to_a_private_address_never_reaches_the_proxy() {
    let squid = Squid::start();
    let proxy = proxy_config(&squid);
    // The worker allows no private range (as in production); the API's test allow-list lets
    // the loopback webhook be saved.
    let s = Stack::start_with(move |c| {
        c.egress_proxy = Some(proxy);
        c.allow_cidrs = Vec::new();
    })
    .await;
    let port = s.receiver.port();
    point_at(&s, &format!("https://localhost:{port}")).await;
    let lead = s.inbound("+31640000001").await;
    let _ = lead;
    let d = &s.deliveries().await[0];
    let id = d["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let d = loop {
        let d = s.delivery_in(&s.org, id).await;
        if d["attempts"].as_i64().unwrap_or(0) >= 1 {
            break d;
        }
        assert!(Instant::now() < deadline, "never attempted: {d}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(d["attempt_log"][0]["error_kind"], "refused_address", "{d}");
    assert_eq!(squid.requests(), Vec::new(), "nothing reached the proxy");
    assert!(s.receiver.received().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_down_for_twenty_seconds_costs_retries_never_deliveries_or_health() {
    let mut squid = Squid::start();
    let proxy = proxy_config(&squid);
    // Retries 1, 4, 8 and 16 s apart: the schedule outlasts the outage, as production's
    // (30 s to 32 min) outlasts a proxy restart.
    let s = Stack::start_with_retry_delays(
        vec![1000, 4000, 8000, 16000],
        |_| {},
        move |c| {
            c.egress_proxy = Some(proxy);
            c.health = HealthRules {
                failing_after: 3,
                failing_span: Duration::from_millis(1),
                ..HealthRules::default()
            };
        },
    )
    .await;
    s.inbound("+31650000000").await;
    s.receiver.wait_for(1, Duration::from_secs(20)).await;
    // Stopped between requests: a tunnel cut in the middle of one cannot be told from the
    // endpoint closing it, and counts as that request's failure (docs/decisions.md).
    let first = s.deliveries().await[0]["id"].as_str().unwrap().to_owned();
    s.wait_status(&first, "succeeded", Duration::from_secs(10))
        .await;
    let errors_before = metric(&s, "qualifier_egress_proxy_errors_total").await;
    squid.down();
    let down_at = Instant::now();
    for i in 1..=10 {
        s.inbound(&format!("+3165000{i:04}")).await;
    }
    tokio::time::sleep(Duration::from_secs(20).saturating_sub(down_at.elapsed())).await;
    let during = s.deliveries().await;
    assert!(
        during
            .iter()
            .filter(|d| d["id"] != first.as_str())
            .all(|d| d["attempts"].as_i64().unwrap_or(0) >= 2),
        "attempts were made while it was down"
    );
    let h = s.webhook().await["health"].clone();
    assert_eq!(h["state"], "healthy", "the proxy is not the endpoint: {h}");
    assert_eq!(h["consecutive_failures"], 0, "{h}");
    let errors = metric(&s, "qualifier_egress_proxy_errors_total").await - errors_before;
    assert!(errors >= 10.0, "every failed request counted: {errors}");
    squid.up();
    let got = s.receiver.wait_for(11, Duration::from_secs(40)).await;
    assert_eq!(got.len(), 11, "nothing lost");
    let mut ids: Vec<String> = got
        .iter()
        .map(|r| r.header("x-qualifier-delivery").to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 11, "each once");
    for d in s.deliveries().await {
        let d = s
            .wait_status(
                d["id"].as_str().unwrap(),
                "succeeded",
                Duration::from_secs(10),
            )
            .await;
        let log = d["attempt_log"].as_array().unwrap().clone();
        assert!(d["id"] == first.as_str() || log.len() >= 3, "{d}");
        for a in &log[..log.len() - 1] {
            assert_eq!(a["error_kind"], "proxy", "{a}");
            assert!(!a.to_string().contains(PROXY_PASSWORD));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_requiring_a_client_certificate_gets_it_and_a_replacement_applies_to_queued_deliveries()
 {
    let s = Stack::start_with_retry_delays(vec![1500, 1500, 3000, 6000], |_| {}, |_| {}).await;
    let ca = TestCa::new("Receiver Corp client CA");
    let mtls = Receiver::start_with_client_ca(Some(&ca.pem)).await;
    mtls.set_secrets(vec![s.secret.clone()]);
    point_at(&s, &mtls.url).await;
    assert_eq!(s.webhook().await["client_certificate"], Value::Null);

    // Without a certificate: no delivery succeeds, and its attempts say why. In TLS 1.3 the
    // client's side of the handshake ends before the server has checked the (missing)
    // certificate, so the request can be under way when the server's alert closes the
    // connection; that attempt then reads as a connection closed before the request was sent
    // (`error_kind: request`). The attempts that follow, a second and a half apart, meet it.
    s.inbound("+31660000001").await;
    let id = s.deliveries().await[0]["id"].as_str().unwrap().to_owned();
    s.wait_status(&id, "failed", Duration::from_secs(15)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let entry = loop {
        let d = s.delivery_in(&s.org, &id).await;
        let log = d["attempt_log"].as_array().cloned().unwrap_or_default();
        if let Some(e) = log.iter().find(|a| a["error_kind"] == "tls") {
            break e.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no attempt failed on TLS: {d}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        entry["error"]
            .as_str()
            .unwrap()
            .contains("TLS handshake failed"),
        "{entry}"
    );
    assert!(mtls.received().is_empty());

    // A pair refused for what is wrong with it.
    let (cert, key) = ca.issue("qualifier-prod", 90);
    let (_, other_key) = ca.issue("someone-else", 90);
    let (expired, expired_key) = ca.issue("qualifier-old", -1);
    for (c, k, says) in [
        (cert.as_str(), other_key.as_str(), "does not match"),
        (
            expired.as_str(),
            expired_key.as_str(),
            "certificate expired at",
        ),
        (
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            key.as_str(),
            "certificate",
        ),
        (cert.as_str(), "not a key", "private_key"),
    ] {
        let (status, body) = put_certificate(&s, c, k).await;
        assert_eq!(status, 422, "{body}");
        let msg = body["error"].as_str().unwrap_or_default().to_owned();
        assert!(msg.contains(says), "{says}: {body}");
        assert!(!body.to_string().contains("PRIVATE KEY"));
    }

    // A certificate from another CA first: still refused by the receiver.
    let stranger = TestCa::new("Somebody else's CA");
    let (wrong, wrong_key) = stranger.issue("qualifier-prod", 90);
    // Set by the operator's command line this time.
    let dir = std::env::temp_dir().join(format!("qualifier-cert-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cert.pem"), &wrong).unwrap();
    std::fs::write(dir.join("key.pem"), &wrong_key).unwrap();
    let out = std::process::Command::new(crate::crash::workspace_binary("qualifierctl"))
        .args(["set-client-certificate", "--org", &s.org, "--certificate"])
        .arg(dir.join("cert.pem"))
        .arg("--private-key")
        .arg(dir.join("key.pem"))
        .env("DATABASE_URL", &s.db.url)
        .env("QUALIFIER_SECRET_KEY", &s.key_b64)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        shown["client_certificate"]["issuer"],
        "CN=Somebody else's CA"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PRIVATE"));
    s.inbound("+31660000002").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        mtls.received().is_empty(),
        "a certificate the receiver does not trust"
    );

    // The replacement applies to the deliveries already queued.
    let (status, shown) = put_certificate(&s, &cert, &key).await;
    assert_eq!(status, 200, "{shown}");
    let shown = &shown["client_certificate"];
    assert_eq!(shown["subject"], "CN=qualifier-prod");
    assert_eq!(shown["issuer"], "CN=Receiver Corp client CA");
    assert!(shown["not_after"].is_string());
    assert!(!shown.to_string().contains("PRIVATE"));
    let w = s.webhook().await;
    assert_eq!(&w["client_certificate"], shown);
    assert!(!w.to_string().contains("PRIVATE"));
    let got = mtls.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 2);
    for d in s.deliveries().await {
        s.wait_status(
            d["id"].as_str().unwrap(),
            "succeeded",
            Duration::from_secs(20),
        )
        .await;
    }
    // At rest the key is sealed.
    let sealed: Vec<u8> = qualifier_testkit::sql::one(
        &s.db.client().await,
        "SELECT client_key_sealed FROM webhooks WHERE org_id = $1::text::uuid",
        &[&s.org],
    )
    .await;
    assert!(!String::from_utf8_lossy(&sealed).contains("PRIVATE KEY"));

    // Removed: the next delivery goes without one and is refused again.
    s.org_call(Method::DELETE, "webhook/client-certificate", None)
        .await;
    assert_eq!(s.webhook().await["client_certificate"], Value::Null);
    s.inbound("+31660000003").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mtls.received().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_close_to_expiry_is_told_to_the_operator_once() {
    let op = Receiver::start().await;
    let url = op.url.clone();
    // The operator's webhook leaves through the egress proxy too.
    let squid = Squid::start();
    let proxy = proxy_config(&squid);
    let s = Stack::start_with(move |c| {
        c.egress_proxy = Some(proxy);
        c.operator_webhook = Some((
            url::Url::parse(&url).unwrap(),
            b"operator-secret-for-the-egress-tests".to_vec(),
        ));
    })
    .await;
    let ca = TestCa::new("Receiver Corp client CA");
    let (cert, key) = ca.issue("qualifier-expiring", 10);
    assert_eq!(put_certificate(&s, &cert, &key).await.0, 200);
    let got = op.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1);
    let e = got[0].json();
    assert_eq!(e["type"], "endpoint.certificate_expiring");
    assert_eq!(
        e["data"]["webhook"]["client_certificate"]["subject"],
        "CN=qualifier-expiring"
    );
    assert!(!e.to_string().contains("PRIVATE"));
    let op_port = op.port();
    let op_target = format!("127.0.0.1:{op_port}");
    wait_until(
        "the notice went through the proxy",
        Duration::from_secs(10),
        async || {
            squid
                .requests()
                .iter()
                .any(|(m, t, _)| m == "CONNECT" && t == &op_target)
        },
    )
    .await;
    // Two more checks (every 5 s) later: still the one notice.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(op.received().len(), 1);
    // A replacement far from expiry is not warned about; its own expiry will be.
    let (fresh, fresh_key) = ca.issue("qualifier-fresh", 365);
    assert_eq!(put_certificate(&s, &fresh, &fresh_key).await.0, 200);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(op.received().len(), 1);
}

/// The deployed proxy (`deploy/egress/squid.conf`) tunnels only to what a webhook endpoint can
/// be: from webhook-delivery's networks, a CONNECT to loopback, a private or link-local
/// address (the cloud's metadata service), or to a privileged port other than 443, is refused
/// by the proxy itself, whoever asks.
#[test]
fn the_deployed_proxy_refuses_tunnels_to_private_addresses_and_other_ports() {
    let squid = Squid::start_deployed();
    for refused in [
        "127.0.0.1:5432",
        "127.0.0.1:443",
        "10.1.2.3:443",
        "172.16.0.9:8443",
        "192.168.1.1:443",
        "169.254.169.254:443",
        "100.64.0.1:443",
        "[::1]:443",
        "[fd00::1]:443",
        "93.184.216.34:22",
        "93.184.216.34:25",
    ] {
        assert_eq!(
            squid.connect_status(refused),
            403,
            "{refused}: {}",
            squid.all_logs()
        );
    }
    // A public address on a webhook's port is let through to be tried (this machine has no
    // route there, so the proxy answers that it could not connect, not that it refuses).
    for tried in ["93.184.216.34:443", "93.184.216.34:8443"] {
        let status = squid.connect_status(tried);
        assert!(status != 403 && status != 0, "{tried}: {status}");
    }
}

/// Behind the egress proxy, a destination that cannot be tunnelled yet (a broker) is never
/// reached around the proxy: its attempt fails as the proxy's, which leaves the endpoint's
/// health alone, and nothing arrives at the broker.
#[tokio::test(flavor = "multi_thread")]
async fn a_destination_behind_the_proxy_is_never_reached_around_it() {
    let squid = Squid::start();
    let proxy = proxy_config(&squid);
    let s = Stack::start_with(move |c| {
        c.egress_proxy = Some(proxy);
    })
    .await;
    let broker = qualifier_testkit::their_broker::TheirBroker::new(&s.topo.prefix).await;
    let r = s
        .org_request(
            reqwest::Method::POST,
            "endpoints",
            Some(serde_json::json!({"event_types": ["lead.created"],
                "destination": {"type": "amqp", "url": broker.url(),
                                "exchange": broker.exchange, "routing_key": broker.routing_key}})),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["endpoint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.inbound("+31640000009").await;
    let path = format!("deliveries?endpoint_id={id}");
    let deadline = Instant::now() + Duration::from_secs(15);
    let d = loop {
        let listed = s.org_call(reqwest::Method::GET, &path, None).await;
        if let Some(d) = listed["deliveries"].as_array().and_then(|a| a.first())
            && d["attempts"].as_i64().unwrap_or(0) >= 1
        {
            break s.delivery_in(&s.org, d["id"].as_str().unwrap()).await;
        }
        assert!(Instant::now() < deadline, "never attempted: {listed}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(d["attempt_log"][0]["error_kind"], "proxy", "{d}");
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .contains("not sent through QUALIFIER_EGRESS_PROXY"),
        "{d}"
    );
    let endpoint = s
        .org_call(reqwest::Method::GET, &format!("endpoints/{id}"), None)
        .await;
    assert_eq!(endpoint["endpoint"]["health"]["consecutive_failures"], 0);
    assert!(
        broker.take_all().await.is_empty(),
        "nothing around the proxy"
    );
}
