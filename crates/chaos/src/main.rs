//! `qualifier-chaos` (`make chaos`): streams events through the real `lead-api` and
//! `webhook-delivery` binaries to a real HTTPS receiver while injecting faults, then checks that
//! every committed event was delivered with a valid signature.
//!
//! Faults, one at a time at random moments:
//! - `kill -9` of `lead-api` or of `webhook-delivery`, then a restart;
//! - RabbitMQ `stop_app` / `start_app` and a PostgreSQL stop / start, checking that both
//!   services' `/readyz` answers 503 while the dependency is down and 200 once it is back;
//! - the receiver answering 500s, hanging past the attempt timeout, or dropping connections.
//!
//! With `--endpoints 3` or more, the second endpoint's receiver answers one request in six 429
//! with `Retry-After: 2` throughout (never the same delivery twice: a 429 spends an attempt, and
//! the counter alone must not spend a delivery's five): no delivery may reach it again before
//! that pause ends, whatever carried it (a redelivery, a bundle put back), but for the attempt in
//! flight when a worker was killed or the database restarted (`sent_before_retry_after`, must be 0).
//!
//! The outbox is the list of committed events (an event exists if and only if its change
//! committed). At the end: sent, committed, delivered, lost (must be 0) and duplicates (each
//! must carry its original delivery id), printed and written to `target/chaos/latest.json`.
//!
//! Usage: `qualifier-chaos [--events N] [--faults N] [--bin DIR]`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use qualifier_store::SecretKey;
use qualifier_testkit::procs::{Service, service_env, wait_ready_state};
use qualifier_testkit::receiver::{Behaviour, Receiver};
use qualifier_testkit::{TestDb, TestTopology, free_ports};
use rand::Rng;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const INTERNAL_TOKEN: &str = "chaos-internal-token-0123456789";
/// Five attempts span 0.5 + 1 + 2 + 4 = 7.5 s, longer than any receiver fault phase (2 s), so
/// no delivery dies of a fault that ends; a fault that outlasted the budget would be a real loss.
const RETRY_DELAYS: [u64; 4] = [500, 1000, 2000, 4000];

fn is_probe(r: &qualifier_testkit::receiver::Received) -> bool {
    r.header("x-qualifier-probe") == "true"
}
const ATTEMPT_TIMEOUT_MS: &str = "1500";
/// The pausing endpoint (`--endpoints 3` or more) answers one request in this many 429 …
const PAUSE_EVERY: u32 = 6;
/// … with `Retry-After` this many seconds.
const PAUSE_SECS: u64 = 2;

/// Events through kill -9, broker and database restarts and receiver faults; fails if one is
/// lost.
#[derive(clap::Parser)]
#[command(name = "qualifier-chaos", version, about)]
struct Opts {
    /// Events to cause.
    #[arg(long, default_value_t = 5000)]
    events: u64,
    /// Faults to inject, cycling through every kind.
    #[arg(long, default_value_t = 12)]
    faults: u64,
    /// Where the lead-api and webhook-delivery binaries are (default: beside this one).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Events per lead: the lead's creation, then renames (each one `lead.updated`), in order.
    #[arg(long, default_value_t = 1)]
    events_per_lead: u64,
    /// The webhook's throttle (`max_per_second`) during the run.
    #[arg(long)]
    max_per_second: Option<u32>,
    /// The webhook's `ordering`: with `per_lead`, the run also fails if a lead's events were
    /// accepted out of order (replays of dead-lettered deliveries aside: they go outside it).
    #[arg(long, default_value = "none")]
    ordering: String,
    /// Endpoints of the org, each on a receiver of its own and subscribed to every event: the
    /// first is its webhook (behind the dropping hop, with the receiver faults); the last of
    /// two or more answers 500 for the run's first third, then recovers. Every delivery to
    /// every endpoint must arrive.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10))]
    endpoints: u64,
}

fn bin_dir(opts: &Opts) -> PathBuf {
    opts.bin
        .clone()
        .unwrap_or_else(qualifier_testkit::procs::own_dir)
}

/// Puts RabbitMQ and PostgreSQL back whatever happens (a panic mid-fault included).
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = rabbit("start_app");
        let _ = postgres("start");
    }
}

fn rabbit(action: &str) -> bool {
    Command::new("rabbitmqctl")
        .arg(action)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn postgres(action: &str) -> bool {
    let version = std::fs::read_dir("/etc/postgresql")
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .unwrap_or_else(|| "15".into());
    let mut cmd = Command::new("pg_ctlcluster");
    cmd.args(["--skip-systemctl-redirect", &version, "main", action]);
    if action == "stop" {
        cmd.args(["-m", "fast"]);
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A TCP hop in front of the receiver that can drop connections (before the TLS handshake).
async fn dropping_proxy(target: u16, drop_ratio: Arc<AtomicU64>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            let ratio = drop_ratio.load(Ordering::Relaxed);
            if rand::rng().random_range(0..100) < ratio {
                let _ = inbound.shutdown().await;
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut out) = TcpStream::connect(("127.0.0.1", target)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    port
}

#[derive(Default)]
struct Figures {
    faults: HashMap<&'static str, u64>,
    readiness_failures: Vec<String>,
    /// When a worker was killed or the database restarted, until a second after.
    crash_windows: Vec<(Instant, Instant)>,
}

/// Requests that came to `received`'s receiver before the pause it had asked for, on the same
/// delivery, ended; a pair with a crash window between them is the in-flight attempt made
/// again, which a crash may repeat.
fn sent_early(
    received: &[qualifier_testkit::receiver::Received],
    crashes: &[(Instant, Instant)],
) -> Vec<String> {
    let mut by_delivery: HashMap<&str, Vec<&qualifier_testkit::receiver::Received>> =
        HashMap::new();
    for r in received.iter().filter(|r| !is_probe(r)) {
        by_delivery
            .entry(r.header("x-qualifier-delivery"))
            .or_default()
            .push(r);
    }
    let mut early = Vec::new();
    for (id, rs) in by_delivery {
        for pair in rs.windows(2) {
            let (first, next) = (pair[0], pair[1]);
            let Some(secs) = first.asked_to_wait else {
                continue;
            };
            let gap = next.at.duration_since(first.at);
            let crashed = crashes
                .iter()
                .any(|(from, to)| *to > first.at && *from < next.at);
            if gap < Duration::from_secs(secs) && !crashed {
                early.push(format!("{id}: again after {gap:?}, asked {secs} s"));
            }
        }
    }
    early
}

/// The API's status of a delivery row (`DeliveryState` in crates/domain/src/delivery.rs).
const API_STATUS: &str = "CASE WHEN state IN ('succeeded', 'dead', 'skipped') THEN state::text
                               WHEN retrying THEN 'failed' ELSE 'pending' END";

#[tokio::main]
async fn main() {
    qualifier_testkit::exit_on_error("chaos", run().await);
}

async fn run() -> anyhow::Result<()> {
    let opts = <Opts as clap::Parser>::parse();
    let (events, fault_count) = (opts.events, opts.faults);
    let bins = bin_dir(&opts);
    let _ = rustls_provider();

    let db = TestDb::new().await;
    let topo = TestTopology::new(RETRY_DELAYS.to_vec());
    let key = SecretKey::generate_base64();
    let receiver = Receiver::start().await;
    let receiver_port = receiver.port();
    let drop_ratio = Arc::new(AtomicU64::new(0));
    let proxy_port = dropping_proxy(receiver_port, drop_ratio.clone()).await;
    let [public, internal, health] = free_ports::<3>();

    let common = |cmd: &mut Command| {
        service_env(cmd, &db.url, &key, &topo.prefix, &RETRY_DELAYS).stdout(Stdio::null());
    };
    // `QUALIFIER_CHAOS_LOGS=DIR` keeps each service's log (at `RUST_LOG`, default info) in
    // DIR/<service>.log, appended across its restarts: what a lost delivery is chased with.
    let logs = std::env::var_os("QUALIFIER_CHAOS_LOGS").map(PathBuf::from);
    let keep_log = |cmd: &mut Command, name: &str| {
        let Some(dir) = &logs else { return };
        std::fs::create_dir_all(dir).expect("QUALIFIER_CHAOS_LOGS");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{name}.log")))
            .expect("QUALIFIER_CHAOS_LOGS");
        cmd.env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(file);
    };
    let mut api_cmd = Command::new(bins.join("lead-api"));
    common(&mut api_cmd);
    api_cmd
        .env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
        .env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{public}"))
        .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{internal}"))
        .env("QUALIFIER_RATE_LIMIT_PER_MINUTE", "1000000");
    let mut delivery_cmd = Command::new(bins.join("webhook-delivery"));
    common(&mut delivery_cmd);
    delivery_cmd
        .env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{health}"))
        .env("QUALIFIER_DELIVERY_TIMEOUT_MS", ATTEMPT_TIMEOUT_MS)
        // Endpoint health scaled like the retry waits (about 1/60 of the defaults): a receiver
        // fault longer than the 7.5 s retry schedule holds the deliveries instead of making them
        // dead, and the first good probe sends them, with nobody replaying anything.
        .env("QUALIFIER_ENDPOINT_FAILING_SPAN_MS", "1000")
        .env("QUALIFIER_ENDPOINT_PROBE_MIN_MS", "250")
        .env("QUALIFIER_ENDPOINT_PROBE_MAX_MS", "1000")
        .env("QUALIFIER_WEBHOOK_CA_FILE", &receiver.ca_file);
    keep_log(&mut api_cmd, "lead-api");
    keep_log(&mut delivery_cmd, "webhook-delivery");
    let mut api = Service::new("lead-api", api_cmd);
    let mut delivery = Service::new("webhook-delivery", delivery_cmd);
    let _restore = Restore;
    api.start();
    delivery.start();

    let http = qualifier_testkit::http_client();
    let ready_urls = qualifier_testkit::procs::readiness(internal, health);
    let org = qualifier_testkit::procs::ready_org(
        &http,
        &ready_urls,
        internal,
        INTERNAL_TOKEN,
        "Chaos",
        &format!("https://127.0.0.1:{proxy_port}/hooks/qualifier"),
        &receiver,
    )
    .await
    .map_err(anyhow::Error::from_boxed)?;
    let base = format!("http://127.0.0.1:{internal}/internal/v1");
    if opts.max_per_second.is_some() || opts.ordering != "none" {
        let r = http
            .put(format!("{base}/orgs/{org}/webhook"))
            .bearer_auth(INTERNAL_TOKEN)
            .json(
                &json!({"url": format!("https://127.0.0.1:{proxy_port}/hooks/qualifier"),
                          "event_types": ["lead.created", "lead.updated"],
                          "max_per_second": opts.max_per_second, "ordering": opts.ordering}),
            )
            .send()
            .await?;
        anyhow::ensure!(r.status().is_success(), "pace not set: {}", r.text().await?);
    }
    let per_lead = opts.events_per_lead.max(1);
    // The other endpoints (`--endpoints`): (id, receiver), each verifying with its own secret.
    let mut others: Vec<(String, Receiver)> = Vec::new();
    for _ in 1..opts.endpoints {
        let r = Receiver::start().await;
        let created = http
            .post(format!("{base}/orgs/{org}/endpoints"))
            .bearer_auth(INTERNAL_TOKEN)
            .json(
                &json!({"url": r.url, "event_types": ["lead.created", "lead.updated"],
                          "description": "chaos"}),
            )
            .send()
            .await?
            .json::<Value>()
            .await?;
        let secret = created["signing_secret"].as_str();
        r.set_secrets(vec![
            anyhow::Context::context(secret, "endpoint not created")?.to_owned(),
        ]);
        let id = anyhow::Context::context(created["endpoint"]["id"].as_str(), "endpoint id")?;
        others.push((id.to_owned(), r));
    }
    // The last of them fails for the run's first third (its deliveries retry, then wait in
    // their rows while it is failing), then recovers.
    if opts.endpoints > 1
        && let Some((_, r)) = others.last()
    {
        r.set_behaviour(Behaviour::Status(500));
    }
    // With three or more, the second asks for a pause now and then (429, `Retry-After: 2`): no
    // delivery may come to it again before the pause it was asked ends.
    let pausing = (opts.endpoints > 2).then(|| &others[0].1);
    if let Some(r) = pausing {
        r.set_behaviour(Behaviour::RetryAfterEvery(PAUSE_EVERY, PAUSE_SECS));
    }

    // The producer: a new lead (one lead.created), then its renames (lead.updated each), every
    // request sent again until it succeeds: a known phone creates nothing twice and a rename to
    // the name the lead already has changes nothing, so each event is committed exactly once.
    let sent = Arc::new(AtomicU64::new(0));
    // Every success answer's (lead, revision): each must be in the database at the end, with
    // its event (docs/reliability.md, "A 2xx is a commit").
    let answered: Arc<std::sync::Mutex<Vec<(String, i64)>>> = Arc::default();
    let producing = Arc::new(AtomicBool::new(true));
    let producer = {
        let (http, base, org, sent, producing, answered) = (
            http.clone(),
            base.clone(),
            org.clone(),
            sent.clone(),
            producing.clone(),
            answered.clone(),
        );
        tokio::spawn(async move {
            let started = Instant::now();
            let mut lead = String::new();
            for i in 0..events {
                // Paced over about 3 s per fault, so faults land among the events.
                let due = Duration::from_millis(i * (fault_count * 3000) / events.max(1));
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
                let step = i % per_lead;
                let (request, body) = if step == 0 {
                    (
                        http.post(format!("{base}/orgs/{org}/inbound")),
                        json!({"name": "Chaos Lead", "phone": format!("+4477{:08}", i / per_lead), "channel": "sms"}),
                    )
                } else {
                    (
                        http.patch(format!("{base}/orgs/{org}/leads/{lead}")),
                        json!({"name": format!("Chaos Lead {step}")}),
                    )
                };
                loop {
                    let r = request
                        .try_clone()
                        .expect("a JSON request clones")
                        .bearer_auth(INTERNAL_TOKEN)
                        .json(&body)
                        .timeout(Duration::from_secs(5))
                        .send()
                        .await;
                    if let Ok(r) = r
                        && r.status().is_success()
                    {
                        // A success whose body did not arrive (a kill after the answer began)
                        // is sent again; the known phone or the name already there makes the
                        // retry change nothing and answer the same revision.
                        let Ok(v) = r.json::<Value>().await else {
                            continue;
                        };
                        if step == 0 {
                            lead = v["lead"]["id"].as_str().unwrap_or_default().to_owned();
                        }
                        if let Some(revision) = v["lead"]["revision"].as_i64() {
                            answered.lock().unwrap().push((
                                v["lead"]["id"].as_str().unwrap_or_default().to_owned(),
                                revision,
                            ));
                        }
                        sent.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            producing.store(false, Ordering::Relaxed);
        })
    };

    let mut fig = Figures::default();
    let kinds = [
        "kill_lead_api",
        "kill_webhook_delivery",
        "rabbitmq_restart",
        "postgres_restart",
        "receiver_500",
        "receiver_hang",
        "receiver_drop",
    ];
    for n in 0..fault_count {
        if n == fault_count / 3
            && let Some((_, r)) = others.last()
        {
            r.set_behaviour(Behaviour::Ok);
        }
        // Every kind at least once, then at random.
        let kind = if (n as usize) < kinds.len() {
            kinds[n as usize]
        } else {
            kinds[rand::rng().random_range(0..kinds.len())]
        };
        tokio::time::sleep(Duration::from_millis(rand::rng().random_range(500..2000))).await;
        *fig.faults.entry(kind).or_default() += 1;
        println!("fault {n}: {kind}");
        let began = Instant::now();
        match kind {
            "kill_lead_api" => {
                api.kill9();
                tokio::time::sleep(Duration::from_millis(300)).await;
                api.start();
            }
            "kill_webhook_delivery" => {
                delivery.kill9();
                tokio::time::sleep(Duration::from_millis(300)).await;
                delivery.start();
            }
            "rabbitmq_restart" | "postgres_restart" => {
                let toggle = |up: bool| match (kind, up) {
                    ("rabbitmq_restart", false) => rabbit("stop_app"),
                    ("rabbitmq_restart", true) => rabbit("start_app"),
                    (_, false) => postgres("stop"),
                    (_, true) => postgres("start"),
                };
                anyhow::ensure!(toggle(false), "{kind}: could not stop the dependency");
                if !wait_ready_state(&http, &ready_urls, 503, Duration::from_secs(15)).await {
                    fig.readiness_failures
                        .push(format!("{kind}: /readyz did not answer 503 while down"));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                anyhow::ensure!(toggle(true), "{kind}: could not start the dependency");
                if !wait_ready_state(&http, &ready_urls, 200, Duration::from_secs(60)).await {
                    fig.readiness_failures
                        .push(format!("{kind}: /readyz did not return to 200"));
                }
            }
            "receiver_500" | "receiver_hang" => {
                receiver.set_behaviour(if kind == "receiver_500" {
                    Behaviour::Status(500)
                } else {
                    Behaviour::Hang(Duration::from_secs(3))
                });
                tokio::time::sleep(Duration::from_secs(2)).await;
                receiver.set_behaviour(Behaviour::Ok);
            }
            _ => {
                drop_ratio.store(70, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(2)).await;
                drop_ratio.store(0, Ordering::Relaxed);
            }
        }
        // A worker killed, or its outcome's write lost with the database: the attempt in
        // flight may be made again at once (its answer was never durable).
        if matches!(kind, "kill_webhook_delivery" | "postgres_restart") {
            fig.crash_windows
                .push((began, Instant::now() + Duration::from_secs(1)));
        }
    }
    producer.await?;
    let _ = producing;

    // Everything committed must arrive: wait until every outbox row has been delivered.
    let pg = db.client().await;
    // At least three minutes, and longer while deliveries still arrive: on a machine shared
    // with another job (a compile beside CI) the backlog drains slower, and an end while it
    // still moves reported committed changes as missing. A minute with nothing new ends the
    // wait after the three, a quarter of an hour ends it whatever.
    let waited = Instant::now();
    let (floor, idle, ceiling) = (
        Duration::from_secs(180),
        Duration::from_secs(60),
        Duration::from_secs(900),
    );
    let mut last_progress = (0usize, Instant::now());
    // Receiver faults can, by chance, cover all five attempts of a delivery (the retry budget
    // here is seconds, the faults follow one another): it is then dead-lettered, kept, and the
    // operator's remedy is a replay. The run does what an operator would, bulk replay of the
    // dead ones (at most three rounds), and reports how many needed it; only a delivery that
    // never arrives even then is lost.
    let mut replayed_dead = 0u64;
    let mut replay_rounds = 0;
    let (committed, delivered_ids) = loop {
        let rows = pg
            .query(
                &format!("SELECT delivery_id::text, {API_STATUS} FROM deliveries"),
                &[],
            )
            .await?;
        let dead = rows
            .iter()
            .filter(|r| r.get::<_, String>(1) == "dead")
            .count();
        if dead > 0 && replay_rounds < 3 {
            replay_rounds += 1;
            // Each endpoint's dead ones (a bulk replay is one endpoint's; the webhook's first).
            let ids = std::iter::once(org.clone()).chain(others.iter().map(|(id, _)| id.clone()));
            for id in ids {
                let r = http
                    .post(format!("{base}/orgs/{org}/deliveries/replay"))
                    .bearer_auth(INTERNAL_TOKEN)
                    .json(&json!({"status": "dead", "endpoint_id": id}))
                    .send()
                    .await?
                    .json::<Value>()
                    .await?;
                replayed_dead += r["replayed"].as_u64().unwrap_or(0);
            }
        }
        let committed: HashSet<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        let received: HashSet<String> = std::iter::once(&receiver)
            .chain(others.iter().map(|(_, r)| r))
            .flat_map(|r| r.received())
            .filter(|r| r.verified_with.is_some() && r.accepted && !is_probe(r))
            .map(|r| r.header("x-qualifier-delivery").to_owned())
            .collect();
        let arrived = committed.intersection(&received).count();
        if arrived > last_progress.0 {
            last_progress = (arrived, Instant::now());
        }
        let over = waited.elapsed() > ceiling
            || (waited.elapsed() > floor && last_progress.1.elapsed() > idle);
        if committed.is_subset(&received) || over {
            break (committed, received);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // Probes of the endpoint while a receiver fault made it failing are not deliveries (they
    // carry X-Qualifier-Probe and an id of their own); a receiver ignores them, so does the count.
    let every = || {
        std::iter::once(&receiver)
            .chain(others.iter().map(|(_, r)| r))
            .flat_map(|r| r.received())
    };
    let probes = every().filter(is_probe).count();
    // The webhook's receipts, in arrival order (the per-lead order is each endpoint's: the
    // webhook's is the one checked), and every endpoint's.
    let received: Vec<_> = receiver
        .received()
        .into_iter()
        .filter(|r| !is_probe(r))
        .collect();
    let received_everywhere: Vec<_> = every().filter(|r| !is_probe(r)).collect();
    let leads: i64 =
        qualifier_testkit::sql::try_one(&pg, "SELECT count(*) FROM leads", &[]).await?;
    let statuses: HashMap<String, i64> = pg
        .query(
            &format!("SELECT {API_STATUS}, count(*) FROM deliveries GROUP BY 1"),
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let lost: Vec<&String> = committed.difference(&delivered_ids).collect();
    let foreign = delivered_ids.difference(&committed).count();
    let unsigned = received_everywhere
        .iter()
        .filter(|r| r.verified_with.is_none())
        .count();
    let mut per_id: HashMap<&str, u64> = HashMap::new();
    for r in received_everywhere
        .iter()
        .filter(|r| r.verified_with.is_some() && r.accepted)
    {
        *per_id.entry(r.header("x-qualifier-delivery")).or_default() += 1;
    }
    // A duplicate is a delivery id the receiver accepted more than once (after a crash between
    // the 2xx and the durable outcome); it always carries the original id, by construction.
    let duplicates: u64 = per_id.values().map(|n| n.saturating_sub(1)).sum();
    // Per lead, the first acceptance of each delivery in arrival order must come in revision
    // order. Replays (of deliveries that went dead) are outside the order by design.
    let replayed: HashSet<String> = qualifier_testkit::sql::try_column(
        &pg,
        "SELECT delivery_id::text FROM outbox WHERE replayed IS TRUE",
        &[],
    )
    .await?;
    let mut out_of_order = Vec::new();
    if opts.ordering == "per_lead" {
        let mut seen_ids: HashSet<&str> = HashSet::new();
        let mut last: HashMap<String, i64> = HashMap::new();
        for r in received
            .iter()
            .filter(|r| r.verified_with.is_some() && r.accepted)
        {
            let id = r.header("x-qualifier-delivery");
            if replayed.contains(id) || !seen_ids.insert(id) {
                continue;
            }
            let v = r.json();
            let (lead, revision) = (
                v["data"]["lead"]["id"].as_str().unwrap_or("").to_owned(),
                v["data"]["lead"]["revision"].as_i64().unwrap_or(0),
            );
            let prev = last.insert(lead.clone(), revision).unwrap_or(0);
            if revision <= prev {
                out_of_order.push(format!("lead {lead}: revision {revision} after {prev}"));
            }
        }
    }
    let early = pausing.map_or_else(Vec::new, |r| sent_early(&r.received(), &fig.crash_windows));
    let pauses_asked = pausing.map_or(0, |r| {
        r.received()
            .iter()
            .filter(|g| g.asked_to_wait.is_some())
            .count()
    });
    let figures = json!({
        "pauses_asked": pauses_asked,
        "sent_before_retry_after": early.len(),
        "events_per_lead": per_lead,
        "max_per_second": opts.max_per_second,
        "ordering": opts.ordering,
        "accepted_out_of_order": out_of_order.len(),
        "replayed_outside_the_order": replayed.len(),
        "events_requested": events,
        "requests_succeeded": sent.load(Ordering::Relaxed),
        "leads_committed": leads,
        "events_committed": committed.len(),
        "events_delivered": delivered_ids.intersection(&committed).count(),
        "events_lost": lost.len(),
        "duplicate_receipts": duplicates,
        "endpoints": opts.endpoints,
        "receipts_total": received_everywhere.len(),
        "receipts_refused_by_fault": received_everywhere.iter().filter(|r| !r.accepted).count(),
        "receipts_unsigned_or_invalid": unsigned,
        "foreign_delivery_ids": foreign,
        "delivery_statuses": statuses,
        "dead_lettered_then_replayed": replayed_dead,
        "endpoint_probes": probes,
        "faults": fig.faults,
        "readiness_failures": fig.readiness_failures,
    });
    println!("{}", serde_json::to_string_pretty(&figures)?);
    qualifier_testkit::procs::write_figures("chaos", &figures)?;

    println!(
        "chaos: sent {} / committed {} / delivered {} / lost {} / duplicates {}",
        sent.load(Ordering::Relaxed),
        committed.len(),
        delivered_ids.intersection(&committed).count(),
        lost.len(),
        duplicates
    );
    if !lost.is_empty() {
        // What the lost deliveries' leads hold, to say where each one stopped.
        let ids: Vec<String> = lost.iter().map(|s| s.to_string()).collect();
        let rows = pg
            .query(
                "SELECT d.lead_id::text, d.seq, d.delivery_id::text, d.state::text, d.attempts,
                        d.retrying, d.erased, d.last_status_code::text,
                        d.due_at::text, d.turn_at::text, d.resume_attempt, d.last_error
                 FROM deliveries d
                 WHERE d.lead_id IN (SELECT lead_id FROM deliveries WHERE delivery_id::text = ANY($1))
                 ORDER BY d.lead_id, d.seq",
                &[&ids],
            )
            .await?;
        println!(
            "lead  seq  delivery  state  attempts  retrying  erased  last_code  due_at  turn_at  resume  last_error"
        );
        for r in rows {
            println!(
                "{} {} {} {} {} {} {} {:?} {:?} {:?} {:?} {:?}",
                r.get::<_, String>(0),
                r.get::<_, i64>(1),
                r.get::<_, String>(2),
                r.get::<_, String>(3),
                r.get::<_, i32>(4),
                r.get::<_, bool>(5),
                r.get::<_, bool>(6),
                r.get::<_, Option<String>>(7),
                r.get::<_, Option<String>>(8),
                r.get::<_, Option<String>>(9),
                r.get::<_, Option<i32>>(10),
                r.get::<_, Option<String>>(11),
            );
        }
    }
    if leads as u64 * per_lead * opts.endpoints != committed.len() as u64 {
        // Which leads hold another number of events than the producer caused, with their events
        // in order and the lead's name now: whether a rename's event is missing (a success
        // answered without its event) or one was applied twice (a stale attempt landing late).
        let rows = pg
            .query(
                "SELECT l.id::text, l.name, l.revision, count(o.seq),
                        coalesce(string_agg(o.event_type || ' ' || o.created_at::text, ', '
                                            ORDER BY o.seq), '')
                 FROM leads l LEFT JOIN outbox o ON o.lead_id = l.id
                 GROUP BY l.id, l.name, l.revision
                 HAVING count(o.seq) <> $1",
                &[&(per_lead as i64)],
            )
            .await?;
        println!(
            "leads whose events do not number {per_lead}: lead  name  revision  events  (type at)"
        );
        for r in rows {
            println!(
                "{} {:?} {} {} ({})",
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                r.get::<_, i64>(2),
                r.get::<_, i64>(3),
                r.get::<_, String>(4),
            );
        }
    }
    // Per lead: the revisions the database committed (1 to the lead's revision), the revisions
    // its delivered events carry, and the revisions answered with a success must agree. An
    // answered revision the database does not hold is a success without its commit; an event
    // of a revision past the lead's is an event without its change.
    let committed_revisions: HashMap<String, i64> = pg
        .query("SELECT id::text, revision FROM leads", &[])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut event_revisions: HashMap<String, std::collections::BTreeSet<i64>> = HashMap::new();
    for r in received
        .iter()
        .filter(|r| r.verified_with.is_some() && r.accepted)
        .filter(|r| committed.contains(r.header("x-qualifier-delivery")))
    {
        let v = r.json();
        if let (Some(lead), Some(revision)) = (
            v["data"]["lead"]["id"].as_str(),
            v["data"]["lead"]["revision"].as_i64(),
        ) {
            event_revisions
                .entry(lead.to_owned())
                .or_default()
                .insert(revision);
        }
    }
    let mut answered_missing = Vec::new();
    for (lead, revision) in answered.lock().unwrap().iter() {
        let held = committed_revisions.get(lead).copied().unwrap_or(0);
        let evented = event_revisions
            .get(lead)
            .is_some_and(|s| s.contains(revision));
        if *revision > held || !evented {
            answered_missing.push(format!(
                "lead {lead}: answered revision {revision}, database at {held}, event {evented}"
            ));
        }
    }
    let mut uncommitted_events = Vec::new();
    for (lead, held) in &committed_revisions {
        let got: Vec<i64> = event_revisions
            .get(lead)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        if got != (1..=*held).collect::<Vec<i64>>() {
            uncommitted_events.push(format!(
                "lead {lead}: revision {held} committed, events of revisions {got:?}"
            ));
        }
    }
    println!(
        "chaos: answered {} / answered but missing {} / leads whose events differ from their revisions {}",
        answered.lock().unwrap().len(),
        answered_missing.len(),
        uncommitted_events.len()
    );
    api.kill9();
    delivery.kill9();
    anyhow::ensure!(
        answered_missing.is_empty(),
        "successes answered for changes that are not there: {:?}",
        answered_missing.iter().take(5).collect::<Vec<_>>()
    );
    anyhow::ensure!(
        uncommitted_events.is_empty(),
        "events that do not match the committed revisions: {:?}",
        uncommitted_events.iter().take(5).collect::<Vec<_>>()
    );
    anyhow::ensure!(
        lost.is_empty(),
        "{} committed events were never delivered: {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );
    anyhow::ensure!(
        leads as u64 * per_lead * opts.endpoints == committed.len() as u64,
        "every lead has exactly its {per_lead} events, a delivery of each to every endpoint"
    );
    anyhow::ensure!(
        out_of_order.is_empty(),
        "a lead's events were accepted out of order: {:?}",
        out_of_order.iter().take(5).collect::<Vec<_>>()
    );
    anyhow::ensure!(foreign == 0, "deliveries arrived that were never committed");
    anyhow::ensure!(
        early.is_empty(),
        "{} deliveries came again before the Retry-After their receiver asked for: {:?}",
        early.len(),
        early.iter().take(5).collect::<Vec<_>>()
    );
    anyhow::ensure!(
        fig.readiness_failures.is_empty(),
        "readiness: {:?}",
        fig.readiness_failures
    );
    Ok(())
}

fn rustls_provider() -> bool {
    // The testkit client installs ring; done once here so the receiver and client agree.
    qualifier_testkit::http_client();
    true
}
