//! The egress proxy (`QUALIFIER_EGRESS_PROXY`): an HTTP forward proxy whose addresses a
//! receiver's firewall allows. We ask it for a tunnel (`CONNECT`) to the address that passed the
//! endpoint rules, never to a name: a proxy that resolved names itself would let a URL whose DNS
//! answer changes reach a private address behind the proxy. TLS then runs inside the tunnel, end
//! to end with the endpoint (docs/decisions.md, "Egress through a proxy").

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the proxy is and how to authenticate to it. `Debug` and `Display` show the host and
/// port only: the credentials are never logged or shown.
#[derive(Clone)]
pub struct EgressProxy {
    host: String,
    port: u16,
    /// `Proxy-Authorization` value (`Basic …`), from the URL's userinfo.
    authorization: Option<String>,
    /// The URL as configured, credentials included, for clients that speak to the proxy
    /// themselves (the operator's webhook). Never printed.
    url: url::Url,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EgressProxy({self})")
    }
}

impl std::fmt::Display for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}", self.host, self.port)
    }
}

/// Why a tunnel could not be had. The messages name neither the proxy's credentials nor the
/// endpoint's address (an attempt's error is shown to the org).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProxyError {
    /// No TCP connection to the proxy, or it closed before answering.
    #[error("egress proxy unreachable: {0}")]
    Unreachable(String),
    /// The proxy answered the `CONNECT` with a status that refuses it (403, 407, …).
    #[error("egress proxy refused the tunnel (HTTP {0})")]
    Refused(u16),
    /// The proxy could not reach the endpoint (502, 503, 504): the endpoint's failure, seen from
    /// the proxy.
    #[error("connection failed: the egress proxy could not reach the endpoint (HTTP {0})")]
    Upstream(u16),
    /// The proxy's answer was not HTTP.
    #[error("egress proxy answered with something other than HTTP")]
    Garbled,
    #[error("egress proxy did not answer within {0} ms")]
    Timeout(u128),
}

impl ProxyError {
    /// Whether the endpoint is to blame (the proxy reached out and found nothing there); every
    /// other error is the proxy's, ours to mend.
    pub fn blames_endpoint(&self) -> bool {
        matches!(self, ProxyError::Upstream(_))
    }
}

/// What is wrong with a proxy's URL. No variant holds the value: it may hold a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProxyUrlError {
    #[error("is not a URL")]
    NotAUrl,
    #[error("must be an http:// URL (the tunnel carries TLS)")]
    NotHttp,
    #[error("needs a host")]
    NoHost,
    #[error("takes no path or query")]
    PathOrQuery,
    #[error("has credentials that are not UTF-8")]
    CredentialsNotUtf8,
}

/// The longest answer to a `CONNECT` we read before calling it garbled.
const MAX_ANSWER_HEAD: usize = 8 * 1024;

impl EgressProxy {
    /// `http://[user:pass@]host:port`, nothing else: no path, no query, an explicit host. The
    /// error never repeats the value (it may hold a password).
    pub fn parse(raw: &str) -> Result<EgressProxy, ProxyUrlError> {
        let url = url::Url::parse(raw.trim()).map_err(|_| ProxyUrlError::NotAUrl)?;
        if url.scheme() != "http" {
            return Err(ProxyUrlError::NotHttp);
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => format!("[{a}]"),
            None => return Err(ProxyUrlError::NoHost),
        };
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(ProxyUrlError::PathOrQuery);
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| ProxyUrlError::CredentialsNotUtf8)
        };
        let authorization = if url.username().is_empty() && url.password().is_none() {
            None
        } else {
            let user = decode(url.username())?;
            let pass = decode(url.password().unwrap_or(""))?;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            Some(format!("Basic {token}"))
        };
        Ok(EgressProxy {
            host,
            port,
            authorization,
            url,
        })
    }

    /// The URL as configured, credentials included: for a client that speaks to the proxy
    /// itself. Never log it.
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    /// A TCP stream to `target` through the proxy, ready for the TLS handshake, within
    /// `within`. Asks for the address itself (`CONNECT 203.0.113.7:443`), never a name.
    pub async fn tunnel(
        &self,
        target: SocketAddr,
        within: Duration,
    ) -> Result<TcpStream, ProxyError> {
        match tokio::time::timeout(within, self.open(target)).await {
            Ok(r) => r,
            Err(_) => Err(ProxyError::Timeout(within.as_millis())),
        }
    }

    async fn open(&self, target: SocketAddr) -> Result<TcpStream, ProxyError> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        let mut s = TcpStream::connect((host, self.port))
            .await
            .map_err(|e| ProxyError::Unreachable(e.kind().to_string()))?;
        let _ = s.set_nodelay(true);
        let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
        if let Some(auth) = &self.authorization {
            head.push_str("Proxy-Authorization: ");
            head.push_str(auth);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes())
            .await
            .map_err(|e| ProxyError::Unreachable(e.kind().to_string()))?;
        // Byte by byte up to the blank line: whatever follows it belongs to the TLS session,
        // and the answer is a line or two.
        let mut answer = Vec::with_capacity(128);
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            if answer.len() >= MAX_ANSWER_HEAD {
                return Err(ProxyError::Garbled);
            }
            match s.read(&mut byte).await {
                Ok(0) => return Err(ProxyError::Unreachable("closed before answering".into())),
                Ok(_) => answer.push(byte[0]),
                Err(e) => return Err(ProxyError::Unreachable(e.kind().to_string())),
            }
        }
        match status_of(&answer) {
            Some(code) if (200..300).contains(&code) => Ok(s),
            Some(code @ (502..=504)) => Err(ProxyError::Upstream(code)),
            Some(code) => Err(ProxyError::Refused(code)),
            None => Err(ProxyError::Garbled),
        }
    }
}

/// The status of an HTTP/1 answer's first line (`HTTP/1.1 200 Connection established`).
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|b| *b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    #[test]
    fn parse_keeps_credentials_out_of_sight() {
        let p = EgressProxy::parse("http://egress:s%40cret@proxy.internal:3128").unwrap();
        assert_eq!(p.to_string(), "http://proxy.internal:3128");
        assert!(!format!("{p:?}").contains("cret"));
        assert_eq!(
            p.authorization.as_deref(),
            Some("Basic ZWdyZXNzOnNAY3JldA=="),
            "egress:s@cret"
        );
        let plain = EgressProxy::parse("http://10.0.0.5").unwrap();
        assert_eq!((plain.port, plain.authorization), (80, None));
        for bad in [
            "https://proxy:3128",
            "socks5://proxy:1080",
            "http://proxy:3128/path",
            "proxy:3128",
            "http://u:hunter2@proxy:3128/x?y",
        ] {
            let e = EgressProxy::parse(bad).unwrap_err();
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn the_connect_answer_is_read_by_its_status() {
        assert_eq!(
            status_of(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            Some(200)
        );
        assert_eq!(
            status_of(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n"),
            Some(407)
        );
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n\r\n"), None);
        assert_eq!(status_of(b"HTTP/1.1 abc\r\n\r\n"), None);
    }

    /// A one-shot proxy that records the request head and answers `answer`.
    async fn fake_proxy(answer: &'static str) -> (EgressProxy, tokio::task::JoinHandle<String>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            let mut r = tokio::io::BufReader::new(s);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                r.read_line(&mut line).await.unwrap();
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            r.get_mut().write_all(answer.as_bytes()).await.unwrap();
            head
        });
        let p = EgressProxy::parse(&format!("http://q:pw@127.0.0.1:{port}")).unwrap();
        (p, task)
    }

    #[tokio::test]
    async fn the_tunnel_asks_for_the_checked_address_with_credentials() {
        let (p, head) = fake_proxy("HTTP/1.1 200 Connection established\r\n\r\n").await;
        let target: SocketAddr = "203.0.113.7:443".parse().unwrap();
        p.tunnel(target, Duration::from_secs(5)).await.unwrap();
        let head = head.await.unwrap();
        assert!(
            head.starts_with("CONNECT 203.0.113.7:443 HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Proxy-Authorization: Basic cTpwdw==\r\n"),
            "{head}"
        );
    }

    #[tokio::test]
    async fn refusals_and_unreachable_endpoints_are_told_apart() {
        let target: SocketAddr = "[2001:db8::1]:8443".parse().unwrap();
        let (p, head) = fake_proxy("HTTP/1.1 403 Forbidden\r\n\r\n").await;
        let e = p.tunnel(target, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(e, ProxyError::Refused(403));
        assert!(!e.blames_endpoint());
        assert!(
            head.await
                .unwrap()
                .starts_with("CONNECT [2001:db8::1]:8443 ")
        );
        let (p, _) = fake_proxy("HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        let e = p.tunnel(target, Duration::from_secs(5)).await.unwrap_err();
        assert!(e.blames_endpoint());
        assert!(!e.to_string().contains("2001:db8"), "no address in {e}");
        // Nobody listening: unreachable, the proxy's failure.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let gone = EgressProxy::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let e = gone
            .tunnel(target, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, ProxyError::Unreachable(_)), "{e:?}");
    }
}
