//! Endpoint health (docs/delivery.md, "Endpoint health") against the real binaries' libraries, PostgreSQL,
//! RabbitMQ and HTTPS receivers that the tests switch between failing, hanging, `410` and
//! healthy. Retry waits are 100 ms and the health settings are scaled to match, so an outage
//! "longer than the whole retry schedule" takes seconds.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use qualifier_testkit::receiver::{Behaviour, Receiver};
use reqwest::Method;
use serde_json::{Value, json};
use webhook_delivery::decide::HealthRules;

use crate::stack::{SecondOrg, Stack, delivery_config};
use crate::standard::python_verifies;

const OPERATOR_SECRET: &str = "operator-secret-for-the-health-tests";

fn rules(disable_after: Duration) -> HealthRules {
    crate::stack::quick_health(disable_after)
}

async fn health(s: &Stack, org: &str) -> Value {
    s.call(
        Method::GET,
        &format!("/internal/v1/orgs/{org}/webhook"),
        None,
    )
    .await["webhook"]["health"]
        .clone()
}

async fn wait_state(s: &Stack, org: &str, want: &str, timeout: Duration) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let h = health(s, org).await;
        if h["state"] == want {
            return h;
        }
        assert!(Instant::now() < deadline, "never {want}: {h}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn probes(r: &Receiver) -> usize {
    r.received()
        .iter()
        .filter(|g| g.header("x-qualifier-probe") == "true")
        .count()
}

/// The operator's events received so far, each checked with the PyPI `standardwebhooks`.
fn operator_events(op: &Receiver) -> Vec<String> {
    let whsec = qualifier_signing::standard::secret(OPERATOR_SECRET);
    op.received()
        .iter()
        .map(|g| {
            assert!(python_verifies(&whsec, g), "operator event verifies");
            let v = g.json();
            assert_eq!(v["version"], "1");
            assert!(v["data"]["webhook"]["health"]["state"].is_string());
            v["type"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A stack whose worker knows the operator's receiver (its certificate is every test
/// receiver's) and the scaled health settings.
async fn stack(op: &Receiver, disable_after: Duration) -> Stack {
    let url = op.url.clone();
    Stack::start_with(move |c| {
        c.health = rules(disable_after);
        c.operator_webhook = Some((
            url::Url::parse(&url).unwrap(),
            OPERATOR_SECRET.as_bytes().to_vec(),
        ));
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_outage_longer_than_the_retry_schedule_ends_with_everything_delivered_by_itself() {
    let op = Receiver::start().await;
    let s = stack(&op, Duration::from_secs(3600)).await;
    let b = SecondOrg::add(&s).await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    let mut leads = vec![];
    for i in 0..10 {
        leads.push(s.inbound(&format!("+3161000{i:04}")).await);
    }
    let failing = wait_state(&s, &s.org, "failing", Duration::from_secs(15)).await;
    assert!(failing["failing_since"].is_string() && failing["next_probe_at"].is_string());
    assert_eq!(failing["last_error"], "HTTP 500");
    // More events while it fails, and the other org's own traffic beside them.
    for i in 10..20 {
        leads.push(s.inbound(&format!("+3161000{i:04}")).await);
    }
    let started = Instant::now();
    for i in 0..30 {
        b.inbound(&s, &format!("+3162000{i:04}")).await;
    }
    let got = b.receiver.wait_for(30, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 30, "the other org keeps its pace");
    let other_took = started.elapsed();
    // Much longer than the whole retry schedule (4 x 100 ms): nothing goes dead, and after
    // the first moments no attempt is spent.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = s.deliveries_in(&s.org).await;
    assert_eq!(before.len(), 20);
    for d in &before {
        assert!(
            d["status"] == "pending" || d["status"] == "failed",
            "waiting, not dead: {d}"
        );
    }
    let attempts =
        |ds: &[Value]| -> i64 { ds.iter().map(|d| d["attempts"].as_i64().unwrap()).sum() };
    let spent = attempts(&before);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = s.deliveries_in(&s.org).await;
    assert_eq!(attempts(&after), spent, "no attempt while failing");
    assert!(
        before.iter().all(|d| d["attempts"].as_i64().unwrap() <= 3),
        "an outage takes at most the attempts before it is noticed"
    );
    let probed = probes(&s.receiver);
    assert!(probed >= 3, "probes ran: {probed}");
    for g in s
        .receiver
        .received()
        .iter()
        .filter(|g| g.header("x-qualifier-probe") == "true")
    {
        assert_eq!(g.header("x-qualifier-test"), "true");
        assert!(
            g.verified_with.is_some(),
            "a probe is signed like any delivery"
        );
    }
    // Back: no call, no replay. Everything arrives under its own delivery id.
    s.receiver.set_behaviour(Behaviour::Ok);
    let done = s
        .wait_all_in(&s.org, None, "succeeded", Duration::from_secs(20))
        .await;
    let accepted: HashSet<String> = s
        .receiver
        .received()
        .iter()
        .filter(|g| g.accepted && g.header("x-qualifier-probe") != "true")
        .map(|g| g.header("x-qualifier-delivery").to_owned())
        .collect();
    for d in &done {
        assert!(
            accepted.contains(d["id"].as_str().unwrap()),
            "{d} arrived under its id"
        );
    }
    // Probes are in no delivery log and no feed.
    let probe_ids: HashSet<String> = s
        .receiver
        .received()
        .iter()
        .filter(|g| g.header("x-qualifier-probe") == "true")
        .map(|g| g.header("x-qualifier-delivery").to_owned())
        .collect();
    assert!(
        done.iter()
            .all(|d| !probe_ids.contains(d["id"].as_str().unwrap()))
    );
    let feed: Value = serde_json::from_str(&s.feed_holding(500, 20).await).unwrap();
    assert_eq!(
        feed["events"].as_array().unwrap().len(),
        20,
        "only the org's events"
    );
    let h = wait_state(&s, &s.org, "healthy", Duration::from_secs(1)).await;
    assert_eq!(h["consecutive_failures"], 0);
    assert!(h["last_success_at"].is_string() && h["failing_since"].is_null());
    // The operator heard of both changes, signed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while operator_events(&op).len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        operator_events(&op),
        ["endpoint.failing", "endpoint.recovered"]
    );
    println!("the other org's 30 deliveries took {other_took:?} during the outage");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_410_disables_at_once_and_the_disable_timer_disables_a_failing_endpoint() {
    let op = Receiver::start().await;
    let s = stack(&op, Duration::from_secs(2)).await;
    // 410 Gone: disabled at the first answer, the delivery ends skipped.
    s.receiver.set_behaviour(Behaviour::Status(410));
    let lead = s.inbound("+31610000001").await;
    let h = wait_state(&s, &s.org, "disabled", Duration::from_secs(10)).await;
    assert!(h["disabled_reason"].as_str().unwrap().contains("410"));
    let hook = s.webhook().await;
    assert_eq!(hook["enabled"], false);
    let ds = s.deliveries_in(&s.org).await;
    let id = ds[0]["id"].as_str().unwrap().to_owned();
    s.wait_status(&id, "skipped", Duration::from_secs(10)).await;
    assert_eq!(s.receiver.received().len(), 1, "nothing after the 410");
    assert!(lead["id"].is_string());

    // The timer: a second org whose endpoint keeps failing is disabled after 2 s of it; what
    // waited ends skipped; re-enabling and a bulk replay of skipped deliver it all.
    let b = SecondOrg::add(&s).await;
    b.receiver.set_behaviour(Behaviour::Status(503));
    for i in 0..5 {
        b.inbound(&s, &format!("+3163000{i:04}")).await;
    }
    wait_state(&s, &b.org, "failing", Duration::from_secs(15)).await;
    let h = wait_state(&s, &b.org, "disabled", Duration::from_secs(15)).await;
    assert!(
        h["disabled_reason"]
            .as_str()
            .unwrap()
            .starts_with("failing since")
    );
    s.wait_all_in(&b.org, Some(5), "skipped", Duration::from_secs(10))
        .await;
    b.receiver.set_behaviour(Behaviour::Ok);
    let r = s
        .call(
            Method::PUT,
            &format!("/internal/v1/orgs/{}/webhook", b.org),
            Some(json!({"url": b.receiver.url, "event_types": ["lead.created"], "enabled": true})),
        )
        .await;
    assert_eq!(r["webhook"]["health"]["state"], "healthy");
    assert!(r["webhook"]["health"]["disabled_reason"].is_null());
    let r = s
        .call(
            Method::POST,
            &format!("/internal/v1/orgs/{}/deliveries/replay", b.org),
            Some(json!({"status": ["skipped"]})),
        )
        .await;
    assert_eq!(r["matched"], 5);
    s.wait_all_in(&b.org, None, "succeeded", Duration::from_secs(15))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while operator_events(&op).len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut seen = operator_events(&op);
    seen.sort();
    assert_eq!(
        seen,
        ["endpoint.disabled", "endpoint.disabled", "endpoint.failing"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_probe_a_hanging_endpoint_one_at_a_time() {
    let op = Receiver::start().await;
    let mut s = stack(&op, Duration::from_secs(3600)).await;
    // A second replica of webhook-delivery with the same settings.
    let key = qualifier_store::SecretKey::from_base64(&s.key_b64).unwrap();
    let mut cfg = delivery_config(&s.db, &s.topo, &key, &s.receiver);
    cfg.health = HealthRules {
        probe_min: Duration::from_millis(300),
        probe_max: Duration::from_millis(300),
        ..rules(Duration::from_secs(3600))
    };
    let second = webhook_delivery::start(cfg).await.unwrap();
    // Hangs past the attempt timeout (1.5 s): attempts and probes time out.
    s.receiver
        .set_behaviour(Behaviour::Hang(Duration::from_secs(3)));
    for i in 0..4 {
        s.inbound(&format!("+3164000{i:04}")).await;
    }
    let h = wait_state(&s, &s.org, "failing", Duration::from_secs(20)).await;
    assert!(h["last_error"].as_str().unwrap().starts_with("timed out"));
    let from = probes(&s.receiver);
    let watch = Duration::from_secs(6);
    tokio::time::sleep(watch).await;
    let probed = probes(&s.receiver) - from;
    // One at a time: each probe takes the 1.5 s timeout, then at least 200-400 ms of wait, so
    // one prober manages at most ~4 in 6 s; two uncoordinated ones would manage twice that.
    println!("probes of the hanging endpoint in {watch:?} with two replicas: {probed}");
    assert!((1..=5).contains(&probed), "probes in {watch:?}: {probed}");
    // One state, whichever replica is asked through the database.
    assert_eq!(health(&s, &s.org).await["state"], "failing");
    s.receiver.set_behaviour(Behaviour::Ok);
    s.wait_all_in(&s.org, None, "succeeded", Duration::from_secs(20))
        .await;
    second.stop().await;
    s.stop_delivery().await;
}

/// A stack with the operator's receiver and these health settings.
async fn stack_with_rules(op: &Receiver, rules: HealthRules) -> Stack {
    let url = op.url.clone();
    Stack::start_with(move |c| {
        c.health = rules;
        c.operator_webhook = Some((
            url::Url::parse(&url).unwrap(),
            OPERATOR_SECRET.as_bytes().to_vec(),
        ));
    })
    .await
}

fn attempts_of(ds: &[Value]) -> i64 {
    ds.iter().map(|d| d["attempts"].as_i64().unwrap()).sum()
}

async fn put_webhook(s: &Stack, org: &str, url: &str, enabled: bool) -> Value {
    s.call(
        Method::PUT,
        &format!("/internal/v1/orgs/{org}/webhook"),
        Some(json!({"url": url, "event_types": ["lead.created"], "enabled": enabled})),
    )
    .await
}

/// Saving the webhook while its endpoint fails (the console's `Save` sends `enabled: true`
/// with the box still ticked) keeps it failing and its deliveries held: no attempt is spent
/// and nothing goes dead. It does send a probe at once, and only a probe answered 2xx
/// releases what waited. (A save used to make the endpoint healthy and release every held
/// delivery into an endpoint still down.)
#[tokio::test(flavor = "multi_thread")]
async fn saving_the_webhook_while_its_endpoint_fails_spends_no_attempt() {
    let op = Receiver::start().await;
    // Probes far apart, so the one the save sends is told from the schedule's.
    let s = stack_with_rules(
        &op,
        HealthRules {
            probe_min: Duration::from_secs(8),
            probe_max: Duration::from_secs(8),
            ..rules(Duration::from_secs(3600))
        },
    )
    .await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    for i in 0..4 {
        s.inbound(&format!("+3165000{i:04}")).await;
    }
    wait_state(&s, &s.org, "failing", Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = s.deliveries_in(&s.org).await;
    let probed = probes(&s.receiver);

    let saved = put_webhook(&s, &s.org, &s.receiver.url, true).await;
    assert_eq!(saved["webhook"]["health"]["state"], "failing", "{saved}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while probes(&s.receiver) == probed {
        assert!(Instant::now() < deadline, "the save sent no probe");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let after = s.deliveries_in(&s.org).await;
    assert_eq!(
        attempts_of(&after),
        attempts_of(&before),
        "no attempt spent"
    );
    assert!(
        after
            .iter()
            .all(|d| d["status"] == "pending" || d["status"] == "failed"),
        "nothing dead: {after:?}"
    );
    assert_eq!(health(&s, &s.org).await["state"], "failing");

    // The endpoint is back: a save probes at once and the answer releases everything.
    s.receiver.set_behaviour(Behaviour::Ok);
    put_webhook(&s, &s.org, &s.receiver.url, true).await;
    s.wait_all_in(&s.org, None, "succeeded", Duration::from_secs(6))
        .await;
}

/// A probe answered `429` with `Retry-After: 2` waits two seconds before the next one; the
/// endpoint stays failing and the disable timer runs on, so an endpoint that answers nothing
/// else is disabled when it runs out, and what waited ends skipped. (Such answers used to be
/// written nowhere: the endpoint was re-probed at the lease's pace and stayed failing for ever.)
#[tokio::test(flavor = "multi_thread")]
async fn probes_answered_with_retry_after_are_spaced_by_it_and_the_disable_timer_still_runs() {
    let op = Receiver::start().await;
    let s = stack_with_rules(
        &op,
        HealthRules {
            probe_min: Duration::from_millis(200),
            probe_max: Duration::from_secs(5),
            ..rules(Duration::from_secs(7))
        },
    )
    .await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    for i in 0..3 {
        s.inbound(&format!("+3166000{i:04}")).await;
    }
    let failing = wait_state(&s, &s.org, "failing", Duration::from_secs(15)).await;
    s.receiver.set_behaviour(Behaviour::RetryAfter(429, 2));
    let switched = Instant::now();
    let h = wait_state(&s, &s.org, "disabled", Duration::from_secs(20)).await;
    assert!(
        h["disabled_reason"]
            .as_str()
            .unwrap()
            .starts_with("failing since"),
        "{h}"
    );
    let probe_times: Vec<Instant> = s
        .receiver
        .received()
        .iter()
        .filter(|g| g.header("x-qualifier-probe") == "true" && g.at > switched)
        .map(|g| g.at)
        .collect();
    assert!(
        probe_times.len() >= 2,
        "probes answered 429: {probe_times:?}"
    );
    for w in probe_times.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap >= Duration::from_millis(1900),
            "probes {gap:?} apart, under the 2 s asked for"
        );
    }
    s.wait_all_in(&s.org, None, "skipped", Duration::from_secs(10))
        .await;
    println!(
        "failing since {}, disabled: {}",
        failing["failing_since"], h["disabled_reason"]
    );
}

/// Disabling a failing endpoint by hand (`enabled: false`) disables it: its held deliveries
/// end skipped and the operator hears `endpoint.disabled`. (It used to stay `failing` for ever,
/// its deliveries held.)
#[tokio::test(flavor = "multi_thread")]
async fn disabling_a_failing_endpoint_skips_what_waited_and_tells_the_operator() {
    let op = Receiver::start().await;
    let s = stack(&op, Duration::from_secs(3600)).await;
    s.receiver.set_behaviour(Behaviour::Status(500));
    for i in 0..3 {
        s.inbound(&format!("+3167000{i:04}")).await;
    }
    wait_state(&s, &s.org, "failing", Duration::from_secs(15)).await;
    let r = put_webhook(&s, &s.org, &s.receiver.url, false).await;
    assert_eq!(r["webhook"]["health"]["state"], "disabled", "{r}");
    assert_eq!(r["webhook"]["enabled"], false);
    s.wait_all_in(&s.org, None, "skipped", Duration::from_secs(10))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while operator_events(&op).len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        operator_events(&op),
        ["endpoint.failing", "endpoint.disabled"]
    );
}

/// An operator service that answers slowly (just inside the timeout) delays no recovery and
/// gets each operational event once. Three orgs' endpoints fail together, so three events are
/// due at once: sent one after another by the probing loop, they held its next probe for
/// about three slow answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_operator_service_neither_delays_recovery_nor_gets_an_event_twice() {
    let op = Receiver::start().await;
    op.set_behaviour(Behaviour::Hang(Duration::from_millis(1300)));
    let s = stack(&op, Duration::from_secs(3600)).await;
    let others = [SecondOrg::add(&s).await, SecondOrg::add(&s).await];
    s.receiver.set_behaviour(Behaviour::Status(500));
    for o in &others {
        o.receiver.set_behaviour(Behaviour::Status(500));
    }
    for i in 0..3 {
        s.inbound(&format!("+3168000{i:04}")).await;
        for (j, o) in others.iter().enumerate() {
            o.inbound(&s, &format!("+316900{j}{i:04}")).await;
        }
    }
    wait_state(&s, &s.org, "failing", Duration::from_secs(15)).await;
    for o in &others {
        wait_state(&s, &o.org, "failing", Duration::from_secs(15)).await;
    }
    // The failing events are being sent to the slow service now; the endpoints come back.
    s.receiver.set_behaviour(Behaviour::Ok);
    for o in &others {
        o.receiver.set_behaviour(Behaviour::Ok);
    }
    let back = Instant::now();
    wait_state(&s, &s.org, "healthy", Duration::from_secs(15)).await;
    for o in &others {
        wait_state(&s, &o.org, "healthy", Duration::from_secs(15)).await;
    }
    let took = back.elapsed();
    println!("three endpoints recovered {took:?} after coming back, beside a slow operator");
    assert!(
        took < Duration::from_millis(2500),
        "recovery waited for the operator service: {took:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while operator_events(&op).len() < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ids: Vec<String> = op
        .received()
        .iter()
        .map(|g| g.header("webhook-id").to_owned())
        .collect();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), 6, "three failing and three recovered: {ids:?}");
    assert_eq!(unique.len(), ids.len(), "each event once: {ids:?}");
}
