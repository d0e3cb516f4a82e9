//! Endpoint safety rules: which URLs may be a webhook endpoint and which addresses are public.
//!
//! Pure functions; DNS resolution and connecting live in `qualifier-egress`, which applies these
//! rules to every address a host resolves to, at configuration and again before each connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use ipnet::{Ipv4Net, Ipv6Net};

use crate::FieldError;

/// A parsed `https` endpoint URL. Parsing goes through the WHATWG URL parser, so every spelling of
/// an IPv4 host (`0x7f.1`, `017700000001`, `2130706433`, `127.1`) is normalized before it is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl(url::Url);

impl WebhookUrl {
    pub fn parse(raw: &str) -> Result<WebhookUrl, FieldError> {
        let not_https = || FieldError::new("url must be an absolute https URL");
        if raw.len() > 2048 {
            return Err(FieldError::new("url must be at most 2048 characters"));
        }
        // The URL parser would percent-encode a control character in the path and keep it;
        // one in what a receiver typed is a mistake or an attack, never an address.
        if raw.trim().chars().any(char::is_control) {
            return Err(FieldError::new("url must not contain control characters"));
        }
        let u = url::Url::parse(raw.trim()).map_err(|_| not_https())?;
        if u.scheme() != "https" || u.host().is_none() {
            return Err(not_https());
        }
        // Credentials in the URL would be sent to the receiver and shown back in the settings
        // screen; receivers authenticate us by the signature instead.
        if !u.username().is_empty() || u.password().is_some() {
            return Err(FieldError::new("url must not contain credentials"));
        }
        // Ports: 443, or an unprivileged one. Below 1024 live the services a delivery could
        // otherwise probe on someone else's public host (22 ssh, 25 smtp, 110 pop3, 389 ldap...),
        // and a receiver has no reason to listen there; what a receiver uses in practice (443,
        // 8443, a tunnel's high port) stays allowed.
        let port = u.port_or_known_default().unwrap_or(443);
        if port != 443 && port < 1024 {
            return Err(FieldError::new("url port must be 443 or 1024 to 65535"));
        }
        Ok(WebhookUrl(u))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn url(&self) -> &url::Url {
        &self.0
    }

    /// The literal address when the host is an IP, `None` for a name that needs resolving.
    pub fn ip_literal(&self) -> Option<IpAddr> {
        match self.0.host()? {
            url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
            url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
            url::Host::Domain(_) => None,
        }
    }

    pub fn host_str(&self) -> &str {
        self.0.host_str().unwrap_or_default()
    }

    pub fn port(&self) -> u16 {
        self.0.port_or_known_default().unwrap_or(443)
    }
}

/// True when `ip` is a globally routable unicast address a webhook may be sent to.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// The ranges as CIDR text, parsed once by `ipnet` (a table that reads like the IANA registry).
fn nets<N: std::str::FromStr>(cidrs: &[&str]) -> Vec<N>
where
    N::Err: std::fmt::Debug,
{
    cidrs
        .iter()
        .map(|c| c.parse().expect("constant CIDR"))
        .collect()
}

/// IANA special-purpose IPv4 ranges that are not globally reachable, plus multicast and reserved.
const V4_BLOCKED: &[&str] = &[
    "0.0.0.0/8",       // "this network", unspecified
    "10.0.0.0/8",      // private
    "100.64.0.0/10",   // CGNAT shared address space
    "127.0.0.0/8",     // loopback
    "169.254.0.0/16",  // link-local (cloud metadata lives here)
    "172.16.0.0/12",   // private
    "192.0.0.0/24",    // IETF protocol assignments
    "192.0.2.0/24",    // documentation TEST-NET-1
    "192.31.196.0/24", // AS112
    "192.52.193.0/24", // AMT
    "192.88.99.0/24",  // deprecated 6to4 relay anycast
    "192.168.0.0/16",  // private
    "192.175.48.0/24", // direct delegation AS112
    "198.18.0.0/15",   // benchmarking
    "198.51.100.0/24", // documentation TEST-NET-2
    "203.0.113.0/24",  // documentation TEST-NET-3
    "224.0.0.0/4",     // multicast
    "240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
];

/// Inside global unicast (2000::/3), the ranges that are still not public.
const V6_BLOCKED: &[&str] = &[
    "2001::/23",     // IETF protocol assignments (Teredo, ORCHID...)
    "2001:db8::/32", // documentation
    "2002::/16",     // 6to4: tunnels to an arbitrary IPv4 address
    "3fff::/20",     // documentation (RFC 9637)
];

fn v4_blocked() -> &'static [Ipv4Net] {
    static NETS: OnceLock<Vec<Ipv4Net>> = OnceLock::new();
    NETS.get_or_init(|| nets(V4_BLOCKED))
}

fn v6_blocked() -> &'static [Ipv6Net] {
    static NETS: OnceLock<Vec<Ipv6Net>> = OnceLock::new();
    NETS.get_or_init(|| nets(V6_BLOCKED))
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !v4_blocked().iter().any(|n| n.contains(&ip))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // IPv4-mapped (::ffff:a.b.c.d) and NAT64 well-known prefix (64:ff9b::/96): judge the IPv4
    // address inside, since that is where the packets end up.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let nat64: Ipv6Net = "64:ff9b::/96".parse().expect("constant CIDR");
    if nat64.contains(&ip) {
        let b = ip.octets();
        return is_public_v4(Ipv4Addr::new(b[12], b[13], b[14], b[15]));
    }
    // Only global unicast (2000::/3) can be public at all; that excludes ::, ::1, the deprecated
    // IPv4-compatible ::/96, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast
    // ff00::/8, discard 100::/64 and NAT64 local-use 64:ff9b:1::/48.
    let global_unicast: Ipv6Net = "2000::/3".parse().expect("constant CIDR");
    global_unicast.contains(&ip) && !v6_blocked().iter().any(|n| n.contains(&ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_ip(url: &str) -> IpAddr {
        WebhookUrl::parse(url).unwrap().ip_literal().unwrap()
    }

    #[test]
    fn only_https_urls_without_credentials() {
        assert!(WebhookUrl::parse("https://hooks.example.com/q").is_ok());
        assert_eq!(
            WebhookUrl::parse("http://hooks.example.com")
                .unwrap_err()
                .message(),
            "url must be an absolute https URL"
        );
        assert!(WebhookUrl::parse("ftp://x.example").is_err());
        assert!(WebhookUrl::parse("/relative").is_err());
        assert!(WebhookUrl::parse("https://user:pw@x.example").is_err());
        assert!(WebhookUrl::parse(&format!("https://x.example/{}", "a".repeat(2100))).is_err());
        // A control character anywhere is refused, not encoded and kept; a pasted url's
        // surrounding whitespace is not part of it.
        for c in ['\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\n'] {
            let e = WebhookUrl::parse(&format!("https://x.example/a{c}b")).unwrap_err();
            assert!(e.to_string().contains("control characters"), "{e}");
        }
        assert!(WebhookUrl::parse("  https://x.example/a\n").is_ok());
    }

    #[test]
    fn only_443_and_unprivileged_ports() {
        for ok in [
            "https://h.example/",
            "https://h.example:443/",
            "https://h.example:1024/",
            "https://h.example:8443/",
            "https://h.example:65535/",
        ] {
            assert!(WebhookUrl::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://h.example:22/",
            "https://h.example:25/",
            "https://h.example:80/",
            "https://h.example:1023/",
        ] {
            assert_eq!(
                WebhookUrl::parse(bad).unwrap_err().message(),
                "url port must be 443 or 1024 to 65535",
                "{bad}"
            );
        }
    }

    #[test]
    fn every_ipv4_spelling_is_normalized_before_judging() {
        for spelled in [
            "https://127.0.0.1/",
            "https://0x7f.0.0.1/",
            "https://0x7f000001/",
            "https://2130706433/",
            "https://017700000001/",
            "https://0177.0.0.1/",
            "https://127.1/",
        ] {
            let ip = host_ip(spelled);
            assert_eq!(ip, IpAddr::V4(Ipv4Addr::LOCALHOST), "{spelled}");
            assert!(!is_public_ip(ip));
        }
        assert_eq!(
            host_ip("https://10.1/"),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))
        );
    }

    #[test]
    fn non_public_ipv4_ranges_are_refused() {
        for s in [
            "0.0.0.0",
            "10.0.0.1",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!is_public_ip(s.parse().unwrap()), "{s} should be refused");
        }
    }

    #[test]
    fn public_ipv4_is_allowed() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "100.128.0.1",
            "172.32.0.1",
            "198.20.0.1",
        ] {
            assert!(is_public_ip(s.parse().unwrap()), "{s} should be allowed");
        }
    }

    #[test]
    fn non_public_ipv6_forms_are_refused() {
        for s in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
            "3fff::1",
        ] {
            assert!(!is_public_ip(s.parse().unwrap()), "{s} should be refused");
        }
    }

    #[test]
    fn public_ipv6_and_mapped_public_v4_are_allowed() {
        for s in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public_ip(s.parse().unwrap()), "{s} should be allowed");
        }
        assert_eq!(
            host_ip("https://[::ffff:7f00:1]/"),
            "::ffff:127.0.0.1".parse::<IpAddr>().unwrap()
        );
    }
}
