//! A request's `Authorization` for an endpoint with `auth`: `basic` and `bearer` from the
//! endpoint's opened secret, OAuth 2 client credentials from the endpoint's token server
//! (`super::oauth`), fetched through the endpoint's own transport (the address rules, the
//! egress proxy, its client certificate) within the attempt's deadline.

use std::net::SocketAddr;

use qualifier_domain::delivery::{FailureKind, NoAnswer};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::receiver::AuthKind;
use qualifier_store::webhooks::WebhookForDelivery;
use uuid::Uuid;

use super::oauth::{self, ANSWER_LIMIT};
use super::{Sender, Started, Transport, within};

impl Sender {
    /// The `Authorization` header for `hook`'s receiver (`None`: it has no `auth`). For OAuth
    /// 2, the endpoint's kept token unless it is the one the receiver just `refused`.
    pub(super) async fn authorization(
        &self,
        endpoint: Uuid,
        hook: &WebhookForDelivery,
        transport: &Transport,
        at: Started,
        refused: Option<&str>,
    ) -> Result<Option<String>, NoAnswer> {
        let Some(auth) = &hook.receiver_auth else {
            return Ok(None);
        };
        let AuthKind::OAuth2(client) = &auth.kind else {
            return Ok(auth.static_header());
        };
        let refused = refused.and_then(|h| h.strip_prefix("Bearer "));
        let token = self
            .tokens
            .token(
                endpoint,
                oauth::fingerprint(client, &auth.secret),
                refused,
                || async {
                    let url = WebhookUrl::parse(&client.token_url).map_err(oauth::failed)?;
                    let (headers, form) = oauth::token_request(client, &auth.secret);
                    let (code, body) = self
                        .exchange(transport, &url, &headers, form.into_bytes(), at)
                        .await?;
                    oauth::read_answer(code, &body)
                },
            )
            .await?;
        Ok(Some(format!("Bearer {token}")))
    }

    /// One POST to a token server: its status and the start of its answer. Refused addresses,
    /// timeouts and broken connections fail the token request, named as such.
    async fn exchange(
        &self,
        transport: &Transport,
        url: &WebhookUrl,
        headers: &[(String, String)],
        body: Vec<u8>,
        at: Started,
    ) -> Result<(u16, Vec<u8>), NoAnswer> {
        let named = |why: NoAnswer| oauth::failed(why.message);
        // IP literals never reach the resolver, so they are judged here.
        if let Some(ip) = url.ip_literal()
            && let Err(e) = self.policy.check(&[SocketAddr::new(ip, url.port())])
        {
            return Err(oauth::failed(e));
        }
        match transport {
            Transport::Direct(client) => {
                let mut req = client.post(url.url().clone()).timeout(
                    at.deadline
                        .saturating_duration_since(tokio::time::Instant::now()),
                );
                for (k, v) in headers {
                    req = req.header(k.as_str(), v.as_str());
                }
                let mut resp = req
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| named(super::classify(&e, self.timeout)))?;
                let code = resp.status().as_u16();
                let mut answer = Vec::new();
                while answer.len() < ANSWER_LIMIT {
                    match resp.chunk().await {
                        Ok(Some(c)) => answer.extend_from_slice(&c),
                        Ok(None) => break,
                        Err(e) => return Err(named(super::classify(&e, self.timeout))),
                    }
                }
                Ok((code, answer))
            }
            Transport::Tunnel(tls) => {
                let proxy = self.proxy.as_ref().expect("a tunnel transport has a proxy");
                let addrs = within(at.deadline, self.timeout, self.policy.resolve(url))
                    .await
                    .map_err(named)?
                    .map_err(oauth::failed)?;
                let connect_within = self.timeout.min(std::time::Duration::from_secs(5));
                let post = crate::tunnel::post(
                    proxy,
                    &addrs,
                    url,
                    headers,
                    body,
                    tls.clone(),
                    connect_within,
                );
                let a = within(at.deadline, self.timeout, post)
                    .await
                    .map_err(named)?
                    .map_err(|why| match why.kind {
                        FailureKind::Proxy => why,
                        _ => named(why),
                    })?;
                Ok((a.code, a.head))
            }
        }
    }
}
