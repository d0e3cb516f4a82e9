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

pub async fn phase(sink: &Sink, others: i64) -> anyhow::Result<Value> {
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
        let inbound = format!("{}/internal/v1/orgs/{}/inbound", env.internal, org.id);
        let lead: Value = env
            .http
            .post(&inbound)
            .bearer_auth(INTERNAL_TOKEN)
            .json(&json!({"name": "Erase Me", "phone": format!("+4478{n:08}"), "channel": "sms"}))
            .send()
            .await?
            .json()
            .await?;
        let id = lead["lead"]["id"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("inbound answered {lead}"))?
            .to_owned();
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
    });
    println!(
        "      erasing a lead with {EVENTS_PER_LEAD} events beside {others} others: p50 {:.1} ms, max {:.1} ms",
        pct(&ms, 0.5),
        ms.last().copied().unwrap_or(f64::NAN)
    );
    Ok(v)
}
