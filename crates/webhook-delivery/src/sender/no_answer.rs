//! What a request that got no answer met, read from reqwest's error for the delivery log.

use std::time::Duration;

use qualifier_domain::delivery::{FailureKind, NoAnswer};
use qualifier_egress::EgressError;

/// The first error of type `T` in `e`'s cause chain. `io::Error::source` skips the error it
/// wraps (hyper and rustls hand theirs over inside one), so each one's inner error is looked at
/// too.
pub(super) fn find_cause<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            && let Some(t) = find_cause::<T>(inner)
        {
            return Some(t);
        }
        next = err.source();
    }
    None
}

/// The kind of a failed request, and a one-line cause for the delivery log without any secret
/// (URLs carry no credentials) and without the address a host resolved to.
pub(super) fn classify(e: &reqwest::Error, timeout: Duration) -> NoAnswer {
    use std::error::Error;
    if e.is_timeout() {
        return NoAnswer::new(
            FailureKind::Timeout,
            format!("timed out after {} ms", timeout.as_millis()),
        );
    }
    let kind = if find_cause::<EgressError>(e).is_some() {
        FailureKind::RefusedAddress
    } else if find_cause::<rustls::Error>(e).is_some() {
        FailureKind::Tls
    } else if e.is_connect() {
        FailureKind::Connect
    } else {
        FailureKind::Request
    };
    // A refused client certificate shows as a TLS alert: say so in the words an
    // administrator looks for.
    let mut msg = if kind == FailureKind::Tls {
        "TLS handshake failed".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    NoAnswer::new(kind, msg)
}
