//! What is shown of an endpoint's client certificate (mutual TLS): never the key. The checks a
//! certificate passes before it is stored are `qualifier_egress::client_cert`'s.

use time::OffsetDateTime;

/// How long before its expiry a client certificate is warned about: the console shows it, and
/// the operator service gets `endpoint.certificate_expiring` once.
pub const EXPIRY_WARNING: time::Duration = time::Duration::days(14);

/// Subject, issuer and expiry, as the API, the console and `qualifierctl` show them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientCertInfo {
    pub subject: String,
    pub issuer: String,
    #[serde(with = "crate::timefmt::millis")]
    pub not_after: OffsetDateTime,
}

impl ClientCertInfo {
    /// Whether it is time to warn: within [`EXPIRY_WARNING`] of `not_after` (or past it).
    pub fn expiring(&self, now: OffsetDateTime) -> bool {
        self.not_after - now <= EXPIRY_WARNING
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_starts_fourteen_days_ahead() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let at = |days: i64| ClientCertInfo {
            subject: "CN=a".into(),
            issuer: "CN=b".into(),
            not_after: now + time::Duration::days(days),
        };
        assert!(!at(15).expiring(now));
        assert!(at(14).expiring(now));
        assert!(at(-1).expiring(now));
    }
}
