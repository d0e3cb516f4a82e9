//! Catching up after an outage, end to end (docs/api.md): the feed holds what receivers
//! were sent, byte for byte, and a bulk replay re-sends every dead delivery under its own id at
//! the configured pace.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use qualifier_testkit::receiver::Behaviour;
use reqwest::Method;
use serde_json::{Value, json};

use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

/// The feed once it holds `n` events.
async fn feed(s: &Stack, n: usize) -> (String, Vec<Value>) {
    let raw = s.feed_holding(500, n).await;
    let v: Value = serde_json::from_str(&raw).unwrap();
    (raw, v["events"].as_array().unwrap().clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_feed_holds_each_delivered_body_byte_for_byte_and_no_test_event() {
    let s = Stack::start().await;
    let lead = s.inbound("+447700900801").await;
    s.close_lead(lead["id"].as_str().unwrap(), None).await;
    s.inbound("+447700900802").await;
    let test = s.org_call(Method::POST, "webhook/test", None).await;
    // lead.created, lead.stage_changed, lead.created and the test event.
    let got = s.receiver.wait_for(4, WAIT).await;
    assert_eq!(got.len(), 4, "{test}");

    let (raw, events) = feed(&s, 3).await;
    let mut real = 0;
    for g in &got {
        let body = std::str::from_utf8(&g.body).unwrap();
        let env = g.json();
        // A test event is the example of its type, recognised by its delivery id.
        if g.header("webhook-id") == test["delivery"]["id"].as_str().unwrap() {
            assert!(
                !raw.contains(env["id"].as_str().unwrap()),
                "test event in feed"
            );
            continue;
        }
        real += 1;
        // The envelope the receiver verified is in the page exactly as sent.
        assert!(raw.contains(body), "{body} not in {raw}");
    }
    assert_eq!(real, 3);
    assert_eq!(events.len(), 3, "{raw}");
    let delivered_ids: HashSet<String> = got
        .iter()
        .map(|g| g.json()["id"].as_str().unwrap().to_owned())
        .collect();
    for e in &events {
        assert!(delivered_ids.contains(e["id"].as_str().unwrap()));
    }
}

/// Every dead delivery of an org comes back with one request: a dry run counts them and sends
/// nothing, the replay re-sends each under its own delivery id, no faster than the configured
/// rate, and each ends succeeded.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "counts requests per second: make test runs it alone, after the rest"]
async fn a_bulk_replay_resends_every_dead_delivery_at_the_configured_pace() {
    const RATE: u32 = 10;
    const N: usize = 15;
    let s = Stack::start_tuned(|a| a.replay_rate_per_second = RATE, |_| {}).await;
    // The receiver is down for the whole retry schedule: every delivery ends dead.
    s.receiver.set_behaviour(Behaviour::Status(500));
    for i in 0..N {
        s.inbound(&format!("+4477009008{i:02}")).await;
    }
    let dead: Vec<String> = s
        .wait_all_in(&s.org, Some(N), "dead", WAIT)
        .await
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    s.receiver.set_behaviour(Behaviour::Ok);
    let before = s.receiver.received().len();
    assert_eq!(before, N * 5, "five attempts each");

    let replay = format!("/internal/v1/orgs/{}/deliveries/replay", s.org);
    let r = s
        .call(Method::POST, &replay, Some(json!({"dry_run": true})))
        .await;
    assert_eq!(r, json!({"matched": N, "replayed": 0}));
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        s.receiver.received().len(),
        before,
        "a dry run sends nothing"
    );
    assert!(s.deliveries().await.iter().all(|d| d["status"] == "dead"));

    // The operator's command counts the same, and narrows by time.
    let ctl = |args: &[&str]| -> Value {
        let out = std::process::Command::new(crate::crash::workspace_binary("qualifierctl"))
            .args(["replay", "--org", &s.org, "--all-dead", "--dry-run"])
            .args(args)
            .env("DATABASE_URL", &s.db.url)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let hour_ago = (time::OffsetDateTime::now_utc() - time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    assert_eq!(
        ctl(&["--since", &hour_ago]),
        json!({"matched": N, "replayed": 0, "dry_run": true})
    );
    assert_eq!(ctl(&["--until", &hour_ago])["matched"], 0);

    let r = s.call(Method::POST, &replay, Some(json!({}))).await;
    assert_eq!(r, json!({"matched": N, "replayed": N}));
    let got = s.receiver.wait_for(before + N, WAIT).await;
    let replayed = &got[before..];
    assert_eq!(replayed.len(), N);
    let ids: HashSet<&str> = replayed.iter().map(|g| g.header("webhook-id")).collect();
    let want: HashSet<&str> = dead.iter().map(String::as_str).collect();
    assert_eq!(ids, want, "each replay keeps its delivery id");
    // The pace: N sends at RATE per second span at least (N - 1) / RATE seconds (less a little
    // for timer jitter), and no one-second window holds more than RATE + 1 of them.
    let times: Vec<Instant> = replayed.iter().map(|g| g.at).collect();
    let span = times[N - 1].duration_since(times[0]);
    let floor = Duration::from_secs_f64((N - 1) as f64 / RATE as f64 * 0.9);
    println!(
        "bulk replay: {N} deliveries in {:.2} s at rate {RATE}/s",
        span.as_secs_f64()
    );
    assert!(
        span >= floor,
        "{N} replays in {span:?}, faster than {RATE}/s"
    );
    for (i, t) in times.iter().enumerate() {
        let within = times[i..]
            .iter()
            .take_while(|u| u.duration_since(*t) < Duration::from_secs(1))
            .count();
        assert!(within <= RATE as usize + 1, "{within} sends within 1 s");
    }
    for id in &dead {
        s.wait_status(id, "succeeded", WAIT).await;
    }
    // Nothing is left to replay.
    let r = s
        .call(Method::POST, &replay, Some(json!({"dry_run": true})))
        .await;
    assert_eq!(r, json!({"matched": 0, "replayed": 0}));
}
