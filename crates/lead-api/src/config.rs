//! `lead-api` configuration (docs/operations.md, "Configuration"): every variable declared once,
//! as a clap argument with `env` (below, or in `qualifier-config` when another binary reads it
//! too), then validated once at start into [`ApiConfig`]. `--help` is generated from the same
//! declarations, so it lists exactly what the service reads.

use std::net::SocketAddr;

use qualifier_config::{
    AllowCidrsArgs, AppBaseUrlArgs, EnvError, PoolSizeArgs, ReplayRateArgs, RetryDelaysArgs,
    SecretKeyArgs, ShutdownGraceArgs, TelemetryArgs, TopologyPrefixArgs, optional, parsed,
    positive, positive_u32, required, topology_prefix, value,
};
use qualifier_store::SecretKey;

const HTTP_ADDR: &str = "0.0.0.0:8080";
const INTERNAL_ADDR: &str = "127.0.0.1:8081";
const RATE_LIMIT: &str = "120";
const EVENT_RETENTION_DAYS: &str = "30";
const MAX_ENDPOINTS_PER_ORG: &str = "10";
const RELAY_BUNDLE_MAX: &str = "32";
const MAX_PAGE_BYTES: &str = "1048576";
const STATEMENT_TIMEOUT_MS: &str = "5000";
const PLAN_CACHE_MODE: &str = "generic";

/// The main pool's default size for a machine of `cpus` CPUs: two sessions a CPU, and two more
/// for what runs beside the requests (the relay, housekeeping, the chart's fold). A session
/// past that does not make PostgreSQL answer sooner: it moves the wait from the pool into the
/// server, where each waiting statement holds a backend, its locks and its share of the cores.
/// On the bench's two-core machine, 6 sessions against 16: 6.4% less CPU per event (5 pairs,
/// every one lower) and p50 latency 30 ms against 43 (docs/performance-log.md, "The API's pool").
fn db_pool_size(cpus: usize) -> usize {
    2 * cpus + 2
}

/// The main pool's size when `QUALIFIER_DB_POOL_SIZE` is not set, on this machine.
pub fn default_db_pool_size() -> usize {
    db_pool_size(cpus())
}

/// The CPUs this process may use (its cgroup's quota included), 2 when unknown.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// lead-api: Qualifier's public and internal HTTP API, and the outbox relay.
///
/// Every option can be given as the environment variable named beside it (the usual way).
#[derive(clap::Parser, Debug, Clone, Default)]
#[command(name = "lead-api", version, about, long_about = None)]
pub struct ApiArgs {
    #[command(flatten)]
    pub connections: qualifier_config::ConnectionArgs,
    /// Public listener (API and console)
    #[arg(long, env = "QUALIFIER_HTTP_ADDR", default_value = HTTP_ADDR, hide_env_values = true)]
    pub http_addr: String,
    /// Internal listener (internal API and /metrics)
    #[arg(long, env = "QUALIFIER_INTERNAL_ADDR", default_value = INTERNAL_ADDR, hide_env_values = true)]
    pub internal_addr: String,
    /// Bearer token of the internal API, at least 16 characters (required)
    #[arg(long, env = "QUALIFIER_INTERNAL_TOKEN", hide_env_values = true)]
    pub internal_token: Option<String>,
    #[command(flatten)]
    pub secret_key: SecretKeyArgs,
    #[command(flatten)]
    pub app_base_url: AppBaseUrlArgs,
    /// Requests per minute per API token (token bucket)
    #[arg(long, env = "QUALIFIER_RATE_LIMIT_PER_MINUTE", default_value = RATE_LIMIT, hide_env_values = true)]
    pub rate_limit_per_minute: String,
    #[command(flatten)]
    pub allow_cidrs: AllowCidrsArgs,
    #[command(flatten)]
    pub db_pool_size: PoolSizeArgs,
    /// HTTP worker threads [default: the number of CPUs]
    #[arg(long, env = "QUALIFIER_HTTP_WORKERS", hide_env_values = true)]
    pub http_workers: Option<String>,
    #[command(flatten)]
    pub topology_prefix: TopologyPrefixArgs,
    /// The relay declares the retry queues, named by their waits.
    #[command(flatten)]
    pub retry_delays: RetryDelaysArgs,
    /// Finished events (and their delivery records) are kept this many days
    #[arg(long, env = "QUALIFIER_EVENT_RETENTION_DAYS", default_value = EVENT_RETENTION_DAYS, hide_env_values = true)]
    pub event_retention_days: String,
    /// The most endpoints one org may have (docs/api.md, "Endpoints")
    #[arg(long, env = "QUALIFIER_MAX_ENDPOINTS_PER_ORG", default_value = MAX_ENDPOINTS_PER_ORG, hide_env_values = true)]
    pub max_endpoints_per_org: String,
    /// The most new deliveries of one org the relay puts in one broker message (a bundle);
    /// 1 sends each in a message of its own, as releases before 0.4.0 did
    #[arg(long, env = "QUALIFIER_RELAY_BUNDLE_MAX", default_value = RELAY_BUNDLE_MAX, hide_env_values = true)]
    pub relay_bundle_max: String,
    #[command(flatten)]
    pub replay_rate: ReplayRateArgs,
    /// The most JSON one page of a list holds, in bytes (a page ends early at a whole item)
    #[arg(long, env = "QUALIFIER_MAX_PAGE_BYTES", default_value = MAX_PAGE_BYTES, hide_env_values = true)]
    pub max_page_bytes: String,
    /// The longest one database statement may run for lead-api, in ms: past it the request
    /// answers 503 with Retry-After
    #[arg(long, env = "QUALIFIER_STATEMENT_TIMEOUT_MS", default_value = STATEMENT_TIMEOUT_MS, hide_env_values = true)]
    pub statement_timeout_ms: String,
    /// How lead-api's sessions plan a prepared statement: `generic` (once per connection),
    /// `custom` (with each call's values) or `auto` (the database's own setting); the reads
    /// whose plan depends on the org's rows ask for custom plans whatever this says
    #[arg(long, env = "QUALIFIER_PLAN_CACHE_MODE", default_value = PLAN_CACHE_MODE, hide_env_values = true)]
    pub plan_cache_mode: String,
    #[command(flatten)]
    pub payload_storage: qualifier_config::PayloadStorageArgs,
    /// Where console sign-in links point [default: the public listener's address]
    #[arg(long, env = "QUALIFIER_CONSOLE_BASE_URL", hide_env_values = true)]
    pub console_base_url: Option<String>,
    /// Origins allowed to embed the console in a frame, comma-separated (for example your
    /// product's https://app.example.com) [default: none, the console refuses every frame]
    #[arg(
        long,
        env = "QUALIFIER_CONSOLE_FRAME_ANCESTORS",
        hide_env_values = true
    )]
    pub console_frame_ancestors: Option<String>,
    #[command(flatten)]
    pub shutdown_grace: ShutdownGraceArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

impl AsRef<TelemetryArgs> for ApiArgs {
    fn as_ref(&self) -> &TelemetryArgs {
        &self.telemetry
    }
}

#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// `DATABASE_URL`, parsed: every connection is opened through it (TLS, several hosts).
    pub database: qualifier_store::Database,
    /// `AMQP_URL` and `QUALIFIER_AMQP_CA_FILE`, parsed.
    pub brokers: qualifier_bus::Brokers,
    pub http_addr: SocketAddr,
    pub internal_addr: SocketAddr,
    pub internal_token: String,
    pub secret_key: SecretKey,
    pub app_base_url: String,
    pub rate_limit_per_minute: u32,
    pub allow_cidrs: Vec<ipnet::IpNet>,
    pub db_pool_size: usize,
    pub http_workers: usize,
    pub topology_prefix: String,
    pub retry_delays_ms: Vec<u64>,
    /// `QUALIFIER_EVENT_RETENTION_DAYS`: events (and their delivery records) are kept at least
    /// this long, then removed by housekeeping.
    pub event_retention_days: u32,
    /// `QUALIFIER_MAX_ENDPOINTS_PER_ORG`: the most endpoints one org may have (422 `Endpoint
    /// limit reached` beyond).
    pub max_endpoints_per_org: usize,
    /// `QUALIFIER_RELAY_BUNDLE_MAX`: the most new deliveries of one org in one broker message
    /// (`qualifier_bus::bundle`); 1: one message per delivery.
    pub relay_bundle_max: usize,
    /// `QUALIFIER_REPLAY_RATE_PER_SECOND`: replays of one org are sent at most this fast.
    pub replay_rate_per_second: u32,
    /// `QUALIFIER_CONSOLE_BASE_URL`: where console sign-in links point; by default the public
    /// listener's own address.
    pub console_base_url: Option<String>,
    /// `QUALIFIER_MAX_PAGE_BYTES`: the byte budget of one list page (docs/api.md, "Lists and the feed").
    pub max_page_bytes: usize,
    /// `QUALIFIER_STATEMENT_TIMEOUT_MS`: every statement of lead-api's pools is cancelled past
    /// it (docs/reliability.md, "Strangers, quotas and pages").
    pub statement_timeout: std::time::Duration,
    /// `QUALIFIER_PLAN_CACHE_MODE`: the `plan_cache_mode` of lead-api's sessions, or `None` to
    /// leave the database's own (`crates/store/src/planner.rs`).
    pub plan_cache_mode: Option<&'static str>,
    /// `QUALIFIER_PAYLOAD_STORAGE`: whether new envelopes are stored compressed
    /// (`qualifier_store::payload`; docs/operations.md, "Compact storage"); `None` for `auto`,
    /// which the database answers at the start.
    pub compress_payloads: Option<bool>,
    /// After SIGTERM: how long in-flight requests have to finish (`QUALIFIER_SHUTDOWN_GRACE_MS`).
    pub shutdown_grace: std::time::Duration,
    /// `QUALIFIER_CONSOLE_FRAME_ANCESTORS`: the origins that may frame the console (empty:
    /// none may).
    pub console_frame_ancestors: Vec<String>,
}

impl ApiConfig {
    /// One process on this machine: both listeners on loopback ports the system picks, one
    /// HTTP worker and a small pool, the documented defaults otherwise (the rate limit, the
    /// retention, the endpoint limit), custom plans (each statement planned for its values,
    /// as the plan tests expect) and envelopes stored uncompressed. What the integration tests
    /// and the bench start from, changing the fields they are about.
    pub fn local(
        database: qualifier_store::Database,
        brokers: qualifier_bus::Brokers,
        secret_key: SecretKey,
        topology_prefix: String,
        retry_delays_ms: Vec<u64>,
        internal_token: String,
    ) -> ApiConfig {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        ApiConfig {
            database,
            brokers,
            http_addr: loopback,
            internal_addr: loopback,
            internal_token,
            secret_key,
            app_base_url: "https://app.qualifier.test".into(),
            rate_limit_per_minute: 120,
            allow_cidrs: Vec::new(),
            db_pool_size: 4,
            http_workers: 1,
            topology_prefix,
            retry_delays_ms,
            event_retention_days: 30,
            max_endpoints_per_org: 10,
            relay_bundle_max: 32,
            replay_rate_per_second: 50,
            console_base_url: None,
            max_page_bytes: crate::page::DEFAULT_MAX_PAGE_BYTES,
            statement_timeout: std::time::Duration::from_secs(5),
            plan_cache_mode: Some("force_custom_plan"),
            compress_payloads: Some(false),
            shutdown_grace: std::time::Duration::from_secs(30),
            console_frame_ancestors: Vec::new(),
        }
    }

    /// Validates what clap read; the first problem found names its variable.
    pub fn from_args(a: &ApiArgs) -> Result<ApiConfig, EnvError> {
        let secret_key = SecretKey::from_base64(&a.secret_key.required()?)
            .map_err(|e| EnvError::new(qualifier_config::SECRET_KEY, e.to_string()))?;
        let internal_token = required("QUALIFIER_INTERNAL_TOKEN", &a.internal_token)?;
        if internal_token.len() < 16 {
            return Err(EnvError::new(
                "QUALIFIER_INTERNAL_TOKEN",
                "must be at least 16 characters",
            ));
        }
        let app_base_url = value(
            &a.app_base_url.app_base_url,
            qualifier_config::DEFAULT_APP_BASE_URL,
        )
        .to_owned();
        url::Url::parse(&app_base_url)
            .map_err(|e| EnvError::new("QUALIFIER_APP_BASE_URL", format!("is not a URL: {e}")))?;
        Ok(ApiConfig {
            database: qualifier_store::Database::from_url(
                &a.connections.database_url()?,
                "lead-api",
            )
            .map_err(|p| EnvError::new("DATABASE_URL", p.to_string()))?,
            brokers: {
                let (urls, ca_file) = a.connections.amqp()?;
                qualifier_bus::Brokers::parse(&urls, ca_file)
                    .map_err(|e| EnvError::new(e.var, e.problem))?
            },
            http_addr: parsed("QUALIFIER_HTTP_ADDR", value(&a.http_addr, HTTP_ADDR))?,
            internal_addr: parsed(
                "QUALIFIER_INTERNAL_ADDR",
                value(&a.internal_addr, INTERNAL_ADDR),
            )?,
            internal_token,
            secret_key,
            app_base_url,
            rate_limit_per_minute: positive_u32(
                "QUALIFIER_RATE_LIMIT_PER_MINUTE",
                value(&a.rate_limit_per_minute, RATE_LIMIT),
            )?,
            allow_cidrs: a.allow_cidrs.cidrs()?,
            db_pool_size: a.db_pool_size.size(default_db_pool_size())?,
            topology_prefix: topology_prefix(&a.topology_prefix.topology_prefix)?,
            retry_delays_ms: a.retry_delays.delays()?,
            event_retention_days: positive_u32(
                "QUALIFIER_EVENT_RETENTION_DAYS",
                value(&a.event_retention_days, EVENT_RETENTION_DAYS),
            )?,
            max_endpoints_per_org: positive_u32(
                "QUALIFIER_MAX_ENDPOINTS_PER_ORG",
                value(&a.max_endpoints_per_org, MAX_ENDPOINTS_PER_ORG),
            )? as usize,
            relay_bundle_max: positive_u32(
                "QUALIFIER_RELAY_BUNDLE_MAX",
                value(&a.relay_bundle_max, RELAY_BUNDLE_MAX),
            )? as usize,
            replay_rate_per_second: a.replay_rate.rate()?,
            max_page_bytes: positive(
                "QUALIFIER_MAX_PAGE_BYTES",
                value(&a.max_page_bytes, MAX_PAGE_BYTES),
            )? as usize,
            shutdown_grace: a.shutdown_grace.grace()?,
            statement_timeout: std::time::Duration::from_millis(positive(
                "QUALIFIER_STATEMENT_TIMEOUT_MS",
                value(&a.statement_timeout_ms, STATEMENT_TIMEOUT_MS),
            )?),
            plan_cache_mode: plan_cache_mode(value(&a.plan_cache_mode, PLAN_CACHE_MODE))?,
            compress_payloads: a.payload_storage.compact()?,
            console_base_url: optional(&a.console_base_url)
                .map(console_base_url)
                .transpose()?,
            console_frame_ancestors: optional(&a.console_frame_ancestors)
                .map(frame_ancestors)
                .transpose()?
                .unwrap_or_default(),
            http_workers: match optional(&a.http_workers) {
                Some(n) => positive("QUALIFIER_HTTP_WORKERS", n)? as usize,
                None => cpus(),
            },
        })
    }
}

/// `generic` is the default: a prepared statement is planned once per connection. The
/// statements every event goes through are key lookups, the same plan for every org, and
/// planning them on each call cost PostgreSQL about a tenth of its CPU per event. A generic
/// plan judges a filter by the average value, so the reads where the org's own rows decide the
/// plan (a list with one status and one type, a dry run's count) ask for custom plans in their
/// transaction (`crates/store/src/planner.rs`); every other list walks the one index that gives
/// its order, which a generic plan does as well as a custom one.
fn plan_cache_mode(v: &str) -> Result<Option<&'static str>, EnvError> {
    match v.trim() {
        "generic" => Ok(Some("force_generic_plan")),
        "custom" => Ok(Some("force_custom_plan")),
        "auto" => Ok(None),
        _ => Err(EnvError::new(
            "QUALIFIER_PLAN_CACHE_MODE",
            "must be generic, custom or auto",
        )),
    }
}

fn console_base_url(u: &str) -> Result<String, EnvError> {
    const VAR: &str = "QUALIFIER_CONSOLE_BASE_URL";
    let parsed =
        url::Url::parse(u).map_err(|e| EnvError::new(VAR, format!("is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(EnvError::new(VAR, "must be an http or https URL"));
    }
    Ok(u.to_owned())
}

/// Each entry must be an origin (scheme, host, optional port), as CSP's `frame-ancestors`
/// takes it; the origin is what goes into the header, re-serialized, so nothing a value holds
/// besides it (a `;`, a path, a quote) can reach the policy.
fn frame_ancestors(raw: &str) -> Result<Vec<String>, EnvError> {
    const VAR: &str = "QUALIFIER_CONSOLE_FRAME_ANCESTORS";
    raw.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let u = url::Url::parse(s).map_err(|_| {
                EnvError::new(
                    VAR,
                    format!("holds {s:?}, which is not an origin such as https://app.example.com"),
                )
            })?;
            let bare = u.path() == "/"
                && u.query().is_none()
                && u.fragment().is_none()
                && u.username().is_empty()
                && u.password().is_none();
            if !matches!(u.scheme(), "https" | "http") || !bare || u.host().is_none() {
                return Err(EnvError::new(
                    VAR,
                    format!("holds {s:?}, which is not an origin such as https://app.example.com"),
                ));
            }
            Ok(u.origin().ascii_serialization())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn frame_ancestors_are_origins_and_nothing_else() {
        let c = ApiConfig::from_args(&args(&[
            "--console-frame-ancestors=https://app.example.com, https://EU.example.com:8443",
        ]))
        .unwrap();
        assert_eq!(
            c.console_frame_ancestors,
            ["https://app.example.com", "https://eu.example.com:8443"]
        );
        assert!(
            ApiConfig::from_args(&args(&[]))
                .unwrap()
                .console_frame_ancestors
                .is_empty()
        );
        for bad in [
            "*",
            "https://app.example.com/settings",
            "https://app.example.com;script-src *",
            "javascript:alert(1)",
            "'self'",
            "https://u:p@app.example.com",
        ] {
            let e = ApiConfig::from_args(&args(&[&format!("--console-frame-ancestors={bad}")]))
                .unwrap_err();
            assert!(
                e.to_string().contains("QUALIFIER_CONSOLE_FRAME_ANCESTORS"),
                "{bad}: {e}"
            );
        }
    }

    fn args(extra: &[&str]) -> ApiArgs {
        let base = [
            "lead-api",
            "--database-url=postgres://x",
            "--amqp-url=amqp://x",
            "--internal-token=0123456789abcdef",
            "--secret-key=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ];
        ApiArgs::try_parse_from(base.iter().chain(extra)).unwrap()
    }

    #[test]
    fn defaults_are_the_contracts() {
        let c = ApiConfig::from_args(&args(&[])).unwrap();
        assert_eq!(c.http_addr.to_string(), "0.0.0.0:8080");
        assert_eq!(c.internal_addr.to_string(), "127.0.0.1:8081");
        assert_eq!(c.rate_limit_per_minute, 120);
        assert_eq!(c.retry_delays_ms, [30_000, 120_000, 480_000, 1_920_000]);
        assert_eq!(c.topology_prefix, "qualifier");
        assert_eq!(c.db_pool_size, 2 * cpus() + 2);
        assert_eq!(db_pool_size(2), 6);
        assert_eq!(db_pool_size(8), 18);
        assert_eq!(c.event_retention_days, 30);
        assert_eq!(c.max_endpoints_per_org, 10);
        assert_eq!(c.replay_rate_per_second, 50);
        assert_eq!(c.console_base_url, None);
        assert_eq!(c.max_page_bytes, 1 << 20);
        assert_eq!(c.plan_cache_mode, Some("force_generic_plan"));
        assert_eq!(c.compress_payloads, None, "auto: the database answers");
    }

    #[test]
    fn envelopes_are_stored_plain_compressed_or_as_the_database_says() {
        let storage = |v: &str| ApiConfig::from_args(&args(&[&format!("--payload-storage={v}")]));
        assert_eq!(storage("compressed").unwrap().compress_payloads, Some(true));
        assert_eq!(storage("plain").unwrap().compress_payloads, Some(false));
        assert_eq!(storage("auto").unwrap().compress_payloads, None);
        for bad in ["true", "zstd", "Compressed", "on"] {
            let e = storage(bad).unwrap_err();
            assert!(
                e.to_string().contains("QUALIFIER_PAYLOAD_STORAGE"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_plan_cache_mode_is_one_of_three() {
        let mode = |v: &str| ApiConfig::from_args(&args(&[&format!("--plan-cache-mode={v}")]));
        assert_eq!(
            mode("generic").unwrap().plan_cache_mode,
            Some("force_generic_plan")
        );
        assert_eq!(mode("auto").unwrap().plan_cache_mode, None);
        // Never passed to PostgreSQL as written: it goes into each session's startup options.
        for bad in ["force_custom_plan", "custom -c work_mem=1GB", "CUSTOM"] {
            let e = mode(bad).unwrap_err();
            assert!(
                e.to_string().contains("QUALIFIER_PLAN_CACHE_MODE"),
                "{bad}: {e}"
            );
        }
    }

    /// The store's own default (what a `Store` built without configuration writes into
    /// snapshots) is the configuration's.
    #[test]
    fn the_app_base_url_has_one_default() {
        let c = ApiConfig::from_args(&args(&[])).unwrap();
        assert_eq!(c.app_base_url, qualifier_store::DEFAULT_APP_BASE_URL);
        assert_eq!(
            qualifier_config::DEFAULT_APP_BASE_URL,
            qualifier_store::DEFAULT_APP_BASE_URL
        );
    }

    #[test]
    fn an_empty_value_counts_as_unset_and_a_bad_one_is_named() {
        let c = ApiConfig::from_args(&args(&["--rate-limit-per-minute="])).unwrap();
        assert_eq!(c.rate_limit_per_minute, 120);
        let e = ApiConfig::from_args(&args(&["--rate-limit-per-minute=0"])).unwrap_err();
        assert_eq!(e.var, "QUALIFIER_RATE_LIMIT_PER_MINUTE");
        let e = ApiConfig::from_args(&args(&["--console-base-url=ftp://x"])).unwrap_err();
        assert_eq!(e.var, "QUALIFIER_CONSOLE_BASE_URL");
        let mut a = args(&[]);
        a.connections.database.database_url = Some(" ".into());
        let e = ApiConfig::from_args(&a).unwrap_err();
        assert_eq!(
            e.to_string(),
            "configuration error: DATABASE_URL is required but not set"
        );
    }
}
