//! One delivery attempt: sign and POST the stored body to the webhook it is given, and report
//! what happened. Whether to send and what the answer means are the decision module's
//! ([`crate::decide`]).
//!
//! Outbound HTTP is hostile territory: no redirects, a whole-request timeout, and a resolver that
//! answers only with addresses it checked against the egress policy, so the connection goes to
//! exactly the address that was judged (a DNS answer that changes later cannot redirect it).

use qualifier_bus::DeliveryMeta;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualifier_domain::delivery::{FailureKind, NoAnswer, RESPONSE_EXCERPT_BYTES, response_excerpt};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::timefmt;
use qualifier_egress::{EgressError, EgressPolicy};
use qualifier_store::health::OpsEvent;
use qualifier_store::webhooks::WebhookForDelivery;

use crate::decide::{Response, Sent};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The client for the operator's webhook (`QUALIFIER_OPERATOR_WEBHOOK_URL`): the operator's own
/// service, configuration rather than an org's input, so no address rule; the same TLS roots as
/// endpoints (system roots plus `QUALIFIER_WEBHOOK_CA_FILE`), no redirects, no proxy.
pub fn operator_client(
    timeout: Duration,
    extra_roots_pem: Option<&[u8]>,
) -> anyhow::Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .no_proxy()
        .user_agent("Qualifier-Webhooks/1");
    if let Some(pem) = extra_roots_pem {
        b = b.tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem)?);
    }
    Ok(b.build()?)
}

/// A resolver that refuses a name unless every address it resolves to is permitted.
struct GuardedResolver {
    policy: EgressPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        // The lookup's own error names only the host, which the org configured itself.
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(EgressError::Unresolvable.into());
            }
            policy.check(&addrs)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The message being delivered: what its headers say, and the body bytes to send.
#[derive(Debug, Clone)]
pub struct DeliveryJob {
    pub meta: DeliveryMeta,
    pub body: Vec<u8>,
    /// A probe of a failing endpoint (`X-Qualifier-Probe: true`), not a delivery.
    pub probe: bool,
}

impl DeliveryJob {
    /// The delivery's row, as the store finds it: by id, within its partition when the message
    /// says which.
    pub fn delivery(&self) -> qualifier_store::deliveries::DeliveryRef {
        qualifier_store::deliveries::DeliveryRef {
            id: self.meta.delivery_id,
            seq: self.meta.seq,
        }
    }
}

#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    policy: EgressPolicy,
    timeout: Duration,
}

/// How much of a response body we read (to reuse the connection); the rest is dropped.
const RESPONSE_READ_LIMIT: usize = 16 * 1024;

impl Sender {
    pub fn new(
        policy: EgressPolicy,
        timeout: Duration,
        extra_roots_pem: Option<&[u8]>,
    ) -> anyhow::Result<Sender> {
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .user_agent("Qualifier-Webhooks/1")
            // reqwest reads HTTP(S)_PROXY and ALL_PROXY from the environment; through a proxy our
            // resolver would never see the target, and the address check (and the guard against
            // DNS rebinding) would be bypassed. We connect only to the address we checked.
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(60))
            .dns_resolver(Arc::new(GuardedResolver {
                policy: policy.clone(),
            }));
        if let Some(pem) = extra_roots_pem {
            b = b.tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem)?);
        }
        Ok(Sender {
            client: b.build()?,
            policy,
            timeout,
        })
    }

    /// One POST of `job`'s body to `hook`, signed with its secret as it is now.
    pub async fn send(&self, job: &DeliveryJob, hook: &WebhookForDelivery) -> Sent {
        let started_at = timefmt::now_millis();
        let clock = Instant::now();
        let mut headers: Vec<(String, String)> = Vec::new();
        let no_answer = |why: NoAnswer, headers: Vec<(String, String)>| Sent {
            started_at,
            duration_ms: clock.elapsed().as_millis() as u64,
            response: Response::NoAnswer(why),
            request_headers: headers,
            response_body: None,
        };
        let url = match WebhookUrl::parse(&hook.webhook.url) {
            Ok(u) => u,
            Err(e) => {
                return no_answer(
                    NoAnswer::new(FailureKind::InvalidUrl, e.to_string()),
                    headers,
                );
            }
        };
        // IP literals never reach the resolver, so they are judged here.
        if let Some(ip) = url.ip_literal()
            && let Err(e) = self.policy.check(&[SocketAddr::new(ip, url.port())])
        {
            return no_answer(
                NoAnswer::new(FailureKind::RefusedAddress, e.to_string()),
                headers,
            );
        }
        let signature = qualifier_signing::sign(&hook.signing_secret, &job.body);
        // Standard Webhooks: the same delivery id and instant (whole seconds), the same key.
        let id = job.meta.delivery_id.to_string();
        let unix = started_at.unix_timestamp();
        // During a rotation's overlap window, the new secret's entry first, then the previous.
        let secrets: Vec<&str> = std::iter::once(hook.signing_secret.as_str())
            .chain(hook.previous_secret.as_deref())
            .collect();
        let standard = qualifier_signing::standard::header(&secrets, &id, unix, &job.body);
        // One list for the request and for the attempt log (which keeps the signatures and
        // rebuilds the rest from the same function), so the log shows what was sent.
        let request = qualifier_domain::delivery::Request {
            event_type: job.meta.event_type.as_str(),
            delivery_id: &id,
            test: job.meta.test,
            probe: job.probe,
        };
        headers = request.headers(started_at, signature, standard);
        let mut request = self.client.post(url.url().clone());
        for (k, v) in &headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let sent = request.body(job.body.clone()).send().await;
        let mut resp = match sent {
            Ok(r) => r,
            Err(e) => return no_answer(classify(&e, self.timeout), headers),
        };
        let code = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Read a little of the body so the connection can be reused (stop at the limit or an
        // error), keeping its start for the attempt log.
        let mut read = 0;
        let mut head: Vec<u8> = Vec::new();
        while read < RESPONSE_READ_LIMIT {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    read += c.len();
                    let room = RESPONSE_EXCERPT_BYTES.saturating_sub(head.len());
                    head.extend_from_slice(&c[..c.len().min(room)]);
                }
                _ => break,
            }
        }
        Sent {
            started_at,
            duration_ms: clock.elapsed().as_millis() as u64,
            response: Response::Status { code, retry_after },
            request_headers: headers,
            response_body: response_excerpt(&head),
        }
    }
}

/// Where operational events go: the operator's own service, and the key of its secret.
#[derive(Clone)]
pub struct Operator {
    pub url: url::Url,
    pub key: Vec<u8>,
    pub client: reqwest::Client,
    /// The client's whole-request timeout (named in a timed-out notice's error).
    pub timeout: Duration,
}

/// One POST of an operational event to the operator's service, signed with Standard Webhooks
/// headers under its secret; what it saw, for the delivery rules to read.
pub async fn send_notice(op: &Operator, e: &OpsEvent) -> Response {
    let id = e.id.to_string();
    let unix = time::OffsetDateTime::now_utc().unix_timestamp();
    let signature = qualifier_signing::standard::sign_with_key(&op.key, &id, unix, &e.payload);
    let sent = op
        .client
        .post(op.url.clone())
        .header("Content-Type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", unix.to_string())
        .header("webhook-signature", signature)
        .header("X-Qualifier-Event", &e.event_type)
        .body(e.payload.clone())
        .send()
        .await;
    match sent {
        Ok(r) => Response::Status {
            code: r.status().as_u16(),
            retry_after: None,
        },
        Err(err) => Response::NoAnswer(classify(&err, op.timeout)),
    }
}

/// The first error of type `T` in `e`'s cause chain. `io::Error::source` skips the error it
/// wraps (hyper and rustls hand theirs over inside one), so each one's inner error is looked at
/// too.
fn find_cause<'a, T: std::error::Error + 'static>(
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
fn classify(e: &reqwest::Error, timeout: Duration) -> NoAnswer {
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
    let mut msg = if e.is_connect() {
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
