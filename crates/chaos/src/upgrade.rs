//! `qualifier-upgrade-check` (`make upgrade-check`): a rolling upgrade at noon, rehearsed.
//!
//! The previous version's `lead-api` and `webhook-delivery` (two replicas each, the API behind a
//! round-robin balancer as a Kubernetes Service would put it) run on a database migrated by the
//! previous version, with a steady stream of changes through both APIs to a real HTTPS receiver.
//! Meanwhile the current version's migrations are applied, then each process is replaced by the
//! current build, one at a time, the way a rolling deployment does it: taken out of rotation,
//! SIGTERM, waited for, started again from the new build, back in rotation once ready.
//!
//! It reports events lost (must be 0), API requests that failed (5xx, refused or cut; must be
//! 0), deliveries received twice (allowed, counted; same `X-Qualifier-Delivery`) and the longest
//! gap between deliveries, written to `target/upgrade-check/latest.json`. Exit 1 on a loss or a
//! failed request.
//!
//! Usage: `qualifier-upgrade-check --old-bin DIR --new-bin DIR [--rate N] [--settle-seconds N]`
//! (`scripts/upgrade-check.sh` builds the previous version named in CHANGELOG.md).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qualifier_store::SecretKey;
use qualifier_testkit::procs::{Service, service_env, wait_ready_state};
use qualifier_testkit::receiver::Receiver;
use qualifier_testkit::{TestDb, TestTopology, free_ports};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

const INTERNAL_TOKEN: &str = "upgrade-internal-token-0123456789";
const RETRY_DELAYS: [u64; 4] = [500, 1000, 2000, 4000];
/// How long a replaced process may take to stop (its shutdown grace, and some).
const STOP_WITHIN: Duration = Duration::from_secs(40);
/// Between leaving the rotation and SIGTERM: what a Kubernetes `preStop` sleep gives the
/// endpoints controller, so no new connection reaches a process that is stopping.
const DRAIN_DELAY: Duration = Duration::from_millis(500);

#[derive(clap::Parser)]
#[command(name = "qualifier-upgrade-check", version, about)]
struct Opts {
    /// The previous version's binaries (`lead-api`, `webhook-delivery`, `qualifierctl`).
    #[arg(long)]
    old_bin: PathBuf,
    /// The current version's binaries.
    #[arg(long)]
    new_bin: PathBuf,
    /// Changes a second through the APIs, all along.
    #[arg(long, default_value_t = 20)]
    rate: u64,
    /// Seconds of traffic before the migration, between steps and after the last one.
    #[arg(long, default_value_t = 3)]
    settle_seconds: u64,
    /// Events of history written (in SQL, spread over the last 30 days, for an org of their
    /// own) before the traffic starts, on the previous version's schema: the upgrade of a
    /// database that has been in production a while (`make upgrade-check-history`: 3,000,000).
    /// With history, the slowest API request made while the migrations ran must be under 2 s.
    #[arg(long, default_value_t = 0)]
    history_events: u64,
}

/// The longest an API request may take while the migrations run on a database with history.
const SLOWEST_DURING_MIGRATION: Duration = Duration::from_secs(2);

/// Writes `n` published, delivered events of org `org` into the previous version's outbox in
/// one statement per million, spread evenly over the last 30 days (so a day's worth is in the
/// hourly totals' window), then `VACUUM ANALYZE`s and checkpoints it, as a database that has
/// held its history a while. Envelopes of the stored shape, about 600 bytes each.
async fn fill_history(db: &TestDb, org: &str, n: u64) -> anyhow::Result<()> {
    let pg = db.client().await;
    let n = i64::try_from(n)?;
    let org = org.to_owned();
    let head: i64 = qualifier_testkit::sql::try_one(&pg, "SELECT pos FROM feed_head", &[]).await?;
    let mut from = 1i64;
    while from <= n {
        let to = (from + 999_999).min(n);
        pg.execute(
            "WITH s AS MATERIALIZED (
                 SELECT g, gen_random_uuid() AS e, gen_random_uuid() AS l,
                        now() - (($4::int8 - g) * interval '30 days' / $4::int8) AS at
                 FROM generate_series($2::int8, $3::int8) g)
             INSERT INTO outbox (event_id, org_id, event_type, payload, created_at, delivery_id,
                                 lead_id, published_at, status, attempts, updated_at, feed_pos)
             SELECT e, $1::text::uuid, 'lead.created',
                    convert_to(json_build_object(
                        'id', e, 'type', 'lead.created', 'version', '1',
                        'occurred_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                        'org_id', $1::text,
                        'data', json_build_object('lead', json_build_object(
                            'id', l, 'name', 'History Lead', 'email', null,
                            'phone', '+4478' || lpad(g::text, 8, '0'), 'channel', 'sms',
                            'qualification_stage', 'qualifying', 'route_target', null,
                            'profile', json_build_object(), 'external_ref', null,
                            'ai_paused', false, 'created_at', at, 'updated_at', at)))::text,
                        'UTF8'),
                    at, gen_random_uuid(), l, at, 'succeeded', 1, at, $5::int8 + g
             FROM s",
            &[&org.as_str(), &from, &to, &n, &head],
        )
        .await?;
        from = to + 1;
    }
    pg.execute("UPDATE feed_head SET pos = $1", &[&(head + n)])
        .await?;
    pg.batch_execute("VACUUM ANALYZE outbox").await?;
    pg.batch_execute("CHECKPOINT").await?;
    Ok(())
}

/// A round-robin TCP balancer over the ports in `rotation`: what a Service does for the pods
/// whose readiness passes.
async fn balancer(rotation: Arc<Mutex<Vec<u16>>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let next = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            let target = {
                let r = rotation.lock().unwrap();
                (!r.is_empty()).then(|| r[next.fetch_add(1, Ordering::Relaxed) % r.len()])
            };
            let Some(target) = target else { continue };
            tokio::spawn(async move {
                if let Ok(mut out) = TcpStream::connect(("127.0.0.1", target)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    port
}

struct Env {
    db_url: String,
    key: String,
    prefix: String,
    ca_file: PathBuf,
}

impl Env {
    fn common(&self, cmd: &mut Command) {
        service_env(cmd, &self.db_url, &self.key, &self.prefix, &RETRY_DELAYS)
            .stdout(Stdio::null());
    }

    /// `storage`: `QUALIFIER_PAYLOAD_STORAGE` (a version before it ignores the variable).
    fn api(&self, bin: &Path, public: u16, internal: u16, storage: &str) -> Service {
        let mut cmd = Command::new(bin.join("lead-api"));
        self.common(&mut cmd);
        cmd.env("QUALIFIER_PAYLOAD_STORAGE", storage)
            .env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{public}"))
            .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{internal}"))
            .env("QUALIFIER_RATE_LIMIT_PER_MINUTE", "1000000");
        Service::new("lead-api", cmd)
    }

    /// `storage` as for [`Self::api`]: attempt entries stored compact with `compressed`.
    fn delivery(&self, bin: &Path, health: u16, storage: &str) -> Service {
        let mut cmd = Command::new(bin.join("webhook-delivery"));
        self.common(&mut cmd);
        cmd.env("QUALIFIER_PAYLOAD_STORAGE", storage)
            .env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{health}"))
            .env("QUALIFIER_DELIVERY_TIMEOUT_MS", "2000")
            .env("QUALIFIER_WEBHOOK_CA_FILE", &self.ca_file);
        Service::new("webhook-delivery", cmd)
    }

    /// `qualifierctl migrate` of `bin`: how long it took.
    fn migrate(&self, bin: &Path) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let out = Command::new(bin.join("qualifierctl"))
            .arg("migrate")
            .env("DATABASE_URL", &self.db_url)
            .env("QUALIFIER_SECRET_KEY", &self.key)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "{}: migrate failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(started.elapsed())
    }
}

/// What the clients saw: requests made, and each failure with when and what.
#[derive(Default)]
struct Requests {
    made: u64,
    failures: Vec<String>,
    /// When each request started and how long it took (answered or not).
    took: Vec<(Instant, Duration)>,
}

/// An outbox row whose envelope is stored compressed: its first byte is the compact form's tag
/// (`crates/store/src/payload.rs`).
const COMPRESSED_ENVELOPE: &str = "get_byte(payload, 0) = 1";
/// An outbox row with an attempt entry in the compact form (`n`, the attempt's number, in
/// place of `attempt`; `AttemptEntry::stored` in `crates/domain/src/delivery.rs`).
const COMPACT_ENTRY: &str =
    "EXISTS (SELECT 1 FROM jsonb_array_elements(d.attempt_log) e WHERE e ? 'n')";
/// An event's row beside its first delivery's, where the attempts are.
const EVENTS_AND_DELIVERIES: &str =
    "outbox o JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id";

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round()
}

#[tokio::main]
async fn main() {
    qualifier_testkit::exit_on_error("upgrade-check", run().await);
}

async fn run() -> anyhow::Result<()> {
    let o = <Opts as clap::Parser>::parse();
    let http = qualifier_testkit::http_client();
    let db = TestDb::empty().await;
    let topo = TestTopology::new(RETRY_DELAYS.to_vec());
    let receiver = Receiver::start().await;
    let env = Env {
        db_url: db.url.clone(),
        key: SecretKey::generate_base64(),
        prefix: topo.prefix.clone(),
        ca_file: receiver.ca_file.clone(),
    };
    let settle = Duration::from_secs(o.settle_seconds);
    let mut timeline = Vec::new();
    let started = Instant::now();
    let mut mark = |what: &str, took: Option<Duration>| {
        println!("{:>7.1} s  {what}", started.elapsed().as_secs_f64());
        timeline.push(
            json!({"at_s": started.elapsed().as_secs_f64(), "step": what,
                              "took_ms": took.map(ms)}),
        );
    };

    // The previous version, on its own schema.
    env.migrate(&o.old_bin)?;
    mark("previous version's schema", None);
    // Whether the previous version made this database compact by default: only a version that
    // reads the compact form does (migrations/2026-11-27-000031_storage_format/up.sql), and on
    // such a database `auto` stores compact rows that both versions read.
    let compact_database = {
        let c = db.client().await;
        let known: bool = qualifier_testkit::sql::try_one(
            &c,
            "SELECT to_regclass('storage_format') IS NOT NULL",
            &[],
        )
        .await?;
        known
            && c.query_one(
                "SELECT COALESCE((SELECT compact_by_default FROM storage_format WHERE id), false)",
                &[],
            )
            .await?
            .get::<_, bool>(0)
    };
    let [pub_a, pub_b, int_a, int_b, health_a, health_b] = free_ports::<6>();
    let mut apis = [
        env.api(&o.old_bin, pub_a, int_a, "plain"),
        env.api(&o.old_bin, pub_b, int_b, "plain"),
    ];
    let mut deliveries = [
        env.delivery(&o.old_bin, health_a, "plain"),
        env.delivery(&o.old_bin, health_b, "plain"),
    ];
    for s in apis.iter_mut().chain(deliveries.iter_mut()) {
        s.start();
    }
    let ready = |port: u16| vec![format!("http://127.0.0.1:{port}/readyz")];
    for port in [int_a, int_b, health_a, health_b] {
        anyhow::ensure!(
            wait_ready_state(&http, &ready(port), 200, Duration::from_secs(60)).await,
            "the previous version never became ready (port {port})"
        );
    }
    let public_rotation = Arc::new(Mutex::new(vec![pub_a, pub_b]));
    let internal_rotation = Arc::new(Mutex::new(vec![int_a, int_b]));
    let public = format!(
        "http://127.0.0.1:{}",
        balancer(public_rotation.clone()).await
    );
    let internal = format!(
        "http://127.0.0.1:{}/internal/v1",
        balancer(internal_rotation.clone()).await
    );
    let (org, secret) = qualifier_testkit::procs::org_with_webhook(
        &http,
        &internal,
        INTERNAL_TOKEN,
        "Upgrade",
        &receiver.url,
    )
    .await?;
    receiver.set_secrets(vec![secret]);
    // Every type a change here emits: lead.created and lead.stage_changed.
    http.put(format!("{internal}/orgs/{org}/webhook"))
        .bearer_auth(INTERNAL_TOKEN)
        .json(
            &json!({"url": receiver.url, "event_types": ["lead.created", "lead.stage_changed"],
                      "enabled": true}),
        )
        .send()
        .await?
        .error_for_status()?;
    let token: Value = http
        .post(format!("{internal}/orgs/{org}/tokens"))
        .bearer_auth(INTERNAL_TOKEN)
        .json(&json!({"name": "crm"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = token["secret"].as_str().unwrap_or_default().to_owned();
    if o.history_events > 0 {
        let history: Value = http
            .post(format!("{internal}/orgs"))
            .bearer_auth(INTERNAL_TOKEN)
            .json(&json!({"name": "History"}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let history = history["org"]["id"].as_str().unwrap_or_default().to_owned();
        let filling = Instant::now();
        fill_history(&db, &history, o.history_events).await?;
        mark(
            &format!("{} events of history written", o.history_events),
            Some(filling.elapsed()),
        );
    }
    mark("previous version serving", None);

    // The traffic: a new contact (internal API, lead.created), then the CRM closing it (public
    // API, lead.stage_changed), at a steady rate. Each request is made once, on a connection of
    // its own (as a client behind a load balancer gets), and any answer but the expected one,
    // or no answer, is a failure.
    let requests = Arc::new(Mutex::new(Requests::default()));
    let producing = Arc::new(AtomicBool::new(true));
    let producer = {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()?;
        let (requests, producing) = (requests.clone(), producing.clone());
        let (internal, public, org, token) =
            (internal.clone(), public.clone(), org.clone(), token.clone());
        let every = Duration::from_micros(1_000_000 / o.rate.max(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            let mut inflight = Vec::new();
            let mut i = 0u64;
            while producing.load(Ordering::Relaxed) {
                tick.tick().await;
                i += 1;
                let (client, requests) = (client.clone(), requests.clone());
                let (internal, public, org, token) =
                    (internal.clone(), public.clone(), org.clone(), token.clone());
                inflight.push(tokio::spawn(async move {
                    let body = json!({"name": "Upgrade Lead", "phone": format!("+4479{i:08}"),
                                      "channel": "sms"});
                    let began = Instant::now();
                    let r = client
                        .post(format!("{internal}/orgs/{org}/inbound"))
                        .bearer_auth(INTERNAL_TOKEN)
                        .json(&body)
                        .send()
                        .await;
                    requests.lock().unwrap().took.push((began, began.elapsed()));
                    let lead = match r {
                        Ok(r) if r.status() == 201 => r.json::<Value>().await.ok(),
                        Ok(r) => {
                            let mut q = requests.lock().unwrap();
                            q.made += 1;
                            q.failures.push(format!("inbound answered {}", r.status()));
                            return;
                        }
                        Err(e) => {
                            let mut q = requests.lock().unwrap();
                            q.made += 1;
                            q.failures.push(format!("inbound: {e}"));
                            return;
                        }
                    };
                    requests.lock().unwrap().made += 1;
                    let id = lead
                        .as_ref()
                        .and_then(|l| l["lead"]["id"].as_str())
                        .unwrap_or_default()
                        .to_owned();
                    let began = Instant::now();
                    let r = client
                        .patch(format!("{public}/api/v1/leads/{id}"))
                        .bearer_auth(&token)
                        .json(&json!({"status": "closed"}))
                        .send()
                        .await;
                    let mut q = requests.lock().unwrap();
                    q.took.push((began, began.elapsed()));
                    q.made += 1;
                    match r {
                        Ok(r) if r.status() == 200 => {}
                        Ok(r) => q.failures.push(format!("close answered {}", r.status())),
                        Err(e) => q.failures.push(format!("close: {e}")),
                    }
                }));
            }
            for t in inflight {
                let _ = t.await;
            }
        })
    };

    tokio::time::sleep(settle).await;
    let migrating = Instant::now();
    let took = env.migrate(&o.new_bin)?;
    let migrated = Instant::now();
    mark("current migrations applied under traffic", Some(took));
    tokio::time::sleep(settle).await;

    // The procedure of docs/operations.md, "Upgrading": each lead-api replica replaced, then each
    // webhook-delivery replica; then, every replica on this version, the second step of
    // "Compact storage": each replica restarted again storing compact rows (envelopes
    // compressed, attempt entries with short keys), still under traffic, beside the rows
    // stored plain. The replacements run with the default, `auto`, which must keep a database
    // the previous version created plain.
    let api_ports = [(pub_a, int_a), (pub_b, int_b)];
    for storage in ["auto", "compressed"] {
        for (n, (api, (public_port, internal_port))) in apis.iter_mut().zip(api_ports).enumerate() {
            public_rotation
                .lock()
                .unwrap()
                .retain(|p| *p != public_port);
            internal_rotation
                .lock()
                .unwrap()
                .retain(|p| *p != internal_port);
            tokio::time::sleep(DRAIN_DELAY).await;
            let stopped = api.terminate(STOP_WITHIN);
            anyhow::ensure!(stopped.is_some(), "lead-api {n} did not stop after SIGTERM");
            *api = env.api(&o.new_bin, public_port, internal_port, storage);
            api.start();
            anyhow::ensure!(
                wait_ready_state(&http, &ready(internal_port), 200, Duration::from_secs(60)).await,
                "the new lead-api {n} never became ready"
            );
            public_rotation.lock().unwrap().push(public_port);
            internal_rotation.lock().unwrap().push(internal_port);
            match storage {
                "auto" => mark(&format!("lead-api {n} replaced"), stopped),
                _ => mark(
                    &format!("lead-api {n} storing envelopes compressed"),
                    stopped,
                ),
            }
            tokio::time::sleep(settle).await;
        }
        for (n, (delivery, health)) in deliveries.iter_mut().zip([health_a, health_b]).enumerate() {
            let stopped = delivery.terminate(STOP_WITHIN);
            anyhow::ensure!(
                stopped.is_some(),
                "webhook-delivery {n} did not stop after SIGTERM"
            );
            *delivery = env.delivery(&o.new_bin, health, storage);
            delivery.start();
            anyhow::ensure!(
                wait_ready_state(&http, &ready(health), 200, Duration::from_secs(60)).await,
                "the new webhook-delivery {n} never became ready"
            );
            match storage {
                "auto" => mark(&format!("webhook-delivery {n} replaced"), stopped),
                _ => mark(
                    &format!("webhook-delivery {n} storing attempts compact"),
                    stopped,
                ),
            }
            tokio::time::sleep(settle).await;
        }
        if storage == "auto" && !compact_database {
            let compact: i64 = qualifier_testkit::sql::try_one(
                &db.client().await,
                &format!(
                    "SELECT count(*) FROM {EVENTS_AND_DELIVERIES}
                     WHERE {COMPRESSED_ENVELOPE} OR {COMPACT_ENTRY}"
                ),
                &[],
            )
            .await?;
            anyhow::ensure!(
                compact == 0,
                "{compact} outbox rows stored compact under `auto` on the previous version's \
                 database, which that version cannot read"
            );
            mark(
                "every replica on this version, storing plain under auto",
                None,
            );
        } else if storage == "auto" {
            mark(
                "every replica on this version, storing compact under auto (both versions read it)",
                None,
            );
        }
    }
    producing.store(false, Ordering::Relaxed);
    producer.await?;
    mark("traffic stopped", None);

    // Everything committed must arrive.
    let pg = db.client().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let committed: HashSet<String> = loop {
        let committed: HashSet<String> = qualifier_testkit::sql::try_column(
            &pg,
            "SELECT delivery_id::text FROM outbox WHERE org_id = $1::text::uuid",
            &[&org],
        )
        .await?;
        let received: HashSet<String> = receiver
            .received()
            .iter()
            .filter(|r| r.verified_with.is_some() && r.accepted)
            .map(|r| r.header("x-qualifier-delivery").to_owned())
            .collect();
        if committed.is_subset(&received) || Instant::now() > deadline {
            break committed;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let receipts: Vec<_> = receiver
        .received()
        .into_iter()
        .filter(|r| r.verified_with.is_some() && r.accepted)
        .collect();
    let mut per_id: HashMap<String, u64> = HashMap::new();
    for r in &receipts {
        *per_id
            .entry(r.header("x-qualifier-delivery").to_owned())
            .or_default() += 1;
    }
    let delivered: HashSet<&String> = per_id.keys().collect();
    let lost = committed.iter().filter(|c| !delivered.contains(c)).count();
    let duplicates: u64 = per_id.values().map(|n| n - 1).sum();
    let mut at: Vec<Instant> = receipts.iter().map(|r| r.at).collect();
    at.sort();
    let longest_gap = at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    // Both forms are stored by now: each must have been read back and sent as signed.
    let forms = pg
        .query_one(
            &format!(
                "SELECT count(*) FILTER (WHERE {COMPRESSED_ENVELOPE}), count(*),
                        count(*) FILTER (WHERE {COMPACT_ENTRY}),
                        count(*) FILTER (WHERE EXISTS (
                            SELECT 1 FROM jsonb_array_elements(d.attempt_log) e WHERE e ? 'attempt'))
                 FROM {EVENTS_AND_DELIVERIES}"
            ),
            &[],
        )
        .await?;
    let (compressed, stored): (i64, i64) = (forms.get(0), forms.get(1));
    let (attempts_compact, attempts_full): (i64, i64) = (forms.get(2), forms.get(3));
    let q = requests.lock().unwrap();
    // Requests in flight at any moment of the migrations.
    let slowest_during_migration = q
        .took
        .iter()
        .filter(|(began, took)| *began <= migrated && *began + *took >= migrating)
        .map(|(_, took)| *took)
        .max()
        .unwrap_or_default();
    let version = |bin: &Path| {
        Command::new(bin.join("lead-api"))
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let figures = json!({
        "from": version(&o.old_bin),
        "to": version(&o.new_bin),
        "rate_per_s": o.rate,
        "history_events": o.history_events,
        "migrations_ms": ms(migrated - migrating),
        "slowest_request_during_migrations_ms": ms(slowest_during_migration),
        "api_requests": q.made,
        "api_requests_failed": q.failures.len(),
        "api_failures": q.failures.iter().take(20).collect::<Vec<_>>(),
        "events_committed": committed.len(),
        "events_lost": lost,
        "deliveries_received_twice": duplicates,
        "envelopes_stored_compressed": compressed,
        "envelopes_stored_plain": stored - compressed,
        "attempt_logs_with_compact_entries": attempts_compact,
        "attempt_logs_with_full_entries": attempts_full,
        "longest_gap_between_deliveries_ms": ms(longest_gap),
        "timeline": timeline,
    });
    println!("{}", serde_json::to_string_pretty(&figures)?);
    qualifier_testkit::procs::write_figures("upgrade-check", &figures)?;
    for s in apis.iter_mut().chain(deliveries.iter_mut()) {
        s.kill9();
    }
    anyhow::ensure!(lost == 0, "{lost} committed events were never delivered");
    anyhow::ensure!(
        o.history_events == 0 || slowest_during_migration < SLOWEST_DURING_MIGRATION,
        "a request took {} ms while the migrations ran over {} events of history",
        ms(slowest_during_migration),
        o.history_events
    );
    anyhow::ensure!(
        compressed > 0 && compressed < stored,
        "{compressed} of {stored} envelopes stored compressed: both forms should be"
    );
    anyhow::ensure!(
        attempts_compact > 0 && attempts_full > 0,
        "{attempts_compact} attempt logs with compact entries, {attempts_full} with full ones: \
         both forms should be stored"
    );
    anyhow::ensure!(
        q.failures.is_empty(),
        "{} API requests failed: {:?}",
        q.failures.len(),
        q.failures.iter().take(5).collect::<Vec<_>>()
    );
    Ok(())
}
