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
//! 8. History at scale (`history/`): idle CPU, writes, every read and the storage per event
//!    on an empty database beside one holding a month of history (2,500,000 events, 200,000
//!    with --quick), and the rows every statement's plan read (`plans.rs`).
//!
//! Usage: `qualifier-bench [--quick] [--events N] [--json PATH]`; the figures always go to
//! `target/bench/latest.json` too.
//!
//! `qualifier-bench --against DIR` (`make perf-check`, `perf.rs`) runs none of the phases: it
//! runs the end-to-end run of phase 2 for this build and the one in DIR in turn, and fails when
//! this one spends more CPU per delivered event (figures in `target/bench/perf-check.json`).

mod api;
mod ceilings;
mod cpu;
mod destinations;
mod e2e;
mod endpoints;
mod erasure;
mod fairness;
mod feed;
mod history;
mod load;
mod measure;
mod neighbours;
mod outage;
mod perf;
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

use api::api_phase;
use e2e::{E2e, Measure, drain, e2e, e2e_with};
use measure::*;
use neighbours::{lone_org, noisy};
use outage::outage;

/// The benchmark harness (docs/performance.md): prints a table and writes every figure as JSON.
#[derive(clap::Parser)]
#[command(name = "qualifier-bench", version, about)]
struct Opts {
    /// The short run (4,000 events per end-to-end run unless --events says otherwise).
    #[arg(long)]
    quick: bool,
    /// The smallest run that still goes through every phase and every check (CI's
    /// `make bench-smoke`, on the dev build): 1,000 events per end-to-end run, a history of
    /// 120,000. Its figures say nothing of speed; its failures (an event lost, a plan that reads
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
    #[arg(long, value_parser = ["e2e", "drain", "api", "feed", "lone", "outage", "noisy", "endpoints", "filters", "erasure", "fairness", "history", "destinations"])]
    only: Option<String>,
    /// With `--only e2e`: cause events at this many per second instead of as fast as the API
    /// takes them (commit-to-receipt latency at a chosen load); with `--only endpoints`, the
    /// pace of its isolation runs (default 200).
    #[arg(long)]
    pace: Option<f64>,
    /// With `--only endpoints`: `QUALIFIER_ENDPOINT_FAILING_SPAN_MS` of its runs (default
    /// 1000, the bench's time scale; 60000, the deployed default, measures a failing endpoint
    /// before it is found failing, for the whole run).
    #[arg(long, requires = "only")]
    failing_span_ms: Option<u64>,
    /// With `--only endpoints`: the worker retries as deployed (30 s, 2, 8 and 32 min) instead
    /// of on the bench's scale (1, 2, 4 and 8 s, every delivery's five attempts within a run).
    /// With `--failing-span-ms 60000`, a failing endpoint as production meets one in its first
    /// minute.
    #[arg(long, requires = "only")]
    deployed_retries: bool,
    /// With `--only endpoints`: repeat its isolation runs this many times, in turn, and report
    /// the median of each round's ratios (default 1); with `--only fairness`, its idle and
    /// loaded runs (default 3); with `--only filters`, its pairs of runs (default 3).
    #[arg(long, requires = "only")]
    rounds: Option<u32>,
    /// With `--only e2e`: the org's webhook `ordering` (`per_lead`: a lead's deliveries one at
    /// a time, docs/delivery.md "Throttle and order").
    #[arg(long, value_parser = ["none", "per_lead"], requires = "only")]
    ordering: Option<String>,
    /// Events stored in the history phase's database (default 2,500,000, or 200,000 with
    /// --quick).
    #[arg(long)]
    history_events: Option<i64>,
    /// Run the `lead-api` and `webhook-delivery` found here instead of the ones beside the
    /// harness (another build, for before/after pairs with `scripts/bench.sh`); its
    /// `qualifierctl migrate` makes each database, so the schema is that build's too.
    #[arg(long, conflicts_with = "against")]
    bin_dir: Option<PathBuf>,
    /// `make perf-check`: this build against the one in DIR (lead-api, webhook-delivery,
    /// qualifierctl), end to end at the maximum rate, the two builds taking turns; fails when
    /// the median CPU per delivered event is above `--max-cpu-ratio` times the other's.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["only", "smoke", "quick"])]
    against: Option<PathBuf>,
    /// With `--against`: pairs of runs (each build once per pair).
    #[arg(long, default_value_t = 3, requires = "against")]
    pairs: usize,
    /// With `--against`: the largest median ratio of CPU per delivered event that passes.
    #[arg(long, default_value_t = 1.2, requires = "against")]
    max_cpu_ratio: f64,
}

impl Opts {
    /// One size of three, by the run asked for: smoke, quick or full.
    fn sized<T>(&self, smoke: T, quick: T, full: T) -> T {
        if self.smoke {
            smoke
        } else if self.quick {
            quick
        } else {
            full
        }
    }

    fn events(&self) -> u64 {
        self.events.unwrap_or(self.sized(1000, 4000, 20_000))
    }

    /// Seconds the outage phase watches the held events before the endpoint recovers.
    fn outage_secs(&self) -> u64 {
        self.sized(5, 20, 60)
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
        self.sized(20_000, 200_000, 2_000_000)
    }

    /// The erasure phase's worst cases: (runs, events of the lead, answers the org keeps). The
    /// contract's sizes except in the smoke run, which only goes through the steps.
    fn heavy_erasures(&self) -> erasure::Heavy {
        let (runs, events, answers) = self.sized(
            (1, 1_000, 10_000),
            (3, 10_000, 100_000),
            (3, 10_000, 100_000),
        );
        erasure::Heavy {
            runs,
            events,
            answers,
        }
    }

    /// Seconds of each API measurement.
    fn api_secs(&self) -> u64 {
        self.sized(1, 3, 10)
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

/// Writes a report to `target/bench/NAME` and, when asked, to `also`; answers the first path.
fn write_report(
    name: &str,
    report: &Value,
    also: Option<&std::path::Path>,
) -> anyhow::Result<PathBuf> {
    let text = serde_json::to_vec_pretty(report)?;
    let dir = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
        .join("bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), &text)?;
    if let Some(p) = also {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, &text)?;
    }
    Ok(dir.join(name))
}

#[tokio::main]
async fn main() {
    qualifier_testkit::exit_on_error("bench", run().await);
}

async fn run() -> anyhow::Result<()> {
    let o = <Opts as clap::Parser>::parse();
    if let Some(d) = &o.bin_dir {
        anyhow::ensure!(
            d.join("lead-api").is_file() && d.join("webhook-delivery").is_file(),
            "--bin-dir {}: no lead-api and webhook-delivery there",
            d.display()
        );
        services::use_build(Some(d.clone()));
    }
    let sink = Sink::start(2).await?;
    if let Some(other) = &o.against {
        anyhow::ensure!(
            ["lead-api", "webhook-delivery", "qualifierctl"]
                .iter()
                .all(|b| other.join(b).is_file()),
            "--against {}: no lead-api, webhook-delivery and qualifierctl there",
            other.display()
        );
        anyhow::ensure!(o.pairs > 0, "--pairs: at least one");
        let report = perf::against(
            &sink,
            other,
            o.pairs,
            o.events.unwrap_or(5000),
            o.max_cpu_ratio,
        )
        .await?;
        write_report("perf-check.json", &report, o.json.as_deref())?;
        anyhow::ensure!(
            report["passed"].as_bool() == Some(true),
            "perf-check failed (figures above)"
        );
        return Ok(());
    }
    let n = o.events();
    println!(
        "qualifier-bench: {} run, {n} events per end-to-end run",
        o.sized("smoke", "quick", "full")
    );

    // One phase alone, for profiling it (`perf record -a` while it runs).
    if let Some(phase) = &o.only {
        let v = match phase.as_str() {
            "e2e" => {
                let run = e2e_with(
                    &sink,
                    n,
                    1,
                    o.pace,
                    Measure::CostAndFeedTail,
                    default_delivery(),
                    o.ordering.as_ref().map(|o| json!({"ordering": o})),
                )
                .await?;
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
                let lifted = e2e(&sink, n, 1, None, Measure::Off).await?;
                lone_org(&sink, n, &lifted).await?
            }
            "outage" => outage(&sink, n, o.outage_secs()).await?,
            "noisy" => noisy(&sink, (n / 4).max(1000), if o.short() { 300 } else { 1000 }).await?,
            "endpoints" => {
                let scale = endpoints::Scale {
                    failing_span_ms: o.failing_span_ms.unwrap_or(1000),
                    deployed_retries: o.deployed_retries,
                    rounds: o.rounds.unwrap_or(1),
                };
                endpoints::phase(&sink, n, o.pace.unwrap_or(200.0), scale).await?
            }
            "filters" => endpoints::filters_phase(&sink, n, o.rounds.unwrap_or(3)).await?,
            "erasure" => erasure::phase(&sink, o.erasure_others(), o.heavy_erasures()).await?,
            "fairness" => {
                fairness::phase(
                    &sink,
                    // 600 events an org a run: a p99 over 1,800 of other orgs' deliveries (600
                    // of the quick endpoint's) that one stall of the machine does not make.
                    if o.short() { 100 } else { 600 },
                    o.rounds.unwrap_or(3),
                )
                .await?
            }
            "history" => history::phase(&sink, o.history()).await?,
            "destinations" => destinations::phase(&sink, o.events.unwrap_or(5000)).await?,
            other => {
                anyhow::bail!(
                    "--only takes e2e, drain, api, feed, lone, outage, noisy, endpoints, filters, erasure, fairness, history or destinations, not {other}"
                )
            }
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("[1/6] API: GET, PATCH and the primary-key ceiling");
    let api = api_phase(&o, &sink).await?;
    println!("[2/6] end to end at the maximum rate, then at half of it");
    let max = e2e(&sink, n, 1, None, Measure::CostAndFeedTail).await?;
    let half = e2e(&sink, n, 1, Some(max.delivered_per_s / 2.0), Measure::Off).await?;
    println!("      the same at half rate with ordering per lead");
    let ordered = e2e_with(
        &sink,
        n,
        1,
        Some(max.delivered_per_s / 2.0),
        Measure::Off,
        default_delivery(),
        Some(json!({"ordering": "per_lead"})),
    )
    .await?;
    println!("      ceilings: bare reqwest to the sink, lapin publish and consume");
    let bare = ceilings::bare_sink(&sink, n, default_delivery().concurrency).await?;
    let (publish, consume) = ceilings::lapin_rates(n, 500, 64).await?;
    println!("[3/6] scale: end to end with 2 workers, backlog drains with 1 and 2");
    let max2 = e2e(&sink, n, 2, None, Measure::Off).await?;
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
    let outage_run = outage(&sink, n, o.outage_secs()).await?;
    println!(
        "      erasure: a lead with 100 events among {} others",
        o.erasure_others()
    );
    let erasure_run = erasure::phase(&sink, o.erasure_others(), o.heavy_erasures()).await?;
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
    let mut ordered_json = ordered.tally.json();
    ordered_json["offered_per_s"] = json!(r3(max.delivered_per_s / 2.0));
    ordered_json["delivered_per_s"] = json!(r3(ordered.delivered_per_s));
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
        "half rate, ordering per_lead: delivered ev/s",
        ordered.delivered_per_s,
        None,
    );
    row(
        r,
        "half rate, ordering per_lead: commit-to-receipt p50 ms",
        pct(&ordered.tally.lat_ms, 0.5),
        None,
    );
    row(
        r,
        "half rate, ordering per_lead: commit-to-receipt p99 ms",
        pct(&ordered.tally.lat_ms, 0.99),
        None,
    );
    row(
        r,
        "half rate, ordering per_lead: events lost",
        ordered.tally.lost as f64,
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
    row(
        r,
        &format!(
            "erase a {}-event lead beside {} kept answers, slowest ms",
            o.heavy_erasures().events,
            o.heavy_erasures().answers
        ),
        erasure_run["heavy_erase_max_ms"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 1000.0)),
    );
    row(
        r,
        "another org's commit-to-receipt p99 during those erasures / without",
        erasure_run["neighbour_p99_ratio"]
            .as_f64()
            .unwrap_or(f64::NAN),
        Some(("<=", 2.0)),
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
        "mode": o.sized("smoke", "quick", "full"),
        "events_per_run": n,
        "machine": machine(),
        "api": api,
        "end_to_end": {
            "max_rate_1_worker": end_to_end,
            "half_rate_1_worker": half_json,
            "half_rate_1_worker_ordering_per_lead": ordered_json,
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
    let written = write_report("latest.json", &report, o.json.as_deref())?;
    println!();
    print_measured("end to end at the maximum rate, 1 worker", &cost);
    print_measured(
        "backlog drain, 1 worker",
        &report["backlog_drain"]["one_worker"],
    );
    println!("\nfigures written to {}", written.display());
    anyhow::ensure!(
        lost_total == 0,
        "{lost_total} committed events were never delivered"
    );
    Ok(())
}
