//! `webhook-delivery` configuration (contract section 1).

use std::net::SocketAddr;
use std::path::PathBuf;

use qualifier_config::{
    EnvError, cidrs, optional, parsed, positive, required, retry_delays, topology_prefix,
};
use qualifier_store::SecretKey;

#[derive(Clone, Debug)]
pub struct DeliveryConfig {
    pub database_url: String,
    pub amqp_url: String,
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
    pub db_pool_size: usize,
}

impl DeliveryConfig {
    pub fn from_env() -> Result<DeliveryConfig, EnvError> {
        let secret_key = SecretKey::from_base64(&required("QUALIFIER_SECRET_KEY")?)
            .map_err(|e| EnvError::new("QUALIFIER_SECRET_KEY", e.to_string()))?;
        let concurrency = positive("QUALIFIER_DELIVERY_CONCURRENCY", "64")? as usize;
        let ca_file = optional("QUALIFIER_WEBHOOK_CA_FILE").map(PathBuf::from);
        if let Some(p) = &ca_file
            && !p.is_file()
        {
            return Err(EnvError::new(
                "QUALIFIER_WEBHOOK_CA_FILE",
                format!("is not a readable file: {}", p.display()),
            ));
        }
        Ok(DeliveryConfig {
            database_url: required("DATABASE_URL")?,
            amqp_url: required("AMQP_URL")?,
            secret_key,
            topology_prefix: topology_prefix()?,
            addr: parsed("QUALIFIER_DELIVERY_ADDR", "127.0.0.1:8082")?,
            concurrency,
            // Default: a quarter of the slots, so at least four orgs with hanging endpoints are
            // needed to fill a process, and a healthy org still gets 16 at once.
            org_concurrency: optional("QUALIFIER_DELIVERY_ORG_CONCURRENCY")
                .map_or(Ok((concurrency / 4).max(1) as u64), |_| {
                    positive("QUALIFIER_DELIVERY_ORG_CONCURRENCY", "16")
                })? as usize,
            timeout_ms: positive("QUALIFIER_DELIVERY_TIMEOUT_MS", "10000")?,
            retry_delays_ms: retry_delays()?,
            allow_cidrs: cidrs("QUALIFIER_WEBHOOK_ALLOW_CIDRS")?,
            ca_file,
            // Each in-flight delivery uses a connection for its reads and its outcome write.
            db_pool_size: optional("QUALIFIER_DB_POOL_SIZE")
                .map_or(Ok((concurrency / 2).clamp(4, 32) as u64), |_| {
                    positive("QUALIFIER_DB_POOL_SIZE", "16")
                })? as usize,
        })
    }
}
