//! Fair share whatever the unit (docs/delivery.md, "Fairness between orgs"): the
//! commit-to-receipt latency of other orgs, and of a quick endpoint of the slow org itself,
//! beside an org with 1, 4 and 10 endpoints answering in 5 s (within the 10 s timeout), against
//! the same measured traffic without those endpoints (made for each loaded run and deleted
//! after it); on one process and on two replicas. The loaded and idle runs take turns, round
//! by round, and each ratio is the median of its rounds'.
//!
//! The slow endpoints take the slow org's backlog, contacts through one channel (their filter),
//! enough to keep every one of them at its share of the org's cap for the whole measured run:
//! what the run adds to the idle one is the slowness, not more traffic. With
//! `QUALIFIER_BENCH_FAIRNESS_STREAM=1` they take every new contact of the org instead, the
//! measured ones too (about 20 a second to each), and the loaded run carries that much more
//! work than the idle one: a measure of the machine's room for the slow org's volume as well.

use super::*;
use crate::services::Proc;
use anyhow::Context;
use reqwest::Method;

/// How long the slow endpoints take to answer: 5 s, within [`TIMEOUT_MS`].
/// `QUALIFIER_BENCH_FAIRNESS_SLOW_MS=0` makes them quick: the same volume from the org without
/// its slowness, which tells what the machine's load moves in the figures from what the
/// slowness does.
fn slow_answer() -> Duration {
    std::env::var("QUALIFIER_BENCH_FAIRNESS_SLOW_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(5), Duration::from_millis)
}
const TIMEOUT_MS: u64 = 10_000;
/// The slow org's events before the measured ones (each to every slow endpoint): at 5 s an
/// answer and 16 requests at once for the org on each process, 240 keep even a lone slow
/// endpoint busy for about 40 s on two processes (75 s on one), to the end of a measured run
/// ([`settle`] after it, then 30 s at 20 events a second for 600 events).
const BACKLOG: u64 = 240;
/// The channel of the backlog's contacts, which the slow endpoints' filter takes.
const BACKLOG_CHANNEL: &str = "whatsapp";

/// Whether the slow endpoints take every new contact of the org, the measured ones too
/// (`QUALIFIER_BENCH_FAIRNESS_STREAM=1`; the module's comment).
fn streaming() -> bool {
    std::env::var("QUALIFIER_BENCH_FAIRNESS_STREAM").is_ok_and(|v| v == "1")
}

/// How long a loaded run waits after sending the backlog before the measured events: 10 s,
/// or `QUALIFIER_BENCH_FAIRNESS_SETTLE_MS`. The backlog's arrival is the slow org's volume,
/// not its slowness: its 960 to 2,400 deliveries are made, published and parked within a
/// second, and the database's and the broker's work after that burst (the rows written, their
/// flush) lasts a few seconds more. Measured from 1.5 s after it, that aftermath set other
/// orgs' p99 in the loaded run (docs/performance-log.md, "Fairness: a backlog called forward
/// as its slots free"); from 10 s, the slow endpoints are still at the org's cap, hanging,
/// for the whole measured run (the backlog lasts 40 s and more).
fn settle() -> Duration {
    std::env::var("QUALIFIER_BENCH_FAIRNESS_SETTLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The slow org's backlog: the channel of its contacts and how many. When streaming, 24 of
/// the measured channel, ahead of the measured contacts that follow them to the same endpoints.
fn backlog() -> (&'static str, u64) {
    if streaming() {
        ("sms", 24)
    } else {
        (BACKLOG_CHANNEL, BACKLOG)
    }
}
/// Orgs beside the slow one, each with one quick endpoint.
const OTHERS: usize = 3;

/// One measured run's latencies (ms, sorted): the other orgs' together, and the slow org's
/// quick endpoint's.
struct Latencies {
    others: Vec<f64>,
    sibling: Vec<f64>,
    /// Messages the workers parked during the run (every reason): the slow org's churn.
    parks: f64,
    /// Where the machine's CPU went during the measured traffic, by process.
    cpu: Value,
}

/// The services and endpoints of one configuration.
struct Setup {
    env: Env,
    api: Proc,
    workers: Vec<Proc>,
    slow_org: Org,
    /// The receivers of the slow org's slow endpoints (sink index and url), and its quick
    /// one's sink index.
    slow: Vec<(usize, String)>,
    sibling: usize,
    others: Vec<(Org, usize)>,
}

async fn setup(sink: &Sink, slow: usize, replicas: usize) -> anyhow::Result<Setup> {
    sink.clear();
    let mut env = Env::new(sink.ca_file.clone()).await;
    // Ten slow endpoints beside the quick one: one more than the default limit of ten.
    env.api_env.push(("QUALIFIER_MAX_ENDPOINTS_PER_ORG", "11"));
    let api = env.start_api().await?;
    let settings = DeliverySettings {
        concurrency: 64,
        org_concurrency: 16,
        timeout_ms: TIMEOUT_MS,
        env: vec![],
    };
    let mut workers = Vec::new();
    for _ in 0..replicas {
        workers.push(env.start_delivery(&settings).await?);
    }
    // The slow org: its webhook is the quick endpoint, for stage changes; its slow endpoints
    // take its contacts of one channel (the backlog), or every new one when streaming.
    let (sibling, url) = sink.endpoint(Answer::Ok);
    let slow_org = env.org(&url, 4).await?;
    sink.set_secret(sibling, &slow_org.secret);
    let hook = env
        .internal_call(
            Method::PUT,
            &format!("/orgs/{}/webhook", slow_org.id),
            json!({"url": url, "event_types": ["lead.stage_changed"], "enabled": true}),
        )
        .await;
    anyhow::ensure!(hook.get("webhook").is_some(), "put webhook: {hook}");
    // The slow endpoints' receivers; the endpoints themselves are made for each loaded run
    // ([`Setup::slow_endpoints`]).
    let slow_sinks = (0..slow)
        .map(|_| sink.endpoint(Answer::After(slow_answer())))
        .collect();
    let mut others = Vec::new();
    for _ in 0..OTHERS {
        let (e, url) = sink.endpoint(Answer::Ok);
        let org = env.org(&url, 4).await?;
        sink.set_secret(e, &org.secret);
        others.push((org, e));
    }
    Ok(Setup {
        env,
        api,
        workers,
        slow_org,
        slow: slow_sinks,
        sibling,
        others,
    })
}

impl Setup {
    /// The slow org's slow endpoints, made for a loaded run: their ids.
    async fn slow_endpoints(&self, sink: &Sink) -> anyhow::Result<Vec<String>> {
        let mut ids = Vec::new();
        let filter = if streaming() {
            Value::Null
        } else {
            json!({"data.lead.channel": BACKLOG_CHANNEL})
        };
        for (e, url) in &self.slow {
            let r = self
                .env
                .internal_call(
                    Method::POST,
                    &format!("/orgs/{}/endpoints", self.slow_org.id),
                    json!({"url": url, "event_types": ["lead.created"], "filter": filter}),
                )
                .await;
            sink.set_secret(*e, r["signing_secret"].as_str().context("create endpoint")?);
            ids.push(
                r["endpoint"]["id"]
                    .as_str()
                    .context("endpoint id")?
                    .to_owned(),
            );
        }
        Ok(ids)
    }

    /// Ends a loaded run's backlog: its slow endpoints deleted (which ends their waiting
    /// deliveries at once), their attempts under way answered, and no delivery of the slow org
    /// left open. Only disabling them left thousands of waiting deliveries to come due, be read
    /// and skipped during the next idle run, which then measured the loaded run's tail.
    async fn end_backlog(&self, ids: &[String]) -> anyhow::Result<()> {
        for id in ids {
            self.env
                .internal_call(
                    Method::DELETE,
                    &format!("/orgs/{}/endpoints/{id}", self.slow_org.id),
                    json!({}),
                )
                .await;
        }
        tokio::time::sleep(slow_answer() + Duration::from_secs(1)).await;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let mut left = 0;
            for status in ["pending", "failed"] {
                let open = self
                    .env
                    .internal_call(
                        Method::GET,
                        &format!(
                            "/orgs/{}/deliveries?status={status}&limit=1",
                            self.slow_org.id
                        ),
                        json!({}),
                    )
                    .await;
                left += open["deliveries"].as_array().map_or(1, |d| d.len());
            }
            if left == 0 {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the slow org's deliveries still open 2 minutes after its loaded run"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// One measured run: (when loaded) the slow org's backlog, then `events` contacts for each
    /// other org and `events` closed contacts of the slow org, measured on the quick endpoints.
    async fn measure(
        &self,
        sink: &Sink,
        events: u64,
        offset: u64,
        loaded: bool,
    ) -> anyhow::Result<Latencies> {
        let slow = if loaded {
            self.slow_endpoints(sink).await?
        } else {
            Vec::new()
        };
        let parks_before = self.parks().await;
        if loaded {
            let (channel, backlog) = backlog();
            let pacing = Pacing {
                concurrency: 8,
                per_s: None,
            };
            produce_on(
                &self.env,
                &self.slow_org,
                channel,
                backlog,
                offset,
                pacing,
                false,
            )
            .await;
            // Its first attempts are out and hanging, and the rest parked, before the
            // measured events come.
            tokio::time::sleep(settle()).await;
        }
        let start = now_us();
        let cpu_before = crate::cpu::Snapshot::take();
        let stmts_reset = crate::stmts::reset(&self.env).await;
        let befores: Vec<usize> = self
            .others
            .iter()
            .map(|(_, e)| sink.count_valid(*e))
            .collect();
        let sibling_before = sink.count_valid(self.sibling);
        // A steady trickle, as a CRM's changes come: each org about 20 a second.
        let pace = Some(20.0);
        let mut producing = Vec::new();
        for (i, (org, _)) in self.others.iter().enumerate() {
            producing.push(produce(
                &self.env,
                org,
                events,
                offset + 10_000 * (i as u64 + 1),
                4,
                pace,
                false,
            ));
        }
        let sibling_events = produce(
            &self.env,
            &self.slow_org,
            events,
            offset + 100_000,
            4,
            pace,
            true,
        );
        let (_, _) = tokio::join!(futures_util::future::join_all(producing), sibling_events);
        for ((_, e), before) in self.others.iter().zip(befores) {
            wait_delivered(sink, *e, before as u64 + events, patience(events)).await;
        }
        wait_delivered(
            sink,
            self.sibling,
            sibling_before as u64 + events,
            patience(events),
        )
        .await;
        let cpu = crate::cpu::report(
            &cpu_before,
            &crate::cpu::Snapshot::take(),
            events * (OTHERS as u64 + 1),
        );
        let statements = crate::stmts::summarize(
            match stmts_reset {
                Ok(()) => crate::stmts::fetch(&self.env).await,
                Err(e) => Err(e),
            },
            events * (OTHERS as u64 + 1),
        );
        let cpu = json!({"processes": cpu, "statements": statements});
        let receipts = sink.receipts();
        let mut others = Vec::new();
        for (org, e) in &self.others {
            let committed = self.env.committed_to(&org.id).await?;
            others.extend(Tally::of(&committed, &receipts, *e, &org.id, start).lat_ms);
        }
        others.sort_by(f64::total_cmp);
        let committed = self.env.committed_to(&self.slow_org.id).await?;
        let sibling = Tally::of(
            &committed,
            &receipts,
            self.sibling,
            &self.slow_org.id,
            start,
        )
        .lat_ms;
        let parks = self.parks().await - parks_before;
        if loaded {
            // The next run must not find the backlog.
            self.end_backlog(&slow).await?;
        }
        Ok(Latencies {
            others,
            sibling,
            parks,
            cpu,
        })
    }

    async fn parks(&self) -> f64 {
        let mut n = 0.0;
        for w in &self.workers {
            n += w
                .counter(&self.env.http, "qualifier_delivery_parked_total")
                .await;
        }
        n
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// The phase: for one and two replicas, an org with 1, 4 and 10 slow endpoints.
pub(crate) async fn phase(sink: &Sink, events: u64, rounds: u32) -> anyhow::Result<Value> {
    let mut table = Vec::new();
    // `QUALIFIER_BENCH_FAIRNESS_ONLY=2x10` runs one configuration (processes x slow
    // endpoints), for profiling it or for before/after pairs.
    let only = std::env::var("QUALIFIER_BENCH_FAIRNESS_ONLY").ok();
    for replicas in [1usize, 2] {
        for slow in [1usize, 4, 10] {
            if only
                .as_deref()
                .is_some_and(|o| o != format!("{replicas}x{slow}"))
            {
                continue;
            }
            let s = setup(sink, slow, replicas).await?;
            // Per round: each figure's loaded over idle ratio, and the p99s themselves.
            let mut rounds_of: HashMap<String, Vec<f64>> = HashMap::new();
            // Every round's latencies together, loaded and idle, for each figure: a p99 of
            // 1,800 deliveries is decided by the few moments the machine stalls (a slow
            // fsync holds every delivery under way, several orgs' at once), and so moves
            // from round to round more than the slow org moves it; the pooled p99 is that of
            // every round's deliveries.
            let mut pooled: HashMap<&str, (Vec<f64>, Vec<f64>)> = HashMap::new();
            let mut offset = 0;
            // The last round's CPU by process, loaded and idle: what the slow org costs.
            let mut cpu = Value::Null;
            for _ in 0..rounds.max(1) {
                let idle = s.measure(sink, events, offset, false).await?;
                offset += 1_000_000;
                let loaded = s.measure(sink, events, offset, true).await?;
                offset += 1_000_000;
                for (who, l, i) in [
                    ("others", &loaded.others, &idle.others),
                    ("sibling", &loaded.sibling, &idle.sibling),
                ] {
                    let all = pooled.entry(who).or_default();
                    all.0.extend_from_slice(l);
                    all.1.extend_from_slice(i);
                    for (p, q) in [("p50", 0.5), ("p99", 0.99)] {
                        let (l, i) = (pct(l, q), pct(i, q));
                        let mut push = |k: String, v| rounds_of.entry(k).or_default().push(v);
                        push(format!("{who}_{p}_ratio"), l / i);
                        if p == "p99" {
                            push(format!("{who}_p99_idle_ms"), i);
                            push(format!("{who}_p99_loaded_ms"), l);
                        }
                    }
                }
                rounds_of
                    .entry("parks_per_loaded_run".into())
                    .or_default()
                    .push(loaded.parks);
                cpu = json!({"idle": idle.cpu, "loaded": loaded.cpu});
            }
            let mut row = json!({
                "replicas": replicas,
                "slow_endpoints": slow,
                "cpu_last_round": cpu,
            });
            for (k, v) in rounds_of {
                if k.ends_with("_ratio") {
                    row[format!("{k}_rounds")] =
                        json!(v.iter().map(|x| r3(*x)).collect::<Vec<_>>());
                }
                row[k] = json!(r3(median(v)));
            }
            for (who, (mut l, mut i)) in pooled {
                l.sort_by(f64::total_cmp);
                i.sort_by(f64::total_cmp);
                for (p, q) in [("p50", 0.5), ("p99", 0.99)] {
                    row[format!("{who}_{p}_pooled_ratio")] = json!(r3(pct(&l, q) / pct(&i, q)));
                }
            }
            println!(
                "      {replicas} process(es), {slow:>2} slow endpoints: others p50 {:.2}x p99 {:.2}x (pooled {:.2}x); the slow org's quick endpoint p50 {:.2}x p99 {:.2}x; {} parks a run",
                row["others_p50_ratio"].as_f64().unwrap_or(f64::NAN),
                row["others_p99_ratio"].as_f64().unwrap_or(f64::NAN),
                row["others_p99_pooled_ratio"].as_f64().unwrap_or(f64::NAN),
                row["sibling_p50_ratio"].as_f64().unwrap_or(f64::NAN),
                row["sibling_p99_ratio"].as_f64().unwrap_or(f64::NAN),
                row["parks_per_loaded_run"],
            );
            table.push(row);
            s.api.stop();
            for w in s.workers {
                w.stop();
            }
        }
    }
    Ok(json!({
        "settings": {"concurrency": 64, "org_concurrency": 16, "timeout_ms": TIMEOUT_MS,
                     "slow_answer_ms": slow_answer().as_millis() as u64,
                     "backlog_events": backlog().1,
                     "slow_endpoints_take_measured_contacts": streaming(),
                     "other_orgs": OTHERS, "events_per_org": events, "rounds": rounds.max(1)},
        "runs": table,
    }))
}
