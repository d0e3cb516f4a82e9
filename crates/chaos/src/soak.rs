//! `qualifier-soak` (`make soak`, `make soak-short`): the whole system at a steady load for a long
//! time, sampled at a fixed interval, to see whether anything grows that should not.
//!
//! The release `lead-api` and `webhook-delivery` run as processes with a steady stream of new
//! contacts (one `lead.created` each) through the internal API to an HTTPS receiver that checks
//! every signature and counts (it keeps no request). Every sample: each process's resident memory
//! and open descriptors, the database's connections, the `outbox` and `leads` sizes with their
//! indexes, the queue depths, deliveries per second and the event-to-receipt p50/p99 of the
//! interval. The series goes to `target/soak/latest.json` and a chart to
//! `target/soak/latest.svg`.
//!
//! It fails on growth that does not level off after the warm-up: a process's memory or
//! descriptors still rising through the last third of the run, or the delivery p99 of the last
//! third past twice that of the first third after warm-up. Tables grow by design (events are
//! kept for the retention period) and are reported, not judged. It also fails on any request
//! that does not end in its lead: requests are sent as a careful client sends them (a 503 or a
//! lost connection is tried again, `new_contact`), and the causes of the first retries and
//! failures are printed and kept in the JSON, with the services' error log beside them.
//!
//! Usage: `qualifier-soak [--minutes N] [--rate R] [--sample-seconds S] [--warmup-minutes W]`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use qualifier_store::SecretKey;
use qualifier_testkit::procs::{Service, service_env};
use qualifier_testkit::receiver::Receiver;
use qualifier_testkit::{TestDb, TestTopology, free_ports};
use serde_json::{Value, json};

const INTERNAL_TOKEN: &str = "soak-internal-token-0123456789";

#[derive(clap::Parser)]
#[command(name = "qualifier-soak", version, about)]
struct Opts {
    /// How long the load runs.
    #[arg(long, default_value_t = 30.0)]
    minutes: f64,
    /// Events a second: about half of what this machine sustains for minutes on end with the
    /// load and the receiver beside the services (600 a second fell behind in its second minute
    /// here, though a 20-second burst of the bench reaches twice that).
    #[arg(long, default_value_t = 300)]
    rate: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 60)]
    sample_seconds: u64,
    /// Samples taken before this are warm-up: shown, not judged.
    #[arg(long, default_value_t = 5.0)]
    warmup_minutes: f64,
    /// Where the lead-api and webhook-delivery binaries are (default: beside this one).
    #[arg(long)]
    bin: Option<PathBuf>,
}

/// Resident memory (MiB) and open descriptors of a process.
fn proc_usage(pid: u32) -> (f64, u64) {
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (rss, fds)
}

/// Messages waiting in the run's queues by kind (work, retry, parked, dead), from `rabbitmqctl`
/// (the broker's own count).
fn queue_depths(prefix: &str) -> Value {
    let out = Command::new("rabbitmqctl")
        .args([
            "list_queues",
            "-q",
            "--no-table-headers",
            "name",
            "messages",
        ])
        .stderr(Stdio::null())
        .output();
    let mut depths = serde_json::Map::new();
    if let Ok(o) = out {
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let mut it = line.split_whitespace();
            if let (Some(name), Some(n)) = (it.next(), it.next())
                && let Some(short) = name.strip_prefix(&format!("{prefix}."))
            {
                let kind = short.split('.').next().unwrap_or(short);
                let kind = if kind == "deliveries" { "work" } else { kind };
                let n = n.parse::<u64>().unwrap_or(0);
                let sum = depths.entry(kind.to_owned()).or_insert(json!(0));
                *sum = json!(sum.as_u64().unwrap_or(0) + n);
            }
        }
    }
    Value::Object(depths)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The median of `v`, the lower of the two middle values when their number is even. A third
/// of a two-minute soak is two samples: the upper middle of two is their maximum, and one
/// sample taken while the machine stalled (delivered rate down to 134 of 150 a second, p99
/// 148 ms, the next sample back at 51) read as a drift. A p99 still growing is high in every
/// sample of the last third, which the lower middle still sees.
fn lower_median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// One polyline per series on a shared time axis, each scaled to its own maximum (the legend
/// gives the maximum), so a trend of any one shows.
fn svg_chart(t_min: &[f64], series: &[(&str, &str, Vec<f64>)]) -> String {
    let (w, h, pad) = (900.0, 420.0, 40.0);
    let t_max = t_min.iter().copied().fold(1e-9, f64::max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{pad}\" y=\"20\">qualifier-soak: each series scaled to its maximum; minutes on the x axis</text>\n"
    );
    s += &format!(
        "<line x1=\"{pad}\" y1=\"{y}\" x2=\"{x}\" y2=\"{y}\" stroke=\"#999\"/>\n",
        y = h - pad,
        x = w - pad
    );
    for m in 0..=(t_max.ceil() as u64) {
        let x = pad + (m as f64 / t_max) * (w - 2.0 * pad);
        if m % 5 == 0 || t_max < 10.0 {
            s += &format!(
                "<text x=\"{x:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{m}</text>\n",
                h - pad + 15.0
            );
        }
    }
    for (i, (name, colour, ys)) in series.iter().enumerate() {
        let max = ys
            .iter()
            .copied()
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max);
        let points: Vec<String> = t_min
            .iter()
            .zip(ys)
            .filter(|(_, y)| y.is_finite())
            .map(|(t, y)| {
                let x = pad + (t / t_max) * (w - 2.0 * pad);
                let yy = h - pad - if max > 0.0 { y / max } else { 0.0 } * (h - 3.0 * pad);
                format!("{x:.1},{yy:.1}")
            })
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            points.join(" ")
        );
        s += &format!(
            "<text x=\"{}\" y=\"{}\" fill=\"{colour}\">{name} (max {max:.1})</text>\n",
            w - 260.0,
            40.0 + 16.0 * i as f64
        );
    }
    s + "</svg>\n"
}

/// One new contact through the inbound API, as a careful client sends it: a 503 (the contract's
/// "retry later", with `Retry-After`) and a connection lost before an answer are tried again, up
/// to three more times. Inbound is idempotent by phone, so a retry of a request that did land
/// answers 200 with the same lead and adds no event. Anything else that is not 201 is a
/// failure. Returns the outcome and what each retry was for.
async fn new_contact(
    http: &reqwest::Client,
    base: &str,
    org: &str,
    i: u64,
) -> (Result<(), String>, Vec<String>) {
    let body = json!({"name": "Soak Lead", "phone": format!("+4478{i:09}"), "channel": "sms"});
    let mut retries = Vec::new();
    for attempt in 0..4u32 {
        let why = match http
            .post(format!("{base}/orgs/{org}/inbound"))
            .bearer_auth(INTERNAL_TOKEN)
            .json(&body)
            .send()
            .await
        {
            Ok(r) if r.status() == 201 => return (Ok(()), retries),
            Ok(r) if r.status() == 200 && attempt > 0 => return (Ok(()), retries),
            Ok(r) => {
                let (status, retry) = (r.status(), r.status() == 503);
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                let why = format!("{status}: {}", r.text().await.unwrap_or_default());
                if !retry {
                    return (Err(why), retries);
                }
                if let Some(secs) = wait {
                    tokio::time::sleep(Duration::from_secs(secs.min(5))).await;
                }
                why
            }
            Err(e) => format!("{:#}", anyhow::Error::from(e)),
        };
        if attempt == 3 {
            return (Err(why), retries);
        }
        retries.push(why);
        tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
    }
    unreachable!("the fourth attempt returns")
}

#[tokio::main]
async fn main() {
    qualifier_testkit::exit_on_error("soak", run().await);
}

async fn run() -> anyhow::Result<()> {
    let o = <Opts as clap::Parser>::parse();
    let bins = o
        .bin
        .clone()
        .unwrap_or_else(qualifier_testkit::procs::own_dir);
    let http = qualifier_testkit::http_client();
    let db = TestDb::new().await;
    let topo = TestTopology::new(vec![1000, 5000, 30_000, 120_000]);
    let receiver = Receiver::start().await;
    receiver.count_only();
    let key = SecretKey::generate_base64();
    let [public, internal, health] = free_ports::<3>();
    // Errors only, and shown: a failed request's cause is in the service's log.
    let common = |cmd: &mut Command| {
        service_env(cmd, &db.url, &key, &topo.prefix, &topo.retry_delays_ms);
    };
    let mut api_cmd = Command::new(bins.join("lead-api"));
    common(&mut api_cmd);
    api_cmd
        .env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
        .env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{public}"))
        .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{internal}"));
    let mut delivery_cmd = Command::new(bins.join("webhook-delivery"));
    common(&mut delivery_cmd);
    // One org here: it may use every slot, as in the bench's runs (with many orgs, the default
    // quarter per org is what keeps one from crowding out the rest; docs/delivery.md).
    delivery_cmd
        .env("QUALIFIER_DELIVERY_ORG_CONCURRENCY", "64")
        .env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{health}"))
        .env("QUALIFIER_WEBHOOK_CA_FILE", &receiver.ca_file);
    let mut api = Service::new("lead-api", api_cmd);
    let mut delivery = Service::new("webhook-delivery", delivery_cmd);
    api.start();
    delivery.start();
    let urls = qualifier_testkit::procs::readiness(internal, health);
    let org = qualifier_testkit::procs::ready_org(
        &http,
        &urls,
        internal,
        INTERNAL_TOKEN,
        "Soak",
        &receiver.url,
        &receiver,
    )
    .await
    .map_err(anyhow::Error::from_boxed)?;
    let base = format!("http://127.0.0.1:{internal}/internal/v1");
    let pids = [
        ("lead-api", api.child.as_ref().map_or(0, |c| c.id())),
        (
            "webhook-delivery",
            delivery.child.as_ref().map_or(0, |c| c.id()),
        ),
    ];

    // The load: new contacts at a steady rate, 64 requests at most in flight.
    let producing = Arc::new(AtomicBool::new(true));
    let (sent, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    // What the first failures were (status and body, or the transport error's chain), so a
    // failed run says why rather than only how many.
    let reasons: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let retried = Arc::new(AtomicU64::new(0));
    let producer = {
        let (producing, sent, failed) = (producing.clone(), sent.clone(), failed.clone());
        let (retried, reasons) = (retried.clone(), reasons.clone());
        let (http, base, org) = (http.clone(), base.clone(), org.clone());
        let every = Duration::from_micros(1_000_000 / o.rate.max(1));
        tokio::spawn(async move {
            let slots = Arc::new(tokio::sync::Semaphore::new(64));
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut i = 0u64;
            let started_at = Instant::now();
            while producing.load(Ordering::Relaxed) {
                tick.tick().await;
                i += 1;
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    break;
                };
                let (http, base, org, sent, failed, retried, reasons) = (
                    http.clone(),
                    base.clone(),
                    org.clone(),
                    sent.clone(),
                    failed.clone(),
                    retried.clone(),
                    reasons.clone(),
                );
                tokio::spawn(async move {
                    let at = started_at.elapsed().as_secs_f64();
                    let (outcome, retries) = new_contact(&http, &base, &org, i).await;
                    let mut r = reasons.lock().unwrap_or_else(|p| p.into_inner());
                    for why in &retries {
                        if r.len() < 20 {
                            r.push(format!("at {at:.1} s (retried): {why}"));
                        }
                    }
                    retried.fetch_add(retries.len() as u64, Ordering::Relaxed);
                    match outcome {
                        Ok(()) => sent.fetch_add(1, Ordering::Relaxed),
                        Err(why) => {
                            if r.len() < 20 {
                                r.push(format!("at {at:.1} s: {why}"));
                            }
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                    drop(r);
                    drop(slot);
                });
            }
            // Every request made is answered before the services stop.
            let _ = slots.acquire_many(64).await;
        })
    };

    let pg = db.client().await;
    let started = Instant::now();
    let total = Duration::from_secs_f64(o.minutes * 60.0);
    let every = Duration::from_secs(o.sample_seconds.max(1));
    let mut samples: Vec<Value> = Vec::new();
    let mut last_verified = 0u64;
    let mut last_at = Instant::now();
    println!(
        "soak: {} events/s for {} min, a sample every {} s",
        o.rate, o.minutes, o.sample_seconds
    );
    while started.elapsed() < total {
        tokio::time::sleep(every.min(total.saturating_sub(started.elapsed()))).await;
        let tally = receiver.take_tally();
        let mut lat = tally.latencies_ms.clone();
        lat.sort_by(f64::total_cmp);
        let secs = last_at.elapsed().as_secs_f64();
        last_at = Instant::now();
        let rate = (tally.verified - last_verified) as f64 / secs;
        last_verified = tally.verified;
        let mut procs = serde_json::Map::new();
        for (name, pid) in pids {
            let (rss, fds) = proc_usage(pid);
            procs.insert(
                name.to_owned(),
                json!({"rss_mib": r1(rss), "open_fds": fds}),
            );
        }
        let connections: i64 = qualifier_testkit::sql::try_one(
            &pg,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()",
            &[],
        )
        .await?;
        let sizes = pg
            .query_one(
                "SELECT (SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::int8
                         FROM pg_inherits WHERE inhparent = 'outbox'::regclass),
                        pg_total_relation_size('leads')",
                &[],
            )
            .await?;
        let mib = |b: i64| r1(b as f64 / 1_048_576.0);
        let sample = json!({
            "minute": r1(started.elapsed().as_secs_f64() / 60.0),
            "processes": procs,
            "db_connections": connections,
            "outbox_mib": mib(sizes.get(0)),
            "leads_mib": mib(sizes.get(1)),
            "queues": queue_depths(&topo.prefix),
            "delivered_per_s": r1(rate),
            "delivery_p50_ms": r1(pct(&lat, 0.5)),
            "delivery_p99_ms": r1(pct(&lat, 0.99)),
            "invalid_signatures": tally.invalid,
        });
        println!("{sample}");
        samples.push(sample);
    }
    producing.store(false, Ordering::Relaxed);
    producer.await?;
    api.kill9();
    delivery.kill9();

    // Judged after warm-up: the first third of what follows is the baseline, the last third
    // must not still be rising.
    let judged: Vec<&Value> = samples
        .iter()
        .filter(|s| s["minute"].as_f64().unwrap_or(0.0) > o.warmup_minutes)
        .collect();
    let third = (judged.len() / 3).max(1);
    let mut problems = Vec::new();
    if judged.len() >= 3 {
        let (first, last) = (&judged[..third], &judged[judged.len() - third..]);
        let series = |part: &[&Value], f: &dyn Fn(&Value) -> f64| -> Vec<f64> {
            part.iter().map(|s| f(s)).collect()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        for (name, _) in pids {
            let rss = |s: &Value| s["processes"][name]["rss_mib"].as_f64().unwrap_or(f64::NAN);
            let fds = |s: &Value| s["processes"][name]["open_fds"].as_f64().unwrap_or(0.0);
            let (r0, r1v) = (mean(&series(first, &rss)), series(last, &rss));
            // Still rising through the last third, and well above the baseline.
            let rising = r1v.windows(2).all(|w| w[1] > w[0]) && r1v.len() > 1;
            if rising && r1v[r1v.len() - 1] > r0 * 1.25 + 16.0 {
                problems.push(format!(
                    "{name}: memory still rising ({r0:.1} MiB after warm-up, {:.1} at the end)",
                    r1v[r1v.len() - 1]
                ));
            }
            let (f0, f1) = (mean(&series(first, &fds)), mean(&series(last, &fds)));
            if f1 > f0 + 20.0 {
                problems.push(format!(
                    "{name}: open descriptors grew from {f0:.0} to {f1:.0}"
                ));
            }
        }
        // Medians, not means: a third of a short soak is three samples, and one sample that
        // caught a checkpoint or a pool growing (86 ms among 12-20) moved the mean of its third
        // past twice the first's. A p99 that is still growing is high in most of the last
        // third's samples, which the median sees.
        let p99 = |s: &Value| s["delivery_p99_ms"].as_f64().unwrap_or(f64::NAN);
        let (p0, p1) = (
            lower_median(series(first, &p99)),
            lower_median(series(last, &p99)),
        );
        if p1 > 2.0 * p0 && p1 > p0 + 20.0 {
            problems.push(format!(
                "delivery p99 drifted from {p0:.1} ms to {p1:.1} ms"
            ));
        }
    }
    let report = json!({
        "rate_per_s": o.rate,
        "minutes": o.minutes,
        "sample_seconds": o.sample_seconds,
        "warmup_minutes": o.warmup_minutes,
        "requests_sent": sent.load(Ordering::Relaxed),
        "requests_failed": failed.load(Ordering::Relaxed),
        "requests_retried": retried.load(Ordering::Relaxed),
        "failures": reasons.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        "samples": samples,
        "problems": problems,
    });
    let out = qualifier_testkit::procs::write_figures("soak", &report)?;
    let t: Vec<f64> = samples
        .iter()
        .map(|s| s["minute"].as_f64().unwrap_or(0.0))
        .collect();
    let col = |f: &dyn Fn(&Value) -> f64| samples.iter().map(f).collect::<Vec<f64>>();
    let chart = svg_chart(
        &t,
        &[
            (
                "lead-api RSS MiB",
                "#1a73e8",
                col(&|s| {
                    s["processes"]["lead-api"]["rss_mib"]
                        .as_f64()
                        .unwrap_or(f64::NAN)
                }),
            ),
            (
                "webhook-delivery RSS MiB",
                "#188038",
                col(&|s| {
                    s["processes"]["webhook-delivery"]["rss_mib"]
                        .as_f64()
                        .unwrap_or(f64::NAN)
                }),
            ),
            (
                "delivery p99 ms",
                "#d93025",
                col(&|s| s["delivery_p99_ms"].as_f64().unwrap_or(f64::NAN)),
            ),
            (
                "delivered/s",
                "#9334e6",
                col(&|s| s["delivered_per_s"].as_f64().unwrap_or(f64::NAN)),
            ),
            (
                "DB connections",
                "#e37400",
                col(&|s| s["db_connections"].as_f64().unwrap_or(f64::NAN)),
            ),
        ],
    );
    std::fs::write(out.join("latest.svg"), chart)?;
    println!(
        "soak: {} requests sent, {} failed, {} retried; series in {}",
        sent.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        retried.load(Ordering::Relaxed),
        out.join("latest.json").display()
    );
    for why in reasons.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        println!("soak: a request failed {why}");
    }
    anyhow::ensure!(problems.is_empty(), "growth: {problems:?}");
    anyhow::ensure!(
        failed.load(Ordering::Relaxed) == 0,
        "{} requests failed",
        failed.load(Ordering::Relaxed)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::lower_median;

    #[test]
    fn one_stalled_sample_of_two_is_not_the_median_but_two_high_ones_are() {
        assert_eq!(lower_median(vec![147.9, 50.9]), 50.9);
        assert_eq!(lower_median(vec![147.9, 120.0]), 120.0);
        assert_eq!(lower_median(vec![12.0, 86.0, 15.0]), 15.0);
        assert!(lower_median(Vec::new()).is_nan());
    }
}
