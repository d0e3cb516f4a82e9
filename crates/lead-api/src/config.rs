//! `lead-api` configuration (contract section 1), read and validated once at start.

use std::net::SocketAddr;

use qualifier_config::{
    EnvError, cidrs, optional, parsed, positive, required, retry_delays, topology_prefix,
    with_default,
};
use qualifier_store::SecretKey;

#[derive(Clone, Debug)]
pub struct ApiConfig {
    pub database_url: String,
    pub amqp_url: String,
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
    /// `QUALIFIER_REPLAY_RATE_PER_SECOND`: replays of one org are sent at most this fast.
    pub replay_rate_per_second: u32,
    /// `QUALIFIER_CONSOLE_BASE_URL`: where console sign-in links point; by default the public
    /// listener's own address.
    pub console_base_url: Option<String>,
}

/// A positive number that fits a u32.
fn small(name: &'static str, default: &str) -> Result<u32, EnvError> {
    u32::try_from(positive(name, default)?).map_err(|_| EnvError::new(name, "is too large"))
}

impl ApiConfig {
    pub fn from_env() -> Result<ApiConfig, EnvError> {
        let secret_key = SecretKey::from_base64(&required("QUALIFIER_SECRET_KEY")?)
            .map_err(|e| EnvError::new("QUALIFIER_SECRET_KEY", e.to_string()))?;
        let internal_token = required("QUALIFIER_INTERNAL_TOKEN")?;
        if internal_token.len() < 16 {
            return Err(EnvError::new(
                "QUALIFIER_INTERNAL_TOKEN",
                "must be at least 16 characters",
            ));
        }
        let app_base_url = with_default("QUALIFIER_APP_BASE_URL", "https://app.qualifier.local");
        url::Url::parse(&app_base_url)
            .map_err(|e| EnvError::new("QUALIFIER_APP_BASE_URL", format!("is not a URL: {e}")))?;
        let rate = positive("QUALIFIER_RATE_LIMIT_PER_MINUTE", "120")?;
        Ok(ApiConfig {
            database_url: required("DATABASE_URL")?,
            amqp_url: required("AMQP_URL")?,
            http_addr: parsed("QUALIFIER_HTTP_ADDR", "0.0.0.0:8080")?,
            internal_addr: parsed("QUALIFIER_INTERNAL_ADDR", "127.0.0.1:8081")?,
            internal_token,
            secret_key,
            app_base_url,
            rate_limit_per_minute: u32::try_from(rate)
                .map_err(|_| EnvError::new("QUALIFIER_RATE_LIMIT_PER_MINUTE", "is too large"))?,
            allow_cidrs: cidrs("QUALIFIER_WEBHOOK_ALLOW_CIDRS")?,
            db_pool_size: optional("QUALIFIER_DB_POOL_SIZE").map_or(Ok(16), |_| {
                positive("QUALIFIER_DB_POOL_SIZE", "16").map(|n| n as usize)
            })?,
            topology_prefix: topology_prefix()?,
            retry_delays_ms: retry_delays()?,
            event_retention_days: small("QUALIFIER_EVENT_RETENTION_DAYS", "30")?,
            replay_rate_per_second: small("QUALIFIER_REPLAY_RATE_PER_SECOND", "50")?,
            console_base_url: match optional("QUALIFIER_CONSOLE_BASE_URL") {
                Some(u) => {
                    let parsed = url::Url::parse(&u).map_err(|e| {
                        EnvError::new("QUALIFIER_CONSOLE_BASE_URL", format!("is not a URL: {e}"))
                    })?;
                    if !matches!(parsed.scheme(), "http" | "https") {
                        return Err(EnvError::new(
                            "QUALIFIER_CONSOLE_BASE_URL",
                            "must be an http or https URL",
                        ));
                    }
                    Some(u)
                }
                None => None,
            },
            http_workers: match optional("QUALIFIER_HTTP_WORKERS") {
                Some(_) => positive("QUALIFIER_HTTP_WORKERS", "1")? as usize,
                None => std::thread::available_parallelism().map_or(2, |n| n.get()),
            },
        })
    }
}
