//! End to end at a rate or as fast as it goes, and backlog drains.

use super::*;

pub(crate) struct E2e {
    pub(crate) tally: Tally,
    pub(crate) delivered_per_s: f64,
    pub(crate) ingest_per_s: f64,
    pub(crate) cost: Option<Value>,
    /// With `with_cost`: a client tailing the feed throughout (events read, page latencies).
    pub(crate) feed_tail: Option<(u64, Vec<f64>)>,
    /// Messages the delivery processes parked (at an org's cap or for a receiver's pause).
    pub(crate) parked: f64,
}

/// What a run measures besides delivery.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Measure {
    /// Only what the sink received.
    Off,
    /// CPU per process, statements, rows and WAL written, broker publishes.
    Cost,
    /// [`Measure::Cost`], with a client tailing the feed throughout, as an integrator catching up
    /// would while traffic flows: its page latency under load is a figure of its own.
    CostAndFeedTail,
}

/// One end-to-end run: `workers` delivery processes running while events are caused.
pub(crate) async fn e2e(
    sink: &Sink,
    events: u64,
    workers: usize,
    pace: Option<f64>,
    measure: Measure,
) -> anyhow::Result<E2e> {
    e2e_with(
        sink,
        events,
        workers,
        pace,
        measure,
        default_delivery(),
        None,
    )
    .await
}

/// [`e2e`] with the delivery processes configured by `settings`, and the org's webhook saved
/// with `webhook` beside its url and types when given (`{"ordering": "per_lead"}`).
pub(crate) async fn e2e_with(
    sink: &Sink,
    events: u64,
    workers: usize,
    pace: Option<f64>,
    measure: Measure,
    settings: DeliverySettings,
    webhook: Option<Value>,
) -> anyhow::Result<E2e> {
    let with_cost = measure != Measure::Off;
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let mut procs = Vec::new();
    for _ in 0..workers {
        procs.push(env.start_delivery(&settings).await?);
    }
    let (ep, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 16).await?;
    sink.set_secret(ep, &org.secret);
    if let Some(extra) = webhook {
        env.set_webhook(&org.id, &url, extra).await?;
    }
    let before = if with_cost {
        Some(counters(&env).await)
    } else {
        None
    };
    let stop_tail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tail = (measure == Measure::CostAndFeedTail).then(|| {
        feed::tail_while(
            env.http.clone(),
            env.public.clone(),
            org.tokens[0].clone(),
            stop_tail.clone(),
        )
    });
    let window = match with_cost {
        true => Some(Window::open(&env).await),
        false => None,
    };
    let start = now_us();
    produce(&env, &org, events / 2, 0, 32, pace.map(|r| r / 2.0), true).await;
    let produced = (now_us() - start) as f64 / 1e6;
    wait_delivered(sink, ep, events, patience(events)).await;
    let measured = match window {
        Some(w) => Some(w.close(&env).await),
        None => None,
    };
    stop_tail.store(true, std::sync::atomic::Ordering::Relaxed);
    let feed_tail = match tail {
        Some(t) => Some(t.await?),
        None => None,
    };
    let (tally, parked) = settle(&env, api, procs, sink, ep, &org.id).await?;
    let cost = match before {
        Some(b) => {
            let after = counters(&env).await;
            let rows = rows_written(&env).await?;
            let d = tally.delivered.max(1) as f64;
            let total: i64 = rows.values().sum();
            let outbox = rows.get("outbox").copied().unwrap_or(0);
            let m = measured.map_or(Value::Null, |m| m.json(tally.delivered));
            Some(json!({
                "cpu": m["cpu"],
                "statements": m["statements"],
                "settled_before": m["settled_before"],
                "delivered_events": tally.delivered,
                "pg_rows_written_by_table": rows,
                "pg_row_writes_per_delivered_event": r3(total as f64 / d),
                "pg_event_pipeline_row_writes_per_delivered_event": r3(outbox as f64 / d),
                "pg_wal_syncs_per_delivered_event": r3((after.wal_syncs - b.wal_syncs) as f64 / d),
                "pg_wal_records_per_delivered_event": r3((after.wal_records - b.wal_records) as f64 / d),
                "pg_wal_bytes_per_delivered_event": r3((after.wal_bytes - b.wal_bytes) as f64 / d),
                "broker_publishes_per_delivered_event": match (b.broker_publishes, after.broker_publishes) {
                    (Some(x), Some(y)) => json!(r3((y - x) as f64 / d)),
                    _ => Value::Null,
                },
            }))
        }
        None => None,
    };
    Ok(E2e {
        delivered_per_s: tally.delivered as f64 / ((tally.last_us - start) as f64 / 1e6),
        ingest_per_s: tally.committed as f64 / produced,
        tally,
        cost,
        feed_tail,
        parked,
    })
}

/// A backlog of `events` queued with no consumer, then drained by `workers` processes.
pub(crate) async fn drain(
    sink: &Sink,
    events: u64,
    workers: usize,
    answer: Answer,
    settings: DeliverySettings,
) -> anyhow::Result<Value> {
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let (ep, url) = sink.endpoint(answer);
    let org = env.org(&url, 16).await?;
    sink.set_secret(ep, &org.secret);
    produce(&env, &org, events / 2, 0, 32, None, true).await;
    // Queued: every committed event published (confirmed) by the relay.
    let pg = env.db.client().await;
    let deadline = Instant::now() + patience(events);
    while Instant::now() < deadline {
        let n: i64 = qualifier_testkit::sql::try_one(
            &pg,
            "SELECT (SELECT count(*) FROM deliveries WHERE due_at IS NOT NULL)
                + (SELECT count(*) FROM deliveries_unsent)",
            &[],
        )
        .await?;
        if n == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let window = Window::open(&env).await;
    let start = now_us();
    let procs =
        futures_util::future::try_join_all((0..workers).map(|_| env.start_delivery(&settings)))
            .await?;
    wait_delivered(sink, ep, events, patience(events)).await;
    let measured = window.close(&env).await;
    let (t, parked) = settle(&env, api, procs, sink, ep, &org.id).await?;
    let span_s = (t.last_us - t.first_us) as f64 / 1e6;
    let m = measured.json(t.delivered);
    let mut v = t.json();
    v["messages_parked"] = json!(parked);
    v["cpu"] = m["cpu"].clone();
    v["statements"] = m["statements"].clone();
    v["workers"] = json!(workers);
    v["concurrency_per_worker"] = json!(settings.concurrency);
    v["receiver_latency_ms"] = json!(match answer {
        Answer::Ok => 0,
        Answer::After(d) => d.as_millis() as u64,
        Answer::Fail(_) => 0,
    });
    v["drained_per_s"] = json!(r3(t.delivered as f64 / span_s));
    v["drained_per_s_from_start"] =
        json!(r3(t.delivered as f64 / ((t.last_us - start) as f64 / 1e6)));
    Ok(v)
}

/// The end of a run: what was committed against what the sink received for the org at `ep`,
/// and how many messages the delivery processes parked, read before the services stop.
async fn settle(
    env: &Env,
    api: crate::services::Proc,
    procs: Vec<crate::services::Proc>,
    sink: &Sink,
    ep: usize,
    org_id: &str,
) -> anyhow::Result<(Tally, f64)> {
    let committed = env.committed().await?;
    let mut parked = 0.0;
    for p in &procs {
        parked += p
            .counter(&env.http, "qualifier_delivery_parked_total")
            .await;
    }
    api.stop();
    for p in procs {
        p.stop();
    }
    Ok((
        Tally::of(&committed, &sink.receipts(), ep, org_id, 0),
        parked,
    ))
}
