//! Destinations beside HTTPS (docs/destinations.md, `--only destinations`): the same events to
//! an org whose one endpoint is the bench's HTTPS sink, a RabbitMQ exchange of its own (on the
//! bench's broker, bound to a queue), or an SQS queue on moto's server over HTTPS, one run after
//! the other in one sitting. Each run: the rate from the first request to the last arrival, the
//! machine's CPU per event and its split by process, the services' own (lead-api,
//! webhook-delivery, PostgreSQL, RabbitMQ: moto's Python is the machine's too, and shows as
//! `other`), and how many were lost (committed but never arrived). moto's one Python process
//! bounds the SQS run's rate, not the worker.

use std::time::{Duration, Instant};

use anyhow::Context;
use qualifier_testkit::moto::{Moto, REGION};
use qualifier_testkit::their_broker::TheirBroker;
use reqwest::Method;
use serde_json::{Value, json};

use crate::load::r3;
use crate::measure::{Window, patience, print_measured, produce, wait_delivered};
use crate::services::Env;
use crate::sink::{Answer, Sink};

/// Where a run's endpoint sends.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Https,
    Amqp,
    Sqs,
}

pub(crate) async fn phase(sink: &Sink, events: u64) -> anyhow::Result<Value> {
    // The worker trusts the sink's certificate and moto's (the test receivers').
    let ca = std::env::temp_dir().join(format!("qualifier-bench-ca-{}.pem", std::process::id()));
    let (moto_cert, _) = qualifier_testkit::receiver::server_certificate();
    let mut pem = std::fs::read_to_string(&sink.ca_file).context("the sink's CA")?;
    pem.push('\n');
    pem.push_str(moto_cert);
    std::fs::write(&ca, pem)?;
    let mut rows = serde_json::Map::new();
    for kind in [Kind::Https, Kind::Amqp, Kind::Sqs] {
        let row = run(sink, &ca, kind, events).await?;
        rows.insert(format!("{kind:?}").to_lowercase(), row);
    }
    let rate = |k: &str| rows[k]["events_per_s"].as_f64().unwrap_or(f64::NAN);
    let cpu = |k: &str| {
        rows[k]["machine_cpu_ms_per_event"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    println!(
        "destinations: {events} events each; events/s https {:.0}, amqp {:.0}, sqs (moto) {:.0}; machine CPU ms per event https {:.3}, amqp {:.3}, sqs {:.3}",
        rate("https"),
        rate("amqp"),
        rate("sqs"),
        cpu("https"),
        cpu("amqp"),
        cpu("sqs"),
    );
    let _ = std::fs::remove_file(&ca);
    Ok(json!({"events": events, "runs": rows}))
}

async fn run(sink: &Sink, ca: &std::path::Path, kind: Kind, events: u64) -> anyhow::Result<Value> {
    sink.clear();
    let mut env = Env::new(ca.to_path_buf()).await;
    let api = env.start_api().await?;
    // moto is one Python process answering a few dozen requests a second on this machine: the
    // worker sends it fewer at once and waits longer for each, or timed-out attempts (which
    // moto still completes) would be most of the run.
    let settings = match kind {
        Kind::Sqs => crate::services::DeliverySettings {
            org_concurrency: 8,
            timeout_ms: 10_000,
            ..crate::default_delivery()
        },
        _ => crate::default_delivery(),
    };
    let worker = env.start_delivery(&settings).await?;
    let (e, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 1).await?;
    sink.set_secret(e, &org.secret);
    let broker = match kind {
        Kind::Amqp => Some(TheirBroker::new(&env.topo.prefix).await),
        _ => None,
    };
    let moto = match kind {
        Kind::Sqs => Some(Moto::start().await),
        _ => None,
    };
    let queue = match &moto {
        // A standard queue: moto's FIFO queues slow down with their depth. Arrivals are
        // counted by delivery id, so an attempt moto completed after the worker gave up on it
        // counts once.
        Some(m) => Some(m.create_queue("bench-leads").await),
        None => None,
    };
    // One event per lead (`lead.created`), to the org's one endpoint.
    let destination = match kind {
        Kind::Https => json!({"type": "https"}),
        Kind::Amqp => {
            let b = broker.as_ref().context("broker")?;
            json!({"type": "amqp", "url": b.url(), "exchange": b.exchange, "routing_key": b.routing_key})
        }
        Kind::Sqs => json!({"type": "sqs", "queue_url": queue, "region": REGION,
                            "endpoint_url": moto.as_ref().context("moto")?.url,
                            "credentials": {"access_key_id": "bench", "secret_access_key": "bench"}}),
    };
    let mut body =
        json!({"event_types": ["lead.created"], "enabled": true, "destination": destination});
    if matches!(kind, Kind::Https) {
        body["url"] = json!(url);
    }
    let put = env
        .internal_call(Method::PUT, &format!("/orgs/{}/webhook", org.id), body)
        .await;
    anyhow::ensure!(put["webhook"]["id"].is_string(), "webhook saved: {put}");
    let window = Window::open(&env).await;
    let started = Instant::now();
    // moto's rate is bounded by its one Python process, not by ours: it is given longer.
    let deadline = started
        + match kind {
            Kind::Sqs => Duration::from_secs(600),
            _ => patience(events),
        };
    let arrived = match (kind, &moto, &queue) {
        (Kind::Https, ..) => {
            produce(&env, &org, events, 0, 32, None, false).await;
            wait_delivered(sink, e, events, patience(events)).await;
            sink.count_valid(e) as u64
        }
        (Kind::Amqp, ..) => {
            produce(&env, &org, events, 0, 32, None, false).await;
            let b = broker.as_ref().context("broker")?;
            loop {
                let n = u64::from(b.depth().await);
                if n >= events || Instant::now() > deadline {
                    break n;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        // The queue is read while the events are made, as a consumer of it would: moto counts
        // a queue's messages on every send, so an unread queue slows it down as it fills. Each
        // delivery counts once, by its id (an attempt moto completed after the worker gave up
        // on it arrives twice).
        (Kind::Sqs, Some(m), Some(q)) => {
            let read = async {
                let mut seen = std::collections::HashSet::new();
                while (seen.len() as u64) < events && Instant::now() < deadline {
                    let got = m.receive(q).await;
                    if got.is_empty() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    for msg in got {
                        seen.insert(msg.attributes.get("X-Qualifier-Delivery").cloned());
                    }
                }
                seen.len() as u64
            };
            tokio::join!(produce(&env, &org, events, 0, 32, None, false), read).1
        }
        _ => anyhow::bail!("an SQS run without moto"),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let measured = window.close(&env).await.json(arrived);
    api.stop();
    worker.stop();
    print_measured(&format!("destinations, {kind:?}"), &measured);
    // Not arrived within the run's patience; the harness stops the worker then, so whether they
    // would have is not known from here.
    let lost = events.saturating_sub(arrived);
    println!(
        "destinations, {kind:?}: {arrived} of {events} arrived in {elapsed:.1} s ({:.0}/s), not arrived {lost}",
        arrived as f64 / elapsed
    );
    // Our own processes' CPU (the services, PostgreSQL, RabbitMQ), without the bench's load
    // and sink and without moto.
    let ours: f64 = ["lead-api", "webhook-delivery", "postgresql", "rabbitmq"]
        .iter()
        .filter_map(|g| measured["cpu"]["by_process"][g]["cpu_ms"].as_f64())
        .sum::<f64>()
        / arrived.max(1) as f64;
    println!("destinations, {kind:?}: the services' CPU ms per event {ours:.3}");
    Ok(json!({
        "services_cpu_ms_per_event": r3(ours),
        "arrived": arrived,
        "not_arrived": lost,
        "seconds": r3(elapsed),
        "events_per_s": r3(arrived as f64 / elapsed),
        "machine_cpu_ms_per_event": measured["cpu"]["machine_cpu_ms_per_delivered_event"],
        "cpu": measured["cpu"],
    }))
}
