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
    let heavy = heavy_erasure(&env, &org.id, &org.tokens[0]).await?;
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
        "heavy_events_of_lead": HEAVY_EVENTS,
        "heavy_kept_answers": HEAVY_ANSWERS,
        "heavy_erase_ms": r3(heavy),
    });
    println!(
        "      erasing a lead with {EVENTS_PER_LEAD} events beside {others} others: p50 {:.1} ms, max {:.1} ms",
        pct(&ms, 0.5),
        ms.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "      erasing a lead with {HEAVY_EVENTS} events in an org keeping {HEAVY_ANSWERS} Idempotency-Key answers: {heavy:.1} ms"
    );
    Ok(v)
}

/// Events of the heavy case's lead (contract section 16: under a second).
const HEAVY_EVENTS: i64 = 10_000;
/// Idempotency-Key answers its org keeps, a hundred of them about the lead.
const HEAVY_ANSWERS: i64 = 100_000;

/// The contract's worst case for one erasure: a lead with ten thousand events in an org that
/// kept a hundred thousand Idempotency-Key answers in the last day. Both are written in SQL (as
/// `crate::feed::fill` writes history), copies of the lead's own first event and answers of the
/// stored shape, then vacuumed like settled history. Returns the `DELETE`'s milliseconds.
async fn heavy_erasure(env: &Env, org: &str, token: &str) -> anyhow::Result<f64> {
    let inbound = format!("{}/internal/v1/orgs/{org}/inbound", env.internal);
    let lead: Value = env
        .http
        .post(&inbound)
        .bearer_auth(INTERNAL_TOKEN)
        .json(&json!({"name": "Erase Me Heavily", "phone": "+447899999999", "channel": "sms"}))
        .send()
        .await?
        .json()
        .await?;
    let id = lead["lead"]["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("inbound answered {lead}"))?
        .to_owned();
    let c = env.db.client().await;
    c.execute(
        "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id,
                             published_at, status)
         SELECT gen_random_uuid(), o.org_id, 'lead.updated', o.payload, gen_random_uuid(),
                o.lead_id, now(), 'succeeded'
         FROM outbox o, generate_series(2, $2::int8)
         WHERE o.lead_id = $1::text::uuid",
        &[&id, &HEAVY_EVENTS],
    )
    .await?;
    c.execute(
        "INSERT INTO idempotency_keys (org_id, key, fingerprint, status, response_body, location,
                                       lead_id, lead_unknown)
         SELECT $1::text::uuid, 'bench-' || g, sha256(g::text::bytea), 200,
                convert_to('{\"lead\":{\"id\":\"' || l || '\",\"name\":\"Someone Else\"}}', 'UTF8'),
                NULL, l, false
         FROM (SELECT g, CASE WHEN g % 1000 = 0 THEN $2::text::uuid ELSE gen_random_uuid() END AS l
               FROM generate_series(1, $3::int8) g) s",
        &[&org, &id, &HEAVY_ANSWERS],
    )
    .await?;
    c.batch_execute("VACUUM ANALYZE outbox").await?;
    c.batch_execute("VACUUM ANALYZE idempotency_keys").await?;
    c.batch_execute("CHECKPOINT").await?;
    let t = Instant::now();
    let r = env
        .http
        .request(Method::DELETE, format!("{}/api/v1/leads/{id}", env.public))
        .bearer_auth(token)
        .send()
        .await?;
    let took = t.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(r.status() == 204, "heavy erase answered {}", r.status());
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM outbox WHERE lead_id = $1::text::uuid AND erased_at IS NULL",
            &[&id],
        )
        .await?
        .get(0);
    anyhow::ensure!(left <= 1, "{left} events of the erased lead kept whole");
    Ok(took)
}
