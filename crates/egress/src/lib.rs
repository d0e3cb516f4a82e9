//! Outbound safety: resolving a webhook endpoint and refusing it unless every address it resolves
//! to is public (or inside `QUALIFIER_WEBHOOK_ALLOW_CIDRS`, which exists for development and
//! tests only). Used when an endpoint is configured and again before every connection.

pub mod client_cert;
pub mod proxy;

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use qualifier_domain::netguard::{WebhookUrl, is_public_ip};

/// Why an endpoint is refused. The messages never name the address a host resolved to: that
/// would tell an org what an internal name resolves to (docs/reliability.md, "Hostile input"). Nor do they say
/// whether a name resolved at all: a name that does not resolve and one that resolves to a
/// private address get the same message, so an org cannot probe which internal names exist
/// (docs/reliability.md, "Strangers, quotas and pages"). The variants stay apart for our own logs.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EgressError {
    #[error("url must resolve only to public addresses")]
    Unresolvable,
    #[error("url must resolve only to public addresses")]
    NotPublic,
    /// A destination's plain (unencrypted) protocol to an address outside the allow-list.
    #[error("url must use TLS (amqps://) to reach a public address")]
    NeedsTls,
}

/// The allow-list a deployment configured; empty in production.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    pub allow: Vec<IpNet>,
}

impl EgressPolicy {
    pub fn new(allow: Vec<IpNet>) -> Self {
        EgressPolicy { allow }
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        // Judge IPv4-mapped IPv6 as the IPv4 address it carries, for the allow-list as well.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        is_public_ip(ip) || self.allow.iter().any(|net| net.contains(&ip))
    }

    /// Every address the endpoint resolves to, all of them permitted; one bad answer refuses the
    /// whole endpoint (a resolver could otherwise round-robin us into a private network).
    pub async fn resolve(&self, url: &WebhookUrl) -> Result<Vec<SocketAddr>, EgressError> {
        self.resolve_host(url.host_str(), url.ip_literal(), url.port())
            .await
    }

    /// [`Self::resolve`] for a host and port (`literal`: the host is that address). What a
    /// destination other than `https` connects to is judged by the same rules.
    pub async fn resolve_host(
        &self,
        host: &str,
        literal: Option<IpAddr>,
        port: u16,
    ) -> Result<Vec<SocketAddr>, EgressError> {
        let addrs: Vec<SocketAddr> = match literal.or_else(|| host.parse().ok()) {
            Some(ip) => vec![SocketAddr::new(ip, port)],
            None => tokio::net::lookup_host((host, port))
                .await
                .map_err(|_| EgressError::Unresolvable)?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(EgressError::Unresolvable);
        }
        self.check(&addrs)?;
        Ok(addrs)
    }

    /// Where an `amqp` destination connects: its host's addresses, every one permitted, and a
    /// plain `amqp://` only to addresses the allow-list names (a development broker); a public
    /// broker is reached over TLS, or its credentials and our events would cross the internet
    /// in clear.
    pub async fn resolve_amqp(
        &self,
        a: &qualifier_domain::destination::AmqpAddress,
    ) -> Result<Vec<SocketAddr>, EgressError> {
        let addrs = self.resolve_host(&a.host, None, a.port).await?;
        if !a.tls && !addrs.iter().all(|s| self.allowed_by_list(s.ip())) {
            return Err(EgressError::NeedsTls);
        }
        Ok(addrs)
    }

    /// A destination's addresses under the same rules, as when it is saved (the API, the
    /// console, `qualifierctl`): an `amqp` broker by [`Self::resolve_amqp`], an AWS type's
    /// `endpoint_url` by [`Self::resolve`] (AWS's own endpoints are named by the region). The
    /// refusal names the field.
    pub async fn check_destination(
        &self,
        d: &qualifier_domain::destination::Destination,
    ) -> Result<(), String> {
        use qualifier_domain::destination::{Destination, address};
        match d {
            Destination::Amqp(a) => {
                let at = address(&a.url).map_err(|e| e.to_string())?;
                self.resolve_amqp(&at)
                    .await
                    .map_err(|e| format!("destination.{e}"))?;
            }
            other => {
                if let Some(raw) = other.aws_account().and_then(|a| a.endpoint_url.as_deref()) {
                    let url =
                        WebhookUrl::parse(raw).map_err(|e| format!("destination.endpoint_{e}"))?;
                    self.resolve(&url)
                        .await
                        .map_err(|e| format!("destination.endpoint_{e}"))?;
                }
            }
        }
        Ok(())
    }

    fn allowed_by_list(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        self.allow.iter().any(|net| net.contains(&ip))
    }

    /// Every one of `addrs` permitted; one bad answer refuses the whole endpoint.
    pub fn check(&self, addrs: &[SocketAddr]) -> Result<(), EgressError> {
        if addrs.iter().all(|a| self.permits(a.ip())) {
            Ok(())
        } else {
            Err(EgressError::NotPublic)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_name_and_literals_are_refused_without_allow_list() {
        let p = EgressPolicy::default();
        for u in [
            "https://localhost/x",
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
        ] {
            let url = WebhookUrl::parse(u).unwrap();
            assert!(
                matches!(p.resolve(&url).await, Err(EgressError::NotPublic)),
                "{u}"
            );
        }
    }

    #[tokio::test]
    async fn allow_list_admits_exactly_its_ranges() {
        let p = EgressPolicy::new(vec!["127.0.0.0/8".parse().unwrap()]);
        let ok = WebhookUrl::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!(
            p.resolve(&ok).await.unwrap(),
            vec!["127.0.0.1:8443".parse().unwrap()]
        );
        let mapped = WebhookUrl::parse("https://[::ffff:127.0.0.1]/").unwrap();
        assert!(p.resolve(&mapped).await.is_ok());
        let other = WebhookUrl::parse("https://10.0.0.1/").unwrap();
        let refused = p.resolve(&other).await.unwrap_err();
        assert_eq!(refused, EgressError::NotPublic);
        assert!(
            !refused.to_string().contains("10.0.0.1"),
            "no address in the message"
        );
    }

    #[tokio::test]
    async fn public_literal_passes() {
        let url = WebhookUrl::parse("https://93.184.216.34/hook").unwrap();
        assert_eq!(
            EgressPolicy::default().resolve(&url).await.unwrap().len(),
            1
        );
    }
}
