//! One delivery attempt: sign and POST the stored body to the webhook it is given, and report
//! what happened. Whether to send and what the answer means are the decision module's
//! ([`crate::decide`]).
//!
//! Outbound HTTP is hostile territory: no redirects, a whole-request timeout, and a resolver that
//! answers only with addresses it checked against the egress policy, so the connection goes to
//! exactly the address that was judged (a DNS answer that changes later cannot redirect it).
//! With `QUALIFIER_EGRESS_PROXY` the same judged address is what the proxy is asked to tunnel
//! to ([`crate::tunnel`]); an endpoint's client certificate is presented either way.

use qualifier_bus::DeliveryMeta;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use qualifier_domain::delivery::{FailureKind, NoAnswer, RESPONSE_EXCERPT_BYTES, response_excerpt};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::timefmt;
use qualifier_egress::{EgressError, EgressPolicy};
use qualifier_store::webhooks::WebhookForDelivery;

use crate::decide::{Response, Sent};
use qualifier_egress::proxy::EgressProxy;
use qualifier_store::webhooks::ClientIdentity;
use qualifier_telemetry::metrics::{self as m, metrics};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rustls::pki_types::CertificateDer;

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

    /// The endpoint it goes to: its health, throttle and lead order are that endpoint's.
    pub fn endpoint(&self) -> qualifier_store::webhooks::EndpointKey {
        qualifier_store::webhooks::EndpointKey {
            org_id: self.meta.org_id,
            endpoint_id: self.meta.endpoint_id(),
        }
    }
}

#[derive(Clone)]
pub struct Sender {
    /// Straight to endpoints without a client certificate: the common case.
    client: reqwest::Client,
    policy: EgressPolicy,
    timeout: Duration,
    /// `QUALIFIER_WEBHOOK_CA_FILE`'s roots, for the clients built per client certificate.
    extra_roots_pem: Option<Arc<Vec<u8>>>,
    proxy: Option<EgressProxy>,
    /// The tunnel's TLS without a client certificate (with a proxy only).
    tunnel_tls: Option<Arc<rustls::ClientConfig>>,
    /// The transports of the client certificates in use ([`Identities`]).
    identities: Arc<std::sync::Mutex<Identities<Transport>>>,
    /// The OAuth 2 tokens of the endpoints that use them, one per endpoint.
    tokens: oauth::Tokens,
    /// The connections to the `amqp` destinations in use, one per endpoint.
    amqp: amqp::Links,
}

/// One transport per org with a client certificate, for the stored pair's fingerprint:
/// building one parses the key, which is not done per delivery. An org has one certificate at
/// a time, so a replaced one takes its org's place (the next request uses it) and however
/// many an org uploads, it holds one entry. Past [`MAX_IDENTITIES`] orgs, the one used least
/// recently gives way, built again when next used: no org's uploads empty the others'.
struct Identities<T> {
    by_org: std::collections::HashMap<uuid::Uuid, Kept<T>>,
    /// A clock of uses, for "least recently used".
    uses: u64,
}

struct Kept<T> {
    fingerprint: [u8; 32],
    value: T,
    used: u64,
}

impl<T: Clone> Identities<T> {
    fn new() -> Self {
        Identities {
            by_org: std::collections::HashMap::new(),
            uses: 0,
        }
    }

    /// The org's kept value for this fingerprint, marked used.
    fn get(&mut self, org: uuid::Uuid, fingerprint: &[u8; 32]) -> Option<T> {
        self.uses += 1;
        let now = self.uses;
        let kept = self
            .by_org
            .get_mut(&org)
            .filter(|k| k.fingerprint == *fingerprint)?;
        kept.used = now;
        Some(kept.value.clone())
    }

    /// Keeps `value` as the org's, in place of any other of its.
    fn insert(&mut self, org: uuid::Uuid, fingerprint: [u8; 32], value: T) {
        self.uses += 1;
        if !self.by_org.contains_key(&org)
            && self.by_org.len() >= MAX_IDENTITIES
            && let Some(oldest) = self
                .by_org
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(o, _)| *o)
        {
            self.by_org.remove(&oldest);
        }
        self.by_org.insert(
            org,
            Kept {
                fingerprint,
                value,
                used: self.uses,
            },
        );
    }
}

/// How a request leaves: straight through reqwest's pool, or through the egress proxy's tunnel
/// with this TLS configuration.
#[derive(Clone)]
enum Transport {
    Direct(reqwest::Client),
    Tunnel(Arc<rustls::ClientConfig>),
}

/// Orgs whose client certificate's transport is kept at once (far more than one replica sees in
/// use).
const MAX_IDENTITIES: usize = 1024;

/// How much of a response body we read (to reuse the connection); the rest is dropped.
const RESPONSE_READ_LIMIT: usize = 16 * 1024;

impl Sender {
    pub fn new(
        policy: EgressPolicy,
        timeout: Duration,
        extra_roots_pem: Option<&[u8]>,
        proxy: Option<EgressProxy>,
    ) -> anyhow::Result<Sender> {
        let client = Self::direct_client(&policy, timeout, extra_roots_pem, None)?;
        let tunnel_tls = match &proxy {
            Some(_) => Some(tunnel_tls(extra_roots_pem, None)?),
            None => None,
        };
        Ok(Sender {
            client,
            policy,
            timeout,
            extra_roots_pem: extra_roots_pem.map(|p| Arc::new(p.to_vec())),
            proxy,
            tunnel_tls,
            identities: Arc::new(std::sync::Mutex::new(Identities::new())),
            tokens: oauth::Tokens::default(),
            amqp: amqp::Links::default(),
        })
    }

    fn direct_client(
        policy: &EgressPolicy,
        timeout: Duration,
        extra_roots_pem: Option<&[u8]>,
        identity: Option<&ClientIdentity>,
    ) -> anyhow::Result<reqwest::Client> {
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
        if let Some(id) = identity {
            b = b.identity(reqwest::Identity::from_pem(id.pem.as_bytes())?);
        }
        Ok(b.build()?)
    }

    /// How a request to an endpoint with (or without) this client certificate leaves.
    fn transport(
        &self,
        org: uuid::Uuid,
        identity: Option<&ClientIdentity>,
    ) -> Result<Transport, NoAnswer> {
        let Some(id) = identity else {
            return Ok(match &self.tunnel_tls {
                Some(tls) => Transport::Tunnel(tls.clone()),
                None => Transport::Direct(self.client.clone()),
            });
        };
        if let Some(t) = self.identities.lock().unwrap().get(org, &id.fingerprint) {
            return Ok(t);
        }
        let roots = self.extra_roots_pem.as_deref().map(Vec::as_slice);
        let built = if self.proxy.is_some() {
            tunnel_tls(roots, Some(id)).map(Transport::Tunnel)
        } else {
            Self::direct_client(&self.policy, self.timeout, roots, Some(id)).map(Transport::Direct)
        };
        // Stored pairs were checked when they were set; one that still fails here is named
        // without its content.
        let t = built.map_err(|_| {
            NoAnswer::new(
                FailureKind::Tls,
                "the endpoint's client certificate could not be loaded",
            )
        })?;
        self.identities
            .lock()
            .unwrap()
            .insert(org, id.fingerprint, t.clone());
        Ok(t)
    }

    /// One POST of `job`'s body to `hook`, signed with its secret as it is now.
    pub async fn send(&self, job: &DeliveryJob, hook: &WebhookForDelivery) -> Sent {
        let started_at = timefmt::now_millis();
        let clock = Instant::now();
        let no_answer = |why: NoAnswer, headers: Vec<(String, String)>| Sent {
            started_at,
            duration_ms: clock.elapsed().as_millis() as u64,
            response: Response::NoAnswer(why),
            request_headers: headers,
            response_body: None,
        };
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
        let headers = request.headers(started_at, signature, standard);
        if let Some(to) = &hook.destination {
            return self
                .to_destination(job, to, headers, started_at, clock)
                .await;
        }
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
        let endpoint = job.meta.endpoint_id();
        let transport = match self.transport(endpoint, hook.client_identity.as_ref()) {
            Ok(t) => t,
            Err(why) => return no_answer(why, headers),
        };
        // Every step of the attempt shares its one deadline: a token request, the request,
        // and the request again after a 401.
        let at = Started {
            started_at,
            clock,
            deadline: tokio::time::Instant::from_std(clock) + self.timeout,
        };
        let authz = match self
            .authorization(endpoint, hook, &transport, at, None)
            .await
        {
            Ok(a) => a,
            Err(why) => return no_answer(why, headers),
        };
        // A receiver that refuses an OAuth 2 token gets a new one, once, within the attempt.
        let again = hook
            .receiver_auth
            .as_ref()
            .and_then(|a| a.static_header().is_none().then(|| headers.clone()));
        let outgoing = |headers, authz| Outgoing {
            url: &url,
            headers,
            theirs: &hook.receiver_headers,
            authz,
            body: &job.body,
        };
        let sent = self
            .post(&transport, outgoing(headers, authz.as_deref()), at)
            .await;
        match (again, &sent.response) {
            (Some(headers), Response::Status { code: 401, .. }) => {
                let refused = authz.as_deref();
                match self
                    .authorization(endpoint, hook, &transport, at, refused)
                    .await
                {
                    Ok(authz) => {
                        self.post(&transport, outgoing(headers, authz.as_deref()), at)
                            .await
                    }
                    Err(why) => no_answer(why, headers),
                }
            }
            _ => sent,
        }
    }

    /// One POST of a request, straight or through the egress proxy's tunnel.
    async fn post(&self, transport: &Transport, out: Outgoing<'_>, at: Started) -> Sent {
        let client = match transport {
            Transport::Direct(c) => c,
            Transport::Tunnel(tls) => return self.through_proxy(out, tls.clone(), at).await,
        };
        let Started {
            started_at, clock, ..
        } = at;
        let mut request = client.post(out.url.url().clone()).timeout(
            at.deadline
                .saturating_duration_since(tokio::time::Instant::now()),
        );
        for (k, v) in out.headers.iter().chain(out.theirs) {
            request = request.header(k.as_str(), v.as_str());
        }
        if let Some(a) = out.authz {
            request = request.header("Authorization", a);
        }
        let headers = out.headers;
        let sent = request.body(out.body.to_vec()).send().await;
        let mut resp = match sent {
            Ok(r) => r,
            Err(e) => {
                return Sent {
                    started_at,
                    duration_ms: clock.elapsed().as_millis() as u64,
                    response: Response::NoAnswer(classify(&e, self.timeout)),
                    request_headers: headers,
                    response_body: None,
                };
            }
        };
        let code = resp.status().as_u16();
        let retry_after = message::header_text(resp.headers(), reqwest::header::RETRY_AFTER);
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

/// When an attempt started, and the deadline every step of it shares.
#[derive(Clone, Copy)]
struct Started {
    started_at: time::OffsetDateTime,
    clock: Instant,
    deadline: tokio::time::Instant,
}

/// One request of an attempt: our headers (what the attempt log keeps the signatures of), the
/// receiver's own (never logged), its `Authorization`, and the body.
struct Outgoing<'a> {
    url: &'a WebhookUrl,
    headers: Vec<(String, String)>,
    theirs: &'a [(String, String)],
    authz: Option<&'a str>,
    body: &'a [u8],
}

impl Sender {
    /// The request through the egress proxy: the host is resolved and judged here, so a refused
    /// one never reaches the proxy, and the proxy is asked for the judged address.
    async fn through_proxy(
        &self,
        out: Outgoing<'_>,
        tls: Arc<rustls::ClientConfig>,
        at: Started,
    ) -> Sent {
        let Started {
            started_at,
            clock,
            deadline,
        } = at;
        let url = out.url;
        let headers = out.headers;
        let mut wire: Vec<(String, String)> = headers.iter().chain(out.theirs).cloned().collect();
        if let Some(a) = out.authz {
            wire.push(("Authorization".to_owned(), a.to_owned()));
        }
        let proxy = self.proxy.as_ref().expect("a tunnel transport has a proxy");
        let done =
            |response: Response, headers: Vec<(String, String)>, head: Option<String>| Sent {
                started_at,
                duration_ms: clock.elapsed().as_millis() as u64,
                response,
                request_headers: headers,
                response_body: head,
            };
        // Every step of the attempt is inside its timeout, the name's resolution included: a
        // slow name server ends the attempt as a timeout rather than holding its slot.
        let addrs = match within(deadline, self.timeout, self.policy.resolve(url)).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let why = NoAnswer::new(FailureKind::RefusedAddress, e.to_string());
                return done(Response::NoAnswer(why), headers, None);
            }
            Err(why) => return done(Response::NoAnswer(why), headers, None),
        };
        let connect_within = self.timeout.min(Duration::from_secs(5));
        let sent = within(
            deadline,
            self.timeout,
            crate::tunnel::post(
                proxy,
                &addrs,
                url,
                &wire,
                out.body.to_vec(),
                tls,
                connect_within,
            ),
        )
        .await;
        match sent {
            Ok(Ok(a)) => done(
                Response::Status {
                    code: a.code,
                    retry_after: a.retry_after,
                },
                headers,
                response_excerpt(&a.head),
            ),
            Ok(Err(why)) => {
                if why.kind == FailureKind::Proxy {
                    metrics::counter!(m::EGRESS_PROXY_ERRORS).increment(1);
                    tracing::warn!(%proxy, error = %why.message, "egress proxy failed a request");
                }
                done(Response::NoAnswer(why), headers, None)
            }
            Err(why) => done(Response::NoAnswer(why), headers, None),
        }
    }
}

/// `step` of an attempt, ended as a timeout if the attempt's `deadline` (its start plus
/// `timeout`) comes first: every step of an attempt shares the one deadline.
async fn within<F: std::future::Future>(
    deadline: tokio::time::Instant,
    timeout: Duration,
    step: F,
) -> Result<F::Output, NoAnswer> {
    tokio::time::timeout_at(deadline, step).await.map_err(|_| {
        NoAnswer::new(
            FailureKind::Timeout,
            format!("timed out after {} ms", timeout.as_millis()),
        )
    })
}

/// The TLS configuration of requests through the tunnel: the platform's roots plus
/// `QUALIFIER_WEBHOOK_CA_FILE`'s (as reqwest's are for direct requests), HTTP/1.1, and the
/// client certificate when there is one.
fn tunnel_tls(
    extra_roots_pem: Option<&[u8]>,
    identity: Option<&ClientIdentity>,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let extra: Vec<CertificateDer<'static>> = match extra_roots_pem {
        Some(pem) => CertificateDer::pem_slice_iter(pem).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())?;
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut cfg = match identity {
        Some(id) => {
            let certs = qualifier_egress::client_cert::certificates(&id.pem)?;
            let key = qualifier_egress::client_cert::private_key(&id.pem)?;
            b.with_client_auth_cert(certs, key)?
        }
        None => b.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

mod amqp;
mod aws;
mod credentials;
mod destination;
pub(crate) mod message;
mod no_answer;
mod oauth;
mod operator;

use no_answer::classify;
pub use operator::{Operator, operator_client, send_notice};

#[cfg(test)]
mod tests;
