//! Configuration from the environment (docs/operations.md, "Configuration").
//!
//! Each binary declares its variables once with clap (`env` on every argument), so `--help` is
//! generated and lists exactly what it reads. Every check below names its variable in its error,
//! and each binary validates all of its configuration once at start: a missing or malformed variable stops the process with one line
//! such as `configuration error: QUALIFIER_SECRET_KEY must decode to 32 bytes, got 3`.

use std::fmt;
use std::str::FromStr;

mod args;
pub use args::{
    ALLOW_CIDRS, AllowCidrsArgs, AppBaseUrlArgs, BrokerArgs, ConnectionArgs, DEFAULT_APP_BASE_URL,
    DEFAULT_REPLAY_RATE, DatabaseArgs, PayloadStorageArgs, PoolSizeArgs, REPLAY_RATE,
    ReplayRateArgs, RetryDelaysArgs, SECRET_KEY, SecretKeyArgs, ShutdownGraceArgs,
    TopologyPrefixArgs,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    pub var: &'static str,
    pub problem: String,
}

impl EnvError {
    pub fn new(var: &'static str, problem: impl Into<String>) -> Self {
        EnvError {
            var,
            problem: problem.into(),
        }
    }
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "configuration error: {} {}", self.var, self.problem)
    }
}

impl std::error::Error for EnvError {}

/// Each service declares its variables once, as clap arguments with `env` (so `--help` is
/// generated from what the program reads and cannot drift); the helpers below validate the
/// values clap read and name the variable in every error. An empty value counts as unset, as
/// it does for most shells' `VAR=` lines (clap would otherwise take `""` as the value).
pub fn value<'a>(raw: &'a str, default: &'a str) -> &'a str {
    if raw.trim().is_empty() { default } else { raw }
}

/// An optional variable's value, `None` when unset or empty.
pub fn optional(raw: &Option<String>) -> Option<&str> {
    raw.as_deref().filter(|v| !v.trim().is_empty())
}

pub fn required(var: &'static str, raw: &Option<String>) -> Result<String, EnvError> {
    optional(raw)
        .map(str::to_owned)
        .ok_or_else(|| EnvError::new(var, "is required but not set"))
}

pub fn parsed<T: FromStr>(var: &'static str, v: &str) -> Result<T, EnvError>
where
    T::Err: fmt::Display,
{
    v.trim()
        .parse()
        .map_err(|e| EnvError::new(var, format!("is malformed ({v:?}): {e}")))
}

/// A positive integer (0 would disable the thing it sizes).
pub fn positive(var: &'static str, v: &str) -> Result<u64, EnvError> {
    let n: u64 = parsed(var, v)?;
    if n == 0 {
        Err(EnvError::new(var, "must be at least 1"))
    } else {
        Ok(n)
    }
}

/// A positive number that fits a u32.
pub fn positive_u32(var: &'static str, v: &str) -> Result<u32, EnvError> {
    u32::try_from(positive(var, v)?).map_err(|_| EnvError::new(var, "is too large"))
}

/// A comma-separated list of CIDRs (a bare address counts as a /32 or /128).
pub fn cidrs(var: &'static str, v: &str) -> Result<Vec<ipnet::IpNet>, EnvError> {
    parse_cidrs(v).map_err(|e| EnvError::new(var, e.to_string()))
}

/// A part of a CIDR list that is neither a CIDR nor an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("has an invalid CIDR {0:?}")]
pub struct InvalidCidr(pub String);

pub fn parse_cidrs(s: &str) -> Result<Vec<ipnet::IpNet>, InvalidCidr> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<ipnet::IpNet>()
                .or_else(|_| p.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| InvalidCidr(p.to_owned()))
        })
        .collect()
}

/// A comma-separated list of millisecond durations.
pub fn millis_list(var: &'static str, v: &str) -> Result<Vec<u64>, EnvError> {
    v.split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .map_err(|_| EnvError::new(var, format!("has an invalid number {p:?}")))
        })
        .collect()
}

pub const TOPOLOGY_PREFIX: &str = "QUALIFIER_TOPOLOGY_PREFIX";
pub const DEFAULT_TOPOLOGY_PREFIX: &str = "qualifier";

/// `QUALIFIER_TOPOLOGY_PREFIX`: letters, digits, `.`, `_`, `-` (it becomes part of queue names).
pub fn topology_prefix(raw: &str) -> Result<String, EnvError> {
    let p = value(raw, DEFAULT_TOPOLOGY_PREFIX).to_owned();
    if p.len() > 100
        || !p
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(EnvError::new(
            TOPOLOGY_PREFIX,
            "must be 1-100 of [A-Za-z0-9._-]",
        ));
    }
    Ok(p)
}

pub const RETRY_DELAYS: &str = "QUALIFIER_RETRY_DELAYS_MS";
pub const DEFAULT_RETRY_DELAYS: &str = "30000,120000,480000,1920000";

/// `QUALIFIER_RETRY_DELAYS_MS`: exactly the 4 waits before attempts 2..5.
pub fn retry_delays(raw: &str) -> Result<Vec<u64>, EnvError> {
    let d = millis_list(RETRY_DELAYS, value(raw, DEFAULT_RETRY_DELAYS))?;
    if d.len() != 4 || d.contains(&0) {
        return Err(EnvError::new(
            RETRY_DELAYS,
            "must be 4 positive millisecond waits (attempts 2..5)",
        ));
    }
    Ok(d)
}

/// The variables of logging and tracing, shared by both services (read by the telemetry crate).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TelemetryArgs {
    /// Log filter, as tracing's EnvFilter reads it (the default: qualifier_telemetry's
    /// `DEFAULT_LOG`, which says why lapin's channel log is off)
    #[arg(
        long = "log",
        env = "RUST_LOG",
        default_value = "info,lapin::channels=off",
        hide_env_values = true
    )]
    pub rust_log: String,
    /// Log line format: json or pretty
    #[arg(
        long,
        env = "QUALIFIER_LOG_FORMAT",
        default_value = "json",
        hide_env_values = true
    )]
    pub log_format: String,
    /// Export traces over OTLP/gRPC to this endpoint when set
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", hide_env_values = true)]
    pub otel_exporter_otlp_endpoint: Option<String>,
}

/// The names of the environment variables a clap command reads, in declaration order (the
/// `--help` test compares them with what the binary prints).
pub fn env_names(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect()
}

/// What a service's start gave, or, when it failed, the reason on standard error and exit
/// status 1 (an orchestrator restarts it; nothing half-started keeps running).
pub fn started_or_exit<T, E: std::fmt::Display>(service: &str, started: Result<T, E>) -> T {
    started.unwrap_or_else(|e| {
        eprintln!("{service} failed to start: {e}");
        std::process::exit(1);
    })
}

/// Resolves on SIGTERM (orchestrators) or Ctrl-C (developers).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_accept_nets_and_bare_addresses() {
        let v = parse_cidrs(" 127.0.0.0/8, ::1 ,10.0.0.1").unwrap();
        assert_eq!(v.len(), 3);
        assert!(v[1].contains(&"::1".parse::<std::net::IpAddr>().unwrap()));
        assert!(parse_cidrs("").unwrap().is_empty());
        assert!(parse_cidrs("10.0.0.0/33").is_err());
    }

    #[test]
    fn error_names_the_variable() {
        let e = EnvError::new("DATABASE_URL", "is required but not set");
        assert_eq!(
            e.to_string(),
            "configuration error: DATABASE_URL is required but not set"
        );
    }
}
