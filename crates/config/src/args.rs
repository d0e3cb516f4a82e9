//! The variables more than one binary reads, each declared once as a clap `Args` struct that
//! the binaries flatten into their own arguments (`lead-api`, `webhook-delivery` and
//! `qualifierctl` share them). A binary's `--help` lists what it flattens; each one's help test
//! (`tests/*/help.rs`) scans the sources that read variables by hand, not these declarations.

use crate::{
    DEFAULT_RETRY_DELAYS, DEFAULT_TOPOLOGY_PREFIX, EnvError, RETRY_DELAYS, TOPOLOGY_PREFIX, cidrs,
    optional, positive, positive_u32, required, retry_delays, value,
};

/// `DATABASE_URL`, for every binary (global in `qualifierctl`, which has subcommands).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DatabaseArgs {
    /// PostgreSQL URL, as libpq takes it: sslmode, sslrootcert, several hosts with
    /// target_session_attrs=read-write (required)
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
}

impl DatabaseArgs {
    /// `DATABASE_URL`, required.
    pub fn database_url(&self) -> Result<String, EnvError> {
        required("DATABASE_URL", &self.database_url)
    }
}

/// `AMQP_URL` and `QUALIFIER_AMQP_CA_FILE`: where RabbitMQ is, and how its TLS is checked.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BrokerArgs {
    /// RabbitMQ URL, or several comma-separated (one per node of one cluster); amqps:// for TLS
    /// (required)
    #[arg(long, env = "AMQP_URL", hide_env_values = true)]
    pub amqp_url: Option<String>,
    /// PEM file of the CA that signs the RabbitMQ nodes' certificates (amqps://), trusted
    /// besides the system roots
    #[arg(long, env = "QUALIFIER_AMQP_CA_FILE", hide_env_values = true)]
    pub amqp_ca_file: Option<String>,
}

impl BrokerArgs {
    /// `AMQP_URL`, required, and `QUALIFIER_AMQP_CA_FILE` if set.
    pub fn amqp(&self) -> Result<(String, Option<&std::path::Path>), EnvError> {
        Ok((
            required("AMQP_URL", &self.amqp_url)?,
            optional(&self.amqp_ca_file).map(std::path::Path::new),
        ))
    }
}

/// Where both services find PostgreSQL and RabbitMQ (docs/operations.md, "Production
/// topology"); each service parses the values into `qualifier_store::Database` and
/// `qualifier_bus::Brokers`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConnectionArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub broker: BrokerArgs,
}

impl ConnectionArgs {
    /// `DATABASE_URL`, required.
    pub fn database_url(&self) -> Result<String, EnvError> {
        self.database.database_url()
    }

    /// `AMQP_URL`, required, and `QUALIFIER_AMQP_CA_FILE` if set.
    pub fn amqp(&self) -> Result<(String, Option<&std::path::Path>), EnvError> {
        self.broker.amqp()
    }
}

pub const SECRET_KEY: &str = "QUALIFIER_SECRET_KEY";

/// `QUALIFIER_SECRET_KEY`, for every binary that seals or opens signing secrets.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SecretKeyArgs {
    /// 32 bytes, base64: seals and opens the signing secrets at rest (required; `qualifierctl
    /// gen-secret-key` prints one)
    #[arg(long, env = SECRET_KEY, global = true, hide_env_values = true)]
    pub secret_key: Option<String>,
}

impl SecretKeyArgs {
    /// The key's text, required.
    pub fn required(&self) -> Result<String, EnvError> {
        required(SECRET_KEY, &self.secret_key)
    }
}

pub const ALLOW_CIDRS: &str = "QUALIFIER_WEBHOOK_ALLOW_CIDRS";

/// `QUALIFIER_WEBHOOK_ALLOW_CIDRS`, wherever an endpoint is checked.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AllowCidrsArgs {
    /// CIDRs exempt from the private-address ban (development and tests only)
    #[arg(long, env = ALLOW_CIDRS, hide_env_values = true)]
    pub webhook_allow_cidrs: Option<String>,
}

impl AllowCidrsArgs {
    pub fn cidrs(&self) -> Result<Vec<ipnet::IpNet>, EnvError> {
        cidrs(
            ALLOW_CIDRS,
            optional(&self.webhook_allow_cidrs).unwrap_or(""),
        )
    }
}

pub const DEFAULT_APP_BASE_URL: &str = "https://app.qualifier.local";

/// `QUALIFIER_APP_BASE_URL`, wherever a lead snapshot is written.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AppBaseUrlArgs {
    /// Base of conversation_url ({base}/conversations/{lead_id})
    #[arg(long, env = "QUALIFIER_APP_BASE_URL", global = true, default_value = DEFAULT_APP_BASE_URL, hide_env_values = true)]
    pub app_base_url: String,
}

/// `QUALIFIER_DB_POOL_SIZE`: each service has its own default (its `from_args` says which).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PoolSizeArgs {
    /// PostgreSQL connections of the main pool [default: lead-api two a CPU and two more;
    /// webhook-delivery half the delivery concurrency, from 4 to 32]
    #[arg(long, env = "QUALIFIER_DB_POOL_SIZE", hide_env_values = true)]
    pub db_pool_size: Option<String>,
}

impl PoolSizeArgs {
    /// The size set, or `default`.
    pub fn size(&self, default: usize) -> Result<usize, EnvError> {
        match optional(&self.db_pool_size) {
            Some(n) => Ok(positive("QUALIFIER_DB_POOL_SIZE", n)? as usize),
            None => Ok(default),
        }
    }
}

/// `QUALIFIER_TOPOLOGY_PREFIX`, for both services.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TopologyPrefixArgs {
    /// Prefix of every exchange and queue name
    #[arg(long, env = TOPOLOGY_PREFIX, default_value = DEFAULT_TOPOLOGY_PREFIX, hide_env_values = true)]
    pub topology_prefix: String,
}

/// `QUALIFIER_RETRY_DELAYS_MS`: the retry queues are named by their waits, so every binary that
/// declares or deletes them reads it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RetryDelaysArgs {
    /// The 4 waits before attempts 2..5, in ms
    #[arg(long, env = RETRY_DELAYS, default_value = DEFAULT_RETRY_DELAYS, hide_env_values = true)]
    pub retry_delays_ms: String,
}

impl RetryDelaysArgs {
    pub fn delays(&self) -> Result<Vec<u64>, EnvError> {
        retry_delays(&self.retry_delays_ms)
    }
}

pub const REPLAY_RATE: &str = "QUALIFIER_REPLAY_RATE_PER_SECOND";
pub const DEFAULT_REPLAY_RATE: &str = "50";

/// `QUALIFIER_REPLAY_RATE_PER_SECOND`, wherever replays are scheduled.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ReplayRateArgs {
    /// Replays of one org are sent at most this many per second
    #[arg(long, env = REPLAY_RATE, default_value = DEFAULT_REPLAY_RATE, hide_env_values = true)]
    pub replay_rate_per_second: String,
}

impl ReplayRateArgs {
    pub fn rate(&self) -> Result<u32, EnvError> {
        positive_u32(
            REPLAY_RATE,
            value(&self.replay_rate_per_second, DEFAULT_REPLAY_RATE),
        )
    }
}

/// `QUALIFIER_SHUTDOWN_GRACE_MS`: how long a service given SIGTERM takes at most to finish what
/// it has in flight (docs/operations.md, "Upgrading").
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ShutdownGraceArgs {
    /// After SIGTERM, the longest the service takes to finish in-flight work before it exits,
    /// in ms (HTTP requests answered; deliveries' outcomes recorded; the rest goes back to the
    /// queue)
    #[arg(
        long,
        env = "QUALIFIER_SHUTDOWN_GRACE_MS",
        default_value = "30000",
        hide_env_values = true
    )]
    pub shutdown_grace_ms: String,
}

impl ShutdownGraceArgs {
    pub fn grace(&self) -> Result<std::time::Duration, EnvError> {
        Ok(std::time::Duration::from_millis(positive(
            "QUALIFIER_SHUTDOWN_GRACE_MS",
            value(&self.shutdown_grace_ms, "30000"),
        )?))
    }
}

/// `QUALIFIER_PAYLOAD_STORAGE`: the form new rows of the outbox are stored in, read by every
/// binary that writes them (`lead-api` the envelopes, `webhook-delivery` the attempt logs,
/// `qualifierctl` both; docs/operations.md, "Compact storage").
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PayloadStorageArgs {
    /// How new outbox rows are stored: `plain` (envelopes as sent, attempt entries with their
    /// field names whole), `compressed` (envelopes compressed, attempt entries with short
    /// keys: about half the bytes; every replica must run a version that reads it first) or
    /// `auto` (compressed on a database `qualifierctl migrate` created, plain on one it upgraded)
    #[arg(
        long,
        env = "QUALIFIER_PAYLOAD_STORAGE",
        default_value = PAYLOAD_STORAGE,
        global = true,
        hide_env_values = true
    )]
    pub payload_storage: String,
}

/// `auto`: a database a version before the compact form has used stays plain until the
/// operator says otherwise, and a new one is compact from its first row.
const PAYLOAD_STORAGE: &str = "auto";

impl PayloadStorageArgs {
    /// `Some(true)` for `compressed`, `Some(false)` for `plain`, `None` for `auto`, which the
    /// database answers (`Store::with_payload_storage` in `qualifier_store`).
    pub fn compact(&self) -> Result<Option<bool>, EnvError> {
        match value(&self.payload_storage, PAYLOAD_STORAGE).trim() {
            "plain" => Ok(Some(false)),
            "compressed" => Ok(Some(true)),
            "auto" => Ok(None),
            _ => Err(EnvError::new(
                "QUALIFIER_PAYLOAD_STORAGE",
                "must be auto, plain or compressed",
            )),
        }
    }
}
