//! The events feed (docs/api.md): how fast a client catching up reads an org's history,
//! and how long a page takes while events are being written and delivered.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::load::{pct, r3};
use crate::services::{Env, Org};
use crate::sink::{Answer, Sink};

/// Events in the org the read phase pages through.
pub const FEED_EVENTS: i64 = 100_000;

/// A transaction holding the feed's head, as the relay's does, and the head's position: what
/// events written as published are numbered from.
pub(crate) async fn holding_feed_head(
    c: &mut tokio_postgres::Client,
) -> anyhow::Result<(tokio_postgres::Transaction<'_>, i64)> {
    let tx = c.transaction().await?;
    let head: i64 = tx
        .query_one("SELECT pos FROM feed_head FOR UPDATE", &[])
        .await?
        .get(0);
    Ok((tx, head))
}

/// Gives `org` `n` published events at the head of the feed, as the relay would have left them
/// (written in one statement: the figure is about reading, and the pipeline that writes them is
/// measured by the end-to-end phase). The payload is a real `lead.created` envelope's size.
pub(crate) async fn fill(env: &Env, org: &str, n: i64) -> anyhow::Result<()> {
    let mut c = env.db.client().await;
    let (tx, head) = holding_feed_head(&mut c).await?;
    tx.execute(
        "WITH s AS MATERIALIZED (
             SELECT g, gen_random_uuid() AS e, gen_random_uuid() AS l
             FROM generate_series(1, $3::int8) g)
         INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id,
                             published_at, status, feed_pos)
         SELECT e, $1::text::uuid, 'lead.created',
                convert_to(json_build_object(
                    'id', e, 'type', 'lead.created', 'version', '1',
                    'occurred_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                    'org_id', $1::text,
                    'data', json_build_object('lead', json_build_object(
                        'id', l, 'name', 'Bench Lead', 'email', null,
                        'phone', '+4477' || lpad(g::text, 8, '0'), 'channel', 'sms',
                        'qualification_stage', 'qualifying', 'route_target', null,
                        'profile', json_build_object(), 'external_ref', null, 'ai_paused', false,
                        'conversation_url', 'https://app.qualifier.local/conversations/' || l,
                        'created_at', now(), 'updated_at', now())))::text, 'UTF8'),
                gen_random_uuid(), l, now(), 'succeeded', $2::int8 + g
         FROM s",
        &[&org, &head, &n],
    )
    .await?;
    tx.execute("UPDATE feed_head SET pos = $1", &[&(head + n)])
        .await?;
    tx.commit().await?;
    c.batch_execute("ANALYZE outbox").await?;
    Ok(())
}

/// One page: (events on it, next cursor, seconds it took).
async fn page(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    after: Option<&str>,
    limit: u32,
) -> anyhow::Result<(usize, String, f64)> {
    let url = match after {
        Some(c) => format!("{base}/api/v1/events?after={c}&limit={limit}"),
        None => format!("{base}/api/v1/events?limit={limit}"),
    };
    let t = Instant::now();
    let r = http.get(url).bearer_auth(token).send().await?;
    anyhow::ensure!(r.status() == 200, "feed answered {}", r.status());
    let v: Value = r.json().await?;
    let took = t.elapsed().as_secs_f64();
    let n = v["events"].as_array().map_or(0, Vec::len);
    let next = v["next_cursor"].as_str().unwrap_or_default().to_owned();
    Ok((n, next, took))
}

/// Reads the whole feed of `org` from the start with pages of `limit`: (pages, events, seconds,
/// page latencies in ms, sorted).
async fn read_all(env: &Env, org: &Org, limit: u32) -> anyhow::Result<(u64, u64, f64, Vec<f64>)> {
    let start = Instant::now();
    let (mut pages, mut events, mut cursor) = (0u64, 0u64, None::<String>);
    let mut lat = Vec::new();
    loop {
        let (n, next, took) = page(
            &env.http,
            &env.public,
            &org.tokens[0],
            cursor.as_deref(),
            limit,
        )
        .await?;
        pages += 1;
        lat.push(took * 1000.0);
        if n == 0 {
            break;
        }
        events += n as u64;
        cursor = Some(next);
    }
    lat.sort_by(f64::total_cmp);
    Ok((pages, events, start.elapsed().as_secs_f64(), lat))
}

/// Catching up on a 100,000-event org: pages/s and events/s at the default page size (100) and
/// the largest (500), one client reading as fast as it can.
pub async fn read_phase(sink: &Sink) -> anyhow::Result<Value> {
    let mut env = Env::new(sink.ca_file.clone()).await;
    let api = env.start_api().await?;
    let (_, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 1).await?;
    fill(&env, &org.id, FEED_EVENTS).await?;
    let mut out = serde_json::Map::new();
    for limit in [100u32, 500] {
        let (pages, events, secs, lat) = read_all(&env, &org, limit).await?;
        anyhow::ensure!(
            events == FEED_EVENTS as u64,
            "the feed gave {events} of {FEED_EVENTS} events"
        );
        out.insert(
            format!("page_size_{limit}"),
            json!({
                "pages": pages, "events": events, "seconds": r3(secs),
                "pages_per_s": r3(pages as f64 / secs), "events_per_s": r3(events as f64 / secs),
                "page_p50_ms": r3(pct(&lat, 0.5)), "page_p99_ms": r3(pct(&lat, 0.99)),
            }),
        );
    }
    api.stop();
    out.insert("org_events".into(), json!(FEED_EVENTS));
    Ok(Value::Object(out))
}

/// A client following the feed (pages of 100, tailing the head) while the end-to-end load runs:
/// every page's latency, until `stop` is set.
pub fn tail_while(
    http: reqwest::Client,
    base: String,
    token: String,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(u64, Vec<f64>)> {
    tokio::spawn(async move {
        let (mut cursor, mut events, mut lat) = (None::<String>, 0u64, Vec::new());
        while !stop.load(Ordering::Relaxed) {
            match page(&http, &base, &token, cursor.as_deref(), 100).await {
                Ok((n, next, took)) => {
                    lat.push(took * 1000.0);
                    events += n as u64;
                    cursor = Some(next);
                    if n == 0 {
                        // At the head: poll as a client would, not in a tight loop.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        lat.sort_by(f64::total_cmp);
        (events, lat)
    })
}
