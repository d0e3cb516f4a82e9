//! An attempt to a destination other than `https` (docs/destinations.md): the same signed
//! body and headers as a webhook's, handed to that type's sender ([`super::amqp`],
//! [`super::aws`]); its answer comes back as the attempt's [`Sent`].

use std::net::SocketAddr;
use std::time::Instant;

use qualifier_domain::delivery::{FailureKind, NoAnswer};
use qualifier_domain::destination::{Destination, OpenDestination};
use qualifier_domain::netguard::WebhookUrl;

use super::message::DestinationMessage;
use super::{DeliveryJob, RESPONSE_READ_LIMIT, Sender, aws, classify, within};
use crate::decide::{Response, Sent};

/// The envelope's `occurred_at`.
fn occurred_at(body: &[u8]) -> Option<time::OffsetDateTime> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    time::OffsetDateTime::parse(
        v.get("occurred_at")?.as_str()?,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()
}

impl Sender {
    /// An attempt to a destination other than `https`: the same body and headers, handed to
    /// that destination's sender; its answer is recorded where a webhook's response is.
    pub(super) async fn to_destination(
        &self,
        job: &DeliveryJob,
        to: &OpenDestination,
        headers: Vec<(String, String)>,
        started_at: time::OffsetDateTime,
        clock: Instant,
    ) -> Sent {
        let deadline = tokio::time::Instant::from_std(clock) + self.timeout;
        // A deployment that leaves only through its proxy must not reach a broker or AWS
        // around it: until these types can be tunnelled, their attempts fail as the proxy's
        // (ours to mend, never the endpoint's health).
        if self.proxy.is_some() {
            let why = NoAnswer::new(
                FailureKind::Proxy,
                format!(
                    "{} destinations are not sent through QUALIFIER_EGRESS_PROXY",
                    to.destination.type_name()
                ),
            );
            return Sent::without_request(started_at, why);
        }
        let msg = DestinationMessage {
            body: &job.body,
            headers: &headers,
            delivery_id: job.meta.delivery_id.to_string(),
            event_id: job.meta.event_id.to_string(),
            org_id: job.meta.org_id.to_string(),
            event_type: job.meta.event_type.as_str(),
            occurred_at: occurred_at(&job.body).unwrap_or(started_at),
            attempted_at: started_at,
        };
        let outcome = match &to.destination {
            Destination::Amqp(a) => {
                let roots = self
                    .extra_roots_pem
                    .as_deref()
                    .and_then(|p| std::str::from_utf8(p).ok());
                self.amqp
                    .publish(
                        job.meta.endpoint_id(),
                        a,
                        to.secret.as_deref(),
                        msg,
                        &self.policy,
                        roots,
                        deadline,
                        self.timeout,
                    )
                    .await
            }
            other => within(deadline, self.timeout, self.to_aws(other, to, &msg))
                .await
                .unwrap_or_else(Err),
        };
        Sent {
            started_at,
            duration_ms: clock.elapsed().as_millis() as u64,
            response: match outcome {
                Ok(answer) => Response::Accepted { answer },
                Err(why) => Response::NoAnswer(why),
            },
            request_headers: headers,
            response_body: None,
        }
    }

    /// One signed request to an AWS destination ([`aws`]), through the same client as a
    /// webhook's (its resolver judges every address; an IP literal is judged here).
    async fn to_aws(
        &self,
        d: &Destination,
        to: &OpenDestination,
        msg: &DestinationMessage<'_>,
    ) -> aws::Outcome {
        let Some(mut req) = aws::request_for(d, msg) else {
            return Err(NoAnswer::new(
                FailureKind::InvalidUrl,
                "not an AWS destination",
            ));
        };
        let signer = aws::Signer::of(to.secret.as_deref())?;
        aws::sign(&mut req, &signer, msg.attempted_at);
        let base = WebhookUrl::parse(&req.base)
            .map_err(|e| NoAnswer::new(FailureKind::InvalidUrl, e.to_string()))?;
        if let Some(ip) = base.ip_literal() {
            self.policy
                .check(&[SocketAddr::new(ip, base.port())])
                .map_err(|e| NoAnswer::new(FailureKind::RefusedAddress, e.to_string()))?;
        }
        let mut rb = self
            .client
            .request(req.method.clone(), format!("{}{}", req.base, req.path));
        // reqwest writes `Host` from the url, as it was signed.
        for (k, v) in req.headers.iter().filter(|(k, _)| k != "host") {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let mut resp = rb
            .body(std::mem::take(&mut req.body))
            .send()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
        let status = resp.status().as_u16();
        let etag = super::message::header_text(resp.headers(), reqwest::header::ETAG);
        let mut body = Vec::new();
        while body.len() < RESPONSE_READ_LIMIT {
            match resp.chunk().await {
                Ok(Some(c)) => body.extend_from_slice(&c),
                _ => break,
            }
        }
        aws::read_answer(req.service(), status, etag.as_deref(), &body)
    }
}
