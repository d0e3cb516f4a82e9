//! Crash tests: the real binaries, killed with SIGKILL at the worst moments, lose no event.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use qualifier_testkit::receiver::Behaviour;
use qualifier_testkit::{amqp_url, free_port};
use serde_json::json;

use crate::stack::{INTERNAL_TOKEN, Stack};

const WAIT: Duration = Duration::from_secs(30);

/// A child process that is killed (SIGKILL) when dropped.
pub(crate) struct Proc(Child);

impl Proc {
    pub(crate) fn kill9(&mut self) {
        let _ = self.0.kill(); // SIGKILL on Unix
        let _ = self.0.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn common_env(s: &Stack) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", s.db.url.clone()),
        ("AMQP_URL", amqp_url()),
        ("QUALIFIER_SECRET_KEY", s.key_b64.clone()),
        ("QUALIFIER_TOPOLOGY_PREFIX", s.topo.prefix.clone()),
        ("QUALIFIER_RETRY_DELAYS_MS", "100,100,100,100".into()),
        ("QUALIFIER_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8".into()),
        ("RUST_LOG", "warn".into()),
    ]
}

fn spawn_delivery(s: &Stack) -> Proc {
    spawn_delivery_with(s, &[])
}

/// The real `webhook-delivery` binary for `s`, with `extra` variables in its environment.
pub(crate) fn spawn_delivery_with(s: &Stack, extra: &[(&str, String)]) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_webhook-delivery"))
        .envs(common_env(s))
        .env("QUALIFIER_DELIVERY_ADDR", "127.0.0.1:0")
        .env("QUALIFIER_DELIVERY_TIMEOUT_MS", "5000")
        .env("QUALIFIER_WEBHOOK_CA_FILE", &s.receiver.ca_file)
        .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn webhook-delivery");
    Proc(child)
}

/// Another package's binary (`lead-api`, `qualifierctl`) sits beside this test's binary's
/// directory (target/debug). It is built by `cargo test --workspace`; when only this crate's
/// tests are built, build it here.
pub fn workspace_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join(name);
    if !bin.exists() {
        let ok = Command::new(env!("CARGO"))
            .args(["build", "-p", name, "--bin", name])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    bin
}

fn spawn_api(s: &Stack, port: u16) -> Proc {
    let child = Command::new(workspace_binary("lead-api"))
        .envs(common_env(s))
        .env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
        .env("QUALIFIER_HTTP_ADDR", "127.0.0.1:0")
        .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{port}"))
        .env("QUALIFIER_HTTP_WORKERS", "1")
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn lead-api");
    Proc(child)
}

async fn wait_ready(http: &reqwest::Client, url: &str) {
    for _ in 0..300 {
        if let Ok(r) = http.get(url).send().await
            && r.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never became ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_delivery_worker_mid_request_loses_nothing() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    // The first request hangs, so the worker is killed while it is in flight.
    s.receiver
        .script(vec![Behaviour::Hang(Duration::from_secs(4))]);
    let mut worker = spawn_delivery(&s);
    s.inbound("+447700900123").await;
    let first = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(first.len(), 1);
    worker.kill9();

    let _worker = spawn_delivery(&s);
    let got = s.receiver.wait_for(2, WAIT).await;
    assert!(got.len() >= 2, "the event came back after the restart");
    let id = first[0].header("x-qualifier-delivery");
    assert!(
        got.iter().all(|g| g.header("x-qualifier-delivery") == id),
        "a duplicate keeps its delivery id"
    );
    assert_eq!(got[1].body, first[0].body);
    s.wait_status(id, "succeeded", WAIT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_lead_api_right_after_commits_loses_no_event() {
    let mut s = Stack::start().await;
    // Only the process under test may relay: stop the in-process API (and its relay).
    s.stop_api().await;
    let port = free_port();
    let internal = format!("http://127.0.0.1:{port}");
    let mut api = spawn_api(&s, port);
    wait_ready(&s.http, &format!("{internal}/readyz")).await;

    // A burst of commits, then SIGKILL the moment the last one has answered: some events are
    // still in the outbox, some may be mid-publish.
    const N: usize = 40;
    let mut tasks = Vec::new();
    for i in 0..N {
        let (http, url, org) = (s.http.clone(), internal.clone(), s.org.clone());
        tasks.push(tokio::spawn(async move {
            let body =
                json!({"name": "Contact", "phone": format!("+44770090{i:04}"), "channel": "sms"});
            let r = http
                .post(format!("{url}/internal/v1/orgs/{org}/inbound"))
                .bearer_auth(INTERNAL_TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    api.kill9();

    let committed: HashSet<String> = qualifier_testkit::sql::column(
        &s.db.client().await,
        "SELECT event_id::text FROM outbox",
        &[],
    )
    .await;
    assert_eq!(committed.len(), N);

    let _api = spawn_api(&s, port);
    // Wait for N distinct events, not N requests: a batch published but not yet marked when the
    // process died is published again, and its duplicates must not end the wait early.
    let deadline = std::time::Instant::now() + WAIT;
    let got = loop {
        let got = s.receiver.received();
        let events: HashSet<String> = got
            .iter()
            .map(|g| g.json()["id"].as_str().unwrap_or("").to_owned())
            .collect();
        if events.len() >= N || std::time::Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut by_event: HashMap<String, HashSet<String>> = HashMap::new();
    for g in &got {
        let ev = g.json()["id"].as_str().unwrap().to_owned();
        by_event
            .entry(ev)
            .or_default()
            .insert(g.header("x-qualifier-delivery").to_owned());
    }
    let delivered: HashSet<String> = by_event.keys().cloned().collect();
    assert_eq!(
        delivered, committed,
        "every committed event was delivered, nothing else"
    );
    assert!(
        by_event.values().all(|ids| ids.len() == 1),
        "duplicates keep their delivery id"
    );
    eprintln!(
        "lead-api kill -9: {N} committed, {} delivered, {} requests (duplicates {})",
        delivered.len(),
        got.len(),
        got.len() - delivered.len()
    );
}

/// SIGTERM while deliveries are in flight (an orchestrator stopping a replica): `/readyz`
/// answers 503 at once, every attempt under way finishes and is recorded and acknowledged within
/// the grace, and nothing is left in the queue to be sent a second time.
#[tokio::test(flavor = "multi_thread")]
async fn stopping_finishes_in_flight_deliveries_and_leaves_nothing_to_send_again() {
    let mut s = Stack::start().await;
    s.receiver
        .set_behaviour(Behaviour::Hang(Duration::from_millis(1000)));
    for i in 0..4 {
        s.inbound(&format!("+4477009007{i:02}")).await;
    }
    // The four attempts are under way (the receiver answers each after a second).
    assert_eq!(s.receiver.wait_for(4, WAIT).await.len(), 4);
    let readyz = format!("http://{}/readyz", s.delivery.as_ref().unwrap().addr);
    let started = std::time::Instant::now();
    let running = s.delivery.take().unwrap();
    let stop = tokio::spawn(async move { running.stop().await });
    let mut not_ready = false;
    while !stop.is_finished() {
        if let Ok(r) = s.http.get(&readyz).send().await {
            not_ready |= r.status() == 503;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.await.unwrap();
    assert!(
        not_ready,
        "/readyz answered 503 while the attempts finished"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "the stop waited for the attempts under way"
    );
    let all = s.deliveries().await;
    assert_eq!(all.len(), 4);
    for d in &all {
        assert_eq!(d["status"], "succeeded", "recorded before the exit: {d}");
    }
    let topology = s.topo.topology();
    for q in [topology.work_queue(), topology.bundle_queue()] {
        assert_eq!(
            s.queue_depth(&q).await,
            0,
            "nothing left in {q} to send again"
        );
    }
    assert_eq!(s.receiver.received().len(), 4);
}

/// New deliveries of an org travel several to a broker message (a bundle); a worker killed
/// with one in hand leaves it unacked, and the next worker sends every delivery of it: none
/// lost, each signed, a repeat under the same `X-Qualifier-Delivery`.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_with_a_bundle_in_hand_loses_none_of_its_deliveries() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    // The events wait for the relay (the test holds the row every relay batch locks first),
    // so one batch finds them all and bundles them.
    let hold = s.db.client().await;
    hold.batch_execute("BEGIN; SELECT * FROM feed_head FOR UPDATE")
        .await
        .unwrap();
    const N: usize = 12;
    for i in 0..N {
        s.inbound(&format!("+4477009008{i:02}")).await;
    }
    hold.batch_execute("COMMIT").await.unwrap();
    let topology = s.topo.topology();
    assert_eq!(
        s.wait_queue_depth(&topology.bundle_queue(), 1, WAIT).await,
        1,
        "the org's {N} new deliveries in one message"
    );
    assert_eq!(s.queue_depth(&topology.work_queue()).await, 0);

    // The first request hangs, so the worker is killed with the bundle in hand, some of its
    // deliveries sent and recorded, others not yet.
    s.receiver
        .script(vec![Behaviour::Hang(Duration::from_secs(4))]);
    let mut worker = spawn_delivery(&s);
    let first = s.receiver.wait_for(N, WAIT).await;
    assert!(first.len() >= N, "every part was tried: {}", first.len());
    worker.kill9();

    let _worker = spawn_delivery(&s);
    let all = s.wait_all_in(&s.org, Some(N), "succeeded", WAIT).await;
    let got = s.receiver.received();
    let by_id: HashSet<&str> = got
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.header("x-qualifier-delivery"))
        .collect();
    for d in &all {
        assert!(
            by_id.contains(d["id"].as_str().unwrap()),
            "{} was never received and accepted",
            d["id"]
        );
    }
    assert!(
        got.iter().all(|r| r.verified_with == Some(0)),
        "every request signed with the webhook's secret"
    );
    let sent_twice = got.len() - N;
    assert!(
        sent_twice >= 1,
        "the hung delivery was sent again after the restart"
    );
    assert_eq!(
        s.wait_queue_depth(&topology.bundle_queue(), 0, WAIT).await,
        0
    );
}
