//! History at scale (docs/performance-log.md, "History at scale"): the same figures on an empty
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

mod fill;
mod reads;
mod retention;

use fill::*;
use retention::*;

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
    /// The smoke run's: every step once, on a history small enough for the dev build and
    /// large enough that every read has the same answer's shape on both sides (a small org
    /// holds a tenth of the events over [`SMALL_ORGS`] orgs, so 120,000 give it 60, more than a
    /// page of the deliveries list, as it has on the empty side).
    pub fn smoke(events: Option<i64>) -> Plan {
        Plan {
            events: events.unwrap_or(120_000),
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

/// Rounds the writes of each side are made in ([`phase`]).
const WRITE_ROUNDS: u64 = 4;

/// What one side's writes measured, summed over its rounds.
#[derive(Default)]
struct Written {
    patches: u64,
    retried: u64,
    events: usize,
    lost: usize,
    /// Each PATCH's answer time, ms.
    lat: Vec<f64>,
    /// Each delivered event's commit to its first receipt, ms.
    c2r: Vec<f64>,
    /// From the first PATCH to the last receipt, each round's window added.
    secs: f64,
}

impl Written {
    fn add(&mut self, w: Written) {
        self.patches += w.patches;
        self.retried += w.retried;
        self.events += w.events;
        self.lost += w.lost;
        self.lat.extend(w.lat);
        self.c2r.extend(w.c2r);
        self.secs += w.secs;
    }

    fn json(mut self) -> Value {
        self.lat.sort_by(f64::total_cmp);
        self.c2r.sort_by(f64::total_cmp);
        json!({
            "patches": self.patches,
            "patches_retried": self.retried,
            "events": self.events,
            "events_lost": self.lost,
            "delivered_per_s": r3(self.c2r.len() as f64 / self.secs.max(1e-3)),
            "patch_p50_ms": r3(pct(&self.lat, 0.5)),
            "patch_p95_ms": r3(pct(&self.lat, 0.95)),
            "commit_to_receipt_p50_ms": r3(pct(&self.c2r, 0.5)),
            "commit_to_receipt_p95_ms": r3(pct(&self.c2r, 0.95)),
        })
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
    // Each side's idle window with the other side's services stopped: the machine's busy share
    // is the services' of that side alone, not the other's start-up work (the empty side's
    // window once opened while the history side's services started on 2.5 million events and
    // read 17% busy against the history's 4%).
    let idle_empty = empty.idle(plan.idle_secs).await;
    empty.stop_services();
    // The services start on the loaded database, as after a deploy: nothing cached from the
    // empty tables they started on (prepared statements are also replaced within a minute).
    full.start_services().await?;
    let idle_full = full.idle(plan.idle_secs).await;
    empty.start_services().await?;
    // The writes in rounds, the sides taking turns and the one that goes first alternating, as
    // the reads are taken: the machine's speed drifts within a run, and one side's writes all
    // before the other's put the drift in the ratio (a run measured the history side 0.88 of
    // the empty one's rate, where the runs before measured 1.06 and 1.09).
    let mut written = [Written::default(), Written::default()];
    for round in 0..WRITE_ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let side = if i == 0 { &empty } else { &full };
            let w = side.writes(sink, plan.patches / WRITE_ROUNDS).await?;
            written[i].add(w);
        }
    }
    let [written_empty, written_full] = written;
    let mut out = serde_json::Map::new();
    for (name, side, idle, writes) in [
        ("empty", &mut empty, idle_empty, written_empty.json()),
        ("history", &mut full, idle_full, written_full.json()),
    ] {
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
        anyhow::bail!(
            "statements read more than {MAX_READ_RATIO}x what they answer, or were compiled: {bad}"
        );
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

/// The statements the plan check flagged (read too much, or compiled), with their plans.
fn plans_over_limit(plans: &Value) -> Option<String> {
    let bad: Vec<String> = ["custom", "generic"]
        .iter()
        .flat_map(|mode| {
            plans[*mode]["statements"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["over_limit"] == true || s["jit_compiled"] == true)
                .map(move |s| {
                    format!(
                        "[{mode}] {} (read {}, answered {}, compiled: {}); its plan:\n{}",
                        s["query"].as_str().unwrap_or(""),
                        s["rows_read"],
                        s["rows_answered"],
                        s["jit_compiled"],
                        s["plan"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("\n")
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
/// (docs/performance-log.md, "Not there yet").
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

    /// The machine's busy share while the services run with no client, once the machine has
    /// settled (at most 15 s: the start-up's own work and the last run's deliveries). Work the
    /// services keep doing with no client (a housekeeping round that reads the history) keeps
    /// the machine busy past the settle and is measured.
    async fn idle(&self, secs: u64) -> f64 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        crate::cpu::settle(Duration::from_secs(15)).await;
        let before = crate::cpu::Snapshot::take();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let after = crate::cpu::Snapshot::take();
        crate::cpu::report(&before, &after, 1)["machine_busy_share"]
            .as_f64()
            .unwrap_or(f64::NAN)
    }

    /// `n` PATCHes of the big org's leads from 16 clients, as fast as they are answered; each
    /// causes a `lead.updated`, delivered to the sink.
    async fn writes(&self, sink: &Sink, n: u64) -> anyhow::Result<Written> {
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
        let lat = lat.lock().map(|l| l.clone()).unwrap_or_default();
        Ok(Written {
            patches: n,
            retried,
            events: rows.len(),
            lost,
            lat,
            c2r,
            secs: ((last - start_us) as f64 / 1e6).max(1e-3),
        })
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
        // planner's right choice there, and costs the same on day 300). A partition is never
        // one of them, however few rows it holds when the check runs: today's grows all day,
        // and a plan that reads the whole of it reads more each hour (a smoke run's history
        // leaves today's partitions with a few hundred rows).
        let small: std::collections::HashSet<String> = qualifier_testkit::sql::try_column(
            &pg,
            "SELECT relname::text FROM pg_class
                 WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
                   AND NOT relispartition AND reltuples < 1000",
            &[],
        )
        .await?;
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
                        "jit_compiled": stmts.iter().any(|s| s["jit_compiled"] == true),
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
