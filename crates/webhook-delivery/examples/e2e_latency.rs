//! Commit-to-receipt latency on an idle system: sequential agent updates, each emitting one
//! `lead.updated`, timed from the moment the request is sent (an upper bound on the commit) to
//! the moment the HTTPS receiver has the signed event. Prints p50/p90/p99/max.
//!
//! `cargo run --release -p webhook-delivery --example e2e_latency -- [N]` (local PostgreSQL and
//! RabbitMQ, as the tests use).

#[path = "../tests/delivery/stack.rs"]
#[allow(dead_code)]
mod stack;

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let s = stack::Stack::start().await;
    let lead = s.inbound("+447700900123").await;
    s.receiver.wait_for(1, Duration::from_secs(10)).await;
    let path = format!(
        "/internal/v1/orgs/{}/leads/{}",
        s.org,
        lead["id"].as_str().unwrap()
    );
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let before = s.receiver.received().len();
        let sent = Instant::now();
        s.call(Method::PATCH, &path, Some(json!({"profile": {"note": i}})))
            .await;
        let got = s
            .receiver
            .wait_for(before + 1, Duration::from_secs(10))
            .await;
        let at = got.last().expect("delivered").at;
        lat.push(at.saturating_duration_since(sent));
    }
    lat.sort();
    println!("commit-to-receipt latency, {n} sequential events (idle system):");
    println!(
        "  p50 {:.2} ms   p90 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        lat.last().unwrap().as_secs_f64() * 1000.0
    );
}
