//! An endpoint's outage: what waiting costs the broker, and the drain after recovery.

use super::*;

/// The per-org cap exists for neighbours: alone, an org should not feel it. One org at the
/// maximum rate under the default cap (16 of 64), against `lifted`, the same run with the cap
/// lifted to the process's 64 slots.
/// Endpoint health (docs/delivery.md, "Endpoint health"): `events` events wait through an outage of the org's
/// endpoint, then it comes back and they are delivered with no call. Reports what waiting cost
/// the broker (messages it accepted per waiting event per hour of outage: held deliveries are
/// off the broker, so close to 0) and the drain rate after recovery (the first good probe
/// releases them; probes here run every second or two).
pub(crate) async fn outage(sink: &Sink, events: u64, watch_secs: u64) -> anyhow::Result<Value> {
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let (ep, url) = sink.endpoint(Answer::Fail(503));
    let org = env.org(&url, 4).await?;
    sink.set_secret(ep, &org.secret);
    let settings = DeliverySettings {
        env: vec![
            ("QUALIFIER_ENDPOINT_FAILING_SPAN_MS", "1000".into()),
            ("QUALIFIER_ENDPOINT_PROBE_MIN_MS", "1000".into()),
            ("QUALIFIER_ENDPOINT_PROBE_MAX_MS", "2000".into()),
        ],
        ..default_delivery()
    };
    let worker = env.start_delivery(&settings).await?;
    let pg = env.db.client().await;
    let count = |sql: &'static str| {
        let pg = &pg;
        async move { pg.query_one(sql, &[]).await.map(|r| r.get::<_, i64>(0)) }
    };
    // The outage begins: a few events until the endpoint is found failing.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut offset = 0;
    while count("SELECT count(*) FROM endpoint_health WHERE state = 'failing'").await? == 0 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the endpoint never became failing"
        );
        produce(&env, &org, 5, offset, 5, None, false).await;
        offset += 5;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    produce(&env, &org, events, offset, 32, None, false).await;
    let total = offset + events;
    // Every one of them waits in its row, off the broker.
    let deadline = Instant::now() + patience(events);
    while (count("SELECT count(*) FROM deliveries WHERE state = 'held'").await? as u64) < total {
        anyhow::ensure!(Instant::now() < deadline, "not every event was held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = broker_publishes().await;
    tokio::time::sleep(Duration::from_secs(watch_secs)).await;
    let after = broker_publishes().await;
    let probes = sink.receipts().iter().filter(|r| r.endpoint == ep).count();
    // Back.
    sink.set_answer(ep, Answer::Ok);
    let back = Instant::now();
    let deadline = back + patience(total) + Duration::from_secs(10);
    let mut first = None;
    loop {
        let done = count("SELECT count(*) FROM deliveries WHERE state = 'succeeded'").await? as u64;
        if done > 0 && first.is_none() {
            first = Some(back.elapsed());
        }
        if done >= total {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{done} of {total} delivered after recovery"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = back.elapsed();
    let first = first.unwrap_or(took);
    let dead = count("SELECT count(*) FROM deliveries WHERE state = 'dead'").await?;
    worker.stop();
    api.stop();
    let publishes = match (before, after) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };
    let hours = watch_secs as f64 / 3600.0;
    Ok(json!({
        "events_waiting": total,
        "outage_watched_s": watch_secs,
        "broker_publishes_while_waiting": publishes,
        "broker_publishes_per_waiting_event_per_hour": publishes.map(|p| r3(p as f64 / total as f64 / hours)),
        "requests_to_the_endpoint_during_outage": probes,
        "first_delivery_after_recovery_ms": first.as_millis() as u64,
        "drained_per_s_after_first": r3(total as f64 / (took - first).as_secs_f64().max(1e-3)),
        "all_delivered_after_recovery_s": r3(took.as_secs_f64()),
        "dead": dead,
    }))
}
