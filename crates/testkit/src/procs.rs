//! The real binaries as child processes, for the drivers that run them under faults
//! (`qualifier-chaos`, `qualifier-topology`).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The directory of the running executable: the services are built beside the drivers.
pub fn own_dir() -> PathBuf {
    std::env::current_exe()
        .expect("own path")
        .parent()
        .expect("own directory")
        .to_path_buf()
}

/// What every service process of a run shares: its database, the broker, the secret key, the
/// topology prefix and retry waits, receivers on loopback allowed, errors only in its log.
pub fn service_env<'c>(
    cmd: &'c mut Command,
    database_url: &str,
    secret_key: &str,
    topology_prefix: &str,
    retry_delays_ms: &[u64],
) -> &'c mut Command {
    let delays: Vec<String> = retry_delays_ms.iter().map(u64::to_string).collect();
    cmd.env("DATABASE_URL", database_url)
        .env("AMQP_URL", crate::amqp_url())
        .env("QUALIFIER_SECRET_KEY", secret_key)
        .env("QUALIFIER_TOPOLOGY_PREFIX", topology_prefix)
        .env("QUALIFIER_RETRY_DELAYS_MS", delays.join(","))
        .env("QUALIFIER_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8")
        .env("RUST_LOG", "error")
}

/// A service process; killed with SIGKILL when dropped.
pub struct Service {
    pub name: &'static str,
    pub cmd: Command,
    pub child: Option<Child>,
}

impl Service {
    pub fn new(name: &'static str, cmd: Command) -> Service {
        Service {
            name,
            cmd,
            child: None,
        }
    }
    pub fn start(&mut self) {
        self.child = Some(
            self.cmd
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", self.name)),
        );
    }
    /// SIGTERM, as an orchestrator stops a process, then waits for it to exit: how long it
    /// took, or `None` when it had not exited after `within` (it is then killed).
    pub fn terminate(&mut self, within: Duration) -> Option<Duration> {
        let mut c = self.child.take()?;
        let started = Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        while started.elapsed() < within {
            if let Ok(Some(_)) = c.try_wait() {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
        None
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The status `/readyz` answers at `url`, if it answers.
pub async fn readyz(http: &reqwest::Client, url: &str) -> Option<u16> {
    http.get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

/// Polls until `/readyz` answers `want` on every url (or the time is up).
pub async fn wait_ready_state(
    http: &reqwest::Client,
    urls: &[String],
    want: u16,
    within: Duration,
) -> bool {
    let deadline = Instant::now() + within;
    loop {
        let mut all = true;
        for u in urls {
            if readyz(http, u).await != Some(want) {
                all = false;
            }
        }
        if all {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Through the internal API at `base` (`http://…/internal/v1`): a new org named `name` whose
/// webhook sends `lead.created` to `hook_url`. Its id and the webhook's signing secret.
pub async fn org_with_webhook(
    http: &reqwest::Client,
    base: &str,
    internal_token: &str,
    name: &str,
    hook_url: &str,
) -> Result<(String, String), reqwest::Error> {
    let org: serde_json::Value = http
        .post(format!("{base}/orgs"))
        .bearer_auth(internal_token)
        .json(&serde_json::json!({ "name": name }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let org = org["org"]["id"].as_str().unwrap_or_default().to_owned();
    let hook: serde_json::Value = http
        .put(format!("{base}/orgs/{org}/webhook"))
        .bearer_auth(internal_token)
        .json(
            &serde_json::json!({"url": hook_url, "event_types": ["lead.created"], "enabled": true}),
        )
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let secret = hook["signing_secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((org, secret))
}

/// The `/readyz` of a `lead-api` (its internal port) and a `webhook-delivery` (its health
/// port) on this machine.
pub fn readiness(internal_port: u16, health_port: u16) -> Vec<String> {
    vec![
        format!("http://127.0.0.1:{internal_port}/readyz"),
        format!("http://127.0.0.1:{health_port}/readyz"),
    ]
}

/// Writes a run's figures to `target/<run>/latest.json` (under `CARGO_TARGET_DIR` when set)
/// and answers that folder, where the run's other outputs go too.
pub fn write_figures(run: &str, figures: &serde_json::Value) -> std::io::Result<PathBuf> {
    let out = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
        .join(run);
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("latest.json"), serde_json::to_vec_pretty(figures)?)?;
    Ok(out)
}

/// The tail of starting a whole stack (chaos, soak, topology): once `/readyz` answers 200 on
/// every url of `ready`, a new org through the internal API of `internal_port` (authenticated
/// with `internal_token`) whose webhook
/// sends `lead.created` to `hook_url`, with the webhook's secret given to `rx`, which then
/// verifies what arrives. The org's id.
pub async fn ready_org(
    http: &reqwest::Client,
    ready: &[String],
    internal_port: u16,
    internal_token: &str,
    name: &str,
    hook_url: &str,
    rx: &crate::receiver::Receiver,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    if !wait_ready_state(http, ready, 200, Duration::from_secs(60)).await {
        return Err(format!("the services never became ready: {}", ready.join(", ")).into());
    }
    let base = format!("http://127.0.0.1:{internal_port}/internal/v1");
    let (org, secret) = org_with_webhook(http, &base, internal_token, name, hook_url).await?;
    rx.set_secrets(vec![secret]);
    Ok(org)
}
