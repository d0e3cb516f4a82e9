//! History at scale (docs/performance.md, "History at scale"): the same figures on an empty
//! database and on one that holds a month of history, side by side, from the release binaries
//! in one run.
//!
//! The history is written in SQL, as the code writes its rows (envelopes, attempt logs with
//! their per-attempt fields only, statuses, feed positions): a big org with most of the events
//! over 30 days, and many small orgs sharing the rest, interleaved in time as real traffic is.
//! It is then vacuumed, analysed and checkpointed, as a database that has lived with its
//! history. On each database the phase measures:
//!
//! - the machine's CPU with the services running and no client at all;
//! - `PATCH` from 16 clients (each one causes a `lead.updated`): its p95, the delivered rate
//!   and the commit-to-receipt p95;
//! - every read a client or an administrator makes (lists with each filter, a page further
//!   on, one delivery, the console's Deliveries page with its 24-hour chart, a search, a dry
//!   run, the feed, a lead and the leads list) for the big org and for a small one, at p95;
//! - the outbox's size per stored event, all included (row, indexes, TOAST);
//! - with the bench's server (`scripts/bench.sh`: `auto_explain` preloaded, a JSON log),
//!   the plan of every statement those reads ran, once with custom plans and once with generic
//!   ones: the rows each plan read beside the rows it answered or counted. A statement that
//!   reads more than [`MAX_READ_RATIO`] times what it answers fails the run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualifier_domain::delivery::AttemptEntry;
use reqwest::Method;
use serde_json::{Value, json};

use crate::load::{pct, r3};
use crate::services::{DeliverySettings, Env, INTERNAL_TOKEN, Org};
use crate::sink::{Answer, Sink, now_us};

/// A plan may read this many rows per row it answers (or counts), plus [`READ_SLACK`].
pub const MAX_READ_RATIO: f64 = 10.0;
/// Rows any statement may read whatever it answers (a lookup of a setting, an org, a head).
const READ_SLACK: f64 = 20.0;
/// Small orgs sharing a tenth of the history.
const SMALL_ORGS: i64 = 200;
/// Days the history spans (the default retention).
const DAYS: i64 = 30;

/// The days one outbox partition holds with the history's retention, as `lead-api` makes them.
fn span_days() -> i32 {
    qualifier_store::partitions::upkeep::partition_days(Duration::from_secs(DAYS as u64 * 86_400))
}

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Events stored in the history database.
    pub events: i64,
    /// Seconds of the idle window.
    pub idle_secs: u64,
    /// Calls of each read (the figure is their p95).
    pub reads: usize,
    /// PATCHes of the write run.
    pub patches: u64,
    /// Rounds of retention on each side.
    pub retention_rounds: i64,
}

impl Plan {
    /// The smoke run's: every step once, on a history small enough for the dev build.
    pub fn smoke(events: Option<i64>) -> Plan {
        Plan {
            events: events.unwrap_or(30_000),
            idle_secs: 2,
            reads: 5,
            patches: 200,
            retention_rounds: 1,
        }
    }

    pub fn of(quick: bool, events: Option<i64>) -> Plan {
        if quick {
            Plan {
                events: events.unwrap_or(200_000),
                idle_secs: 10,
                reads: 30,
                patches: 1000,
                retention_rounds: 2,
            }
        } else {
            Plan {
                events: events.unwrap_or(2_500_000),
                idle_secs: 30,
                reads: 150,
                patches: 3000,
                retention_rounds: 3,
            }
        }
    }
}

/// One database's side: the services, the big org and a small org.
struct Side {
    env: Env,
    api: Option<crate::services::Proc>,
    worker: Option<crate::services::Proc>,
    big: Org,
    small: Org,
    endpoint: usize,
    /// Extra cookie of a console session per org (big, small).
    cookies: [String; 2],
}

pub async fn phase(sink: &Sink, plan: Plan) -> anyhow::Result<Value> {
    println!(
        "      history: an empty database beside one with {} events over {DAYS} days",
        plan.events
    );
    let mut empty = Side::start(sink, SMALL_ORG_EVENTS).await?;
    let mut full = Side::start(sink, 1).await?;
    let t = Instant::now();
    // The services are stopped while the history is written and vacuumed: a statement of theirs
    // that waited on the writer's lock holds a snapshot older than the history, and a VACUUM
    // that starts before it ends marks no page all-visible (a run of this phase once found
    // every dead delivery's page unmarked, and its dry run read the table for each).
    full.stop_services();
    fill(&full, plan.events).await?;
    let fill_secs = t.elapsed().as_secs_f64();
    println!("      history written in {fill_secs:.0} s");
    // The services start on the loaded database, as after a deploy: nothing cached from the
    // empty tables they started on (prepared statements are also replaced within a minute).
    full.start_services().await?;
    let mut out = serde_json::Map::new();
    for (name, side) in [("empty", &mut empty), ("history", &mut full)] {
        let idle = side.idle(plan.idle_secs).await;
        let writes = side.writes(sink, plan.patches).await?;
        let storage = side.storage().await?;
        println!(
            "      {name:<8} idle CPU {:.1}%, {:.0} events/s, PATCH p95 {:.1} ms, commit-to-receipt p95 {:.1} ms, {:.0} B per stored event ({:.0} table, {:.0} TOAST, {:.0} indexes; envelope {:.0} B, {:.0}% compressed; attempt log {:.0} B)",
            idle * 100.0,
            writes["delivered_per_s"].as_f64().unwrap_or(f64::NAN),
            writes["patch_p95_ms"].as_f64().unwrap_or(f64::NAN),
            writes["commit_to_receipt_p95_ms"]
                .as_f64()
                .unwrap_or(f64::NAN),
            storage["bytes_per_event"].as_f64().unwrap_or(f64::NAN),
            storage["heap_bytes_per_event"].as_f64().unwrap_or(f64::NAN),
            storage["toast_bytes_per_event"]
                .as_f64()
                .unwrap_or(f64::NAN),
            storage["index_bytes_per_event"]
                .as_f64()
                .unwrap_or(f64::NAN),
            storage["payload_bytes_per_event"]
                .as_f64()
                .unwrap_or(f64::NAN),
            storage["payloads_compressed"].as_f64().unwrap_or(f64::NAN) * 100.0,
            storage["attempt_log_bytes_per_event"]
                .as_f64()
                .unwrap_or(f64::NAN),
        );
        out.insert(
            name.to_owned(),
            json!({"idle_machine_cpu_share": r3(idle), "writes": writes, "storage": storage}),
        );
    }
    let [e, h] = Side::reads_beside([&empty, &full], plan.reads).await?;
    out["empty"]["reads"] = e;
    out["history"]["reads"] = h;
    print_reads(&out);
    let plans = match crate::plans::LogDir::from_env() {
        Some(dir) => full.plan_check(&dir).await?,
        None => json!({"skipped": "no PostgreSQL JSON log (run through `make bench`)"}),
    };
    // Retention beside the same days with a thousandth of the events: the "empty" side gets a
    // small history of its own (its reads and writes above are done).
    let rounds = plan.retention_rounds;
    println!("      retention: {} events over {DAYS} days", plan.events);
    let ret_full = retention_rounds(&full, plan.events / DAYS, rounds).await?;
    dry_run_matches(&full).await?;
    let small_events = (plan.events / 1000).max(DAYS);
    fill(&empty, small_events).await?;
    println!("      retention: {small_events} events over {DAYS} days");
    let ret_small = retention_rounds(&empty, small_events / DAYS, rounds).await?;
    empty.stop();
    full.stop();
    let v = json!({
        "events_stored": plan.events,
        "retention": {"history": ret_full, "small_history": ret_small},
        "days": DAYS,
        "small_orgs": SMALL_ORGS,
        "fill_seconds": r3(fill_secs),
        "empty": out["empty"],
        "history": out["history"],
        "plans": plans,
    });
    if let Some(bad) = plans_over_limit(&v["plans"]) {
        anyhow::bail!("statements read more than {MAX_READ_RATIO}x what they answer: {bad}");
    }
    Ok(v)
}

/// A row of the bench's table: its name, the figure, and the bound it is held to.
pub type Target = (String, f64, Option<(&'static str, f64)>);

/// The phase's rows of the bench's table: each figure the history may not move, beside its
/// bound.
pub fn targets(v: &Value) -> Vec<Target> {
    let f = |side: &str, path: &[&str]| {
        let mut x = &v[side];
        for p in path {
            x = &x[*p];
        }
        x.as_f64().unwrap_or(f64::NAN)
    };
    let worst = |side: &str, org: &str| {
        v[side]["reads"][org]
            .as_object()
            .map(|m| {
                m.values()
                    .filter_map(|r| r["p95_ms"].as_f64())
                    .fold(0.0, f64::max)
            })
            .unwrap_or(f64::NAN)
    };
    // The small org's worst ratio, read by read, with a floor of 1 ms under each figure: below
    // it, a ratio measures the scheduler, not the history.
    let small_ratio = v["history"]["reads"]["small"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, r)| {
                    let h = r["p95_ms"].as_f64().unwrap_or(f64::NAN).max(1.0);
                    let e = v["empty"]["reads"]["small"][k]["p95_ms"]
                        .as_f64()
                        .unwrap_or(f64::NAN)
                        .max(1.0);
                    h / e
                })
                .fold(0.0, f64::max)
        })
        .unwrap_or(f64::NAN);
    let n = v["events_stored"].as_i64().unwrap_or(0);
    let rounds = |side: &str| v["retention"][side].as_array().cloned().unwrap_or_default();
    let mean_expire = |side: &str| {
        let r = rounds(side);
        r.iter()
            .filter_map(|x| x["expire_ms"].as_f64())
            .sum::<f64>()
            / r.len() as f64
    };
    let size = |x: &Value| {
        x["table_bytes"].as_f64().unwrap_or(f64::NAN)
            + x["index_bytes"].as_f64().unwrap_or(f64::NAN)
    };
    let history_rounds = rounds("history");
    let growth = match (history_rounds.first(), history_rounds.last()) {
        (Some(a), Some(b)) => size(b) / size(a),
        _ => f64::NAN,
    };
    vec![
        (
            format!("history ({n} events): idle CPU pp above empty"),
            (f("history", &["idle_machine_cpu_share"]) - f("empty", &["idle_machine_cpu_share"]))
                * 100.0,
            Some(("<=", 2.0)),
        ),
        (
            "history: delivered ev/s ratio to empty".into(),
            f("history", &["writes", "delivered_per_s"])
                / f("empty", &["writes", "delivered_per_s"]),
            Some((">=", 0.9)),
        ),
        (
            "history: PATCH p95 ratio to empty".into(),
            f("history", &["writes", "patch_p95_ms"]) / f("empty", &["writes", "patch_p95_ms"]),
            Some(("<=", 1.1)),
        ),
        (
            "history: slowest read p95 ms, big org".into(),
            worst("history", "big"),
            Some(("<=", 20.0)),
        ),
        (
            "history: small org's worst read p95 ratio to empty".into(),
            small_ratio,
            Some(("<=", 2.0)),
        ),
        (
            "history: outbox bytes per stored event".into(),
            f("history", &["storage", "bytes_per_event"]),
            Some(("<=", 1200.0)),
        ),
        (
            "history: removing a partition, ratio to 1/1000 the events".into(),
            mean_expire("history") / mean_expire("small_history"),
            Some(("<=", 2.0)),
        ),
        (
            "history: outbox size, last retention round / first".into(),
            growth,
            Some(("<=", 1.05)),
        ),
    ]
}

/// The statements the plan check flagged, one line each, if any.
fn plans_over_limit(plans: &Value) -> Option<String> {
    let bad: Vec<String> = ["custom", "generic"]
        .iter()
        .flat_map(|mode| {
            plans[*mode]["statements"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["over_limit"].as_bool() == Some(true))
                .map(move |s| {
                    format!(
                        "[{mode}] {} (read {}, answered {})",
                        s["query"].as_str().unwrap_or(""),
                        s["rows_read"],
                        s["rows_answered"]
                    )
                })
        })
        .collect();
    (!bad.is_empty()).then(|| bad.join("; "))
}

fn print_reads(out: &serde_json::Map<String, Value>) {
    println!(
        "      {:<34} {:>9} {:>9} {:>9} {:>9}   (p95 ms; then each side's first call, small org)",
        "read", "big/empty", "big/hist", "small/em", "small/hi"
    );
    let names: Vec<String> = out["empty"]["reads"]["big"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for n in names {
        let f = |side: &str, org: &str, figure: &str| {
            out[side]["reads"][org][&n][figure]
                .as_f64()
                .unwrap_or(f64::NAN)
        };
        println!(
            "      {n:<34} {:>9.2} {:>9.2} {:>9.2} {:>9.2}   {:>6.2} {:>6.2}",
            f("empty", "big", "p95_ms"),
            f("history", "big", "p95_ms"),
            f("empty", "small", "p95_ms"),
            f("history", "small", "p95_ms"),
            f("empty", "small", "first_ms"),
            f("history", "small", "first_ms")
        );
    }
}

fn settings() -> DeliverySettings {
    DeliverySettings {
        concurrency: 64,
        org_concurrency: 64,
        timeout_ms: 2000,
        // Attempt entries stored compact, as the history is written ([`COMPRESS`]).
        env: vec![("QUALIFIER_PAYLOAD_STORAGE", "compressed".into())],
    }
}

/// The small org's own events on the empty database: more than the feed's page of 100 and two
/// deliveries pages of 50, so that its reads answer full pages there as its history makes them
/// with history. Not on the history's side, where they would be the newest rows of the open
/// partition, written all at once before the big org's 3,000 and after the statistics were
/// gathered: a run with them there found the small org's first page read 4,596 rows for 51.
/// The unfiltered list no longer can (`list_deliveries_at`); a list since a day still can
/// (docs/performance.md, "Not there yet").
const SMALL_ORG_EVENTS: usize = 151;

impl Side {
    /// A side with its services, the big org and the small one, which gets a contact and
    /// `small_events` events of its own (the contact's creation, then its updates).
    async fn start(sink: &Sink, small_events: usize) -> anyhow::Result<Side> {
        let mut env = Env::new(sink.ca_file.clone()).await;
        // Envelopes stored compressed, as the history is written ([`COMPRESS`]).
        env.api_env
            .push(("QUALIFIER_PAYLOAD_STORAGE", "compressed"));
        let api = env.start_api().await?;
        let worker = env.start_delivery(&settings()).await?;
        let (endpoint, url) = sink.endpoint(Answer::Ok);
        let big = env.org(&url, 16).await?;
        sink.set_secret(endpoint, &big.secret);
        let small = env.org(&url, 1).await?;
        let v: Value = env
            .http
            .post(format!(
                "{}/internal/v1/orgs/{}/inbound",
                env.internal, small.id
            ))
            .bearer_auth(INTERNAL_TOKEN)
            .json(&json!({"name": "Small Lead", "phone": "+447700900001", "channel": "sms"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let lead = v["lead"]["id"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("inbound answered {v}"))?
            .to_owned();
        for step in 1..small_events {
            env.http
                .patch(format!(
                    "{}/internal/v1/orgs/{}/leads/{lead}",
                    env.internal, small.id
                ))
                .bearer_auth(INTERNAL_TOKEN)
                .json(&json!({"profile": {"step": step}}))
                .send()
                .await?
                .error_for_status()?;
        }
        let mut side = Side {
            env,
            api: Some(api),
            worker: Some(worker),
            big,
            small,
            endpoint,
            cookies: [String::new(), String::new()],
        };
        side.cookies = [
            side.console_cookie(&side.big.id.clone()).await?,
            side.console_cookie(&side.small.id.clone()).await?,
        ];
        Ok(side)
    }

    async fn restart(&mut self) -> anyhow::Result<()> {
        self.stop_services();
        self.start_services().await
    }

    fn stop_services(&mut self) {
        if let Some(p) = self.api.take() {
            p.stop();
        }
        if let Some(p) = self.worker.take() {
            p.stop();
        }
    }

    async fn start_services(&mut self) -> anyhow::Result<()> {
        self.api = Some(self.env.start_api().await?);
        self.worker = Some(self.env.start_delivery(&settings()).await?);
        Ok(())
    }

    fn stop(mut self) {
        self.stop_services();
    }

    /// A console session of `org`: the cookie its sign-in link sets.
    async fn console_cookie(&self, org: &str) -> anyhow::Result<String> {
        let v: Value = self
            .env
            .http
            .post(format!(
                "{}/internal/v1/orgs/{org}/console-sessions",
                self.env.internal
            ))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await?
            .json()
            .await?;
        let link = v["url"].as_str().unwrap_or_default();
        let path = link
            .find("/console/")
            .map(|i| &link[i..])
            .ok_or_else(|| anyhow::anyhow!("console session answered {v}"))?;
        let r = self
            .env
            .http
            .get(format!("{}{path}", self.env.public))
            .send()
            .await?;
        let cookie = r
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|c| c.to_str().ok())
            .filter_map(|c| c.split(';').next())
            .find(|c| !c.ends_with('='))
            .ok_or_else(|| anyhow::anyhow!("sign-in set no cookie ({})", r.status()))?
            .to_owned();
        Ok(cookie)
    }

    /// The machine's busy share while the services run with no client.
    async fn idle(&self, secs: u64) -> f64 {
        // Settle: the start-up's own work and the last run's deliveries.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let before = crate::cpu::Snapshot::take();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let after = crate::cpu::Snapshot::take();
        crate::cpu::report(&before, &after, 1)["machine_busy_share"]
            .as_f64()
            .unwrap_or(f64::NAN)
    }

    /// `n` PATCHes of the big org's leads from 16 clients, as fast as they are answered; each
    /// causes a `lead.updated`, delivered to the sink.
    async fn writes(&self, sink: &Sink, n: u64) -> anyhow::Result<Value> {
        const CLIENTS: usize = 16;
        // Four leads per client, so two clients rarely wait on the same lead's row.
        let mut leads = Vec::new();
        for i in 0..CLIENTS * 4 {
            let v: Value = self
                .env
                .http
                .post(format!(
                    "{}/internal/v1/orgs/{}/inbound",
                    self.env.internal, self.big.id
                ))
                .bearer_auth(INTERNAL_TOKEN)
                .json(&json!({"name": "Bench Writer", "phone": format!("+4479{:08}", i + (now_us() as usize % 1_000_000) * 64), "channel": "sms"}))
                .send()
                .await?
                .json()
                .await?;
            leads.push(
                v["lead"]["id"]
                    .as_str()
                    .ok_or_else(|| anyhow::anyhow!("inbound answered {v}"))?
                    .to_owned(),
            );
        }
        // The leads' own events first, so the window counts only the PATCHes'.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let start_us = now_us();
        let base = sink.count_valid(self.endpoint);
        let lat = Arc::new(std::sync::Mutex::new(Vec::<f64>::new()));
        let (http, internal, org) = (
            self.env.http.clone(),
            self.env.internal.clone(),
            self.big.id.clone(),
        );
        let leads = Arc::new(leads);
        let lat2 = lat.clone();
        // `run_n` repeats a failed PATCH until it succeeds: all `n` are made, and it answers
        // how many tries failed on the way.
        let retried = crate::load::run_n(n, CLIENTS, None, move |i| {
            let (http, internal, org, leads, lat) = (
                http.clone(),
                internal.clone(),
                org.clone(),
                leads.clone(),
                lat2.clone(),
            );
            async move {
                let lead = &leads[i as usize % leads.len()];
                let t = Instant::now();
                let r = http
                    .patch(format!("{internal}/internal/v1/orgs/{org}/leads/{lead}"))
                    .bearer_auth(INTERNAL_TOKEN)
                    .json(&json!({"profile": {"step": i}}))
                    .send()
                    .await;
                let good = r.is_ok_and(|r| r.status() == 200);
                if good && let Ok(mut l) = lat.lock() {
                    l.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                good
            }
        })
        .await;
        // Every PATCH's event delivered (or the patience is spent).
        let deadline = Instant::now() + Duration::from_secs(60 + n / 50);
        while Instant::now() < deadline && sink.count_valid(self.endpoint) < base + n as usize {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pg = self.env.db.client().await;
        let rows = pg
            .query(
                "SELECT delivery_id::text, (extract(epoch FROM created_at) * 1000000)::int8
                 FROM outbox WHERE org_id = $1::text::uuid AND event_type = 'lead.updated'
                   AND created_at >= to_timestamp($2::float8 / 1e6)",
                &[&self.big.id, &(start_us as f64)],
            )
            .await?;
        let mut firsts: BTreeMap<u128, i64> = BTreeMap::new();
        for r in sink.receipts() {
            if r.endpoint == self.endpoint && r.valid && r.at_us >= start_us {
                let e = firsts.entry(r.delivery).or_insert(r.at_us);
                *e = (*e).min(r.at_us);
            }
        }
        let mut c2r = Vec::new();
        let mut last = start_us;
        let mut lost = 0;
        for r in &rows {
            let id = uuid::Uuid::parse_str(r.get::<_, &str>(0))
                .map(|u| u.as_u128())
                .unwrap_or(0);
            let created: i64 = r.get(1);
            match firsts.get(&id) {
                Some(at) => {
                    c2r.push((at - created) as f64 / 1000.0);
                    last = last.max(*at);
                }
                None => lost += 1,
            }
        }
        c2r.sort_by(f64::total_cmp);
        let mut lat = lat.lock().map(|l| l.clone()).unwrap_or_default();
        lat.sort_by(f64::total_cmp);
        let secs = ((last - start_us) as f64 / 1e6).max(1e-3);
        Ok(json!({
            "patches": n,
            "patches_retried": retried,
            "events": rows.len(),
            "events_lost": lost,
            "delivered_per_s": r3(c2r.len() as f64 / secs),
            "patch_p50_ms": r3(pct(&lat, 0.5)),
            "patch_p95_ms": r3(pct(&lat, 0.95)),
            "commit_to_receipt_p50_ms": r3(pct(&c2r, 0.5)),
            "commit_to_receipt_p95_ms": r3(pct(&c2r, 0.95)),
        }))
    }

    /// Every read of the big org and of the small one, `reps` times, on both sides at once. A
    /// first call of each read is timed apart (`first_ms`: the org's pages may not be cached
    /// yet, a cost paid once, not per call); then `reps` rounds send every read once, starting
    /// one read later each round, each call on one side followed at once by the same call on
    /// the other. A disturbance from elsewhere on the machine (a checkpoint, an autovacuum, the
    /// relay) then lands on a call or two of several reads, not on consecutive calls of one
    /// read, where a few slow calls are that read's p95; and the machine's speed, which drifts
    /// within a run, is the same for both columns of a ratio, not that of two minutes apart.
    async fn reads_beside(sides: [&Side; 2], reps: usize) -> anyhow::Result<[Value; 2]> {
        let mut v = [serde_json::Map::new(), serde_json::Map::new()];
        for (i, org) in ["big", "small"].into_iter().enumerate() {
            let mut calls = Vec::new();
            for s in sides {
                calls.push(
                    s.calls(if i == 0 { &s.big } else { &s.small }, &s.cookies[i])
                        .await?,
                );
            }
            let n = calls[0].len();
            anyhow::ensure!(calls[1].len() == n, "the two sides' reads differ");
            let mut first = [Vec::with_capacity(n), Vec::with_capacity(n)];
            let mut ms = [
                vec![Vec::with_capacity(reps); n],
                vec![Vec::with_capacity(reps); n],
            ];
            for (a, b) in calls[0].iter().zip(&calls[1]) {
                first[0].push(sides[0].timed(a).await?);
                first[1].push(sides[1].timed(b).await?);
            }
            for round in 0..reps {
                for k in 0..n {
                    let j = (round + k) % n;
                    // Which side goes first alternates, so neither always follows the other.
                    for t in 0..2 {
                        let s = (round + t) % 2;
                        ms[s][j].push(sides[s].timed(&calls[s][j]).await?);
                    }
                }
            }
            for s in 0..2 {
                let mut m = serde_json::Map::new();
                for ((c, ms), first) in calls[s].iter().zip(&mut ms[s]).zip(&first[s]) {
                    ms.sort_by(f64::total_cmp);
                    m.insert(
                        c.name.clone(),
                        json!({"p50_ms": r3(pct(ms, 0.5)), "p95_ms": r3(pct(ms, 0.95)),
                               "first_ms": r3(*first)}),
                    );
                }
                v[s].insert(org.into(), Value::Object(m));
            }
        }
        let [a, b] = v;
        Ok([Value::Object(a), Value::Object(b)])
    }

    /// One call of `c`, in milliseconds, checked for the status it should answer.
    async fn timed(&self, c: &Call) -> anyhow::Result<f64> {
        let t = Instant::now();
        let status = c.send(&self.env.http).await?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(
            status == c.expect,
            "{} answered {status}, not {}",
            c.name,
            c.expect
        );
        Ok(ms)
    }

    /// The reads of `org`, with ids and cursors taken from its own data.
    async fn calls(&self, org: &Org, cookie: &str) -> anyhow::Result<Vec<Call>> {
        let pg = self.env.db.client().await;
        // A delivery and a lead of the org from the middle of its history (the newest with an
        // empty database).
        let row = pg
            .query_opt(
                "SELECT delivery_id::text, event_id::text, coalesce(lead_id::text, '') FROM outbox
                 WHERE org_id = $1::text::uuid AND lead_id IS NOT NULL
                 ORDER BY created_at < now() - interval '15 days' DESC, seq DESC LIMIT 1",
                &[&org.id],
            )
            .await?;
        let (delivery, event, lead) = match row {
            Some(r) => (
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2),
            ),
            None => {
                let z = uuid::Uuid::nil().to_string();
                (z.clone(), z.clone(), z)
            }
        };
        // A lead that exists (the history's events name leads the leads table does not hold).
        let live_lead: Option<String> = pg
            .query_opt(
                "SELECT id::text FROM leads WHERE org_id = $1::text::uuid LIMIT 1",
                &[&org.id],
            )
            .await?
            .map(|r| r.get(0));
        let i = |path: String| format!("{}/internal/v1/orgs/{}/{path}", self.env.internal, org.id);
        let day_ago = time_arg(-86_400);
        let hour_ago = time_arg(-3_600);
        let month_ago = time_arg(-(DAYS * 86_400 + 3600));
        let old_end = time_arg(-(DAYS - 1) * 86_400);
        let first_page: Value = self
            .env
            .http
            .get(i("deliveries?limit=50".into()))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await?
            .json()
            .await?;
        let next = first_page["next_cursor"].as_str().unwrap_or("").to_owned();
        let feed_first: Value = self
            .env
            .http
            .get(format!("{}/api/v1/events?limit=100", self.env.public))
            .bearer_auth(&org.tokens[0])
            .send()
            .await?
            .json()
            .await?;
        let feed_next = feed_first["next_cursor"].as_str().unwrap_or("").to_owned();
        let internal = |name: &str, path: String| Call::internal(name, i(path));
        let mut calls = vec![
            internal("deliveries", "deliveries?limit=50".into()),
            internal(
                "deliveries status=dead",
                "deliveries?limit=50&status=dead".into(),
            ),
            internal(
                "deliveries status=pending",
                "deliveries?limit=50&status=pending".into(),
            ),
            internal(
                "deliveries event_type=stage_changed",
                "deliveries?limit=50&event_type=lead.stage_changed".into(),
            ),
            internal(
                "deliveries lead_id",
                format!("deliveries?limit=50&lead_id={lead}"),
            ),
            internal(
                "deliveries since a day",
                format!("deliveries?limit=50&since={day_ago}"),
            ),
            // Fewer dead deliveries in the hour than a page holds (the history ends minutes
            // before the reads), so the bound on `seq`, not the page, has to end the walk.
            internal(
                "deliveries status=dead since an hour",
                format!("deliveries?limit=50&status=dead&since={hour_ago}"),
            ),
            internal(
                "deliveries until 29 days ago",
                format!("deliveries?limit=50&until={old_end}"),
            ),
            internal("deliveries one", format!("deliveries/{delivery}")),
            Call {
                name: "dry run dead, 30 days".into(),
                method: Method::POST,
                url: i("deliveries/replay".into()),
                auth: Auth::Internal,
                body: Some(json!({"status": ["dead"], "since": month_ago, "dry_run": true})),
                expect: 202,
            },
            Call {
                name: "console deliveries + chart".into(),
                method: Method::GET,
                url: format!("{}/console/deliveries", self.env.public),
                auth: Auth::Cookie(cookie.to_owned()),
                body: None,
                expect: 200,
            },
            Call {
                name: "console search event id".into(),
                method: Method::GET,
                url: format!("{}/console/deliveries?q={event}", self.env.public),
                auth: Auth::Cookie(cookie.to_owned()),
                body: None,
                expect: 200,
            },
            Call::public(
                "feed first page",
                format!("{}/api/v1/events?limit=100", self.env.public),
                &org.tokens[0],
            ),
            Call::public(
                "leads list",
                format!("{}/api/v1/leads?limit=50", self.env.public),
                &org.tokens[0],
            ),
        ];
        if !next.is_empty() {
            calls.push(internal(
                "deliveries page 2",
                format!("deliveries?limit=50&cursor={next}"),
            ));
        }
        if !feed_next.is_empty() {
            calls.push(Call::public(
                "feed next page",
                format!(
                    "{}/api/v1/events?limit=100&after={feed_next}",
                    self.env.public
                ),
                &org.tokens[0],
            ));
        }
        if let Some(l) = live_lead {
            calls.push(Call::public(
                "lead",
                format!("{}/api/v1/leads/{l}", self.env.public),
                &org.tokens[0],
            ));
        }
        Ok(calls)
    }

    /// The outbox's bytes per stored event: table, TOAST and indexes.
    async fn storage(&self) -> anyhow::Result<Value> {
        let pg = self.env.db.client().await;
        let r = pg
            .query_one(
                "SELECT (SELECT count(*) FROM outbox)::float8,
                        sum(pg_relation_size(p))::float8,
                        sum(pg_table_size(p) - pg_relation_size(p))::float8,
                        sum(pg_indexes_size(p))::float8
                 FROM (SELECT inhrelid AS p FROM pg_inherits
                       WHERE inhparent = 'outbox'::regclass) parts",
                &[],
            )
            .await?;
        let (n, heap, toast, idx): (f64, f64, f64, f64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        let per = |b: f64| r3(b / n.max(1.0));
        // What the two variable-size columns take on average, and how many envelopes are
        // stored compressed (`qualifier_store::payload`).
        let cols = pg
            .query_one(
                "SELECT coalesce(avg(octet_length(payload)), 0)::float8,
                        coalesce(avg(pg_column_size(attempt_log)), 0)::float8,
                        coalesce(avg((get_byte(payload, 0) = 1)::int), 0)::float8
                 FROM outbox",
                &[],
            )
            .await?;
        let (payload, log, compressed): (f64, f64, f64) = (cols.get(0), cols.get(1), cols.get(2));
        Ok(json!({
            "events": n,
            "payload_bytes_per_event": r3(payload),
            "attempt_log_bytes_per_event": r3(log),
            "payloads_compressed": r3(compressed),
            "bytes_per_event": per(heap + toast + idx),
            "heap_bytes_per_event": per(heap),
            "toast_bytes_per_event": per(toast),
            "index_bytes_per_event": per(idx),
            "total_bytes": heap + toast + idx,
        }))
    }

    /// The reads again with `auto_explain` logging every statement's plan with its row counts,
    /// first with custom plans, then with generic ones (a prepared statement's plan after its
    /// fifth call, whatever its parameters).
    async fn plan_check(&mut self, dir: &crate::plans::LogDir) -> anyhow::Result<Value> {
        let pg = self.env.db.client().await;
        // Tables that stay small whatever the history (a seq scan of a page or two is the
        // planner's right choice there, and costs the same on day 300).
        let small: std::collections::HashSet<String> = pg
            .query(
                "SELECT relname::text FROM pg_class
                 WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
                   AND reltuples < 1000",
                &[],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut v = serde_json::Map::new();
        for mode in ["custom", "generic"] {
            let db = self.env.db.name.clone();
            pg.batch_execute(&format!(
                "ALTER DATABASE {db} SET auto_explain.log_min_duration = 0;
                 ALTER DATABASE {db} SET auto_explain.log_analyze = on;
                 ALTER DATABASE {db} SET auto_explain.log_timing = off;
                 ALTER DATABASE {db} SET auto_explain.log_format = 'json';
                 ALTER DATABASE {db} SET auto_explain.log_nested_statements = on;
                 ALTER DATABASE {db} SET plan_cache_mode = force_{mode}_plan;"
            ))
            .await?;
            // New sessions take the settings; lead-api's own (`custom` by default) would
            // override the database's, so it leaves the database's in force here.
            self.env.api_env.push(("QUALIFIER_PLAN_CACHE_MODE", "auto"));
            self.restart().await?;
            let mut per_call = Vec::new();
            let mut all = Vec::new();
            for (i, org) in [&self.big, &self.small].into_iter().enumerate() {
                for c in self.calls(org, &self.cookies[i]).await? {
                    let mark = dir.mark();
                    // Twice: a statement's first run in a session can differ (a custom plan
                    // before the cache decides).
                    for _ in 0..2 {
                        c.send(&self.env.http).await?;
                    }
                    // The collector writes the log a moment later.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let plans = dir.plans_since(&mark, "lead-api");
                    let stmts =
                        crate::plans::by_statement(&plans, &small, MAX_READ_RATIO, READ_SLACK);
                    let worst = stmts.first().cloned().unwrap_or(Value::Null);
                    per_call.push(json!({
                        "org": if i == 0 { "big" } else { "small" },
                        "call": c.name,
                        "rows_read": worst["rows_read"],
                        "rows_answered": worst["rows_answered"],
                        "heap_fetches": stmts.iter().filter_map(|s| s["heap_fetches"].as_f64()).sum::<f64>(),
                        "over_limit": stmts.iter().any(|s| s["over_limit"] == true),
                        "worst_statement": worst["query"],
                    }));
                    all.extend(plans);
                }
            }
            pg.batch_execute(&format!("ALTER DATABASE {db} RESET ALL"))
                .await?;
            let stmts = crate::plans::by_statement(&all, &small, MAX_READ_RATIO, READ_SLACK);
            crate::plans::print(mode, &per_call);
            v.insert(
                mode.into(),
                json!({"plans_logged": all.len(), "calls": per_call, "statements": stmts}),
            );
        }
        self.env
            .api_env
            .retain(|(k, _)| *k != "QUALIFIER_PLAN_CACHE_MODE");
        self.restart().await?;
        Ok(Value::Object(v))
    }
}

/// An instant `secs` from now, as the API's time filters take it.
fn time_arg(secs: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::seconds(secs);
    qualifier_domain::timefmt::format(t)
}

enum Auth {
    Internal,
    Token(String),
    Cookie(String),
}

struct Call {
    name: String,
    method: Method,
    url: String,
    auth: Auth,
    body: Option<Value>,
    expect: u16,
}

impl Call {
    fn internal(name: &str, url: String) -> Call {
        Call {
            name: name.into(),
            method: Method::GET,
            url,
            auth: Auth::Internal,
            body: None,
            expect: 200,
        }
    }

    fn public(name: &str, url: String, token: &str) -> Call {
        Call {
            name: name.into(),
            method: Method::GET,
            url,
            auth: Auth::Token(token.to_owned()),
            body: None,
            expect: 200,
        }
    }

    async fn send(&self, http: &reqwest::Client) -> anyhow::Result<u16> {
        let mut r = http.request(self.method.clone(), &self.url);
        r = match &self.auth {
            Auth::Internal => r.bearer_auth(INTERNAL_TOKEN),
            Auth::Token(t) => r.bearer_auth(t),
            Auth::Cookie(c) => r.header(reqwest::header::COOKIE, c),
        };
        if let Some(b) = &self.body {
            r = r.json(b);
        }
        let resp = r.send().await?;
        let status = resp.status().as_u16();
        // Read whole: the time is the page's, body included.
        let _ = resp.bytes().await?;
        Ok(status)
    }
}

/// Writes the history: `n` events over [`DAYS`] days (ending 10 minutes ago, and starting 2
/// hours inside the default retention, so retention has nothing to take during the run), nine in ten for the big org and the rest
/// spread over the small one and [`SMALL_ORGS`] - 1 more, in time order as traffic would have
/// written them. Each lead has about ten events. Statuses as a month of a mostly healthy
/// endpoint leaves them: 1 in 50 dead (five failed attempts), 1 in 100 skipped, 1 in 20
/// succeeded on a second attempt, the rest on the first.
async fn fill(side: &Side, n: i64) -> anyhow::Result<()> {
    let mut c = side.env.db.client().await;
    c.execute(
        "INSERT INTO orgs (id, name, created_at) SELECT gen_random_uuid(), 'Bench small ' || g, now()
         FROM generate_series(1, $1::int8) g",
        &[&(SMALL_ORGS - 1)],
    )
    .await?;
    let smalls = small_org_ids(&c, side).await?;
    write_events(&mut c, &side.big.id, &smalls, n, DAYS, true).await?;
    // Housekeeping rebuilds the indexes of each partition past its days once
    // (`Job::CompactOutbox`, one a round): the history is as a deployment's is after that.
    let store = side_store(side)?;
    // The writes' changes to the hourly totals, folded as `lead-api` folds them every second.
    let t = Instant::now();
    let hours = store.fold_delivery_hours().await?;
    println!(
        "      history: {hours} hourly totals folded from the writes in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut rebuilt = 0;
    while lead_api::housekeeping::Job::CompactOutbox
        .run(&store, Duration::ZERO)
        .await?
        > 0
    {
        rebuilt += 1;
    }
    println!(
        "      history: {rebuilt} partitions' indexes rebuilt in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // One statement each: VACUUM cannot run inside a multi-statement string's transaction.
    c.batch_execute("VACUUM ANALYZE outbox").await?;
    c.batch_execute("VACUUM ANALYZE orgs").await?;
    c.batch_execute("VACUUM ANALYZE delivery_hours").await?;
    c.batch_execute("VACUUM ANALYZE delivery_hour_changes")
        .await?;
    c.batch_execute("CHECKPOINT").await?;
    // An index-only count visits the table for every entry on a page the visibility map does
    // not vouch for: how much of the table it vouches for once the history is written.
    let r = c
        .query_one(
            "SELECT sum(relpages)::int8, sum(relallvisible)::int8 FROM pg_class
             WHERE oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'outbox'::regclass)",
            &[],
        )
        .await?;
    let (pages, visible): (i64, i64) = (r.get(0), r.get(1));
    println!("      history: {visible} of {pages} outbox pages all-visible after VACUUM");
    Ok(())
}

/// After the retention rounds (partitions dropped, the totals' cover moved past them, a span
/// of new events written each round): the dry run the API answers for the big org's month of
/// dead deliveries, mostly from the hourly totals, is what the outbox holds.
async fn dry_run_matches(side: &Side) -> anyhow::Result<()> {
    let c = side.env.db.client().await;
    let since = time::OffsetDateTime::now_utc() - time::Duration::days(DAYS);
    let org: uuid::Uuid = side.big.id.parse()?;
    let f = qualifier_store::deliveries::DeliveryFilter {
        statuses: vec![qualifier_domain::DeliveryStatus::Dead],
        since: Some(since),
        ..Default::default()
    };
    let counted = side_store(side)?.replay_matching(org, &f, true, 50).await?;
    let held: i64 = c
        .query_one(
            "SELECT count(*) FROM outbox WHERE org_id = $1::text::uuid AND status = 'dead'
               AND erased_at IS NULL AND created_at >= to_timestamp($2)",
            &[&side.big.id, &(since.unix_timestamp() as f64)],
        )
        .await?
        .get(0);
    println!("      dry run after retention: {counted} counted, {held} in the outbox");
    anyhow::ensure!(
        counted as i64 == held,
        "the dry run counted {counted} dead deliveries, the outbox holds {held}"
    );
    Ok(())
}

/// A store over the side's database, for housekeeping's jobs.
fn side_store(side: &Side) -> anyhow::Result<qualifier_store::Store> {
    use qualifier_store::{SecretKey, Store};
    let key = SecretKey::from_base64(&SecretKey::generate_base64())?;
    Ok(Store::new(
        qualifier_store::connect(&side.env.db.database(), 2)?,
        key,
    ))
}

/// The history's small orgs, the side's own small org last.
async fn small_org_ids(c: &tokio_postgres::Client, side: &Side) -> anyhow::Result<Vec<String>> {
    Ok(c.query(
        "SELECT id::text FROM orgs WHERE name LIKE 'Bench small %' ORDER BY name",
        &[],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .chain(std::iter::once(side.small.id.clone()))
    .collect())
}

/// `n` events of the history's mix over the last `days` days (the big org nine in ten, the rest
/// shared by `smalls`), in one transaction that holds the feed's head, as the relay would.
async fn write_events(
    c: &mut tokio_postgres::Client,
    big: &str,
    smalls: &[String],
    n: i64,
    days: i64,
    progress: bool,
) -> anyhow::Result<()> {
    let tx = c.transaction().await?;
    let head: i64 = tx
        .query_one("SELECT pos FROM feed_head FOR UPDATE", &[])
        .await?
        .get(0);
    // The days' partitions, as housekeeping would have created them as the days came: spans
    // of `partition_days` from the first day, up to the oldest partition there is.
    tx.execute(
        "SELECT qualifier_outbox_partition(s, least(s + $2::int, x.m))
         FROM (SELECT min(substring(relname FROM '^outbox_d([0-9]+)_')::int) AS m
               FROM pg_class WHERE relname ~ '^outbox_d[0-9]+_[0-9]+$') x,
              generate_series(
                  floor(extract(epoch FROM now() - make_interval(days => $1::int8::int))
                        / 86400)::int,
                  x.m - 1, $2::int) s",
        &[&days, &span_days()],
    )
    .await?;
    let now: f64 = tx
        .query_one("SELECT extract(epoch FROM now())::float8", &[])
        .await?
        .get(0);
    // In slices, so progress shows and no single statement holds millions of rows in memory.
    let slice: i64 = 50_000;
    let mut from = 1;
    while from <= n {
        let to = (from + slice - 1).min(n);
        let s = Slice::make(big, smalls, now, n, days, from, to);
        tx.execute(
            FILL_SQL,
            &[
                &s.g, &s.event, &s.org, &s.at, &s.ty, &s.lead, &s.payload, &head, &s.status,
                &s.tries, &s.log,
            ],
        )
        .await?;
        if progress && (to % 250_000 == 0 || to == n) {
            println!("      history: {to} of {n} events written");
        }
        from = to + 1;
    }
    tx.execute("UPDATE feed_head SET pos = $1", &[&(head + n)])
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Retention as days pass, through housekeeping's own job (`Job::ExpireEvents`, what `lead-api`
/// runs: the oldest partition dropped): each round moves the cutoff on by a partition's span,
/// which removes the oldest partition left, vacuums the outbox (what autovacuum would do; with
/// partitions dropped whole there is nothing dead in it), then writes that span's worth of new
/// events. The outbox's size after each round shows whether it stays level; the times show what
/// removing a partition costs beside the history.
async fn retention_rounds(side: &Side, per_day: i64, rounds: i64) -> anyhow::Result<Value> {
    let span = i64::from(span_days());
    let mut c = side.env.db.client().await;
    // For `retention_steps`; a server without the module leaves the steps untracked.
    let _ = c
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await;
    let smalls = small_org_ids(&c, side).await?;
    let store = side_store(side)?;
    let mut out = Vec::new();
    let count = async |c: &tokio_postgres::Client| -> anyhow::Result<i64> {
        Ok(c.query_one("SELECT count(*) FROM outbox", &[])
            .await?
            .get(0))
    };
    for round in 1..=rounds {
        // A partition's span further each round, and a day more: its last day's end then lies
        // before the cutoff whatever the time of day the history was written at.
        let keep = Duration::from_secs(((DAYS - round * span - 1) * 86_400) as u64);
        let before = count(&c).await?;
        let steps_before = retention_steps(&c).await;
        let t = Instant::now();
        let partitions = lead_api::housekeeping::Job::ExpireEvents
            .run(&store, keep)
            .await?;
        let expire_ms = t.elapsed().as_secs_f64() * 1000.0;
        let steps = retention_steps(&c)
            .await
            .zip(steps_before)
            .map(|((d1, x1), (d0, x0))| (d1 - d0, x1 - x0));
        let removed = before - count(&c).await?;
        let t = Instant::now();
        c.batch_execute("VACUUM outbox").await?;
        let vacuum_ms = t.elapsed().as_secs_f64() * 1000.0;
        write_events(&mut c, &side.big.id, &smalls, per_day * span, span, false).await?;
        let (written_into, reindex_ms) = rebuild_written(&c, span).await?;
        let r = c
            .query_one(
                "SELECT (SELECT count(*) FROM outbox)::float8, sum(pg_relation_size(p))::float8,
                        sum(pg_indexes_size(p))::float8
                 FROM (SELECT inhrelid AS p FROM pg_inherits
                       WHERE inhparent = 'outbox'::regclass) parts",
                &[],
            )
            .await?;
        let (rows, table, indexes): (f64, f64, f64) = (r.get(0), r.get(1), r.get(2));
        println!(
            "      retention round {round}: {removed} events ({partitions} partitions) removed in {expire_ms:.0} ms ({}), VACUUM {vacuum_ms:.0} ms; then {} written ({written_into} partitions' indexes rebuilt after, {reindex_ms:.0} ms): {rows:.0} stored, table {:.1} MiB, indexes {:.1} MiB",
            steps.map_or("steps not tracked".into(), |(d, x)| format!(
                "detach {d:.0} ms, drop {x:.0} ms; the rest is the checks and the files freed as the drop commits"
            )),
            per_day * span,
            table / 1048576.0,
            indexes / 1048576.0
        );
        out.push(json!({
            "round": round,
            "removed": removed,
            "partitions_dropped": partitions,
            "expire_ms": r3(expire_ms),
            "expire_us_per_event": r3(expire_ms * 1000.0 / (removed.max(1) as f64)),
            "detach_ms": steps.map(|s| r3(s.0)),
            "drop_ms": steps.map(|s| r3(s.1)),
            "vacuum_ms": r3(vacuum_ms),
            "written": per_day * span,
            "reindexed_partitions": written_into,
            "reindex_ms": r3(reindex_ms),
            "events_stored": rows,
            "table_bytes": table,
            "index_bytes": indexes,
        }));
    }
    Ok(Value::Array(out))
}

/// The indexes of the partitions holding the last `span` days, rebuilt after a round wrote its
/// days into them: how many, and the ms it took. A round can only write into days that have
/// passed, so its rows land in partitions that, in a deployment, took their rows before
/// housekeeping compacted them once closed (`Job::CompactOutbox`); left as written, their
/// indexes would grow by page splits round after round, and the size the rounds compare would
/// be the bench's way of writing, not what retention leaves behind.
async fn rebuild_written(c: &tokio_postgres::Client, span: i64) -> anyhow::Result<(usize, f64)> {
    let t = Instant::now();
    let names: Vec<String> = c
        .query(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass
               AND substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::int
                   >= floor(extract(epoch FROM now() - make_interval(days => $1::int8::int))
                            / 86400)::int",
            &[&span],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for n in &names {
        c.batch_execute(&format!("REINDEX TABLE {n}")).await?;
    }
    Ok((names.len(), t.elapsed().as_secs_f64() * 1000.0))
}

/// The time PostgreSQL spent so far in retention's two steps that touch a partition whole, its
/// concurrent detach and its drop, in ms, from `pg_stat_statements` (which tracks utility
/// statements, their text as sent); `None` without it. The rest of a round is its checks and
/// the bounded reads before the detach.
async fn retention_steps(c: &tokio_postgres::Client) -> Option<(f64, f64)> {
    let r = c
        .query_one(
            "SELECT coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'ALTER TABLE outbox DETACH%'), 0),
                    coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'DROP TABLE %'), 0)
             FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .await
        .ok()?;
    Some((r.get(0), r.get(1)))
}

/// The history's stored envelopes take the form `lead-api` writes with
/// `QUALIFIER_PAYLOAD_STORAGE=compressed`, which both sides of the phase run with
/// ([`Side::start`]).
const COMPRESS: bool = true;

/// One slice of the history: rows `from..=to` of `n` spread over `days` days before `now`
/// (seconds since the epoch, the writing transaction's), each event in the partition of its
/// day. The envelope is a real `lead.updated`'s shape and size, made and stored here as
/// `lead-api` stores it ([`qualifier_store::payload::pack`]), and the attempt log as the
/// delivery worker stores it ([`AttemptEntry::stored`]), so the rows are what the code writes:
/// one delivery in fifty dead after five attempts, one in a hundred skipped, one in twenty
/// succeeded at the second attempt; the rest is [`FILL_SQL`]'s.
struct Slice {
    g: Vec<i64>,
    event: Vec<String>,
    org: Vec<String>,
    at: Vec<f64>,
    ty: Vec<&'static str>,
    lead: Vec<String>,
    payload: Vec<Vec<u8>>,
    status: Vec<&'static str>,
    tries: Vec<i32>,
    log: Vec<String>,
}

impl Slice {
    fn make(
        big: &str,
        smalls: &[String],
        now: f64,
        n: i64,
        days: i64,
        from: i64,
        to: i64,
    ) -> Slice {
        let len = (to - from + 1) as usize;
        let mut s = Slice {
            g: Vec::with_capacity(len),
            event: Vec::with_capacity(len),
            org: Vec::with_capacity(len),
            at: Vec::with_capacity(len),
            ty: Vec::with_capacity(len),
            lead: Vec::with_capacity(len),
            payload: Vec::with_capacity(len),
            status: Vec::with_capacity(len),
            tries: Vec::with_capacity(len),
            log: Vec::with_capacity(len),
        };
        let span = (days * 86_400) as f64;
        for g in from..=to {
            // A tenth of the events are the small orgs', interleaved in time with the big one's.
            let org = match g % 10 {
                0 => smalls[((g / 10) as usize) % smalls.len()].as_str(),
                _ => big,
            };
            let at = now - span + 7_200.0 + (g as f64 / n as f64) * (span - 7_800.0);
            let ty = [
                "lead.created",
                "lead.updated",
                "lead.updated",
                "lead.stage_changed",
            ][(g % 4) as usize];
            // Ten leads per hundred events of an org: a lead has several events.
            let digest = ring::digest::digest(
                &ring::digest::SHA256,
                format!("{org}/{}/{}", g / 100, g % 10).as_bytes(),
            );
            let lead = uuid::Uuid::from_slice(&digest.as_ref()[..16]).expect("16 bytes");
            let event = uuid::Uuid::new_v4();
            let when = qualifier_domain::timefmt::format(
                time::OffsetDateTime::from_unix_timestamp_nanos((at * 1e9) as i128)
                    .expect("a time of this century"),
            );
            let envelope = serde_json::to_vec(&json!({
                "id": event, "type": ty, "version": "1", "occurred_at": when, "org_id": org,
                "data": {"lead": {
                    "id": lead, "revision": 1 + g % 7, "name": "Bench Lead",
                    "email": format!("lead{g}@example.com"),
                    "phone": format!("+4477{:08}", g % 100_000_000), "channel": "sms",
                    "qualification_stage": "qualifying", "route_target": null,
                    "profile": {"budget": "10k", "step": g % 9},
                    "external_ref": null, "ai_paused": false,
                    "conversation_url": format!("https://app.qualifier.local/conversations/{lead}"),
                    "created_at": when, "updated_at": when},
                    "previous": {"profile": {"step": g % 9 + 1}}}
            }))
            .expect("JSON");
            s.g.push(g);
            s.event.push(event.to_string());
            s.org.push(org.to_owned());
            s.at.push(at);
            s.ty.push(ty);
            s.lead.push(lead.to_string());
            s.payload
                .push(qualifier_store::payload::pack(envelope, COMPRESS));
            let (status, tries) = match (g % 50, g % 100, g % 20) {
                (7, _, _) => ("dead", 5),
                (_, 3, _) => ("skipped", 0),
                (_, _, 1) => ("succeeded", 2),
                _ => ("succeeded", 1),
            };
            let sig = hex_prefix(event.as_bytes());
            let log: Vec<Value> = (1..=tries)
                .map(|a| {
                    let failed = status == "dead" || a < tries;
                    AttemptEntry {
                        attempt: a as u32,
                        started_at: time::OffsetDateTime::from_unix_timestamp_nanos(
                            ((at + f64::from(a)) * 1e9) as i128,
                        )
                        .expect("a time of this century"),
                        duration_ms: 12 + a as u64,
                        status_code: Some(if failed { 500 } else { 200 }),
                        error: failed.then(|| "HTTP 500".to_owned()),
                        error_kind: None,
                        response_body: Some(
                            if failed {
                                r#"{"error":"internal"}"#
                            } else {
                                "ok"
                            }
                            .to_owned(),
                        ),
                        request_headers: Vec::new(),
                        signatures: vec![format!("sha256={sig}…"), format!("v1,{sig}…")],
                    }
                    .stored(COMPRESS)
                })
                .collect();
            s.status.push(status);
            s.tries.push(tries);
            s.log.push(Value::Array(log).to_string());
        }
        s
    }
}

/// Eight hex digits, as a shortened signature shows.
fn hex_prefix(b: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, b);
    d.as_ref()[..4].iter().map(|x| format!("{x:02x}")).collect()
}

/// Inserts a [`Slice`] (`$1`-`$7`, `$9`-`$11`) at feed positions after `$8`, with the
/// outcome columns the delivery worker leaves beside each attempt log.
///
/// Each row's sequence number carries its day (the partition key, migration 28), numbered
/// from the outbox's own sequence. A day the sequence has already left (it moved on at
/// midnight) takes the upper half of that day's numbers: the services drew the lower half
/// from the sequence while that day lasted, and a run that crossed midnight once wrote a
/// number they had used.
const FILL_SQL: &str = "
INSERT INTO outbox (seq, event_id, org_id, event_type, payload, created_at, delivery_id, lead_id,
                    published_at, status, attempts, failed_attempts, last_status_code, last_error,
                    attempt_log, updated_at, feed_pos)
SELECT CASE WHEN floor(x.at / 86400)::int8 < (SELECT last_value >> 32 FROM outbox_seq_seq)
            THEN (floor(x.at / 86400)::int8 << 32) | 2147483648
                 | (nextval('outbox_seq_seq') & 2147483647)
            ELSE (floor(x.at / 86400)::int8 << 32) | (nextval('outbox_seq_seq') & 4294967295)
       END,
       x.e::uuid, x.org::uuid, x.ty, x.payload,
       to_timestamp(x.at), gen_random_uuid(), x.lead::uuid,
       to_timestamp(x.at) + interval '20 milliseconds', x.st, x.tries,
       CASE WHEN x.st = 'dead' THEN 5 WHEN x.tries = 2 THEN 1 ELSE 0 END,
       CASE WHEN x.st = 'skipped' THEN NULL WHEN x.st = 'dead' THEN 500 ELSE 200 END,
       CASE WHEN x.st = 'dead' THEN 'HTTP 500' WHEN x.st = 'skipped' THEN 'webhook disabled' END,
       x.log::jsonb, to_timestamp(x.at) + interval '1 second' * x.tries, $8::int8 + x.g
FROM unnest($1::int8[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::text[],
            $7::bytea[], $9::text[], $10::int4[], $11::text[])
     AS x(g, e, org, at, ty, lead, payload, st, tries, log)";
