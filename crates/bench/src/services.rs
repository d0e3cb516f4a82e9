//! The system under test as it runs in production: the release `lead-api` and
//! `webhook-delivery` binaries as processes of their own, each run on a database and topology
//! prefix of its own (dropped afterwards).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use qualifier_store::SecretKey;
use qualifier_testkit::{TestDb, TestTopology, amqp_url, free_port};
use serde_json::{Value, json};

pub const INTERNAL_TOKEN: &str = "bench-internal-token-0123456789";
/// Retries are not part of the measured happy path; these keep a stray failure cheap.
pub const RETRY_DELAYS: [u64; 4] = [1000, 2000, 4000, 8000];

/// `--bin-dir`: another build's `lead-api` and `webhook-delivery`, for before/after pairs driven
/// by one harness. `--against` switches it between runs (`perf.rs`), so it is read when each
/// run's [`Env`] is made and stays that run's build until the run ends.
static BIN_DIR: std::sync::RwLock<Option<PathBuf>> = std::sync::RwLock::new(None);

/// Runs from now on use the binaries in `dir` (`None`: the bench's own build).
pub fn use_build(dir: Option<PathBuf>) {
    *BIN_DIR.write().unwrap_or_else(|e| e.into_inner()) = dir;
}

fn other_build() -> Option<PathBuf> {
    BIN_DIR.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The directory holding the harness's own build of the services.
fn own_build() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("target/release"))
}

/// A child process, stopped with SIGTERM (so its database sessions end cleanly and flush their
/// statistics) and killed if it does not exit.
pub struct Proc {
    child: Child,
    pub health: String,
}

impl Proc {
    /// The sum of a counter's series on the process's `/metrics` page (0 when unreadable).
    pub async fn counter(&self, http: &reqwest::Client, name: &str) -> f64 {
        let url = self.health.replace("/readyz", "/metrics");
        let Ok(page) = async { http.get(&url).send().await?.text().await }.await else {
            return 0.0;
        };
        page.lines()
            .filter(|l| l.split(['{', ' ']).next() == Some(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a run's `webhook-delivery` processes are configured.
#[derive(Clone, Debug)]
pub struct DeliverySettings {
    pub concurrency: usize,
    pub org_concurrency: usize,
    pub timeout_ms: u64,
    /// More variables for the process (the outage phase scales endpoint health).
    pub env: Vec<(&'static str, String)>,
}

pub struct Env {
    /// The build this run's services come from ([`bin_dir`] when the run began).
    bin: PathBuf,
    pub db: TestDb,
    pub topo: TestTopology,
    key: String,
    pub ca_file: PathBuf,
    pub http: reqwest::Client,
    pub internal: String,
    pub public: String,
    /// Variables given to `lead-api` besides the common ones (the plan check's
    /// `QUALIFIER_PLAN_CACHE_MODE`).
    pub api_env: Vec<(&'static str, &'static str)>,
}

impl Env {
    pub async fn new(ca_file: PathBuf) -> Env {
        let key = SecretKey::generate_base64();
        // Another build (`--bin-dir`) gets the schema of its own migrations, not this harness's:
        // a before/after pair of a schema change (a trigger, an index) would otherwise measure
        // the same schema twice.
        let other = other_build();
        let db = match &other {
            None => TestDb::new().await,
            Some(dir) => {
                let db = TestDb::empty().await;
                let out = Command::new(dir.join("qualifierctl"))
                    .arg("migrate")
                    .env("DATABASE_URL", &db.url)
                    .env("QUALIFIER_SECRET_KEY", &key)
                    .output()
                    .expect("run qualifierctl migrate of --bin-dir");
                assert!(
                    out.status.success(),
                    "{}/qualifierctl migrate failed: {}",
                    dir.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
                db
            }
        };
        let topo = TestTopology::new(RETRY_DELAYS.to_vec());
        Env {
            bin: other.unwrap_or_else(own_build),
            db,
            topo,
            key,
            ca_file,
            http: client(),
            internal: String::new(),
            public: String::new(),
            api_env: Vec::new(),
        }
    }

    pub fn key(&self) -> SecretKey {
        SecretKey::from_base64(&self.key).expect("a generated key reads back")
    }

    fn common(&self, cmd: &mut Command) {
        let log = log_file(cmd);
        cmd.env("DATABASE_URL", &self.db.url)
            .env("AMQP_URL", amqp_url())
            .env("QUALIFIER_SECRET_KEY", &self.key)
            .env("QUALIFIER_TOPOLOGY_PREFIX", &self.topo.prefix)
            .env(
                "QUALIFIER_RETRY_DELAYS_MS",
                RETRY_DELAYS.map(|d| d.to_string()).join(","),
            )
            .env("QUALIFIER_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8")
            .env(
                "RUST_LOG",
                std::env::var("QUALIFIER_BENCH_RUST_LOG").unwrap_or_else(|_| "error".into()),
            )
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(log);
    }

    /// Starts `lead-api` (rate limit raised: the limiter is not what is measured) and waits
    /// until it is ready.
    pub async fn start_api(&mut self) -> anyhow::Result<Proc> {
        let [public, internal] = qualifier_testkit::free_ports::<2>();
        let mut cmd = Command::new(self.bin.join("lead-api"));
        self.common(&mut cmd);
        cmd.env("QUALIFIER_INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("QUALIFIER_HTTP_ADDR", format!("127.0.0.1:{public}"))
            .env("QUALIFIER_INTERNAL_ADDR", format!("127.0.0.1:{internal}"))
            .env("QUALIFIER_RATE_LIMIT_PER_MINUTE", "100000000")
            .envs(self.api_env.iter().copied());
        let child = cmd
            .spawn()
            .context("lead-api (run `make bench`, which builds it)")?;
        self.internal = format!("http://127.0.0.1:{internal}");
        self.public = format!("http://127.0.0.1:{public}");
        // A client of its own for the new process: the old one's pool may hold connections to
        // a `lead-api` this run stopped, on a port the new one can be given again, and its
        // next request on one fails ("connection closed before message completed").
        self.http = client();
        let p = Proc {
            child,
            health: format!("{}/readyz", self.internal),
        };
        wait_ready(&self.http, &p.health).await?;
        Ok(p)
    }

    pub async fn start_delivery(&self, s: &DeliverySettings) -> anyhow::Result<Proc> {
        let port = free_port();
        let mut cmd = Command::new(self.bin.join("webhook-delivery"));
        self.common(&mut cmd);
        cmd.env("QUALIFIER_DELIVERY_ADDR", format!("127.0.0.1:{port}"))
            .env("QUALIFIER_DELIVERY_CONCURRENCY", s.concurrency.to_string())
            .env(
                "QUALIFIER_DELIVERY_ORG_CONCURRENCY",
                s.org_concurrency.to_string(),
            )
            .env("QUALIFIER_DELIVERY_TIMEOUT_MS", s.timeout_ms.to_string())
            .env("QUALIFIER_WEBHOOK_CA_FILE", &self.ca_file)
            .envs(s.env.iter().map(|(k, v)| (*k, v.as_str())));
        let child = cmd
            .spawn()
            .context("webhook-delivery (run `make bench`, which builds it)")?;
        let p = Proc {
            child,
            health: format!("http://127.0.0.1:{port}/readyz"),
        };
        wait_ready(&self.http, &p.health).await?;
        Ok(p)
    }

    pub(crate) async fn internal_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> Value {
        let r = self
            .http
            .request(method, format!("{}/internal/v1{path}", self.internal))
            .bearer_auth(INTERNAL_TOKEN)
            .json(&body)
            .send()
            .await;
        match r {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        }
    }

    /// A new org with `tokens` API tokens and its webhook at `url`; returns (org, tokens, secret).
    pub async fn org(&self, url: &str, tokens: usize) -> anyhow::Result<Org> {
        use reqwest::Method;
        let org = self
            .internal_call(Method::POST, "/orgs", json!({"name": "Bench"}))
            .await["org"]["id"]
            .as_str()
            .context("create org")?
            .to_owned();
        let mut toks = Vec::new();
        for _ in 0..tokens {
            let t = self
                .internal_call(Method::POST, &format!("/orgs/{org}/tokens"), json!({}))
                .await;
            toks.push(t["secret"].as_str().context("create token")?.to_owned());
        }
        let hook = self
            .internal_call(
                Method::PUT,
                &format!("/orgs/{org}/webhook"),
                json!({"url": url, "event_types": ["lead.created", "lead.updated", "lead.stage_changed"], "enabled": true}),
            )
            .await;
        let secret = hook["signing_secret"]
            .as_str()
            .context("put webhook")?
            .to_owned();
        Ok(Org {
            id: org,
            tokens: toks,
            secret,
        })
    }

    /// Saves the org's webhook again with `extra` (its pace: `max_per_second`, `ordering`)
    /// beside the url and types [`Env::org`] gave it.
    pub async fn set_webhook(&self, org: &str, url: &str, extra: Value) -> anyhow::Result<()> {
        let mut body = json!({"url": url, "event_types": ["lead.created", "lead.updated", "lead.stage_changed"], "enabled": true});
        for (k, v) in extra.as_object().context("webhook settings")? {
            body[k] = v.clone();
        }
        let hook = self
            .internal_call(reqwest::Method::PUT, &format!("/orgs/{org}/webhook"), body)
            .await;
        anyhow::ensure!(hook.get("webhook").is_some(), "put webhook: {hook}");
        Ok(())
    }

    /// Every committed delivery to one endpoint (the delivery rows are the truth): its id, its
    /// event's commit time (Unix µs) and org.
    pub async fn committed_to(&self, endpoint: &str) -> anyhow::Result<Vec<(u128, i64, String)>> {
        let pg = self.db.client().await;
        let rows = pg
            .query(
                "SELECT d.delivery_id::text, (extract(epoch FROM o.created_at) * 1000000)::int8,
                        o.org_id::text
                 FROM deliveries d JOIN outbox o ON o.seq = d.seq
                 WHERE d.endpoint_id = $1::text::uuid",
                &[&endpoint],
            )
            .await?;
        Ok(rows.iter().map(committed_row).collect())
    }

    /// Every committed event (the outbox is the truth): delivery id and commit time (Unix µs).
    pub async fn committed(&self) -> anyhow::Result<Vec<(u128, i64, String)>> {
        let pg = self.db.client().await;
        let rows = pg
            .query(
                "SELECT delivery_id::text, (extract(epoch FROM created_at) * 1000000)::int8, org_id::text
                 FROM outbox",
                &[],
            )
            .await?;
        Ok(rows.iter().map(committed_row).collect())
    }
}

/// A committed delivery as [`Env::committed`] and [`Env::committed_to`] read it: (delivery id,
/// commit time in Unix µs, org).
fn committed_row(r: &tokio_postgres::Row) -> (u128, i64, String) {
    (
        uuid::Uuid::parse_str(r.get::<_, &str>(0))
            .map(|u| u.as_u128())
            .unwrap_or(0),
        r.get::<_, i64>(1),
        r.get::<_, String>(2),
    )
}

pub struct Org {
    pub id: String,
    pub tokens: Vec<String>,
    pub secret: String,
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1024)
        .build()
        .expect("client")
}

async fn wait_ready(http: &reqwest::Client, url: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http.get(url).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{url} never became ready")
}

/// Where a service's log goes: nowhere, or with `QUALIFIER_BENCH_LOG_DIR` a file of its own
/// there (`lead-api-1.log`, `webhook-delivery-2.log`, …), for reading what a run's services did
/// (`QUALIFIER_BENCH_RUST_LOG` sets their filter; `error` otherwise).
fn log_file(cmd: &Command) -> Stdio {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("QUALIFIER_BENCH_LOG_DIR") else {
        return Stdio::null();
    };
    let name = std::path::Path::new(cmd.get_program())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let _ = std::fs::create_dir_all(&dir);
    std::fs::File::create(std::path::Path::new(&dir).join(format!("{name}-{n}.log")))
        .map_or_else(|_| Stdio::null(), Stdio::from)
}
