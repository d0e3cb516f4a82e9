//! Orgs beside each other: the noisy neighbour (org B alone, then beside a hanging org A) and
//! one org alone under the default per-org cap.

use super::*;

/// Org B alone, then beside org A whose endpoint hangs past the attempt timeout.
pub(crate) async fn noisy(sink: &Sink, b_events: u64, a_events: u64) -> anyhow::Result<Value> {
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let settings = DeliverySettings {
        concurrency: 64,
        org_concurrency: 16,
        timeout_ms: 1000,
        env: vec![],
    };
    let worker = env.start_delivery(&settings).await?;
    let (ea, ua) = sink.endpoint(Answer::After(Duration::from_secs(5)));
    let (eb, ub) = sink.endpoint(Answer::Ok);
    let org_a = env.org(&ua, 1).await?;
    let org_b = env.org(&ub, 16).await?;
    sink.set_secret(ea, &org_a.secret);
    sink.set_secret(eb, &org_b.secret);

    let run_b = |offset: u64| {
        let (env, sink, org_b) = (&env, sink, &org_b);
        async move {
            let start = now_us();
            let before = sink.count_valid(eb) as u64;
            produce(env, org_b, b_events / 2, offset, 32, None, true).await;
            wait_delivered(sink, eb, before + b_events, patience(b_events)).await;
            let committed = env.committed().await?;
            let t = Tally::of(&committed, &sink.receipts(), eb, &org_b.id, start);
            let rate = t.delivered as f64 / ((t.last_us - start) as f64 / 1e6);
            Ok::<_, anyhow::Error>((t, rate))
        }
    };
    let (alone, alone_rate) = run_b(0).await?;
    // A's backlog: every one of its attempts hangs until the timeout.
    produce(&env, &org_a, a_events, 0, 32, None, false).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let a_started = sink.count_valid(ea);
    let (beside, beside_rate) = run_b(1_000_000).await?;
    let a_attempts = sink.count_valid(ea) - a_started;
    api.stop();
    worker.stop();
    let mut a = alone.json();
    a["delivered_per_s"] = json!(r3(alone_rate));
    let mut b = beside.json();
    b["delivered_per_s"] = json!(r3(beside_rate));
    Ok(json!({
        "settings": {"concurrency": settings.concurrency, "org_concurrency": settings.org_concurrency,
                     "timeout_ms": settings.timeout_ms, "org_a_hang_ms": 5000, "org_a_events": a_events},
        "org_b_alone": a,
        "org_b_beside_hanging_a": b,
        "org_a_attempts_during_b": a_attempts,
        "org_b_rate_ratio_beside_vs_alone": r3(beside_rate / alone_rate),
        "org_b_p99_ratio_beside_vs_alone": r3(pct(&beside.lat_ms, 0.99) / pct(&alone.lat_ms, 0.99)),
    }))
}

pub(crate) async fn lone_org(sink: &Sink, n: u64, lifted: &E2e) -> anyhow::Result<Value> {
    let capped = e2e_with(
        sink,
        n,
        1,
        None,
        Measure::Off,
        DeliverySettings {
            org_concurrency: 16, // the default: a quarter of 64
            ..default_delivery()
        },
        None,
    )
    .await?;
    let at = |t: &Tally, key: &str| t.json()[key].as_f64().unwrap_or(f64::NAN);
    let p50 = |t: &Tally| at(t, "commit_to_receipt_p50_ms");
    let p99 = |t: &Tally| at(t, "commit_to_receipt_p99_ms");
    Ok(json!({
        "default_cap_delivered_per_s": r3(capped.delivered_per_s),
        "cap_lifted_delivered_per_s": r3(lifted.delivered_per_s),
        "rate_ratio_default_vs_lifted": r3(capped.delivered_per_s / lifted.delivered_per_s),
        "default_cap_p50_ms": p50(&capped.tally),
        "cap_lifted_p50_ms": p50(&lifted.tally),
        "p50_ratio_default_vs_lifted": r3(p50(&capped.tally) / p50(&lifted.tally)),
        "default_cap_p99_ms": p99(&capped.tally),
        "cap_lifted_p99_ms": p99(&lifted.tally),
        "p99_ratio_default_vs_lifted": r3(p99(&capped.tally) / p99(&lifted.tally)),
        "default_cap_events_lost": capped.tally.lost,
        "default_cap_messages_parked": capped.parked,
        "cap_lifted_messages_parked": lifted.parked,
    }))
}
