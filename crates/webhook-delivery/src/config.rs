//! `webhook-delivery` configuration (docs/operations.md, "Configuration"): every variable
//! declared once, as a clap argument with `env` (below, or in `qualifier-config` when another
//! binary reads it too), then validated once at start into [`DeliveryConfig`]. `--help` is
//! generated from the same declarations.

use std::net::SocketAddr;
use std::path::PathBuf;

use qualifier_config::{
    AllowCidrsArgs, EnvError, PoolSizeArgs, RetryDelaysArgs, SecretKeyArgs, ShutdownGraceArgs,
    TelemetryArgs, TopologyPrefixArgs, optional, parsed, positive, topology_prefix, value,
};
use qualifier_store::SecretKey;

const ADDR: &str = "127.0.0.1:8082";
const CONCURRENCY: &str = "64";
const TIMEOUT_MS: &str = "10000";
const FAILING_AFTER: &str = "3";
const FAILING_SPAN_MS: &str = "60000";
const PROBE_MIN_MS: &str = "5000";
const PROBE_MAX_MS: &str = "900000";
const DISABLE_AFTER_S: &str = "432000";

/// webhook-delivery: consumes Qualifier events and delivers signed webhooks.
///
/// Every option can be given as the environment variable named beside it (the usual way).
#[derive(clap::Parser, Debug, Clone, Default)]
#[command(name = "webhook-delivery", version, about, long_about = None)]
pub struct DeliveryArgs {
    #[command(flatten)]
    pub connections: qualifier_config::ConnectionArgs,
    #[command(flatten)]
    pub secret_key: SecretKeyArgs,
    #[command(flatten)]
    pub topology_prefix: TopologyPrefixArgs,
    /// /healthz, /readyz and /metrics listener
    #[arg(long, env = "QUALIFIER_DELIVERY_ADDR", default_value = ADDR, hide_env_values = true)]
    pub delivery_addr: String,
    /// In-flight deliveries per process
    #[arg(long, env = "QUALIFIER_DELIVERY_CONCURRENCY", default_value = CONCURRENCY, hide_env_values = true)]
    pub delivery_concurrency: String,
    /// The most of them one org may always hold [default: a quarter of the concurrency]
    #[arg(
        long,
        env = "QUALIFIER_DELIVERY_ORG_CONCURRENCY",
        hide_env_values = true
    )]
    pub delivery_org_concurrency: Option<String>,
    /// Whole-request timeout of one attempt, in ms
    #[arg(long, env = "QUALIFIER_DELIVERY_TIMEOUT_MS", default_value = TIMEOUT_MS, hide_env_values = true)]
    pub delivery_timeout_ms: String,
    #[command(flatten)]
    pub retry_delays: RetryDelaysArgs,
    #[command(flatten)]
    pub allow_cidrs: AllowCidrsArgs,
    /// Extra PEM roots trusted for endpoints (development and tests only)
    #[arg(long, env = "QUALIFIER_WEBHOOK_CA_FILE", hide_env_values = true)]
    pub webhook_ca_file: Option<String>,
    /// http://[user:pass@]host:port forward proxy every request to endpoints leaves through
    /// (CONNECT to the checked address) [default: none]
    #[arg(long, env = "QUALIFIER_EGRESS_PROXY", hide_env_values = true)]
    pub egress_proxy: Option<String>,
    #[command(flatten)]
    pub db_pool_size: PoolSizeArgs,
    #[command(flatten)]
    pub shutdown_grace: ShutdownGraceArgs,
    /// Failures in a row that make an endpoint failing (its deliveries wait, probes start)
    #[arg(long, env = "QUALIFIER_ENDPOINT_FAILING_AFTER", default_value = FAILING_AFTER, hide_env_values = true)]
    pub endpoint_failing_after: String,
    /// ...with the first and the last at least this far apart, in ms
    #[arg(long, env = "QUALIFIER_ENDPOINT_FAILING_SPAN_MS", default_value = FAILING_SPAN_MS, hide_env_values = true)]
    pub endpoint_failing_span_ms: String,
    /// The first probe's wait, in ms; each failed probe doubles it
    #[arg(long, env = "QUALIFIER_ENDPOINT_PROBE_MIN_MS", default_value = PROBE_MIN_MS, hide_env_values = true)]
    pub endpoint_probe_min_ms: String,
    /// The longest wait between probes, in ms
    #[arg(long, env = "QUALIFIER_ENDPOINT_PROBE_MAX_MS", default_value = PROBE_MAX_MS, hide_env_values = true)]
    pub endpoint_probe_max_ms: String,
    /// An endpoint failing this long, in seconds, is disabled
    #[arg(long, env = "QUALIFIER_ENDPOINT_DISABLE_AFTER_S", default_value = DISABLE_AFTER_S, hide_env_values = true)]
    pub endpoint_disable_after_s: String,
    /// Where endpoint.failing, endpoint.recovered and endpoint.disabled are POSTed [default: nowhere]
    #[arg(long, env = "QUALIFIER_OPERATOR_WEBHOOK_URL", hide_env_values = true)]
    pub operator_webhook_url: Option<String>,
    /// whsec_... secret that signs them (Standard Webhooks); required with the url
    #[arg(
        long,
        env = "QUALIFIER_OPERATOR_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    pub operator_webhook_secret: Option<String>,
    #[command(flatten)]
    pub payload_storage: qualifier_config::PayloadStorageArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

impl AsRef<TelemetryArgs> for DeliveryArgs {
    fn as_ref(&self) -> &TelemetryArgs {
        &self.telemetry
    }
}

#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    /// `DATABASE_URL`, parsed: every connection is opened through it (TLS, several hosts).
    pub database: qualifier_store::Database,
    /// `AMQP_URL` and `QUALIFIER_AMQP_CA_FILE`, parsed.
    pub brokers: qualifier_bus::Brokers,
    pub secret_key: SecretKey,
    pub topology_prefix: String,
    pub addr: SocketAddr,
    pub concurrency: usize,
    /// The most of this process's slots one org may hold (its extra messages are parked).
    pub org_concurrency: usize,
    pub timeout_ms: u64,
    pub retry_delays_ms: Vec<u64>,
    pub allow_cidrs: Vec<ipnet::IpNet>,
    pub ca_file: Option<PathBuf>,
    /// `QUALIFIER_EGRESS_PROXY`, parsed (its `Debug` hides the credentials).
    pub egress_proxy: Option<qualifier_egress::proxy::EgressProxy>,
    pub db_pool_size: usize,
    pub health: crate::decide::HealthRules,
    /// The operator's webhook and its secret's key bytes.
    pub operator_webhook: Option<(url::Url, Vec<u8>)>,
    /// After SIGTERM: how long in-flight deliveries have to finish and record their outcome
    /// (`QUALIFIER_SHUTDOWN_GRACE_MS`); what is left goes back to the queue.
    pub shutdown_grace: std::time::Duration,
    /// `QUALIFIER_PAYLOAD_STORAGE=compressed`: attempt entries are stored with short keys
    /// (`qualifier_domain::delivery::AttemptEntry::stored`); `None` for `auto`, which the
    /// database answers at the start.
    pub compact_storage: Option<bool>,
}

impl DeliveryConfig {
    /// Validates what clap read; the first problem found names its variable.
    pub fn from_args(a: &DeliveryArgs) -> Result<DeliveryConfig, EnvError> {
        let secret_key = SecretKey::from_base64(&a.secret_key.required()?)
            .map_err(|e| EnvError::new(qualifier_config::SECRET_KEY, e.to_string()))?;
        let concurrency = positive(
            "QUALIFIER_DELIVERY_CONCURRENCY",
            value(&a.delivery_concurrency, CONCURRENCY),
        )? as usize;
        let ca_file = optional(&a.webhook_ca_file).map(PathBuf::from);
        if let Some(p) = &ca_file
            && !p.is_file()
        {
            return Err(EnvError::new(
                "QUALIFIER_WEBHOOK_CA_FILE",
                format!("is not a readable file: {}", p.display()),
            ));
        }
        let ms = |var, raw: &str, default| {
            positive(var, value(raw, default)).map(std::time::Duration::from_millis)
        };
        let health = crate::decide::HealthRules {
            failing_after: qualifier_config::positive_u32(
                "QUALIFIER_ENDPOINT_FAILING_AFTER",
                value(&a.endpoint_failing_after, FAILING_AFTER),
            )?,
            failing_span: ms(
                "QUALIFIER_ENDPOINT_FAILING_SPAN_MS",
                &a.endpoint_failing_span_ms,
                FAILING_SPAN_MS,
            )?,
            probe_min: ms(
                "QUALIFIER_ENDPOINT_PROBE_MIN_MS",
                &a.endpoint_probe_min_ms,
                PROBE_MIN_MS,
            )?,
            probe_max: ms(
                "QUALIFIER_ENDPOINT_PROBE_MAX_MS",
                &a.endpoint_probe_max_ms,
                PROBE_MAX_MS,
            )?,
            disable_after: std::time::Duration::from_secs(positive(
                "QUALIFIER_ENDPOINT_DISABLE_AFTER_S",
                value(&a.endpoint_disable_after_s, DISABLE_AFTER_S),
            )?),
        };
        if health.probe_max < health.probe_min {
            return Err(EnvError::new(
                "QUALIFIER_ENDPOINT_PROBE_MAX_MS",
                "must be at least QUALIFIER_ENDPOINT_PROBE_MIN_MS",
            ));
        }
        let operator_webhook = match optional(&a.operator_webhook_url) {
            None => None,
            Some(u) => {
                const VAR: &str = "QUALIFIER_OPERATOR_WEBHOOK_URL";
                let url = url::Url::parse(u)
                    .map_err(|e| EnvError::new(VAR, format!("is not a URL: {e}")))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(EnvError::new(VAR, "must be an http or https URL"));
                }
                let key = optional(&a.operator_webhook_secret)
                    .and_then(qualifier_signing::standard::whsec_key)
                    .ok_or_else(|| {
                        EnvError::new(
                            "QUALIFIER_OPERATOR_WEBHOOK_SECRET",
                            "must be a whsec_<base64> secret when QUALIFIER_OPERATOR_WEBHOOK_URL is set",
                        )
                    })?;
                Some((url, key))
            }
        };
        Ok(DeliveryConfig {
            compact_storage: a.payload_storage.compact()?,
            health,
            operator_webhook,
            shutdown_grace: a.shutdown_grace.grace()?,
            database: qualifier_store::Database::from_url(
                &a.connections.database_url()?,
                "webhook-delivery",
            )
            .map_err(|p| EnvError::new("DATABASE_URL", p.to_string()))?,
            brokers: {
                let (urls, ca_file) = a.connections.amqp()?;
                qualifier_bus::Brokers::parse(&urls, ca_file)
                    .map_err(|e| EnvError::new(e.var, e.problem))?
            },
            secret_key,
            topology_prefix: topology_prefix(&a.topology_prefix.topology_prefix)?,
            addr: parsed("QUALIFIER_DELIVERY_ADDR", value(&a.delivery_addr, ADDR))?,
            concurrency,
            // Default: a quarter of the slots, counted across an org's endpoints (`gate.rs`), so
            // at least four orgs with hanging endpoints are needed to fill a process however
            // many endpoints each has, and a healthy org still gets 16 at once.
            org_concurrency: match optional(&a.delivery_org_concurrency) {
                Some(n) => positive("QUALIFIER_DELIVERY_ORG_CONCURRENCY", n)? as usize,
                None => (concurrency / 4).max(1),
            },
            timeout_ms: positive(
                "QUALIFIER_DELIVERY_TIMEOUT_MS",
                value(&a.delivery_timeout_ms, TIMEOUT_MS),
            )?,
            retry_delays_ms: a.retry_delays.delays()?,
            allow_cidrs: a.allow_cidrs.cidrs()?,
            ca_file,
            egress_proxy: match optional(&a.egress_proxy) {
                Some(raw) => Some(
                    qualifier_egress::proxy::EgressProxy::parse(raw)
                        .map_err(|e| EnvError::new("QUALIFIER_EGRESS_PROXY", e.to_string()))?,
                ),
                None => None,
            },
            // Each in-flight delivery uses a connection for its reads and its outcome write.
            db_pool_size: a.db_pool_size.size((concurrency / 2).clamp(4, 32))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> DeliveryArgs {
        let base = [
            "webhook-delivery",
            "--database-url=postgres://x",
            "--amqp-url=amqp://x",
            "--secret-key=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ];
        DeliveryArgs::try_parse_from(base.iter().chain(extra)).unwrap()
    }

    #[test]
    fn derived_defaults_follow_the_concurrency() {
        let c = DeliveryConfig::from_args(&args(&[])).unwrap();
        assert_eq!(
            (c.concurrency, c.org_concurrency, c.db_pool_size),
            (64, 16, 32)
        );
        assert_eq!(c.timeout_ms, 10_000);
        assert_eq!(c.addr.to_string(), "127.0.0.1:8082");
        let c = DeliveryConfig::from_args(&args(&["--delivery-concurrency=8"])).unwrap();
        assert_eq!((c.org_concurrency, c.db_pool_size), (2, 4));
        let c = DeliveryConfig::from_args(&args(&["--db-pool-size=3"])).unwrap();
        assert_eq!(c.db_pool_size, 3);
    }

    /// Every default of the delivery rules is the configuration's default: a rule tested with
    /// `HealthRules::default()` is the rule a deployment without settings runs.
    #[test]
    fn the_rules_defaults_are_the_configurations() {
        let c = DeliveryConfig::from_args(&args(&[])).unwrap();
        assert_eq!(c.health, crate::decide::HealthRules::default());
        assert_eq!(
            c.retry_delays_ms,
            [30_000, 120_000, 480_000, 1_920_000],
            "the waits before attempts 2..5"
        );
        assert_eq!(
            c.retry_delays_ms.len() + 1,
            crate::decide::MAX_ATTEMPTS as usize,
            "one wait before each attempt after the first"
        );
    }

    #[test]
    fn a_bad_value_is_named() {
        let e = DeliveryConfig::from_args(&args(&["--retry-delays-ms=1,2"])).unwrap_err();
        assert_eq!(e.var, "QUALIFIER_RETRY_DELAYS_MS");
        let e = DeliveryConfig::from_args(&args(&["--webhook-ca-file=/nonexistent"])).unwrap_err();
        assert_eq!(e.var, "QUALIFIER_WEBHOOK_CA_FILE");
    }
}
