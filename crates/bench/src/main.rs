//! `qualifier-bench` (`make bench`, `make bench-quick`): how fast the system is on this machine,
//! beside what its parts can do bare in the same run, and what each delivered event costs.
//!
//! Phases, each on a database and topology prefix of its own:
//! 1. API: GET and PATCH on the public API at fixed concurrency (16 tokens, raised limit), and
//!    the ceiling: an actix-web server with the same workers and pool size doing one primary-key
//!    select.
//! 2. End to end: events caused through the internal API (a new contact, `lead.created`) and the
//!    public API (closing it, `lead.stage_changed`), through the release binaries, to an HTTPS
//!    sink that verifies every signature: delivered/s, commit-to-receipt latency, lost,
//!    duplicates; then again paced at half that rate. Ceilings: the sink driven by bare reqwest,
//!    lapin publish-with-confirm and consume.
//! 3. Backlog drains and scale: a queued backlog drained by 1 and by 2 `webhook-delivery`
//!    processes, with an instant sink (CPU-bound) and with a 25 ms sink (slot-bound).
//! 4. Noisy neighbour: org B's rate and p99 alone, then while org A's endpoint hangs.
//! 5. Events feed: pages/s and events/s reading a 100,000-event org from the start (pages of 100
//!    and 500), and the page latency of a client tailing the feed during the end-to-end run.
//! 6. Cost: PostgreSQL rows written, WAL syncs and broker publishes per delivered event.
//! 7. Erasure: `DELETE /api/v1/leads/{id}` of a lead with 100 events among millions of others
//!    (200,000 with --quick).
//! 8. History at scale (`history.rs`): idle CPU, writes, every read and the storage per event
//!    on an empty database beside one holding a month of history (2,500,000 events, 200,000
//!    with --quick), and the rows every statement's plan read (`plans.rs`).
//!
//! Usage: `qualifier-bench [--quick] [--events N] [--json PATH]`; the figures always go to
//! `target/bench/latest.json` too.

mod ceilings;
mod cpu;
mod erasure;
mod feed;
mod history;
mod load;
mod plans;
mod services;
mod sink;
mod stmts;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load::{pct, r3};
use serde_json::{Value, json};
use services::{DeliverySettings, Env, INTERNAL_TOKEN, Org};
use sink::{Answer, Receipt, Sink, now_us};

/// The benchmark harness (docs/performance.md): prints a table and writes every figure as JSON.
#[derive(clap::Parser)]
#[command(name = "qualifier-bench", version, about)]
struct Opts {
    /// The short run (4,000 events per end-to-end run unless --events says otherwise).
    #[arg(long)]
    quick: bool,
    /// The smallest run that still goes through every phase and every check (CI's
    /// `make bench-smoke`, on the dev build): 1,000 events per end-to-end run, a history of
    /// 30,000. Its figures say nothing of speed; its failures (an event lost, a plan that reads
    /// more than it answers, a dry run that disagrees with the outbox) are failures.
    #[arg(long, conflicts_with = "quick")]
    smoke: bool,
    /// Events per end-to-end run (default 20,000, or 4,000 with --quick).
    #[arg(long)]
    events: Option<u64>,
    /// Also write the figures here (they always go to target/bench/latest.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run one phase alone, for profiling it (`perf record -a` while it runs).
    #[arg(long, value_parser = ["e2e", "drain", "api", "feed", "lone", "outage", "noisy", "erasure", "history"])]
    only: Option<String>,
    /// With `--only e2e`: cause events at this many per second instead of as fast as the API
    /// takes them (commit-to-receipt latency at a chosen load).
    #[arg(long)]
    pace: Option<f64>,
    /// Events stored in the history phase's database (default 2,500,000, or 200,000 with
    /// --quick).
    #[arg(long)]
    history_events: Option<i64>,
    /// Run the `lead-api` and `webhook-delivery` found here instead of the ones beside the
    /// harness (another build, for before/after pairs with `scripts/bench.sh`); its
    /// `qualifierctl migrate` makes each database, so the schema is that build's too.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

impl Opts {
    fn events(&self) -> u64 {
        self.events.unwrap_or(if self.smoke {
            1000
        } else if self.quick {
            4000
        } else {
            20_000
        })
    }

    /// Short in both the quick and the smoke run.
    fn short(&self) -> bool {
        self.quick || self.smoke
    }

    /// The history phase's sizes.
    fn history(&self) -> history::Plan {
        if self.smoke {
            history::Plan::smoke(self.history_events)
        } else {
            history::Plan::of(self.quick, self.history_events)
        }
    }

    /// Other events stored beside the erased leads in the erasure phase.
    fn erasure_others(&self) -> i64 {
        if self.smoke {
            20_000
        } else if self.quick {
            200_000
        } else {
            2_000_000
        }
    }

    /// Seconds of each API measurement.
    fn api_secs(&self) -> u64 {
        if self.smoke {
            1
        } else if self.quick {
            3
        } else {
            10
        }
    }
}

/// Delivery processes as deployed by default, except that one org may use every slot (the
/// per-org cap exists for many orgs; the noisy-neighbour phase measures it).
fn default_delivery() -> DeliverySettings {
    DeliverySettings {
        concurrency: 64,
        org_concurrency: 64,
        timeout_ms: 2000,
        env: vec![],
    }
}

/// Causes `iterations` changes for `org`: a new contact through the internal API
/// (`lead.created`), then, when `close`, the CRM closing it through the public API
/// (`lead.stage_changed`). A failed step is retried; a retried inbound finds the known contact
/// unchanged and a retried close finds the lead closed, so each event is caused exactly once.
async fn produce(
    env: &Env,
    org: &Org,
    iterations: u64,
    offset: u64,
    concurrency: usize,
    pace_per_s: Option<f64>,
    close: bool,
) -> u64 {
    let (http, internal, public) = (env.http.clone(), env.internal.clone(), env.public.clone());
    let (org_id, tokens) = (org.id.clone(), Arc::new(org.tokens.clone()));
    load::run_n(iterations, concurrency, pace_per_s, move |i| {
        let (http, internal, public, org_id, tokens) = (
            http.clone(),
            internal.clone(),
            public.clone(),
            org_id.clone(),
            tokens.clone(),
        );
        async move {
            let body = json!({"name": "Bench Lead", "phone": format!("+4477{:08}", offset + i), "channel": "sms"});
            let Ok(r) = http
                .post(format!("{internal}/internal/v1/orgs/{org_id}/inbound"))
                .bearer_auth(INTERNAL_TOKEN)
                .json(&body)
                .send()
                .await
            else {
                return false;
            };
            if !r.status().is_success() {
                return false;
            }
            if !close {
                return true;
            }
            let Ok(v) = r.json::<Value>().await else {
                return false;
            };
            let Some(id) = v["lead"]["id"].as_str() else {
                return false;
            };
            http.patch(format!("{public}/api/v1/leads/{id}"))
                .bearer_auth(&tokens[i as usize % tokens.len()])
                .json(&json!({"status": "closed"}))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await
}

/// What the sink received against what committed.
#[derive(Debug, Default)]
struct Tally {
    committed: u64,
    delivered: u64,
    lost: u64,
    duplicates: u64,
    invalid: u64,
    lat_ms: Vec<f64>,
    first_us: i64,
    last_us: i64,
}

impl Tally {
    fn of(
        committed: &[(u128, i64, String)],
        receipts: &[Receipt],
        endpoint: usize,
        org: &str,
        since_us: i64,
    ) -> Tally {
        let mut by_id: HashMap<u128, Vec<i64>> = HashMap::new();
        let mut t = Tally {
            first_us: i64::MAX,
            ..Default::default()
        };
        for r in receipts.iter().filter(|r| r.endpoint == endpoint) {
            if r.valid {
                by_id.entry(r.delivery).or_default().push(r.at_us);
            } else {
                t.invalid += 1;
            }
        }
        for (id, created, o) in committed {
            if o != org || *created < since_us {
                continue;
            }
            t.committed += 1;
            match by_id.get(id) {
                Some(ats) => {
                    let first = *ats.iter().min().unwrap_or(&0);
                    t.delivered += 1;
                    t.duplicates += ats.len() as u64 - 1;
                    t.lat_ms.push((first - created) as f64 / 1000.0);
                    t.first_us = t.first_us.min(first);
                    t.last_us = t.last_us.max(*ats.iter().max().unwrap_or(&0));
                }
                None => t.lost += 1,
            }
        }
        t.lat_ms.sort_by(f64::total_cmp);
        t
    }

    fn json(&self) -> Value {
        json!({"events_committed": self.committed, "events_delivered": self.delivered,
               "events_lost": self.lost, "duplicates": self.duplicates,
               "invalid_signatures": self.invalid,
               "commit_to_receipt_p50_ms": r3(pct(&self.lat_ms, 0.5)),
               "commit_to_receipt_p99_ms": r3(pct(&self.lat_ms, 0.99)),
               "commit_to_receipt_max_ms": r3(self.lat_ms.last().copied().unwrap_or(f64::NAN))})
    }
}

/// Waits until the sink has `n` validly signed receipts on `endpoint` (or the time is up).
async fn wait_delivered(sink: &Sink, endpoint: usize, n: u64, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if sink.count_valid(endpoint) >= n as usize {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn patience(events: u64) -> Duration {
    Duration::from_secs(60 + events / 100)
}

/// A run's measured window: CPU per process (`/proc`) and PostgreSQL's statements
/// (`pg_stat_statements`), from when it opens until it closes.
struct Window {
    cpu: cpu::Snapshot,
    stmts: Result<(), stmts::Unavailable>,
}

/// A closed [`Window`], waiting for the run's delivered count.
struct Measured {
    before: cpu::Snapshot,
    after: cpu::Snapshot,
    stmts: Result<Vec<stmts::Stmt>, stmts::Unavailable>,
}

impl Window {
    async fn open(env: &Env) -> Window {
        let stmts = stmts::reset(env).await;
        Window {
            cpu: cpu::Snapshot::take(),
            stmts,
        }
    }

    /// Closes it: call it as soon as the last event arrived, before the harness's own queries.
    async fn close(self, env: &Env) -> Measured {
        let after = cpu::Snapshot::take();
        let stmts = match self.stmts {
            Ok(()) => stmts::fetch(env).await,
            Err(why) => Err(why),
        };
        Measured {
            before: self.cpu,
            after,
            stmts,
        }
    }
}

impl Measured {
    fn json(self, delivered: u64) -> Value {
        json!({
            "cpu": cpu::report(&self.before, &self.after, delivered),
            "statements": stmts::summarize(self.stmts, delivered),
        })
    }
}

/// Prints a run's CPU and statement tables (`v` holds [`Measured::json`]'s keys).
fn print_measured(title: &str, v: &Value) {
    if v["cpu"].is_object() {
        cpu::print(title, &v["cpu"]);
        stmts::print(title, &v["statements"]);
    }
}

/// Cluster-wide and broker-wide counters, read before and after a run (nothing else runs).
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    wal_records: i64,
    wal_syncs: i64,
    broker_publishes: Option<i64>,
}

async fn counters(env: &Env) -> Counters {
    let pg = env.db.client().await;
    let (wal_records, wal_syncs) = match pg
        .query_one(
            "SELECT wal_records::int8, wal_sync::int8 FROM pg_stat_wal",
            &[],
        )
        .await
    {
        Ok(r) => (r.get(0), r.get(1)),
        Err(_) => (0, 0),
    };
    Counters {
        wal_records,
        wal_syncs,
        broker_publishes: broker_publishes().await,
    }
}

/// Messages the broker accepted from publishers since it started (its global counters).
async fn broker_publishes() -> Option<i64> {
    let out = tokio::process::Command::new("rabbitmqctl")
        .args([
            "eval",
            "maps:get(messages_received_total, maps:get([{protocol,amqp091}], rabbit_global_counters:overview())).",
        ])
        .output()
        .await
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Rows written per table in this run's database (its statistics start at zero).
async fn rows_written(env: &Env) -> anyhow::Result<HashMap<String, i64>> {
    let pg = env.db.client().await;
    // Statistics reach the collector when a session ends (the services were stopped) or within
    // a second; a short wait covers the latter.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let rows = pg
        .query(
            // The outbox's partitions counted as the outbox.
            "SELECT CASE WHEN relname ~ '^outbox_(legacy|d[0-9]+)$' THEN 'outbox'
                         ELSE relname::text END,
                    sum(n_tup_ins + n_tup_upd + n_tup_del)::int8
             FROM pg_stat_user_tables GROUP BY 1",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .filter(|(_, n): &(String, i64)| *n > 0)
        .collect())
}

struct E2e {
    tally: Tally,
    delivered_per_s: f64,
    ingest_per_s: f64,
    cost: Option<Value>,
    /// With `with_cost`: a client tailing the feed throughout (events read, page latencies).
    feed_tail: Option<(u64, Vec<f64>)>,
    /// Messages the delivery processes parked (at an org's cap or for a receiver's pause).
    parked: f64,
}

/// One end-to-end run: `workers` delivery processes running while events are caused.
async fn e2e(
    sink: &Sink,
    events: u64,
    workers: usize,
    pace: Option<f64>,
    with_cost: bool,
) -> anyhow::Result<E2e> {
    e2e_with(sink, events, workers, pace, with_cost, default_delivery()).await
}

/// [`e2e`] with the delivery processes configured by `settings`.
async fn e2e_with(
    sink: &Sink,
    events: u64,
    workers: usize,
    pace: Option<f64>,
    with_cost: bool,
    settings: DeliverySettings,
) -> anyhow::Result<E2e> {
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
    let before = if with_cost {
        Some(counters(&env).await)
    } else {
        None
    };
    // The measured run also has a client following the feed, as an integrator catching up
    // would while traffic flows: its page latency under load is a figure of its own.
    let stop_tail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tail = with_cost.then(|| {
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
    let tally = Tally::of(&committed, &sink.receipts(), ep, &org.id, 0);
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
                "delivered_events": tally.delivered,
                "pg_rows_written_by_table": rows,
                "pg_row_writes_per_delivered_event": r3(total as f64 / d),
                "pg_event_pipeline_row_writes_per_delivered_event": r3(outbox as f64 / d),
                "pg_wal_syncs_per_delivered_event": r3((after.wal_syncs - b.wal_syncs) as f64 / d),
                "pg_wal_records_per_delivered_event": r3((after.wal_records - b.wal_records) as f64 / d),
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
async fn drain(
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
        let n: i64 = pg
            .query_one(
                "SELECT count(*) FROM outbox WHERE published_at IS NULL",
                &[],
            )
            .await?
            .get(0);
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
    let t = Tally::of(&committed, &sink.receipts(), ep, &org.id, 0);
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

/// Org B alone, then beside org A whose endpoint hangs past the attempt timeout.
async fn noisy(sink: &Sink, b_events: u64, a_events: u64) -> anyhow::Result<Value> {
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

/// Phase 1: the public API and its ceiling, in this process.
async fn api_phase(o: &Opts, sink: &Sink) -> anyhow::Result<Value> {
    let mut env = Env::new(sink.ca_file.clone()).await;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let pool_size = 16;
    let cfg = lead_api::ApiConfig {
        database: env.db.database(),
        brokers: qualifier_testkit::brokers(),
        http_addr: "127.0.0.1:0".parse()?,
        internal_addr: "127.0.0.1:0".parse()?,
        internal_token: INTERNAL_TOKEN.into(),
        secret_key: env.key(),
        app_base_url: "https://app.qualifier.local".into(),
        rate_limit_per_minute: 100_000_000,
        allow_cidrs: vec!["127.0.0.0/8".parse()?],
        db_pool_size: pool_size,
        http_workers: workers,
        topology_prefix: env.topo.prefix.clone(),
        retry_delays_ms: services::RETRY_DELAYS.to_vec(),
        event_retention_days: 30,
        replay_rate_per_second: 50,
        console_base_url: None,
        max_page_bytes: lead_api::page::DEFAULT_MAX_PAGE_BYTES,
        statement_timeout: std::time::Duration::from_secs(5),
        plan_cache_mode: Some("force_custom_plan"),
        compress_payloads: None,
        shutdown_grace: Duration::from_secs(30),
        console_frame_ancestors: Vec::new(),
    };
    let api = lead_api::start(cfg).await?;
    env.internal = format!("http://{}", api.internal_addr);
    env.public = format!("http://{}", api.public_addr);
    let (_, url) = sink.endpoint(Answer::Ok);
    let org = env.org(&url, 16).await?;
    let leads = 1000u64;
    produce(&env, &org, leads, 0, 16, None, false).await;
    let ids: Vec<String> = env
        .db
        .client()
        .await
        .query("SELECT id::text FROM leads", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let ids = Arc::new(ids);
    let tokens = Arc::new(org.tokens.clone());
    let concurrency = 32;
    let secs = Duration::from_secs(o.api_secs());
    let http = env.http.clone();
    let get = |base: String, authed: bool| {
        let (http, ids, tokens) = (http.clone(), ids.clone(), tokens.clone());
        move |i: u64| {
            let id = &ids[i as usize % ids.len()];
            let mut rb = http.get(format!("{base}/{id}"));
            if authed {
                rb = rb.bearer_auth(&tokens[i as usize % tokens.len()]);
            }
            async move { rb.send().await.is_ok_and(|r| r.status() == 200) }
        }
    };
    let leads_url = format!("{}/api/v1/leads", env.public);
    let (ceiling_base, ceiling) =
        ceilings::start_pk_server(&env.db.database(), pool_size, workers)?;
    let ceiling_url = format!("{ceiling_base}/pk");
    // A short warm-up of each, so pools and connections exist before anything is timed.
    load::closed_loop(
        concurrency,
        Duration::from_millis(500),
        get(leads_url.clone(), true),
    )
    .await;
    load::closed_loop(
        concurrency,
        Duration::from_millis(500),
        get(ceiling_url.clone(), false),
    )
    .await;
    let get_rate = load::closed_loop(concurrency, secs, get(leads_url.clone(), true)).await;
    let ceiling_rate = load::closed_loop(concurrency, secs, get(ceiling_url, false)).await;
    let patch_rate = {
        let (http, ids, tokens) = (http.clone(), ids.clone(), tokens.clone());
        load::closed_loop(concurrency, secs, move |i| {
            let id = &ids[i as usize % ids.len()];
            let rb = http
                .patch(format!("{leads_url}/{id}"))
                .bearer_auth(&tokens[i as usize % tokens.len()])
                .json(&json!({"ai_paused": i % 2 == 0}));
            async move { rb.send().await.is_ok_and(|r| r.status() == 200) }
        })
        .await
    };
    ceiling.stop(false).await;
    api.stop(true).await;
    Ok(json!({
        "concurrency": concurrency, "tokens": tokens.len(), "http_workers": workers,
        "db_pool_size": pool_size, "seconds_each": o.api_secs(),
        "get": get_rate.json(),
        "patch": patch_rate.json(),
        "ceiling_pk_select": ceiling_rate.json(),
        "get_ratio_to_ceiling": r3(get_rate.per_s / ceiling_rate.per_s),
        "patch_ratio_to_ceiling": r3(patch_rate.per_s / ceiling_rate.per_s),
    }))
}

/// The per-org cap exists for neighbours: alone, an org should not feel it. One org at the
/// maximum rate under the default cap (16 of 64), against `lifted`, the same run with the cap
/// lifted to the process's 64 slots.
/// Endpoint health (docs/delivery.md, "Endpoint health"): `events` events wait through an outage of the org's
/// endpoint, then it comes back and they are delivered with no call. Reports what waiting cost
/// the broker (messages it accepted per waiting event per hour of outage: held deliveries are
/// off the broker, so close to 0) and the drain rate after recovery (the first good probe
/// releases them; probes here run every second or two).
async fn outage(sink: &Sink, events: u64, watch_secs: u64) -> anyhow::Result<Value> {
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
    while (count("SELECT count(*) FROM outbox WHERE held_at IS NOT NULL").await? as u64) < total {
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
        let done = count("SELECT count(*) FROM outbox WHERE status = 'succeeded'").await? as u64;
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
    let dead = count("SELECT count(*) FROM outbox WHERE status = 'dead'").await?;
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

async fn lone_org(sink: &Sink, n: u64, lifted: &E2e) -> anyhow::Result<Value> {
    let capped = e2e_with(
        sink,
        n,
        1,
        None,
        false,
        DeliverySettings {
            org_concurrency: 16, // the default: a quarter of 64
            ..default_delivery()
        },
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

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    let kernel = std::process::Command::new("uname")
        .arg("-r")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    json!({"cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
           "cpu": cpu, "kernel": kernel})
}

/// One line of the printed table: figure, value, target, and whether it is met.
fn row(out: &mut Vec<Value>, name: &str, value: f64, target: Option<(&str, f64)>) {
    let met = target.map(|(op, t)| if op == ">=" { value >= t } else { value <= t });
    println!(
        "  {name:<58} {value:>12.2}  {:>10}  {}",
        target.map_or(String::new(), |(op, t)| format!("{op} {t}")),
        match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        }
    );
    out.push(json!({"figure": name, "value": r3(value),
        "target": target.map(|(op, t)| format!("{op} {t}")), "met": met}));
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        // The cause on one line, last: CI shows the tail of the output, and anyhow's Debug form
        // would end in a backtrace of the runtime's frames when RUST_BACKTRACE is set.
        eprintln!("bench: FAILED: {e:#}");
        std::process::exit(1);
    }
}

async fn run() -> anyhow::Result<()> {
    let o = <Opts as clap::Parser>::parse();
    if let Some(d) = &o.bin_dir {
        anyhow::ensure!(
            d.join("lead-api").is_file() && d.join("webhook-delivery").is_file(),
            "--bin-dir {}: no lead-api and webhook-delivery there",
            d.display()
        );
        let _ = services::BIN_DIR.set(d.clone());
    }
    let sink = Sink::start(2).await?;
    let n = o.events();
    println!(
        "qualifier-bench: {} run, {n} events per end-to-end run",
        if o.smoke {
            "smoke"
        } else if o.quick {
            "quick"
        } else {
            "full"
        }
    );

    // One phase alone, for profiling it (`perf record -a` while it runs).
    if let Some(phase) = &o.only {
        let v = match phase.as_str() {
            "e2e" => {
                let run = e2e(&sink, n, 1, o.pace, true).await?;
                let mut v = run.tally.json();
                v["delivered_per_s"] = json!(r3(run.delivered_per_s));
                v["ingest_committed_per_s"] = json!(r3(run.ingest_per_s));
                v["cost"] = run.cost.clone().unwrap_or(Value::Null);
                if let Some((events, lat)) = &run.feed_tail {
                    v["feed_tail_events_read"] = json!(events);
                    v["feed_tail_page_p99_ms"] = json!(r3(pct(lat, 0.99)));
                }
                print_measured("end to end", &v["cost"]);
                v
            }
            "drain" => {
                let v = drain(&sink, n, 1, Answer::Ok, default_delivery()).await?;
                print_measured("backlog drain", &v);
                v
            }
            "api" => api_phase(&o, &sink).await?,
            "feed" => feed::read_phase(&sink).await?,
            "lone" => {
                // Back to back, so both halves see the machine in the same state.
                let lifted = e2e(&sink, n, 1, None, false).await?;
                lone_org(&sink, n, &lifted).await?
            }
            "outage" => outage(&sink, n, if o.short() { 20 } else { 60 }).await?,
            "noisy" => noisy(&sink, (n / 4).max(1000), if o.short() { 300 } else { 1000 }).await?,
            "erasure" => erasure::phase(&sink, o.erasure_others()).await?,
            "history" => history::phase(&sink, o.history()).await?,
            other => {
                anyhow::bail!(
                    "--only takes e2e, drain, api, feed, lone, outage, noisy, erasure or history, not {other}"
                )
            }
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("[1/6] API: GET, PATCH and the primary-key ceiling");
    let api = api_phase(&o, &sink).await?;
    println!("[2/6] end to end at the maximum rate, then at half of it");
    let max = e2e(&sink, n, 1, None, true).await?;
    let half = e2e(&sink, n, 1, Some(max.delivered_per_s / 2.0), false).await?;
    println!("      ceilings: bare reqwest to the sink, lapin publish and consume");
    let bare = ceilings::bare_sink(&sink, n, default_delivery().concurrency).await?;
    let (publish, consume) = ceilings::lapin_rates(n, 500, 64).await?;
    println!("[3/6] scale: end to end with 2 workers, backlog drains with 1 and 2");
    let max2 = e2e(&sink, n, 2, None, false).await?;
    let drain1 = drain(&sink, n, 1, Answer::Ok, default_delivery()).await?;
    let drain2 = drain(&sink, n, 2, Answer::Ok, default_delivery()).await?;
    // Slot-bound: each process holds 16 attempts against a receiver that takes 25 ms, so a
    // process can do at most 640/s and the sink (unbounded concurrency) is not the limit.
    let slow = DeliverySettings {
        concurrency: 16,
        org_concurrency: 16,
        ..default_delivery()
    };
    let slow_n = (n / 4).max(1000);
    let slow1 = drain(
        &sink,
        slow_n,
        1,
        Answer::After(Duration::from_millis(25)),
        slow.clone(),
    )
    .await?;
    let slow2 = drain(
        &sink,
        slow_n,
        2,
        Answer::After(Duration::from_millis(25)),
        slow,
    )
    .await?;
    println!("[4/6] noisy neighbour; one org alone under the default per-org cap");
    let noisy = noisy(&sink, (n / 4).max(1000), if o.short() { 300 } else { 1000 }).await?;
    let lone = lone_org(&sink, n, &max).await?;
    println!(
        "[5/6] events feed: reading a {}-event org",
        feed::FEED_EVENTS
    );
    let feed_read = feed::read_phase(&sink).await?;
    println!("      endpoint health: {n} events wait through an outage, then drain");
    let outage_run = outage(&sink, n, if o.short() { 20 } else { 60 }).await?;
    println!(
        "      erasure: a lead with 100 events among {} others",
        o.erasure_others()
    );
    let erasure_run = erasure::phase(&sink, o.erasure_others()).await?;
    let history_run = history::phase(&sink, o.history()).await?;
    let feed_tail = match &max.feed_tail {
        Some((events, lat)) => json!({
            "pages": lat.len(), "events_read": events,
            "page_p50_ms": r3(pct(lat, 0.5)), "page_p99_ms": r3(pct(lat, 0.99)),
            "page_max_ms": r3(lat.last().copied().unwrap_or(f64::NAN)),
        }),
        None => Value::Null,
    };
    println!("[6/6] cost (from the maximum-rate run)");

    let patch_rps = api["patch"]["per_s"].as_f64().unwrap_or(0.0);
    let parts = [
        ("patch_write_transaction", patch_rps),
        ("sink_bare_reqwest", bare),
        ("lapin_publish_confirm", publish),
        ("lapin_consume", consume),
    ];
    let slowest = parts
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(("none", 1.0));
    let rate_of = |v: &Value| v["drained_per_s"].as_f64().unwrap_or(0.0);
    let mut end_to_end = max.tally.json();
    end_to_end["delivered_per_s"] = json!(r3(max.delivered_per_s));
    end_to_end["ingest_committed_per_s"] = json!(r3(max.ingest_per_s));
    end_to_end["ratio_to_slowest_part"] = json!(r3(max.delivered_per_s / slowest.1));
    let mut half_json = half.tally.json();
    half_json["offered_per_s"] = json!(r3(max.delivered_per_s / 2.0));
    half_json["delivered_per_s"] = json!(r3(half.delivered_per_s));
    let mut two = max2.tally.json();
    two["delivered_per_s"] = json!(r3(max2.delivered_per_s));
    let cost = max.cost.clone().unwrap_or(Value::Null);

    println!();
    println!(
        "  {:<58} {:>12}  {:>10}",
        "figure (this machine, this run)", "value", "target"
    );
    let mut rows = Vec::new();
    let r = &mut rows;
    row(
        r,
        "API GET req/s",
        api["get"]["per_s"].as_f64().unwrap_or(0.0),
        None,
    );
    row(
        r,
        "API GET p99 ms",
        api["get"]["p99_ms"].as_f64().unwrap_or(0.0),
        None,
    );
    row(r, "API PATCH req/s", patch_rps, None);
    row(
        r,
        "API PATCH p99 ms",
        api["patch"]["p99_ms"].as_f64().unwrap_or(0.0),
        None,
    );
    row(
        r,
        "ceiling: PK select req/s",
        api["ceiling_pk_select"]["per_s"].as_f64().unwrap_or(0.0),
        None,
    );
    row(
        r,
        "GET ratio to ceiling",
        api["get_ratio_to_ceiling"].as_f64().unwrap_or(0.0),
        Some((">=", 0.6)),
    );
    row(
        r,
        "PATCH ratio to ceiling",
        api["patch_ratio_to_ceiling"].as_f64().unwrap_or(0.0),
        Some((">=", 0.4)),
    );
    row(
        r,
        "end to end delivered ev/s (1 worker)",
        max.delivered_per_s,
        Some((">=", 1800.0)),
    );
    row(
        r,
        "end to end events lost",
        max.tally.lost as f64,
        Some(("<=", 0.0)),
    );
    row(
        r,
        "end to end duplicates",
        max.tally.duplicates as f64,
        None,
    );
    row(r, "ceiling: sink via bare reqwest req/s", bare, None);
    row(
        r,
        "ceiling: lapin publish-with-confirm msg/s",
        publish,
        None,
    );
    row(r, "ceiling: lapin consume msg/s", consume, None);
    row(
        r,
        &format!("end to end ratio to slowest part ({})", slowest.0),
        max.delivered_per_s / slowest.1,
        Some((">=", 0.5)),
    );
    row(
        r,
        "half rate: commit-to-receipt p50 ms",
        pct(&half.tally.lat_ms, 0.5),
        Some(("<=", 5.0)),
    );
    row(
        r,
        "half rate: commit-to-receipt p99 ms",
        pct(&half.tally.lat_ms, 0.99),
        Some(("<=", 25.0)),
    );
    row(
        r,
        "half rate: commit-to-receipt max ms",
        half.tally.lat_ms.last().copied().unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        "half rate events lost",
        half.tally.lost as f64,
        Some(("<=", 0.0)),
    );
    row(
        r,
        "end to end delivered ev/s (2 workers)",
        max2.delivered_per_s,
        None,
    );
    row(
        r,
        "backlog drain ev/s (1 worker)",
        rate_of(&drain1),
        Some((">=", 8000.0)),
    );
    row(r, "backlog drain ev/s (2 workers)", rate_of(&drain2), None);
    row(
        r,
        "scale ratio 2:1, 25 ms receiver (slot-bound)",
        rate_of(&slow2) / rate_of(&slow1),
        Some((">=", 1.7)),
    );
    row(
        r,
        "scale ratio 2:1, instant receiver (CPU-bound)",
        rate_of(&drain2) / rate_of(&drain1),
        None,
    );
    row(
        r,
        "org B rate ratio beside hanging A",
        noisy["org_b_rate_ratio_beside_vs_alone"]
            .as_f64()
            .unwrap_or(0.0),
        Some((">=", 0.9)),
    );
    row(
        r,
        "org B p99 ms alone",
        noisy["org_b_alone"]["commit_to_receipt_p99_ms"]
            .as_f64()
            .unwrap_or(0.0),
        None,
    );
    row(
        r,
        "org B p99 ms beside hanging A",
        noisy["org_b_beside_hanging_a"]["commit_to_receipt_p99_ms"]
            .as_f64()
            .unwrap_or(0.0),
        None,
    );
    row(
        r,
        "lone org, default cap: rate ratio to cap lifted",
        lone["rate_ratio_default_vs_lifted"].as_f64().unwrap_or(0.0),
        Some((">=", 0.9)),
    );
    row(
        r,
        "lone org, default cap: p50 ratio to cap lifted",
        lone["p50_ratio_default_vs_lifted"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 2.0)),
    );
    row(
        r,
        "lone org, default cap: p99 ratio to cap lifted",
        lone["p99_ratio_default_vs_lifted"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 1.5)),
    );
    row(
        r,
        "feed read ev/s (100,000-event org, pages of 500)",
        feed_read["page_size_500"]["events_per_s"]
            .as_f64()
            .unwrap_or(0.0),
        None,
    );
    row(
        r,
        "feed read pages/s (pages of 100)",
        feed_read["page_size_100"]["pages_per_s"]
            .as_f64()
            .unwrap_or(0.0),
        None,
    );
    row(
        r,
        "feed page p99 ms during end-to-end load",
        feed_tail["page_p99_ms"].as_f64().unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        "PG rows written per delivered event (all)",
        cost["pg_row_writes_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        "PG event-pipeline rows written per delivered event",
        cost["pg_event_pipeline_row_writes_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 4.0)),
    );
    row(
        r,
        "PG WAL syncs per delivered event",
        cost["pg_wal_syncs_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        "broker publishes per delivered event",
        cost["broker_publishes_per_delivered_event"]
            .as_f64()
            .unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        "outage: broker publishes per waiting event per hour",
        outage_run["broker_publishes_per_waiting_event_per_hour"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 0.1)),
    );
    row(
        r,
        "outage: drain ev/s after recovery",
        outage_run["drained_per_s_after_first"]
            .as_f64()
            .unwrap_or(f64::NAN),
        None,
    );
    row(
        r,
        &format!(
            "erase a 100-event lead among {} others, max ms",
            o.erasure_others()
        ),
        erasure_run["erase_max_ms"].as_f64().unwrap_or(f64::NAN),
        Some(("<=", 50.0)),
    );
    for (name, value, target) in history::targets(&history_run) {
        row(r, &name, value, target);
    }
    let lost_total = max.tally.lost
        + half.tally.lost
        + max2.tally.lost
        + lone["default_cap_events_lost"].as_u64().unwrap_or(0)
        + [
            &drain1,
            &drain2,
            &slow1,
            &slow2,
            &noisy["org_b_alone"],
            &noisy["org_b_beside_hanging_a"],
        ]
        .iter()
        .map(|v| v["events_lost"].as_u64().unwrap_or(0))
        .sum::<u64>();

    let report = json!({
        "generated_at_unix_ms": now_us() / 1000,
        "mode": if o.smoke { "smoke" } else if o.quick { "quick" } else { "full" },
        "events_per_run": n,
        "machine": machine(),
        "api": api,
        "end_to_end": {
            "max_rate_1_worker": end_to_end,
            "half_rate_1_worker": half_json,
            "max_rate_2_workers": two,
            "ceilings_per_s": {"sink_bare_reqwest": r3(bare), "lapin_publish_confirm": r3(publish),
                               "lapin_consume": r3(consume), "patch_write_transaction": r3(patch_rps)},
            "slowest_part": slowest.0,
        },
        "backlog_drain": {"one_worker": drain1, "two_workers": drain2},
        "scale": {
            "slot_bound_25ms_receiver": {"one_worker": slow1, "two_workers": slow2},
            "scale_ratio_slot_bound": r3(rate_of(&slow2) / rate_of(&slow1)),
            "scale_ratio_cpu_bound_drain": r3(rate_of(&drain2) / rate_of(&drain1)),
            "scale_ratio_cpu_bound_end_to_end": r3(max2.delivered_per_s / max.delivered_per_s),
        },
        "noisy_neighbour": noisy,
        "lone_org": lone,
        "feed": {"read": feed_read, "tail_during_end_to_end_max_rate": feed_tail},
        "endpoint_outage": outage_run,
        "erasure": erasure_run,
        "history": history_run,
        "cost": cost,
        "events_lost_all_runs": lost_total,
        "targets": rows,
    });
    let text = serde_json::to_vec_pretty(&report)?;
    let dir = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
        .join("bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("latest.json"), &text)?;
    if let Some(p) = &o.json {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, &text)?;
    }
    println!();
    print_measured("end to end at the maximum rate, 1 worker", &cost);
    print_measured(
        "backlog drain, 1 worker",
        &report["backlog_drain"]["one_worker"],
    );
    println!("\nfigures written to {}", dir.join("latest.json").display());
    anyhow::ensure!(
        lost_total == 0,
        "{lost_total} committed events were never delivered"
    );
    Ok(())
}
