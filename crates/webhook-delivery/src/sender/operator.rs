//! The operator's webhook (`QUALIFIER_OPERATOR_WEBHOOK_URL`): where operational events go,
//! sent with the same TLS roots, proxy and failure reading as deliveries, but to a service of
//! the operator's own rather than an org's.

use std::time::Duration;

use qualifier_egress::proxy::EgressProxy;
use qualifier_store::health::OpsEvent;

use super::classify;
use crate::decide::Response;

/// The client for the operator's webhook (`QUALIFIER_OPERATOR_WEBHOOK_URL`): the operator's own
/// service, configuration rather than an org's input, so no address rule; the same TLS roots as
/// endpoints (system roots plus `QUALIFIER_WEBHOOK_CA_FILE`), no redirects, and the egress proxy
/// when one is set (asked for the operator's host by name: it is no org's input).
pub fn operator_client(
    timeout: Duration,
    extra_roots_pem: Option<&[u8]>,
    proxy: Option<&EgressProxy>,
) -> anyhow::Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .no_proxy()
        .user_agent("Qualifier-Webhooks/1");
    if let Some(p) = proxy {
        b = b.proxy(reqwest::Proxy::all(p.url().as_str())?);
    }
    if let Some(pem) = extra_roots_pem {
        b = b.tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem)?);
    }
    Ok(b.build()?)
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
