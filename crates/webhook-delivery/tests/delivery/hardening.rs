//! Hardening of the delivery side (docs/reliability.md, "Hostile input") against a hostile environment.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::crash::spawn_delivery_with;
use crate::stack::Stack;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn proxy_variables_in_the_environment_are_ignored() {
    let mut s = Stack::start().await;
    s.stop_delivery().await;
    // A "proxy" that only counts who connects to it.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = proxy.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    let vars: Vec<(&str, String)> = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .into_iter()
    .map(|k| (k, proxy_url.clone()))
    .chain([("NO_PROXY", String::new()), ("no_proxy", String::new())])
    .collect();
    let _worker = spawn_delivery_with(&s, &vars);

    s.inbound("+447700900781").await;
    let got = s.receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1, "delivered straight to the receiver");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the proxy saw no connection"
    );
}

/// Frames the broker has received on the connection named `name` (its own counter), from
/// `rabbitmqctl list_connections`.
async fn broker_frames_received(name: &str) -> u64 {
    let out = tokio::process::Command::new("rabbitmqctl")
        .args([
            "list_connections",
            "client_properties",
            "recv_cnt",
            "--formatter",
            "json",
        ])
        .output()
        .await
        .expect("rabbitmqctl runs");
    let all: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("rabbitmqctl answers JSON");
    let needle = serde_json::Value::String(name.to_owned());
    let mine: Vec<u64> = all
        .iter()
        .filter(|c| contains_value(&c["client_properties"], &needle))
        .map(|c| c["recv_cnt"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(mine.len(), 1, "one connection named {name}: {all:?}");
    mine[0]
}

fn contains_value(v: &serde_json::Value, needle: &serde_json::Value) -> bool {
    v == needle
        || match v {
            serde_json::Value::Array(a) => a.iter().any(|x| contains_value(x, needle)),
            serde_json::Value::Object(o) => o.values().any(|x| contains_value(x, needle)),
            _ => false,
        }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_org_held_back_does_not_churn_the_shared_queue() {
    let s = Stack::start().await;
    // Every request gets "come back in a minute".
    s.receiver
        .set_behaviour(qualifier_testkit::receiver::Behaviour::RetryAfter(429, 60));
    for i in 0..40 {
        s.inbound(&format!("+4477009003{i:02}")).await;
    }
    // Let the first attempts meet the 429 and every message be held back.
    let deadline = std::time::Instant::now() + WAIT;
    while s.receiver.received().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no attempt was made");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests_before = s.receiver.received().len();
    let connection = format!("webhook-delivery {}", s.topo.prefix);
    let before = broker_frames_received(&connection).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let frames = broker_frames_received(&connection).await - before;
    // A publish is at least three frames (method, header, body); the rest of the connection's
    // traffic (acks, the queue-depth sampler, heartbeats) only adds to the count, so this bounds
    // the publishes from above. Parking every message every second would be ~400.
    let publishes_at_most = frames / 3;
    eprintln!("held back: {frames} frames on the worker's connection in 10 s");
    assert!(
        publishes_at_most <= 36,
        "{frames} frames in 10 s: up to {publishes_at_most} publishes"
    );
    // The org stayed held: no attempt was made during its pause, and none was used up.
    assert_eq!(s.receiver.received().len(), requests_before);
    for d in s.deliveries().await {
        assert_ne!(d["status"], "dead", "{d}");
        assert!(d["attempts"].as_u64().unwrap() <= 1, "{d}");
    }
}
