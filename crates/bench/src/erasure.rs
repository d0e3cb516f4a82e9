//! Erasing a contact (docs/api.md, "Erasing a lead") with a long history among many other
//! events: what `DELETE /api/v1/leads/{id}` takes when the lead has 100 events and the org
//! millions of others. The erasure reaches the lead's rows through indexes, so the figure
//! should not move with the others.

use std::time::Instant;

use reqwest::Method;
use serde_json::{Value, json};

use crate::load::{pct, r3};
use crate::services::{Env, INTERNAL_TOKEN};
use crate::sink::{Answer, Sink};

/// Leads erased per run (the figure is their p50 and max).
const LEADS: usize = 5;
/// Events each of them has: `lead.created` and 99 `lead.updated`.
const EVENTS_PER_LEAD: usize = 100;

pub async fn phase(sink: &Sink, others: i64, heavy_sizes: Heavy) -> anyhow::Result<Value> {
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let (_, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 1).await?;
    let fill_started = Instant::now();
    crate::feed::fill(&env, &org.id, others).await?;
    // As a database that has held its history for a while: vacuumed (hint bits and visibility
    // map set) and checkpointed, so the figure is the erasure's, not the bulk load's write-back.
    let c = env.db.client().await;
    // One statement each: VACUUM cannot run in the implicit transaction of a multi-statement
    // string.
    c.batch_execute("VACUUM ANALYZE outbox").await?;
    c.batch_execute("CHECKPOINT").await?;
    let fill_secs = fill_started.elapsed().as_secs_f64();
    let mut ms = Vec::new();
    for n in 0..LEADS {
        let id = inbound_lead(&env, &org.id, "Erase Me", &format!("+4478{n:08}")).await?;
        let patch = format!("{}/internal/v1/orgs/{}/leads/{id}", env.internal, org.id);
        for i in 1..EVENTS_PER_LEAD {
            let r = env
                .http
                .patch(&patch)
                .bearer_auth(INTERNAL_TOKEN)
                .json(&json!({"profile": {"step": i}}))
                .send()
                .await?;
            anyhow::ensure!(r.status() == 200, "patch answered {}", r.status());
        }
        let t = Instant::now();
        let r = env
            .http
            .request(Method::DELETE, format!("{}/api/v1/leads/{id}", env.public))
            .bearer_auth(&org.tokens[0])
            .send()
            .await?;
        let took = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(r.status() == 204, "erase answered {}", r.status());
        ms.push(took);
    }
    // The contract's worst case, three times, while another org's deliveries go on.
    let delivery = env.start_delivery(&crate::default_delivery()).await?;
    let neighbour = Neighbour::start(&env, sink).await?;
    tokio::time::sleep(NEIGHBOUR_QUIET).await;
    let quiet = (neighbour.began_us, crate::sink::now_us());
    let mut heavy = Vec::new();
    let mut windows = Vec::new();
    for n in 0..heavy_sizes.runs {
        let (ms, window) = heavy_erasure(&env, &org.id, &org.tokens[0], n, heavy_sizes).await?;
        heavy.push(ms);
        windows.push(window);
    }
    let (p99_quiet, p99_erasing, samples) = neighbour.stop(&env, sink, quiet, &windows).await?;
    delivery.stop();
    let heavy_max = heavy.iter().copied().fold(0.0, f64::max);
    api.stop();
    // In the order they ran (the first meets the coldest cache), then sorted for the figures.
    let order = ms.clone();
    ms.sort_by(f64::total_cmp);
    let v = json!({
        "other_events_stored": others,
        "events_per_lead": EVENTS_PER_LEAD,
        "leads": LEADS,
        "erase_p50_ms": r3(pct(&ms, 0.5)),
        "erase_max_ms": r3(ms.last().copied().unwrap_or(f64::NAN)),
        "erase_ms": order.iter().map(|m| r3(*m)).collect::<Vec<_>>(),
        "fill_seconds": r3(fill_secs),
        "heavy_events_of_lead": heavy_sizes.events,
        "heavy_kept_answers": heavy_sizes.answers,
        "heavy_erase_ms": heavy.iter().map(|m| r3(*m)).collect::<Vec<_>>(),
        "heavy_erase_max_ms": r3(heavy_max),
        "neighbour_p99_quiet_ms": r3(p99_quiet),
        "neighbour_p99_during_erasure_ms": r3(p99_erasing),
        "neighbour_p99_ratio": r3(p99_erasing / p99_quiet),
        "neighbour_samples_during_erasure": samples,
    });
    println!(
        "      erasing a lead with {EVENTS_PER_LEAD} events beside {others} others: p50 {:.1} ms, max {:.1} ms",
        pct(&ms, 0.5),
        ms.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "      erasing a lead with {} events in an org keeping {} Idempotency-Key answers: {} ms (slowest {heavy_max:.1})",
        heavy_sizes.events,
        heavy_sizes.answers,
        crate::perf::listed(heavy.iter(), 1)
    );
    println!(
        "      another org's commit-to-receipt p99: {p99_quiet:.1} ms quiet, {p99_erasing:.1} ms during the erasures ({samples} events)"
    );
    Ok(v)
}

/// The contract's worst case for one erasure (section 16: under a second): a lead with
/// `events` events in an org that kept `answers` Idempotency-Key answers in the last day,
/// erased `runs` times (each time a lead of its own).
#[derive(Clone, Copy, Debug)]
pub struct Heavy {
    pub runs: usize,
    pub events: i64,
    pub answers: i64,
}

/// The other org's changes a second, all along.
const NEIGHBOUR_RATE: u64 = 50;
/// How long the other org's deliveries are measured before the first heavy erasure.
const NEIGHBOUR_QUIET: std::time::Duration = std::time::Duration::from_secs(4);

/// Another org changing one lead at a steady rate to an endpoint of its own, all through the
/// heavy erasures: its commit-to-receipt latency (the sink's receipt less the row's
/// `created_at`, the change's transaction) with and without an erasure under way.
struct Neighbour {
    org: String,
    endpoint: usize,
    began_us: i64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Neighbour {
    async fn start(env: &Env, sink: &Sink) -> anyhow::Result<Neighbour> {
        let (endpoint, url) = sink.endpoint(Answer::Ok);
        let org = env.org(&url, 1).await?;
        let id = inbound_lead(env, &org.id, "Neighbour", "+447800000001").await?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task = {
            let (http, stop) = (env.http.clone(), stop.clone());
            let url = format!("{}/internal/v1/orgs/{}/leads/{id}", env.internal, org.id);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(std::time::Duration::from_micros(
                    1_000_000 / NEIGHBOUR_RATE,
                ));
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    tick.tick().await;
                    i += 1;
                    let _ = http
                        .patch(&url)
                        .bearer_auth(INTERNAL_TOKEN)
                        .json(&json!({"profile": {"step": i}}))
                        .send()
                        .await;
                }
            })
        };
        Ok(Neighbour {
            org: org.id,
            endpoint,
            began_us: crate::sink::now_us(),
            stop,
            task,
        })
    }

    /// Stops the changes, waits for their deliveries, and returns the p99 of the latencies of
    /// changes made in `quiet` and of those made during any of `erasing`, with the count of
    /// the latter.
    async fn stop(
        self,
        env: &Env,
        sink: &Sink,
        quiet: (i64, i64),
        erasing: &[(i64, i64)],
    ) -> anyhow::Result<(f64, f64, usize)> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.await?;
        let c = env.db.client().await;
        let made: std::collections::HashMap<u128, i64> = c
            .query(
                "SELECT delivery_id::text, (extract(epoch FROM created_at) * 1000000)::int8
                 FROM outbox WHERE org_id = $1::text::uuid AND event_type = 'lead.updated'",
                &[&self.org],
            )
            .await?
            .iter()
            .filter_map(|r| {
                let id: uuid::Uuid = r.get::<_, &str>(0).parse().ok()?;
                Some((id.as_u128(), r.get::<_, i64>(1)))
            })
            .collect();
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        while sink
            .receipts()
            .iter()
            .filter(|r| r.endpoint == self.endpoint)
            .count()
            < made.len()
            && Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let (mut calm, mut busy) = (Vec::new(), Vec::new());
        for r in sink
            .receipts()
            .iter()
            .filter(|r| r.endpoint == self.endpoint)
        {
            let Some(&at) = made.get(&r.delivery) else {
                continue;
            };
            let ms = (r.at_us - at) as f64 / 1000.0;
            if erasing.iter().any(|(a, b)| (*a..=*b).contains(&at)) {
                busy.push(ms);
            } else if (quiet.0..=quiet.1).contains(&at) {
                calm.push(ms);
            }
        }
        calm.sort_by(f64::total_cmp);
        busy.sort_by(f64::total_cmp);
        anyhow::ensure!(
            !calm.is_empty() && !busy.is_empty(),
            "the other org's deliveries were not measured ({} quiet, {} during)",
            calm.len(),
            busy.len()
        );
        Ok((pct(&calm, 0.99), pct(&busy, 0.99), busy.len()))
    }
}

/// One of the worst cases (`Heavy`): a lead with its events in an org with its kept answers. Both are written in SQL (as
/// `crate::feed::fill` writes history), copies of the lead's own first event and answers of the
/// stored shape, then vacuumed like settled history. Returns the `DELETE`'s milliseconds and
/// its start and end (Unix microseconds).
async fn heavy_erasure(
    env: &Env,
    org: &str,
    token: &str,
    n: usize,
    sizes: Heavy,
) -> anyhow::Result<(f64, (i64, i64))> {
    let id = inbound_lead(env, org, "Erase Me Heavily", &format!("+44789999999{n}")).await?;
    let c = env.db.client().await;
    c.execute(
        "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id,
                             published_at, status)
         SELECT gen_random_uuid(), o.org_id, 'lead.updated', o.payload, gen_random_uuid(),
                o.lead_id, now(), 'succeeded'
         FROM outbox o, generate_series(2, $2::int8)
         WHERE o.lead_id = $1::text::uuid",
        &[&id, &sizes.events],
    )
    .await?;
    c.execute(
        "INSERT INTO idempotency_keys (org_id, key, fingerprint, status, response_body, location,
                                       lead_id, lead_unknown)
         SELECT $1::text::uuid, 'bench-' || $4::int8 || '-' || g, sha256(g::text::bytea), 200,
                convert_to('{\"lead\":{\"id\":\"' || l || '\",\"name\":\"Someone Else\"}}', 'UTF8'),
                NULL, l, false
         FROM (SELECT g, CASE WHEN g % 1000 = 0 THEN $2::text::uuid ELSE gen_random_uuid() END AS l
               FROM generate_series(1, $3::int8) g) s",
        &[&org, &id, &sizes.answers, &(n as i64)],
    )
    .await?;
    c.batch_execute("VACUUM ANALYZE outbox").await?;
    c.batch_execute("VACUUM ANALYZE idempotency_keys").await?;
    c.batch_execute("CHECKPOINT").await?;
    // Settle after the writes above (their checkpoint, the neighbour's backlog) so that the
    // window measures the erasure.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let t = Instant::now();
    let began = crate::sink::now_us();
    let r = env
        .http
        .request(Method::DELETE, format!("{}/api/v1/leads/{id}", env.public))
        .bearer_auth(token)
        .send()
        .await?;
    let took = t.elapsed().as_secs_f64() * 1000.0;
    let ended = crate::sink::now_us();
    anyhow::ensure!(r.status() == 204, "heavy erase answered {}", r.status());
    let left: i64 = qualifier_testkit::sql::try_one(
        &c,
        "SELECT count(*) FROM outbox WHERE lead_id = $1::text::uuid AND erased_at IS NULL",
        &[&id],
    )
    .await?;
    anyhow::ensure!(left <= 1, "{left} events of the erased lead kept whole");
    Ok((took, (began, ended)))
}

/// A new lead of `org` through the inbound API (its `lead.created`): its id.
async fn inbound_lead(env: &Env, org: &str, name: &str, phone: &str) -> anyhow::Result<String> {
    let lead: Value = env
        .http
        .post(format!("{}/internal/v1/orgs/{org}/inbound", env.internal))
        .bearer_auth(INTERNAL_TOKEN)
        .json(&json!({"name": name, "phone": phone, "channel": "sms"}))
        .send()
        .await?
        .json()
        .await?;
    Ok(lead["lead"]["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("inbound answered {lead}"))?
        .to_owned())
}
