//! Configuration from the environment (contract section 1).
//!
//! Every reader names its variable in its error, and each binary validates all of its
//! configuration once at start: a missing or malformed variable stops the process with one line
//! such as `configuration error: QUALIFIER_SECRET_KEY must decode to 32 bytes, got 3`.

use std::fmt;
use std::str::FromStr;

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

/// Reads a variable; empty counts as unset, as it does for most shells' `VAR=` lines.
fn raw(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

pub fn required(var: &'static str) -> Result<String, EnvError> {
    raw(var).ok_or_else(|| EnvError::new(var, "is required but not set"))
}

pub fn optional(var: &'static str) -> Option<String> {
    raw(var)
}

pub fn with_default(var: &'static str, default: &str) -> String {
    raw(var).unwrap_or_else(|| default.to_owned())
}

pub fn parsed<T: FromStr>(var: &'static str, default: &str) -> Result<T, EnvError>
where
    T::Err: fmt::Display,
{
    let v = with_default(var, default);
    v.trim()
        .parse()
        .map_err(|e| EnvError::new(var, format!("is malformed ({v:?}): {e}")))
}

/// A positive integer (0 would disable the thing it sizes).
pub fn positive(var: &'static str, default: &str) -> Result<u64, EnvError> {
    let n: u64 = parsed(var, default)?;
    if n == 0 {
        Err(EnvError::new(var, "must be at least 1"))
    } else {
        Ok(n)
    }
}

/// A comma-separated list of CIDRs (a bare address counts as a /32 or /128).
pub fn cidrs(var: &'static str) -> Result<Vec<ipnet::IpNet>, EnvError> {
    parse_cidrs(&with_default(var, "")).map_err(|e| EnvError::new(var, e))
}

pub fn parse_cidrs(s: &str) -> Result<Vec<ipnet::IpNet>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<ipnet::IpNet>()
                .or_else(|_| p.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("has an invalid CIDR {p:?}"))
        })
        .collect()
}

/// A comma-separated list of millisecond durations.
pub fn millis_list(var: &'static str, default: &str) -> Result<Vec<u64>, EnvError> {
    with_default(var, default)
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .map_err(|_| EnvError::new(var, format!("has an invalid number {p:?}")))
        })
        .collect()
}

/// `QUALIFIER_TOPOLOGY_PREFIX`: letters, digits, `.`, `_`, `-` (it becomes part of queue names).
pub fn topology_prefix() -> Result<String, EnvError> {
    let p = with_default("QUALIFIER_TOPOLOGY_PREFIX", "qualifier");
    if p.len() > 100
        || !p
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(EnvError::new(
            "QUALIFIER_TOPOLOGY_PREFIX",
            "must be 1-100 of [A-Za-z0-9._-]",
        ));
    }
    Ok(p)
}

/// `QUALIFIER_RETRY_DELAYS_MS`: exactly the 4 waits before attempts 2..5.
pub fn retry_delays() -> Result<Vec<u64>, EnvError> {
    let d = millis_list("QUALIFIER_RETRY_DELAYS_MS", "30000,120000,480000,1920000")?;
    if d.len() != 4 || d.contains(&0) {
        return Err(EnvError::new(
            "QUALIFIER_RETRY_DELAYS_MS",
            "must be 4 positive millisecond waits (attempts 2..5)",
        ));
    }
    Ok(d)
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
