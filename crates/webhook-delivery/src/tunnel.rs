//! One request through the egress proxy (`QUALIFIER_EGRESS_PROXY`): a `CONNECT` tunnel to an
//! address that passed the endpoint rules, TLS inside it end to end with the endpoint (SNI and
//! certificate checked for the URL's host), then one HTTP/1.1 POST. reqwest's own proxy support
//! cannot be used: it asks the proxy for the host name, which the proxy would resolve itself
//! (docs/decisions.md, "Egress through a proxy").
//!
//! A tunnel carries one request: the proxy path is for receivers behind firewalls, where being
//! allowed matters more than a reused connection, and a fresh tunnel per request means an
//! address is never used after its name stopped resolving to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use qualifier_domain::delivery::{FailureKind, NoAnswer, RESPONSE_EXCERPT_BYTES};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_egress::proxy::EgressProxy;
use rustls::pki_types::ServerName;

/// What came back: the status, its `Retry-After`, and the start of the body.
pub(crate) struct Answer {
    pub code: u16,
    pub retry_after: Option<String>,
    pub head: Vec<u8>,
}

/// POSTs `body` with `headers` to `url` at the first of `addrs` the proxy opens a tunnel to.
/// `addrs` passed the endpoint rules; they are tried in order while the proxy reports the
/// endpoint unreachable. The caller bounds the whole call with the attempt's timeout.
pub(crate) async fn post(
    proxy: &EgressProxy,
    addrs: &[SocketAddr],
    url: &WebhookUrl,
    headers: &[(String, String)],
    body: Vec<u8>,
    tls: Arc<rustls::ClientConfig>,
    connect_within: Duration,
) -> Result<Answer, NoAnswer> {
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match proxy.tunnel(*addr, connect_within).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            // The proxy reached out and found nothing there: try the endpoint's next address.
            Err(e) if e.blames_endpoint() => {
                last = Some(NoAnswer::new(FailureKind::Connect, e.to_string()))
            }
            Err(e) => return Err(NoAnswer::new(FailureKind::Proxy, e.to_string())),
        }
    }
    let Some(stream) = stream else {
        return Err(last.unwrap_or_else(|| {
            NoAnswer::new(
                FailureKind::RefusedAddress,
                "url must resolve only to public addresses",
            )
        }));
    };
    let name = match url.ip_literal() {
        Some(ip) => ServerName::IpAddress(ip.into()),
        None => ServerName::try_from(url.host_str().to_owned()).map_err(|_| {
            NoAnswer::new(
                FailureKind::InvalidUrl,
                "url's host is not a valid TLS server name",
            )
        })?,
    };
    let tls_stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, stream)
        .await
        .map_err(|e| NoAnswer::new(FailureKind::Tls, format!("TLS handshake failed: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls_stream))
        .await
        .map_err(|e| request_failed(&e))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let answer = exchange(&mut sender, url, headers, body).await;
    driver.abort();
    answer
}

async fn exchange(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    url: &WebhookUrl,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<Answer, NoAnswer> {
    let u = url.url();
    let path = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_owned(),
    };
    let host = match u.port() {
        Some(p) => format!("{}:{p}", url.host_str()),
        None => url.host_str().to_owned(),
    };
    let mut req = http::Request::post(path)
        .header(http::header::HOST, host)
        .header(http::header::USER_AGENT, "Qualifier-Webhooks/1");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| NoAnswer::new(FailureKind::Request, format!("request failed: {e}")))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| request_failed(&e))?;
    let code = resp.status().as_u16();
    let retry_after =
        crate::sender::message::header_text(resp.headers(), http::header::RETRY_AFTER);
    let mut body = resp.into_body();
    let mut head = Vec::new();
    // The start of the answer for the attempt log; the rest is not waited for.
    while head.len() < RESPONSE_EXCERPT_BYTES {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref() {
                    let room = RESPONSE_EXCERPT_BYTES - head.len();
                    head.extend_from_slice(&d[..d.len().min(room)]);
                }
            }
            _ => break,
        }
    }
    Ok(Answer {
        code,
        retry_after,
        head,
    })
}

/// An error after the tunnel was up: a TLS alert from the endpoint (a client certificate it
/// refused, say) is a TLS failure, anything else a request failure.
fn request_failed(e: &hyper::Error) -> NoAnswer {
    use std::error::Error;
    let mut msg = String::new();
    let mut tls = false;
    let mut src: Option<&(dyn Error + 'static)> = e.source();
    while let Some(s) = src {
        if s.downcast_ref::<rustls::Error>().is_some()
            || s.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|i| i.downcast_ref::<rustls::Error>().is_some())
        {
            tls = true;
        }
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    if tls {
        NoAnswer::new(FailureKind::Tls, format!("TLS handshake failed{msg}"))
    } else {
        NoAnswer::new(FailureKind::Request, format!("request failed: {e}{msg}"))
    }
}
