//! An attempt to an `amqp` destination (docs/destinations.md, "AMQP"): the delivery's body,
//! published persistent to the receiver's exchange with its routing key, `mandatory` (a message
//! no queue takes comes back and fails the attempt rather than vanish), on a channel in confirm
//! mode; success is the broker's confirm. The request's headers (signature and delivery id
//! included) go as the message's headers.
//!
//! One connection and channel per endpoint, kept while it is used: an attempt reuses them, and
//! any failure drops them, so the next attempt connects afresh (a channel the broker closed,
//! say over a missing exchange, is never reused). The connection goes to an address the egress
//! policy judged, resolved here before each connection (as a webhook's host is), and a TLS
//! connection verifies the broker's certificate against the url's host name.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::tcp::{AsyncTcpStream, OwnedTLSConfig};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::uri::{AMQPAuthority, AMQPQueryString, AMQPScheme, AMQPUri, AMQPUserInfo};
use lapin::{BasicProperties, Channel, Confirmation, Connection, ConnectionProperties};
use qualifier_domain::delivery::{FailureKind, NoAnswer};
use qualifier_domain::destination::{Amqp, AmqpAddress};
use qualifier_egress::EgressPolicy;
use uuid::Uuid;

use super::message::DestinationMessage;

/// A link unused this long is closed (a destination that stopped receiving, an endpoint
/// deleted or moved), so a process holds connections only for the destinations in use.
const IDLE: Duration = Duration::from_secs(300);

/// The connections of the `amqp` destinations in use, one per endpoint.
#[derive(Clone, Default)]
pub(crate) struct Links {
    by_endpoint: Arc<std::sync::Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Slot>>>>>,
}

#[derive(Default)]
struct Slot {
    link: Option<Link>,
    used: Option<Instant>,
}

struct Link {
    /// Which link this is, among every one this process opened.
    number: u64,
    /// What the link was opened for: a changed url, user or password opens a new one.
    opened_for: String,
    connection: Connection,
    channel: Channel,
}

/// What the broker said: the attempt's answer to record, or why it failed.
pub(crate) type Outcome = Result<String, NoAnswer>;

impl Links {
    /// Publishes `msg` to `to` for `endpoint` and waits for the broker's confirm, within
    /// `deadline`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn publish(
        &self,
        endpoint: Uuid,
        to: &Amqp,
        password: Option<&str>,
        msg: DestinationMessage<'_>,
        policy: &EgressPolicy,
        extra_roots_pem: Option<&str>,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Outcome {
        let slot = self.slot(endpoint);
        let mut slot = slot.lock().await;
        slot.used = Some(Instant::now());
        let opened_for = format!("{}\u{0}{}", to.url, password.unwrap_or_default());
        let (channel, number) = match &slot.link {
            Some(l) if l.opened_for == opened_for && l.channel.status().connected() => {
                (l.channel.clone(), l.number)
            }
            _ => {
                close(slot.link.take());
                let opened = tokio::time::timeout_at(
                    deadline,
                    open(to, password, policy, extra_roots_pem, opened_for),
                )
                .await
                .unwrap_or_else(|_| Err(timed_out(timeout)));
                match opened {
                    Ok(link) => {
                        let c = (link.channel.clone(), link.number);
                        slot.link = Some(link);
                        c
                    }
                    Err(why) => return Err(why),
                }
            }
        };
        // Publishes on one channel may run at once (the confirms come back in order); the slot
        // is held only to open or replace the link.
        drop(slot);
        let published = tokio::time::timeout_at(deadline, publish(&channel, to, msg))
            .await
            .unwrap_or_else(|_| Err(timed_out(timeout)));
        if published.is_err() {
            let slot = self.slot(endpoint);
            let mut slot = slot.lock().await;
            if slot.link.as_ref().is_some_and(|l| l.number == number) {
                close(slot.link.take());
            }
        }
        published
    }

    /// The endpoint's slot, after closing every other link idle past [`IDLE`].
    fn slot(&self, endpoint: Uuid) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut map = self.by_endpoint.lock().unwrap();
        map.retain(|id, slot| {
            *id == endpoint
                || match slot.try_lock() {
                    Ok(mut s) if s.used.is_some_and(|u| u.elapsed() > IDLE) => {
                        close(s.link.take());
                        false
                    }
                    _ => true,
                }
        });
        map.entry(endpoint).or_default().clone()
    }
}

fn close(link: Option<Link>) {
    if let Some(l) = link {
        tokio::spawn(async move {
            let _ = l.connection.close(200, "".into()).await;
        });
    }
}

fn timed_out(timeout: Duration) -> NoAnswer {
    NoAnswer::new(
        FailureKind::Timeout,
        format!("timed out after {} ms", timeout.as_millis()),
    )
}

/// Connects to the checked address of `to`'s broker and opens a channel in confirm mode.
async fn open(
    to: &Amqp,
    password: Option<&str>,
    policy: &EgressPolicy,
    extra_roots_pem: Option<&str>,
    opened_for: String,
) -> Result<Link, NoAnswer> {
    let address = qualifier_domain::destination::address(&to.url)
        .map_err(|e| NoAnswer::new(FailureKind::InvalidUrl, e.to_string()))?;
    let addrs = policy
        .resolve_amqp(&address)
        .await
        .map_err(|e| NoAnswer::new(FailureKind::RefusedAddress, e.to_string()))?;
    let uri = uri(&address, password);
    let tls = OwnedTLSConfig {
        identity: None,
        cert_chain: extra_roots_pem.map(str::to_owned),
    };
    let host = address.host.clone();
    let runtime = lapin::runtime::default_runtime().map_err(|e| refused(&e))?;
    let connection = Connection::connector(
        uri,
        runtime,
        async move |uri: AMQPUri, runtime| {
            let stream = AsyncTcpStream::connect(&runtime, addrs.clone()).await?;
            Ok(match uri.scheme {
                AMQPScheme::AMQP => stream,
                AMQPScheme::AMQPS => stream.into_tls(&host, tls.as_ref()).await?,
            })
        },
        ConnectionProperties::default(),
    )
    .await
    .map_err(|e| refused(&e))?;
    let channel = connection.create_channel().await.map_err(|e| refused(&e))?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(|e| refused(&e))?;
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    Ok(Link {
        number: OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        opened_for,
        connection,
        channel,
    })
}

/// The url as lapin takes it: the judged host, the user and password, the virtual host.
fn uri(a: &AmqpAddress, password: Option<&str>) -> AMQPUri {
    let userinfo = if a.username.is_empty() {
        AMQPUserInfo::default()
    } else {
        AMQPUserInfo {
            username: a.username.clone(),
            password: password.unwrap_or_default().to_owned(),
        }
    };
    AMQPUri {
        scheme: if a.tls {
            AMQPScheme::AMQPS
        } else {
            AMQPScheme::AMQP
        },
        authority: AMQPAuthority {
            userinfo,
            host: a.host.clone(),
            port: a.port,
        },
        vhost: a.vhost.clone(),
        query: AMQPQueryString::default(),
    }
}

/// The message's properties: persistent, JSON, its id the delivery's (the same on every
/// attempt and replay, for a receiver's deduplication), the event type as its `type`, and the
/// request's headers but `Content-Type` (a property of its own).
pub(crate) fn properties(msg: &DestinationMessage<'_>) -> BasicProperties {
    let mut table = FieldTable::default();
    for (k, v) in msg.headers {
        if k.eq_ignore_ascii_case("content-type") {
            continue;
        }
        table.insert(
            ShortString::from(k.as_str()),
            AMQPValue::LongString(LongString::from(v.as_str())),
        );
    }
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(msg.delivery_id.as_str().into())
        .with_type(msg.event_type.into())
        .with_app_id("qualifier".into())
        .with_timestamp(u64::try_from(msg.attempted_at.unix_timestamp()).unwrap_or_default())
        .with_headers(table)
}

async fn publish(channel: &Channel, to: &Amqp, msg: DestinationMessage<'_>) -> Outcome {
    let confirm = channel
        .basic_publish(
            to.exchange.as_str().into(),
            to.routing_key.as_str().into(),
            BasicPublishOptions {
                mandatory: true,
                ..BasicPublishOptions::default()
            },
            msg.body,
            properties(&msg),
        )
        .await
        .map_err(|e| refused(&e))?;
    match confirm.await.map_err(|e| refused(&e))? {
        Confirmation::Ack(None) => Ok("confirmed by the broker".to_owned()),
        Confirmation::Ack(Some(returned)) => Err(NoAnswer::new(
            FailureKind::Request,
            format!(
                "the broker returned the message: {} {}",
                returned.reply_code, returned.reply_text
            ),
        )),
        Confirmation::Nack(_) => Err(NoAnswer::new(
            FailureKind::Request,
            "the broker refused the message (nack)",
        )),
        Confirmation::NotRequested => Err(NoAnswer::new(
            FailureKind::Request,
            "the broker did not confirm the message",
        )),
    }
}

/// A lapin error in the delivery log's words: what the broker said (its refusals name the
/// exchange or the virtual host, never an address), or the kind of connection failure.
fn refused(e: &lapin::Error) -> NoAnswer {
    use lapin::ErrorKind as K;
    match e.kind() {
        K::ProtocolError(amqp) => {
            NoAnswer::new(FailureKind::Request, format!("the broker refused: {amqp}"))
        }
        K::IOError(io) => {
            let kind = match io.kind() {
                std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::NotConnected
                | std::io::ErrorKind::TimedOut => FailureKind::Connect,
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
                    FailureKind::Tls
                }
                _ => FailureKind::Connect,
            };
            let what = match kind {
                FailureKind::Tls => "TLS handshake with the broker failed",
                _ => "could not connect to the broker",
            };
            NoAnswer::new(kind, what)
        }
        K::InvalidChannelState(..) | K::InvalidConnectionState(..) => {
            NoAnswer::new(FailureKind::Request, "the broker closed the connection")
        }
        _ => NoAnswer::new(FailureKind::Request, "the broker connection failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_carries_the_requests_headers_and_the_delivery_id() {
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("X-Qualifier-Signature".to_owned(), "sha256=ab".to_owned()),
            ("webhook-id".to_owned(), "d-1".to_owned()),
        ];
        let p = properties(&DestinationMessage {
            body: b"{}",
            headers: &headers,
            delivery_id: "d-1".into(),
            event_id: "e-1".into(),
            org_id: "o-1".into(),
            event_type: "lead.created",
            occurred_at: time::OffsetDateTime::UNIX_EPOCH,
            attempted_at: time::OffsetDateTime::UNIX_EPOCH,
        });
        assert_eq!(p.delivery_mode(), &Some(2));
        assert_eq!(p.message_id().as_ref().map(|m| m.as_str()), Some("d-1"));
        assert_eq!(p.kind().as_ref().map(|m| m.as_str()), Some("lead.created"));
        assert_eq!(
            p.content_type().as_ref().map(|m| m.as_str()),
            Some("application/json")
        );
        let table = p.headers().as_ref().unwrap().inner();
        assert!(table.contains_key("X-Qualifier-Signature"));
        assert!(table.contains_key("webhook-id"));
        assert!(!table.contains_key("Content-Type"));
    }

    #[test]
    fn the_uri_has_the_user_and_password_and_the_virtual_host() {
        let a =
            qualifier_domain::destination::address("amqps://sync@b.example.com:5673/crm").unwrap();
        let u = uri(&a, Some("pw"));
        assert_eq!(u.authority.userinfo.username, "sync");
        assert_eq!(u.authority.userinfo.password, "pw");
        assert_eq!((u.authority.port, u.vhost.as_str()), (5673, "crm"));
        assert!(matches!(u.scheme, AMQPScheme::AMQPS));
        // No user in the url: the broker's default one.
        let anonymous = qualifier_domain::destination::address("amqp://h").unwrap();
        assert_eq!(
            uri(&anonymous, None).authority.userinfo,
            AMQPUserInfo::default()
        );
    }
}
