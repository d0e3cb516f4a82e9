//! `qualifier-topology` (`make topology`, `make topology-short` in CI): the production topology
//! of docs/operations.md, "Production topology", built on this machine by `scripts/topology/` on ports of its own,
//! with the real `lead-api` and `webhook-delivery` binaries and a real HTTPS receiver.
//!
//! Scenarios (all by default, or one with `--only`):
//! - `postgres-tls`: `sslmode=require` and `verify-full` connect and every connection of both
//!   services shows encrypted in `pg_stat_ssl`; a wrong CA, or a server without TLS under
//!   `require`, stops each service at start with one line naming `DATABASE_URL`;
//!   `qualifierctl migrate` runs over `verify-full`.
//! - `rabbitmq`: a three-node cluster with TLS listeners. A wrong CA stops each service with one
//!   line naming `AMQP_URL`; then events stream over `amqps://` with the right CA while the node
//!   leading the deliveries queue is killed with -9, then the node the relay is connected to:
//!   every event arrives (duplicates keep their delivery id) and delivery resumes within 30 s.
//! - `failover`: a primary with a synchronous standby, both with TLS, reached with two hosts and
//!   `target_session_attrs=read-write`: events streaming, the primary killed with -9, the
//!   standby promoted: no acknowledged lead or committed event lost, and delivery resumes
//!   within 30 s of the promotion without restarting anything.
//!
//! Figures are printed and written to `target/topology/latest.json`; the run fails on any loss
//! or on a resume slower than 30 s.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use qualifier_store::SecretKey;
use qualifier_testkit::procs::{Service, own_dir};
use qualifier_testkit::receiver::{Received, Receiver};
use qualifier_testkit::{TestDb, TestTopology, free_ports};
use serde_json::{Value, json};
use tokio::process::Command;

const INTERNAL_TOKEN: &str = "topology-internal-token-0123456789";
/// docs/operations.md, "Production topology": delivery resumes within this of a node loss or a promotion.
const RESUME_LIMIT: Duration = Duration::from_secs(30);
/// Ports of our own (the default services keep 5432 and 5672): AMQP 26001-26003, AMQPS
/// 26011-26013, Erlang distribution 26021-26023; PostgreSQL 26200 (no TLS), 26300/26301.
/// They sit below the kernel's ephemeral range (32768-60999 on Linux): a port inside it can be
/// the local end of any outgoing connection on a busy machine, and a server cannot bind it then.
const RABBIT_BASE: u16 = 26000;
const PLAIN_PG_PORT: u16 = 26200;
const FAILOVER_PORTS: (u16, u16) = (26300, 26301);
const SNAKEOIL: &str = "/etc/ssl/certs/ssl-cert-snakeoil.pem";

#[derive(clap::Parser)]
#[command(name = "qualifier-topology", version, about)]
struct Opts {
    /// Events to stream in each of the rabbitmq and failover scenarios.
    #[arg(long, default_value_t = 2000)]
    events: u64,
    /// Over how many seconds they are sent (the faults land in the middle).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// One scenario only: postgres-tls, rabbitmq or failover.
    #[arg(long)]
    only: Option<String>,
    /// Where the lead-api, webhook-delivery and qualifierctl binaries are (default: beside this).
    #[arg(long)]
    bin: Option<PathBuf>,
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/topology")
}

/// Runs one of `scripts/topology/*.sh`; its stdout, trimmed.
async fn script(name: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(scripts().join(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {name}"))?;
    if !out.status.success() {
        bail!(
            "{name} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// What a script built; removed when dropped, whatever happened.
struct Built {
    script: &'static str,
    dir: PathBuf,
}

impl Drop for Built {
    fn drop(&mut self) {
        let _ = std::process::Command::new(scripts().join(self.script))
            .arg("down")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Where the services connect, and how.
#[derive(Clone, Default)]
struct Target {
    database_url: String,
    amqp_url: String,
    amqp_ca_file: Option<PathBuf>,
}

struct Env {
    bins: PathBuf,
    work: PathBuf,
    certs: PathBuf,
    key: String,
    /// Each service's log (info and above, appended across scenarios): a failed run prints the
    /// last warnings and errors from it (`QUALIFIER_TOPOLOGY_LOGS`, default
    /// `target/topology/logs`).
    logs: PathBuf,
}

impl Env {
    fn command(&self, bin: &str, t: &Target, prefix: &str, rx: &Receiver) -> std::process::Command {
        let mut cmd = std::process::Command::new(self.bins.join(bin));
        cmd.env("DATABASE_URL", &t.database_url)
            .env("AMQP_URL", &t.amqp_url)
            .env("QUALIFIER_SECRET_KEY", &self.key)
            .env("QUALIFIER_TOPOLOGY_PREFIX", prefix)
            .env("QUALIFIER_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8")
            .env("QUALIFIER_RETRY_DELAYS_MS", "500,1000,2000,4000")
            .env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("QUALIFIER_WEBHOOK_CA_FILE", &rx.ca_file)
            .env("QUALIFIER_RATE_LIMIT_PER_MINUTE", "1000000")
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // The log is kept for a failed run: what the relay or the worker tried, and when.
        if let Ok(f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("{bin}.log")))
        {
            cmd.stdout(f).env("RUST_LOG", "info");
        }
        if let Some(ca) = &t.amqp_ca_file {
            cmd.env("QUALIFIER_AMQP_CA_FILE", ca);
        }
        cmd
    }

    /// Both services, started and ready.
    async fn stack(&self, t: &Target, prefix: &str, rx: &Receiver) -> anyhow::Result<Stack> {
        let [public, internal, health] = free_ports::<3>();
        let mut api_cmd = self.command("lead-api", t, prefix, rx);
        api_cmd
            .env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{public}"))
            .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{internal}"));
        let mut delivery_cmd = self.command("webhook-delivery", t, prefix, rx);
        delivery_cmd.env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{health}"));
        let mut api = Service::new("lead-api", api_cmd);
        let mut delivery = Service::new("webhook-delivery", delivery_cmd);
        api.start();
        delivery.start();
        let http = qualifier_testkit::http_client();
        let ready = [
            format!("http://127.0.0.1:{internal}/readyz"),
            format!("http://127.0.0.1:{health}/readyz"),
        ];
        let org = qualifier_testkit::procs::ready_org(
            &http,
            &ready,
            internal,
            INTERNAL_TOKEN,
            &format!("Topology {prefix}"),
            &rx.url,
            rx,
        )
        .await
        .map_err(anyhow::Error::from_boxed)?;
        let base = format!("http://127.0.0.1:{internal}/internal/v1");
        Ok(Stack {
            _api: api,
            _delivery: delivery,
            http,
            base,
            org,
        })
    }

    /// A service that must refuse to start: its exit within 30 s, and its stderr.
    async fn refused(&self, bin: &str, t: &Target) -> anyhow::Result<(bool, Vec<String>)> {
        let rx = Receiver::start().await;
        let mut cmd = Command::from(self.command(bin, t, "qlf_topology_refused", &rx));
        let [a, b] = free_ports::<2>();
        cmd.env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{a}"))
            .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{b}"))
            .env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{a}"))
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .with_context(|| format!("{bin} kept running"))??;
        let lines = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        Ok((!out.status.success(), lines))
    }

    /// Both services refuse to start, each with one line naming `var`.
    async fn both_refuse(&self, t: &Target, var: &str, case: &str) -> anyhow::Result<Value> {
        let mut said = Vec::new();
        for bin in ["lead-api", "webhook-delivery"] {
            let (failed, lines) = self.refused(bin, t).await?;
            ensure!(failed, "{case}: {bin} started");
            ensure!(
                lines.len() == 1 && lines[0].contains(var),
                "{case}: {bin} should say one line naming {var}, said {lines:?}"
            );
            println!("  {case}: {bin}: {}", lines[0]);
            said.push(lines[0].clone());
        }
        Ok(json!({"case": case, "refused_with": said}))
    }
}

struct Stack {
    _api: Service,
    _delivery: Service,
    http: reqwest::Client,
    base: String,
    org: String,
}

/// Leads sent one per request, paced; a failed request is sent again (a known phone creates
/// nothing twice), and the moment each was acknowledged is kept.
struct Producer {
    acked: Arc<Mutex<HashMap<String, Instant>>>,
    /// Set until the scenario has seen delivery resume after its last fault: past `events`,
    /// the producer goes on at the same rate, so a fault that comes late (a restarted node that
    /// took long to boot) still has new events behind it.
    more: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Producer {
    /// No more events past the planned ones; returns once the last of them is acknowledged.
    async fn finish(&mut self) -> Result<(), tokio::task::JoinError> {
        self.more.store(false, std::sync::atomic::Ordering::Relaxed);
        (&mut self.task).await
    }
}

fn phone(tag: u8, i: u64) -> String {
    format!("+44770{tag}{i:07}")
}

fn produce(stack: &Stack, tag: u8, events: u64, over: Duration) -> Producer {
    let acked = Arc::new(Mutex::new(HashMap::new()));
    let more = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (http, url, acked2, more2) = (
        stack.http.clone(),
        format!("{}/orgs/{}/inbound", stack.base, stack.org),
        acked.clone(),
        more.clone(),
    );
    let task = tokio::spawn(async move {
        let started = Instant::now();
        for i in 0.. {
            if i >= events && !more2.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let due = over.mul_f64(i as f64 / events.max(1) as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
            let p = phone(tag, i);
            let body = json!({"name": "Topology Lead", "phone": p, "channel": "sms"});
            loop {
                let r = http
                    .post(&url)
                    .bearer_auth(INTERNAL_TOKEN)
                    .json(&body)
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await;
                if r.is_ok_and(|r| r.status().is_success()) {
                    acked2.lock().unwrap().insert(p, Instant::now());
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    Producer { acked, more, task }
}

fn is_delivery(r: &Received) -> bool {
    r.verified_with.is_some() && r.accepted && r.header("x-qualifier-probe") != "true"
}

fn lead_phone(r: &Received) -> Option<String> {
    serde_json::from_slice::<Value>(&r.body).ok()?["data"]["lead"]["phone"]
        .as_str()
        .map(str::to_owned)
}

/// How long after `since` the first event acknowledged after `since` arrived: the time the
/// pipeline took to carry new events again. `None` while none has.
fn resumed_after(receiver: &Receiver, producer: &Producer, since: Instant) -> Option<Duration> {
    let acked = producer.acked.lock().unwrap().clone();
    receiver
        .received()
        .iter()
        .filter(|r| is_delivery(r))
        .filter(|r| lead_phone(r).and_then(|p| acked.get(&p).copied()) > Some(since))
        .map(|r| r.at.saturating_duration_since(since))
        .min()
}

async fn wait_resumed(
    receiver: &Receiver,
    producer: &Producer,
    since: Instant,
) -> anyhow::Result<Duration> {
    let deadline = since + RESUME_LIMIT + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(d) = resumed_after(receiver, producer, since) {
            return Ok(d);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("no new event arrived within {:?}", deadline - since)
}

/// After the stream: every committed event (an outbox row, read from `pg`) has arrived, and
/// every acknowledged lead exists. Waits up to three minutes for the last ones.
async fn settle(
    receiver: &Receiver,
    mut producer: Producer,
    pg: &tokio_postgres::Client,
) -> anyhow::Result<Value> {
    producer.finish().await?;
    let acked: HashSet<String> = producer.acked.lock().unwrap().keys().cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let committed: HashSet<String> =
            qualifier_testkit::sql::try_column(pg, "SELECT delivery_id::text FROM outbox", &[])
                .await?;
        let received = receiver.received();
        let delivered: HashSet<String> = received
            .iter()
            .filter(|r| is_delivery(r))
            .map(|r| r.header("x-qualifier-delivery").to_owned())
            .collect();
        let lost = committed.difference(&delivered).count();
        if lost == 0 || Instant::now() > deadline {
            let phones: HashSet<String> =
                qualifier_testkit::sql::try_column(pg, "SELECT phone FROM leads", &[]).await?;
            let leads_lost = acked.difference(&phones).count();
            let mut per_id: HashMap<&str, u64> = HashMap::new();
            for r in received.iter().filter(|r| is_delivery(r)) {
                *per_id.entry(r.header("x-qualifier-delivery")).or_default() += 1;
            }
            let duplicates: u64 = per_id.values().map(|n| n.saturating_sub(1)).sum();
            let foreign = delivered.difference(&committed).count();
            let figures = json!({
                "leads_acknowledged": acked.len(),
                "acknowledged_leads_missing": leads_lost,
                "events_committed": committed.len(),
                "events_delivered": committed.intersection(&delivered).count(),
                "events_lost": lost,
                "duplicate_receipts_same_delivery_id": duplicates,
                "deliveries_never_committed": foreign,
            });
            ensure!(
                lost == 0,
                "{lost} committed events never arrived: {figures}"
            );
            ensure!(
                leads_lost == 0,
                "{leads_lost} acknowledged leads are gone: {figures}"
            );
            ensure!(
                foreign == 0,
                "deliveries arrived that were never committed: {figures}"
            );
            return Ok(figures);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn plain_client(url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    Ok(c)
}

/// docs/operations.md, "Production topology": TLS to PostgreSQL.
async fn postgres_tls(env: &Env) -> anyhow::Result<Value> {
    println!("postgres-tls: sslmode require / verify-full against the default server");
    let db = TestDb::new().await;
    let amqp = qualifier_testkit::amqp_url();
    let mut cases = Vec::new();
    for (case, url) in [
        (
            "require",
            format!(
                "postgres://postgres@127.0.0.1:5432/{}?sslmode=require",
                db.name
            ),
        ),
        (
            "verify-full",
            format!(
                "postgres://postgres@localhost:5432/{}?sslmode=verify-full&sslrootcert={SNAKEOIL}",
                db.name
            ),
        ),
    ] {
        let t = Target {
            database_url: url,
            amqp_url: amqp.clone(),
            amqp_ca_file: None,
        };
        let topo = TestTopology::new(vec![500, 1000, 2000, 4000]);
        let rx = Receiver::start().await;
        let stack = env.stack(&t, &topo.prefix, &rx).await?;
        // A few events, so the pools, the LISTEN connection and the worker's have all worked.
        let mut producer = produce(&stack, 1, 5, Duration::from_millis(500));
        producer.finish().await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while rx.received().iter().filter(|r| is_delivery(r)).count() < 5 {
            ensure!(Instant::now() < deadline, "{case}: events did not arrive");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let rows = db
            .client()
            .await
            .query(
                "SELECT a.application_name, s.ssl, s.version FROM pg_stat_activity a \
                 JOIN pg_stat_ssl s ON s.pid = a.pid \
                 WHERE a.datname = $1 AND a.application_name IN ('lead-api', 'webhook-delivery')",
                &[&db.name],
            )
            .await?;
        let mut per_app: HashMap<String, (u64, u64)> = HashMap::new();
        for r in &rows {
            let e = per_app.entry(r.get(0)).or_default();
            e.0 += 1;
            if r.get::<_, bool>(1) {
                e.1 += 1;
            }
        }
        println!("  {case}: connections (all, encrypted) per service: {per_app:?}");
        for app in ["lead-api", "webhook-delivery"] {
            let (all, tls) = per_app.get(app).copied().unwrap_or_default();
            ensure!(
                all > 0,
                "{case}: no connection of {app} in pg_stat_activity"
            );
            ensure!(
                all == tls,
                "{case}: {app} has {} plaintext connections",
                all - tls
            );
        }
        cases.push(json!({"case": case, "connections": per_app}));
        drop(stack);
    }
    let migrate = Command::new(env.bins.join("qualifierctl"))
        .arg("migrate")
        .env(
            "DATABASE_URL",
            format!(
                "postgres://postgres@localhost:5432/{}?sslmode=verify-full&sslrootcert={SNAKEOIL}",
                db.name
            ),
        )
        .output()
        .await?;
    ensure!(
        migrate.status.success(),
        "qualifierctl migrate over verify-full: {}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    cases.push(json!({"case": "qualifierctl migrate, verify-full", "ok": true}));

    println!("postgres-tls: a wrong CA, and a server without TLS under require");
    let wrong = Target {
        database_url: format!(
            "postgres://postgres@localhost:5432/{}?sslmode=verify-full&sslrootcert={}",
            db.name,
            env.certs.join("other-ca.pem").display()
        ),
        amqp_url: amqp.clone(),
        amqp_ca_file: None,
    };
    cases.push(env.both_refuse(&wrong, "DATABASE_URL", "wrong CA").await?);
    let dir = env.work.join("pg-plain");
    let _plain = Built {
        script: "postgres.sh",
        dir: dir.clone(),
    };
    script(
        "postgres.sh",
        &["up", dir.to_str().unwrap(), &PLAIN_PG_PORT.to_string(), "-"],
    )
    .await?;
    let no_tls = Target {
        database_url: format!(
            "postgres://postgres@127.0.0.1:{PLAIN_PG_PORT}/postgres?sslmode=require"
        ),
        amqp_url: amqp,
        amqp_ca_file: None,
    };
    cases.push(
        env.both_refuse(&no_tls, "DATABASE_URL", "no TLS on the server, require")
            .await?,
    );
    Ok(json!(cases))
}

/// docs/operations.md, "Production topology": the RabbitMQ cluster and TLS to it.
async fn rabbitmq(env: &Env, events: u64, over: Duration) -> anyhow::Result<Value> {
    println!("rabbitmq: three nodes with TLS listeners");
    let dir = env.work.join("rabbitmq");
    let d = dir.to_str().unwrap().to_owned();
    let _cluster = Built {
        script: "rabbitmq.sh",
        dir: dir.clone(),
    };
    let certs = env.certs.to_str().unwrap().to_owned();
    script(
        "rabbitmq.sh",
        &["up", &d, &RABBIT_BASE.to_string(), "3", &certs],
    )
    .await?;
    let urls = std::fs::read_to_string(dir.join("amqp_urls"))?
        .trim()
        .to_owned();
    let db = TestDb::new().await;
    let mut out = serde_json::Map::new();

    let wrong = Target {
        database_url: db.url.clone(),
        amqp_url: urls.clone(),
        amqp_ca_file: Some(env.certs.join("other-ca.pem")),
    };
    out.insert(
        "wrong_ca".into(),
        env.both_refuse(&wrong, "AMQP_URL", "amqps, wrong CA")
            .await?,
    );

    let t = Target {
        database_url: db.url.clone(),
        amqp_url: urls,
        amqp_ca_file: Some(env.certs.join("ca.pem")),
    };
    // The cluster is removed as a whole: no topology of the default broker to clean up.
    let prefix = format!("qlf_topo_{}", uuid::Uuid::new_v4().simple());
    let rx = Receiver::start().await;
    let stack = env.stack(&t, &prefix, &rx).await?;
    let producer = produce(&stack, 2, events, over);
    let started = Instant::now();
    let mut kills = Vec::new();
    for (k, (what, find)) in [
        ("the node leading the deliveries queue", "leader"),
        ("the node the relay is connected to", "relay"),
    ]
    .into_iter()
    .enumerate()
    {
        // At a third and two thirds of the stream, counted from its start: restarting the node
        // killed before can take 10 s, which must not push this kill past the stream's end.
        let at = started + over.mul_f64((k + 1) as f64 / 3.0);
        tokio::time::sleep_until(at.into()).await;
        let node = match find {
            "leader" => {
                script(
                    "rabbitmq.sh",
                    &["leader", &d, &format!("{prefix}.deliveries")],
                )
                .await?
            }
            _ => {
                script(
                    "rabbitmq.sh",
                    &["node-of", &d, &format!("lead-api relay {prefix}")],
                )
                .await?
            }
        };
        let pid = script("rabbitmq.sh", &["pid", &d, &node]).await?;
        println!("  kill -9 {what}: node {node} (pid {pid})");
        let killed = Instant::now();
        let status = Command::new("kill").args(["-9", &pid]).status().await?;
        ensure!(status.success(), "kill -9 {pid}");
        let resumed = match wait_resumed(&rx, &producer, killed).await {
            Ok(r) => r,
            Err(e) => {
                let status = script("rabbitmq.sh", &["status", &d])
                    .await
                    .unwrap_or_default();
                bail!("{e} after killing {what}; the queues:\n{status}");
            }
        };
        println!(
            "  delivery resumed {:.1} s after the kill",
            resumed.as_secs_f64()
        );
        ensure!(
            resumed <= RESUME_LIMIT,
            "delivery resumed only after {resumed:?} ({what})"
        );
        // Back before the next kill: a three-node cluster survives one node down, not two.
        script("rabbitmq.sh", &["start", &d, &node]).await?;
        kills.push(json!({"killed": what, "node": node, "resumed_after_s": resumed.as_secs_f64()}));
    }
    let figures = settle(&rx, producer, &db.client().await).await?;
    println!("  {figures}");
    out.insert("kills".into(), json!(kills));
    out.insert("events".into(), figures);
    drop(stack);
    Ok(Value::Object(out))
}

/// docs/operations.md, "Production topology": PostgreSQL failover.
async fn failover(env: &Env, events: u64, over: Duration) -> anyhow::Result<Value> {
    println!("failover: a primary and a synchronous standby, both with TLS");
    let dir = env.work.join("pg-failover");
    let d = dir.to_str().unwrap().to_owned();
    let _pair = Built {
        script: "postgres.sh",
        dir: dir.clone(),
    };
    let (p, s) = FAILOVER_PORTS;
    script(
        "postgres.sh",
        &[
            "up",
            &d,
            &p.to_string(),
            env.certs.to_str().unwrap(),
            &s.to_string(),
        ],
    )
    .await?;
    plain_client(&format!("postgres://postgres@127.0.0.1:{p}/postgres"))
        .await?
        .batch_execute("CREATE DATABASE qualifier")
        .await?;
    let url = format!(
        "postgres://postgres@localhost:{p},localhost:{s}/qualifier?target_session_attrs=read-write&sslmode=verify-full&sslrootcert={}",
        env.certs.join("ca.pem").display()
    );
    let migrate = Command::new(env.bins.join("qualifierctl"))
        .arg("migrate")
        .env("DATABASE_URL", &url)
        .output()
        .await?;
    ensure!(
        migrate.status.success(),
        "qualifierctl migrate: {}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    let t = Target {
        database_url: url,
        amqp_url: qualifier_testkit::amqp_url(),
        amqp_ca_file: None,
    };
    let topo = TestTopology::new(vec![500, 1000, 2000, 4000]);
    let rx = Receiver::start().await;
    let stack = env.stack(&t, &topo.prefix, &rx).await?;
    let producer = produce(&stack, 3, events, over);
    tokio::time::sleep(over / 2).await;
    println!("  kill -9 the primary");
    script("postgres.sh", &["kill-primary", &d]).await?;
    // As a managed service's failover would: a few seconds to notice, then the promotion.
    tokio::time::sleep(Duration::from_secs(2)).await;
    script("postgres.sh", &["promote", &d]).await?;
    let promoted = Instant::now();
    println!("  standby promoted");
    let resumed = wait_resumed(&rx, &producer, promoted).await?;
    println!(
        "  delivery resumed {:.1} s after the promotion",
        resumed.as_secs_f64()
    );
    ensure!(
        resumed <= RESUME_LIMIT,
        "delivery resumed only after {resumed:?}"
    );
    let new_primary = plain_client(&format!("postgres://postgres@127.0.0.1:{s}/qualifier")).await?;
    let figures = settle(&rx, producer, &new_primary).await?;
    println!("  {figures}");
    drop(stack);
    Ok(json!({"resumed_after_promotion_s": resumed.as_secs_f64(), "events": figures}))
}

/// The last warnings and errors of each service's log, for a failed run.
fn print_log_tails(logs: &Path) {
    for bin in ["lead-api", "webhook-delivery"] {
        let path = logs.join(format!("{bin}.log"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("\"WARN\"") || l.contains("\"ERROR\""))
            .collect();
        eprintln!(
            "topology: the last warnings and errors of {bin} ({}):",
            path.display()
        );
        for l in &lines[lines.len().saturating_sub(25)..] {
            eprintln!("  {}", l.chars().take(400).collect::<String>());
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = <Opts as clap::Parser>::parse();
    let bins = opts.bin.clone().unwrap_or_else(own_dir);
    qualifier_testkit::http_client(); // installs the ring provider for the receiver
    let work = std::env::temp_dir().join(format!("qlf-topology-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let certs = work.join("certs");
    script("certs.sh", &[certs.to_str().unwrap()]).await?;
    let target =
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()));
    let logs = std::env::var_os("QUALIFIER_TOPOLOGY_LOGS")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("topology").join("logs"));
    let _ = std::fs::remove_dir_all(&logs);
    std::fs::create_dir_all(&logs)?;
    let env = Env {
        bins,
        work: work.clone(),
        certs,
        key: SecretKey::generate_base64(),
        logs: logs.clone(),
    };
    let over = Duration::from_secs(opts.seconds);
    let wanted = |s: &str| opts.only.as_deref().is_none_or(|o| o == s);
    let mut figures = serde_json::Map::new();
    let result = async {
        if wanted("postgres-tls") {
            figures.insert("postgres_tls".into(), postgres_tls(&env).await?);
        }
        if wanted("rabbitmq") {
            figures.insert("rabbitmq".into(), rabbitmq(&env, opts.events, over).await?);
        }
        if wanted("failover") {
            figures.insert("failover".into(), failover(&env, opts.events, over).await?);
        }
        anyhow::Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&work);
    let figures = Value::Object(figures);
    let out = target.join("topology");
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("latest.json"),
        serde_json::to_vec_pretty(&figures)?,
    )?;
    if let Err(e) = result {
        print_log_tails(&logs);
        // The cause on one line, last: CI shows the tail of the output, and anyhow's Debug form
        // would end in a backtrace of the runtime's frames when RUST_BACKTRACE is set.
        eprintln!("topology: FAILED: {e:#}");
        std::process::exit(1);
    }
    println!("topology: every scenario held");
    Ok(())
}
