//! What every phase measures with: the producer of changes, the tally of what the sink
//! received, the time windows and the database's and broker's counters around them.

use super::*;

/// Causes `iterations` changes for `org`: a new contact through the internal API
/// (`lead.created`), then, when `close`, the CRM closing it through the public API
/// (`lead.stage_changed`). A failed step is retried; a retried inbound finds the known contact
/// unchanged and a retried close finds the lead closed, so each event is caused exactly once.
pub(crate) async fn produce(
    env: &Env,
    org: &Org,
    iterations: u64,
    offset: u64,
    concurrency: usize,
    pace_per_s: Option<f64>,
    close: bool,
) -> u64 {
    let pacing = Pacing {
        concurrency,
        per_s: pace_per_s,
    };
    produce_on(env, org, "sms", iterations, offset, pacing, close).await
}

/// How a producer spreads its changes: at most `concurrency` at once, about `per_s` a second.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    pub(crate) concurrency: usize,
    pub(crate) per_s: Option<f64>,
}

/// [`produce`], the contacts coming through `channel` (which endpoint filters can tell apart).
pub(crate) async fn produce_on(
    env: &Env,
    org: &Org,
    channel: &'static str,
    iterations: u64,
    offset: u64,
    pacing: Pacing,
    close: bool,
) -> u64 {
    let (concurrency, pace_per_s) = (pacing.concurrency, pacing.per_s);
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
            let body = json!({"name": "Bench Lead", "phone": format!("+4477{:08}", offset + i), "channel": channel});
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
pub(crate) struct Tally {
    pub(crate) committed: u64,
    pub(crate) delivered: u64,
    pub(crate) lost: u64,
    pub(crate) duplicates: u64,
    pub(crate) invalid: u64,
    pub(crate) lat_ms: Vec<f64>,
    /// Each delivered event's commit time (µs) and latency (ms), in commit order: where in a
    /// run its slow deliveries were.
    pub(crate) lat_by_commit: Vec<(i64, f64)>,
    pub(crate) first_us: i64,
    pub(crate) last_us: i64,
}

impl Tally {
    pub(crate) fn of(
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
                    let ms = (first - created) as f64 / 1000.0;
                    t.lat_ms.push(ms);
                    t.lat_by_commit.push((*created, ms));
                    t.first_us = t.first_us.min(first);
                    t.last_us = t.last_us.max(*ats.iter().max().unwrap_or(&0));
                }
                None => t.lost += 1,
            }
        }
        t.lat_ms.sort_by(f64::total_cmp);
        t.lat_by_commit.sort_by_key(|&(at, _)| at);
        t
    }

    pub(crate) fn json(&self) -> Value {
        json!({"events_committed": self.committed, "events_delivered": self.delivered,
               "events_lost": self.lost, "duplicates": self.duplicates,
               "invalid_signatures": self.invalid,
               "commit_to_receipt_p50_ms": r3(pct(&self.lat_ms, 0.5)),
               "commit_to_receipt_p99_ms": r3(pct(&self.lat_ms, 0.99)),
               "commit_to_receipt_max_ms": r3(self.lat_ms.last().copied().unwrap_or(f64::NAN))})
    }
}

/// Waits until the sink has `n` validly signed receipts on `endpoint` (or the time is up).
pub(crate) async fn wait_delivered(sink: &Sink, endpoint: usize, n: u64, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if sink.count_valid(endpoint) >= n as usize {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn patience(events: u64) -> Duration {
    Duration::from_secs(60 + events / 100)
}

/// The longest a window waits for the machine to be quiet before it opens.
const SETTLE_LIMIT: Duration = Duration::from_secs(15);

/// A run's measured window: CPU per process (`/proc`) and PostgreSQL's statements
/// (`pg_stat_statements`), from when it opens until it closes.
pub(crate) struct Window {
    pub(crate) settled: cpu::Settled,
    pub(crate) cpu: cpu::Snapshot,
    pub(crate) stmts: Result<(), stmts::Unavailable>,
}

/// A closed [`Window`], waiting for the run's delivered count.
pub(crate) struct Measured {
    pub(crate) settled: cpu::Settled,
    pub(crate) before: cpu::Snapshot,
    pub(crate) after: cpu::Snapshot,
    pub(crate) stmts: Result<Vec<stmts::Stmt>, stmts::Unavailable>,
}

impl Window {
    /// Opens it once the machine is quiet ([`cpu::settle`]).
    pub(crate) async fn open(env: &Env) -> Window {
        let settled = cpu::settle(SETTLE_LIMIT).await;
        let stmts = stmts::reset(env).await;
        Window {
            settled,
            cpu: cpu::Snapshot::take(),
            stmts,
        }
    }

    /// Closes it: call it as soon as the last event arrived, before the harness's own queries.
    pub(crate) async fn close(self, env: &Env) -> Measured {
        let after = cpu::Snapshot::take();
        let stmts = match self.stmts {
            Ok(()) => stmts::fetch(env).await,
            Err(why) => Err(why),
        };
        Measured {
            settled: self.settled,
            before: self.cpu,
            after,
            stmts,
        }
    }
}

impl Measured {
    pub(crate) fn json(self, delivered: u64) -> Value {
        json!({
            "cpu": cpu::report(&self.before, &self.after, delivered),
            "settled_before": {"waited_s": r3(self.settled.waited_s),
                               "cpu": self.settled.report},
            "statements": stmts::summarize(self.stmts, delivered),
        })
    }
}

/// Prints a run's CPU and statement tables (`v` holds [`Measured::json`]'s keys).
pub(crate) fn print_measured(title: &str, v: &Value) {
    if v["cpu"].is_object() {
        let s = &v["settled_before"];
        println!(
            "  {title}: opened after {:.1} s of the machine settling ({:.0} CPU ms meanwhile)",
            s["waited_s"].as_f64().unwrap_or(f64::NAN),
            s["cpu"]["machine_busy_ms"].as_f64().unwrap_or(f64::NAN)
        );
        cpu::print(title, &v["cpu"]);
        stmts::print(title, &v["statements"]);
    }
}

/// Cluster-wide and broker-wide counters, read before and after a run (nothing else runs).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) wal_records: i64,
    pub(crate) wal_bytes: i64,
    pub(crate) wal_syncs: i64,
    pub(crate) broker_publishes: Option<i64>,
}

pub(crate) async fn counters(env: &Env) -> Counters {
    let pg = env.db.client().await;
    let (wal_records, wal_bytes, wal_syncs) = match pg
        .query_one(
            "SELECT wal_records::int8, wal_bytes::int8, wal_sync::int8 FROM pg_stat_wal",
            &[],
        )
        .await
    {
        Ok(r) => (r.get(0), r.get(1), r.get(2)),
        Err(_) => (0, 0, 0),
    };
    Counters {
        wal_records,
        wal_bytes,
        wal_syncs,
        broker_publishes: broker_publishes().await,
    }
}

/// Messages the broker accepted from publishers since it started (its global counters).
pub(crate) async fn broker_publishes() -> Option<i64> {
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
pub(crate) async fn rows_written(env: &Env) -> anyhow::Result<HashMap<String, i64>> {
    let pg = env.db.client().await;
    // Statistics reach the collector when a session ends (the services were stopped) or within
    // a second; a short wait covers the latter.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let rows = pg
        .query(
            // The outbox's partitions counted as the outbox.
            "SELECT CASE WHEN relname ~ '^outbox_(legacy|d[0-9]+(_[0-9]+)?)$' THEN 'outbox'
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
