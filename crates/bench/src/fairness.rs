//! Fair share whatever the unit (docs/delivery.md, "Fairness between orgs"): the
//! commit-to-receipt latency of other orgs, and of a quick endpoint of the slow org itself,
//! beside an org with 1, 4 and 10 endpoints answering in 5 s (within the 10 s timeout), against
//! the same measured traffic with those endpoints disabled; on one process and on two
//! replicas. The loaded and idle runs take turns, round by round, and each ratio is the median
//! of its rounds'.

use super::*;
use crate::services::Proc;
use anyhow::Context;
use reqwest::Method;

/// How long a slow endpoint takes to answer, within [`TIMEOUT_MS`].
const SLOW: Duration = Duration::from_secs(5);
const TIMEOUT_MS: u64 = 10_000;
/// The slow org's events before the measured ones (each to every slow endpoint).
const BACKLOG: u64 = 24;
/// Orgs beside the slow one, each with one quick endpoint.
const OTHERS: usize = 3;

/// One measured run's latencies (ms, sorted): the other orgs' together, and the slow org's
/// quick endpoint's.
struct Latencies {
    others: Vec<f64>,
    sibling: Vec<f64>,
    /// Messages the workers parked during the run (every reason): the slow org's churn.
    parks: f64,
}

/// The services and endpoints of one configuration.
struct Setup {
    env: Env,
    api: Proc,
    workers: Vec<Proc>,
    slow_org: Org,
    /// The slow org's slow endpoints (their ids), and its quick one's sink index.
    slow: Vec<String>,
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
    // take its new contacts.
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
    let mut slow_ids = Vec::new();
    for _ in 0..slow {
        let (e, url) = sink.endpoint(Answer::After(SLOW));
        let r = env
            .internal_call(
                Method::POST,
                &format!("/orgs/{}/endpoints", slow_org.id),
                json!({"url": url, "event_types": ["lead.created"], "enabled": false}),
            )
            .await;
        sink.set_secret(e, r["signing_secret"].as_str().context("create endpoint")?);
        slow_ids.push(
            r["endpoint"]["id"]
                .as_str()
                .context("endpoint id")?
                .to_owned(),
        );
    }
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
        slow: slow_ids,
        sibling,
        others,
    })
}

impl Setup {
    /// The slow endpoints enabled (the loaded run) or not (idle).
    async fn slow_enabled(&self, on: bool) -> anyhow::Result<()> {
        for id in &self.slow {
            let r = self
                .env
                .internal_call(
                    Method::PUT,
                    &format!("/orgs/{}/endpoints/{id}", self.slow_org.id),
                    json!({"url": sink_url_of(&self.env, &self.slow_org.id, id).await?,
                           "event_types": ["lead.created"], "enabled": on}),
                )
                .await;
            anyhow::ensure!(r.get("endpoint").is_some(), "put endpoint: {r}");
        }
        Ok(())
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
        self.slow_enabled(loaded).await?;
        let parks_before = self.parks().await;
        if loaded {
            produce(&self.env, &self.slow_org, BACKLOG, offset, 8, None, false).await;
            // Its first attempts are out and hanging before the measured events come.
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        let start = now_us();
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
            // The backlog ends (a disabled endpoint's waiting deliveries are skipped) and its
            // attempts under way answer before the next run, which must not find them.
            self.slow_enabled(false).await?;
            tokio::time::sleep(SLOW + Duration::from_secs(1)).await;
        }
        Ok(Latencies {
            others,
            sibling,
            parks,
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

/// The url the endpoint `id` of `org` was created with (its sink's), read back.
async fn sink_url_of(env: &Env, org: &str, id: &str) -> anyhow::Result<String> {
    let r = env
        .internal_call(
            Method::GET,
            &format!("/orgs/{org}/endpoints/{id}"),
            json!({}),
        )
        .await;
    Ok(r["endpoint"]["url"]
        .as_str()
        .context("endpoint url")?
        .to_owned())
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
            let mut ratios: HashMap<&str, Vec<f64>> = HashMap::new();
            let mut offset = 0;
            for _ in 0..rounds.max(1) {
                let idle = s.measure(sink, events, offset, false).await?;
                offset += 1_000_000;
                let loaded = s.measure(sink, events, offset, true).await?;
                offset += 1_000_000;
                for (name, l, i) in [
                    (
                        "others_p50",
                        pct(&loaded.others, 0.5),
                        pct(&idle.others, 0.5),
                    ),
                    (
                        "others_p99",
                        pct(&loaded.others, 0.99),
                        pct(&idle.others, 0.99),
                    ),
                    (
                        "sibling_p50",
                        pct(&loaded.sibling, 0.5),
                        pct(&idle.sibling, 0.5),
                    ),
                    (
                        "sibling_p99",
                        pct(&loaded.sibling, 0.99),
                        pct(&idle.sibling, 0.99),
                    ),
                ] {
                    ratios.entry(name).or_default().push(l / i);
                }
                ratios
                    .entry("others_p99_idle_ms")
                    .or_default()
                    .push(pct(&idle.others, 0.99));
                ratios.entry("parks").or_default().push(loaded.parks);
            }
            let row = json!({
                "replicas": replicas,
                "slow_endpoints": slow,
                "others_p50_ratio": r3(median(ratios["others_p50"].clone())),
                "others_p99_ratio": r3(median(ratios["others_p99"].clone())),
                "sibling_p50_ratio": r3(median(ratios["sibling_p50"].clone())),
                "sibling_p99_ratio": r3(median(ratios["sibling_p99"].clone())),
                "others_p99_idle_ms": r3(median(ratios["others_p99_idle_ms"].clone())),
                "parks_per_loaded_run": r3(median(ratios["parks"].clone())),
            });
            println!(
                "      {replicas} process(es), {slow:>2} slow endpoints: others p50 {:.2}x p99 {:.2}x; the slow org's quick endpoint p50 {:.2}x p99 {:.2}x; {} parks a run",
                row["others_p50_ratio"].as_f64().unwrap_or(f64::NAN),
                row["others_p99_ratio"].as_f64().unwrap_or(f64::NAN),
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
                     "slow_answer_ms": SLOW.as_millis() as u64, "backlog_events": BACKLOG,
                     "other_orgs": OTHERS, "events_per_org": events, "rounds": rounds.max(1)},
        "runs": table,
    }))
}
