#![doc = include_str!("../README.md")]

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};

pub use lapin;

pub mod bundle;
mod session;
use qualifier_domain::EventType;
pub use session::{Session, keep_connected};

/// Message headers the relay sets and the worker reads.
pub mod headers {
    pub const DELIVERY_ID: &str = "x-qualifier-delivery-id";
    pub const EVENT_ID: &str = "x-qualifier-event-id";
    pub const ORG_ID: &str = "x-qualifier-org-id";
    pub const EVENT_TYPE: &str = "x-qualifier-event-type";
    /// 1-based attempt number within the current cycle of 5 (a replay starts a new cycle).
    pub const ATTEMPT: &str = "x-qualifier-attempt";
    /// W3C trace context of the request that caused the event.
    pub const TRACEPARENT: &str = "traceparent";
    /// When the event committed (Unix milliseconds), for the event-to-delivery latency metric.
    pub const OCCURRED_AT: &str = "x-qualifier-occurred-at";
    /// The receiver asked for a pause (`Retry-After`): no attempt before this time (Unix ms).
    pub const NOT_BEFORE: &str = "x-qualifier-not-before";
    /// A test event (`POST …/webhook/test`): sent with `X-Qualifier-Test: true`.
    pub const TEST: &str = "x-qualifier-test";
    /// The delivery's outbox row (its `seq`): the worker reads and writes that row in its own
    /// partition only. Absent on messages of earlier versions.
    pub const SEQ: &str = "x-qualifier-seq";
    /// The endpoint the delivery goes to. Absent on messages of earlier versions, whose one
    /// endpoint per org is keyed by the org's id.
    pub const ENDPOINT_ID: &str = "x-qualifier-endpoint-id";
}

/// What a delivery message says about itself, in its headers. The relay creates it, and the
/// worker carries it unchanged (but for `attempt` and `not_before_ms`) through retries, parking
/// and dead letters: one place reads and writes the headers.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryMeta {
    pub delivery_id: uuid::Uuid,
    pub event_id: uuid::Uuid,
    pub org_id: uuid::Uuid,
    pub event_type: EventType,
    /// 1-based attempt number within the current cycle of 5.
    pub attempt: u32,
    /// When the event committed, in Unix milliseconds (for the event-to-delivery metric).
    pub occurred_at_ms: Option<i64>,
    /// W3C trace context of the request that caused the event.
    pub traceparent: Option<String>,
    /// No attempt before this time (Unix ms): the receiver's `Retry-After`.
    pub not_before_ms: Option<i64>,
    /// A test event asked for by name: sent even if the webhook is not subscribed to its type.
    pub test: bool,
    /// Its outbox row's sequence number, which names the row's partition (`None` from an
    /// earlier version, or for a probe, which has no row).
    pub seq: Option<i64>,
    /// The endpoint it goes to (`None` from an earlier version: the org's id, see
    /// [`DeliveryMeta::endpoint_id`]).
    pub endpoint_id: Option<uuid::Uuid>,
}

impl DeliveryMeta {
    /// The endpoint the delivery goes to: an earlier version's message names none, and its
    /// org's one webhook is the endpoint keyed by the org's id.
    pub fn endpoint_id(&self) -> uuid::Uuid {
        self.endpoint_id.unwrap_or(self.org_id)
    }

    /// The endpoint and its org, as the fair share counts them (`qualifier_domain::units`).
    pub fn units(&self) -> qualifier_domain::units::EndpointOf {
        qualifier_domain::units::EndpointOf::new(self.org_id, self.endpoint_id())
    }

    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![
            (headers::DELIVERY_ID, self.delivery_id.to_string()),
            (headers::EVENT_ID, self.event_id.to_string()),
            (headers::ORG_ID, self.org_id.to_string()),
            (headers::EVENT_TYPE, self.event_type.as_str().to_owned()),
            (headers::ATTEMPT, self.attempt.to_string()),
        ];
        let optional = [
            (
                headers::OCCURRED_AT,
                self.occurred_at_ms.map(|t| t.to_string()),
            ),
            (headers::TRACEPARENT, self.traceparent.clone()),
            (
                headers::NOT_BEFORE,
                self.not_before_ms.map(|t| t.to_string()),
            ),
            (headers::TEST, self.test.then(|| "true".to_owned())),
            (headers::SEQ, self.seq.map(|s| s.to_string())),
            (
                headers::ENDPOINT_ID,
                self.endpoint_id.map(|e| e.to_string()),
            ),
        ];
        h.extend(optional.into_iter().filter_map(|(k, v)| Some((k, v?))));
        h
    }

    /// Reads the headers back; the required ones missing or malformed is an error.
    pub fn from_properties(props: &BasicProperties) -> Result<DeliveryMeta, MetaError> {
        Self::from_lookup(|k| header_str(props, k))
    }

    /// Reads the headers back from wherever they are kept (a message's properties, a part of a
    /// bundle, [`bundle`]): `get` answers a header's value by its name.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<DeliveryMeta, MetaError> {
        let required = |k: &'static str| get(k).ok_or(MetaError::Missing(k));
        fn typed<T: std::str::FromStr>(k: &'static str, v: String) -> Result<T, MetaError> {
            v.parse().map_err(|_| MetaError::Malformed(k, v))
        }
        let number = |k: &str| get(k).and_then(|v| v.parse().ok());
        Ok(DeliveryMeta {
            delivery_id: typed(headers::DELIVERY_ID, required(headers::DELIVERY_ID)?)?,
            event_id: typed(headers::EVENT_ID, required(headers::EVENT_ID)?)?,
            org_id: typed(headers::ORG_ID, required(headers::ORG_ID)?)?,
            event_type: typed(headers::EVENT_TYPE, required(headers::EVENT_TYPE)?)?,
            attempt: typed(headers::ATTEMPT, required(headers::ATTEMPT)?)?,
            occurred_at_ms: number(headers::OCCURRED_AT),
            traceparent: get(headers::TRACEPARENT),
            not_before_ms: number(headers::NOT_BEFORE),
            test: get(headers::TEST).is_some_and(|v| v == "true"),
            seq: number(headers::SEQ),
            endpoint_id: get(headers::ENDPOINT_ID).and_then(|v| v.parse().ok()),
        })
    }
}

/// A delivery message whose headers cannot be read (it will never become readable).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetaError {
    #[error("missing header {0}")]
    Missing(&'static str),
    #[error("malformed header {0}: {1:?}")]
    Malformed(&'static str, String),
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("amqp: {0}")]
    Amqp(#[from] lapin::Error),
    #[error("broker refused the message (nack)")]
    Nacked,
    #[error("broker confirmed nothing within {CONFIRM_TIMEOUT:?}")]
    Unconfirmed,
    #[error("{0}")]
    Config(String),
    #[error("{0} took longer than {SETUP_TIMEOUT:?}")]
    TimedOut(&'static str),
}

/// The longest one node's connection (TCP, TLS and the AMQP handshake), or a connection's set-up
/// after it (channels, confirms, declarations, the consumer), may take before it is given up
/// and the next node tried. A node that accepts TCP but never answers (still booting, stalled,
/// or behind a network that drops its packets) would otherwise hold a relay or a worker on it
/// for as long as the kernel retries, minutes, while the other nodes are up. A connection on a
/// healthy node takes milliseconds.
pub const SETUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// `fut` (a connection's set-up), given up after [`SETUP_TIMEOUT`] as [`BusError::TimedOut`].
pub async fn within_setup_timeout<T, E: Into<BusError>>(
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, BusError> {
    match tokio::time::timeout(SETUP_TIMEOUT, fut).await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(BusError::TimedOut(what)),
    }
}

/// A node of `AMQP_URL` refused TLS (a certificate not trusted, a name that does not match):
/// waiting will not heal it, so the service does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("AMQP_URL: TLS to {node} failed: {cause}")]
pub struct BrokerTlsError {
    pub node: String,
    pub cause: String,
}

/// The waits of the park queues, shortest first. A message held back parks in the longest that
/// does not overshoot its wait; each queue has a single TTL, so its messages expire in order.
/// The 1 s tier keeps the name the single park queue of earlier versions had. The 100 ms tier
/// is for the overflow of an org whose first attempts are still running, and for the last
/// fraction of a receiver's pause.
pub const PARK_TIERS_MS: [u64; 7] = [100, 1_000, 4_000, 16_000, 64_000, 256_000, 1_024_000];

/// Every exchange and queue name, under `QUALIFIER_TOPOLOGY_PREFIX`.
#[derive(Debug, Clone)]
pub struct Topology {
    pub prefix: String,
    /// The waits before attempts 2..5, in milliseconds.
    pub retry_delays_ms: Vec<u64>,
}

impl Topology {
    pub fn new(prefix: impl Into<String>, retry_delays_ms: Vec<u64>) -> Self {
        Topology {
            prefix: prefix.into(),
            retry_delays_ms,
        }
    }
    pub fn events_exchange(&self) -> String {
        format!("{}.events", self.prefix)
    }
    pub fn work_queue(&self) -> String {
        format!("{}.deliveries", self.prefix)
    }
    /// Where the relay puts new deliveries several to a message ([`bundle`]), published through
    /// the default exchange. A queue of its own, so that a worker of a release that cannot read
    /// a bundle never receives one: during an upgrade, bundles wait here for the first worker
    /// that consumes it.
    pub fn bundle_queue(&self) -> String {
        format!("{}.bundles", self.prefix)
    }
    /// The wait is part of the name: queue arguments cannot change in place, so a new
    /// configuration gets new queues instead of a PRECONDITION_FAILED at start.
    pub fn retry_queue(&self, index: usize) -> String {
        format!(
            "{}.retry.{}.{}ms",
            self.prefix,
            index + 1,
            self.retry_delays_ms[index]
        )
    }
    /// Where a message waits without using an attempt: its org is at its in-flight cap or asked
    /// us to back off (`Retry-After`). It expires back to the work queue after
    /// `PARK_TIERS_MS[tier]`.
    pub fn parked_queue(&self, tier: usize) -> String {
        format!("{}.parked.{}ms", self.prefix, PARK_TIERS_MS[tier])
    }
    pub fn dead_exchange(&self) -> String {
        format!("{}.dead", self.prefix)
    }
    pub fn dead_queue(&self) -> String {
        format!("{}.dead", self.prefix)
    }

    fn quorum_args() -> FieldTable {
        let mut t = FieldTable::default();
        // Quorum queues replicate and fsync: a broker restart or node loss keeps the messages.
        t.insert(
            "x-queue-type".into(),
            AMQPValue::LongString("quorum".into()),
        );
        t
    }

    /// Declares everything; safe to call from every process at every start.
    pub async fn declare(&self, ch: &Channel) -> Result<(), BusError> {
        let durable = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        let qdurable = QueueDeclareOptions {
            durable: true,
            ..Default::default()
        };
        ch.exchange_declare(
            self.events_exchange().into(),
            ExchangeKind::Topic,
            durable,
            FieldTable::default(),
        )
        .await?;
        ch.queue_declare(self.work_queue().into(), qdurable, Self::quorum_args())
            .await?;
        ch.queue_declare(self.bundle_queue().into(), qdurable, Self::quorum_args())
            .await?;
        // Every event type goes to the work queue; the worker decides per org what to send.
        ch.queue_bind(
            self.work_queue().into(),
            self.events_exchange().into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        let delays = self
            .retry_delays_ms
            .iter()
            .enumerate()
            .map(|(i, d)| (self.retry_queue(i), *d));
        let parks = PARK_TIERS_MS
            .iter()
            .enumerate()
            .map(|(i, ttl)| (self.parked_queue(i), *ttl));
        for (queue, ttl) in delays.chain(parks) {
            let mut args = Self::quorum_args();
            // Messages wait here for the delay, then expire back to the work queue.
            args.insert("x-message-ttl".into(), AMQPValue::LongLongInt(ttl as i64));
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString("".into()),
            );
            args.insert(
                "x-dead-letter-routing-key".into(),
                AMQPValue::LongString(self.work_queue().into()),
            );
            // At-least-once dead-lettering: the broker keeps the message until the work queue
            // confirmed it (the default for quorum queues is at-most-once). Requires reject-publish.
            args.insert(
                "x-dead-letter-strategy".into(),
                AMQPValue::LongString("at-least-once".into()),
            );
            args.insert(
                "x-overflow".into(),
                AMQPValue::LongString("reject-publish".into()),
            );
            ch.queue_declare(queue.into(), qdurable, args).await?;
        }
        ch.exchange_declare(
            self.dead_exchange().into(),
            ExchangeKind::Fanout,
            durable,
            FieldTable::default(),
        )
        .await?;
        ch.queue_declare(self.dead_queue().into(), qdurable, Self::quorum_args())
            .await?;
        ch.queue_bind(
            self.dead_queue().into(),
            self.dead_exchange().into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        Ok(())
    }

    /// Removes everything (tests own a prefix and remove it when done).
    pub async fn delete(&self, ch: &Channel) -> Result<(), BusError> {
        let mut queues = vec![self.work_queue(), self.bundle_queue(), self.dead_queue()];
        queues.extend((0..PARK_TIERS_MS.len()).map(|i| self.parked_queue(i)));
        queues.extend((0..self.retry_delays_ms.len()).map(|i| self.retry_queue(i)));
        for q in queues {
            ch.queue_delete(q.into(), QueueDeleteOptions::default())
                .await?;
        }
        for x in [self.events_exchange(), self.dead_exchange()] {
            ch.exchange_delete(x.into(), ExchangeDeleteOptions::default())
                .await?;
        }
        Ok(())
    }
}

/// The waits between reconnection attempts (to RabbitMQ or PostgreSQL) after a loss: from
/// 100 ms, doubling, to at most 10 s, with jitter so that replicas which lost the broker together
/// do not all come back in the same instant. Call `next()` after each failure; build a new one
/// after a success.
pub fn reconnect_backoff() -> impl Iterator<Item = std::time::Duration> {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::new()
        .with_min_delay(std::time::Duration::from_millis(100))
        .with_max_delay(std::time::Duration::from_secs(10))
        .with_jitter()
        .without_max_times()
        .build()
}

/// `AMQP_URL` as the services read it (docs/operations.md, "Production topology"): one URL, or several separated by
/// commas, one per node of one cluster, with `amqps://` verified against the system roots plus
/// `QUALIFIER_AMQP_CA_FILE`. Cheap to clone.
#[derive(Clone)]
pub struct Brokers {
    urls: std::sync::Arc<[String]>,
    /// Where each URL points, for messages: `host:port`, never the credentials.
    places: std::sync::Arc<[String]>,
    ca_pem: Option<std::sync::Arc<str>>,
}

impl std::fmt::Debug for Brokers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Brokers")
            .field("nodes", &self.places)
            .field("ca_file", &self.ca_pem.is_some())
            .finish()
    }
}

/// A bad `AMQP_URL` or `QUALIFIER_AMQP_CA_FILE`: the variable and its problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} {problem}")]
pub struct BrokersError {
    pub var: &'static str,
    pub problem: String,
}

/// Where a process is in its round of the nodes: each connection loop keeps its own, so the
/// relay's publisher and the worker's consumer each move on from the node they lost.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rotation(usize);

impl Rotation {
    /// The index in the list where the next attempt starts.
    pub fn position(self) -> usize {
        self.0
    }
}

impl Brokers {
    /// Parses the list and reads the CA file once, at start.
    pub fn parse(list: &str, ca_file: Option<&std::path::Path>) -> Result<Brokers, BrokersError> {
        let url_err = |problem: String| BrokersError {
            var: "AMQP_URL",
            problem,
        };
        let mut urls = Vec::new();
        let mut places = Vec::new();
        for (i, raw) in list.split(',').map(str::trim).enumerate() {
            if raw.is_empty() {
                return Err(url_err(format!("has an empty entry (number {})", i + 1)));
            }
            let uri: lapin::uri::AMQPUri = raw.parse().map_err(|e: String| {
                // The parser's message never holds the password, only what it could not read.
                url_err(format!("entry {} is not an AMQP URL: {e}", i + 1))
            })?;
            places.push(format!(
                "{}://{}:{}",
                match uri.scheme {
                    lapin::uri::AMQPScheme::AMQP => "amqp",
                    lapin::uri::AMQPScheme::AMQPS => "amqps",
                },
                uri.authority.host,
                uri.authority.port
            ));
            urls.push(raw.to_owned());
        }
        let ca_pem = match ca_file {
            None => None,
            Some(path) => {
                let err = |problem: String| BrokersError {
                    var: "QUALIFIER_AMQP_CA_FILE",
                    problem,
                };
                let text = std::fs::read_to_string(path)
                    .map_err(|e| err(format!("cannot be read ({}): {e}", path.display())))?;
                if !text.contains("-----BEGIN CERTIFICATE-----") {
                    return Err(err(format!("{} holds no PEM certificate", path.display())));
                }
                Some(text.into())
            }
        };
        Ok(Brokers {
            urls: urls.into(),
            places: places.into(),
            ca_pem,
        })
    }

    /// The nodes, for messages (no credentials).
    pub fn nodes(&self) -> String {
        self.places.join(", ")
    }

    fn tls(&self) -> lapin::tcp::OwnedTLSConfig {
        lapin::tcp::OwnedTLSConfig {
            identity: None,
            cert_chain: self.ca_pem.as_deref().map(str::to_owned),
        }
    }

    async fn connect_one(&self, i: usize, name: &str) -> Result<Connection, lapin::Error> {
        let props = ConnectionProperties::default().with_connection_name(name.into());
        Connection::connect_with_config(
            &self.urls[i],
            props,
            self.tls(),
            lapin::runtime::default_runtime()?,
        )
        .await
    }

    /// A connection named `name` (so `rabbitmqctl list_connections client_properties` tells
    /// which service and topology prefix it belongs to), to the first node that answers, going
    /// round the list from where `at` says, once. On success `at` moves past the node used, so
    /// after that connection drops the next attempt starts at the following node.
    pub async fn connect(&self, name: &str, at: &mut Rotation) -> Result<Connection, BusError> {
        let n = self.urls.len();
        let mut last = None;
        for k in 0..n {
            let i = (at.0 + k) % n;
            match within_setup_timeout("connecting", self.connect_one(i, name)).await {
                Ok(c) => {
                    tracing::info!(node = %self.places[i], connection = name, "connected to RabbitMQ");
                    at.0 = (i + 1) % n;
                    return Ok(c);
                }
                Err(e) => {
                    tracing::warn!(node = %self.places[i], error = %e, "RabbitMQ node not reachable");
                    last = Some(e);
                }
            }
        }
        at.0 = (at.0 + 1) % n;
        Err(last.expect("AMQP_URL holds at least one URL"))
    }

    /// One connection to every node at start. A TLS failure (a certificate not trusted, a name
    /// that does not match) will not heal by waiting, so it is the service's start error, one
    /// line naming `AMQP_URL`; a node that is down is only logged (the service waits for it).
    /// What a start-up log should warn about in this list: some nodes in plaintext beside
    /// others in TLS (a list that mixes them is almost always a typo), or every node in
    /// plaintext (fine on a private network, not across one). `None` when all use TLS.
    /// Nodes on this machine (a loopback address) cross no network, so their plaintext is not
    /// warned about: `make run`'s broker is one, a production broker never is.
    pub fn transport_warning(&self) -> Option<&'static str> {
        let plain = self
            .places
            .iter()
            .filter(|p| p.starts_with("amqp://") && !on_loopback(p))
            .count();
        let remote = self.places.iter().filter(|p| !on_loopback(p)).count();
        match plain {
            0 => None,
            n if n == remote => Some(
                "AMQP_URL uses amqp:// (no TLS): events cross the network in plaintext; use amqps:// outside a private network",
            ),
            _ => Some(
                "AMQP_URL mixes amqp:// and amqps:// nodes: the plaintext ones send events unencrypted; give every node amqps://",
            ),
        }
    }

    pub async fn check_at_start(&self, name: &str) -> Result<(), BrokerTlsError> {
        for i in 0..self.urls.len() {
            let tried = tokio::time::timeout(
                std::time::Duration::from_secs(15),
                self.connect_one(i, name),
            )
            .await;
            match tried {
                Ok(Ok(conn)) => {
                    let _ = conn.close(200, "start check".into()).await;
                }
                Ok(Err(e)) => {
                    if let Some(tls) = tls_failure(&e) {
                        return Err(BrokerTlsError {
                            node: self.places[i].clone(),
                            cause: tls,
                        });
                    }
                    tracing::warn!(node = %self.places[i], error = %e, "RabbitMQ node not reachable at start; waiting for it");
                }
                Err(_) => {
                    tracing::warn!(node = %self.places[i], "RabbitMQ node did not answer at start within 15 s");
                }
            }
        }
        Ok(())
    }
}

/// The TLS reason in a lapin connection error, if that is what it is: rustls' error sits in
/// the I/O error's chain ("invalid peer certificate: UnknownIssuer").
fn tls_failure(e: &lapin::Error) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(t) = c.downcast_ref::<rustls::Error>() {
            return Some(t.to_string());
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(t) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(t.to_string());
        }
        cur = c.source();
    }
    None
}

/// A connection to one URL (tests, benchmarks and tools that talk to one node).
pub async fn connect(url: &str, name: &str) -> Result<Connection, BusError> {
    let brokers = Brokers::parse(url, None).map_err(|e| BusError::Config(e.to_string()))?;
    brokers.connect(name, &mut Rotation::default()).await
}

/// A message to publish: body bytes plus headers.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    pub exchange: &'a str,
    pub routing_key: &'a str,
    pub body: &'a [u8],
    pub headers: Vec<(&'static str, String)>,
    pub message_id: Option<String>,
    /// `application/json` for a delivery (its envelope), [`bundle::CONTENT_TYPE`] for a bundle.
    pub content_type: &'static str,
}

/// How long a batch's confirms may take. Normally milliseconds; seen here: a RabbitMQ 3.10
/// node restarted into its cluster accepted publishes on a new channel and never confirmed
/// them. Past this the batch counts as refused (its messages stay in the outbox, or its
/// delivery stays unacked) and the owner reconnects, to the next node.
pub const CONFIRM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A channel in confirm mode. `publish_all` sends a batch and returns only when the broker has
/// confirmed every message (persisted, for durable queues), so callers may then forget them.
#[derive(Clone)]
pub struct Publisher {
    channel: Channel,
    nacked: std::sync::Arc<tokio::sync::Notify>,
}

impl Publisher {
    pub async fn new(conn: &Connection) -> Result<Publisher, BusError> {
        let channel = conn.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        Ok(Publisher {
            channel,
            nacked: Default::default(),
        })
    }

    /// Resolves once the broker has refused a message on this channel, or left a batch
    /// unconfirmed past [`CONFIRM_TIMEOUT`]. Its owner then opens a
    /// new connection: RabbitMQ 3.10 keeps nacking every publish of a channel whose quorum
    /// queue lost its leader (the channel's queue client holds the stale leader; fixed in 3.12,
    /// rabbitmq-server#9241), while a new channel finds the new leader at once. Seen here with
    /// a three-node cluster: a minute of nacks after a kill -9 of the leader's node, until this.
    pub async fn nacked(&self) {
        self.nacked.notified().await
    }

    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    pub fn properties(msg: &Outgoing<'_>) -> BasicProperties {
        let mut table = FieldTable::default();
        for (k, v) in &msg.headers {
            table.insert(
                ShortString::from(*k),
                AMQPValue::LongString(LongString::from(v.as_str())),
            );
        }
        let mut props = BasicProperties::default()
            .with_delivery_mode(2) // persistent
            .with_content_type(msg.content_type.into())
            .with_headers(table);
        if let Some(id) = &msg.message_id {
            props = props.with_message_id(id.as_str().into());
        }
        props
    }

    pub async fn publish_all(&self, msgs: &[Outgoing<'_>]) -> Result<(), BusError> {
        let mut confirms = Vec::with_capacity(msgs.len());
        for m in msgs {
            let c = self
                .channel
                .basic_publish(
                    m.exchange.into(),
                    m.routing_key.into(),
                    BasicPublishOptions::default(),
                    m.body,
                    Self::properties(m),
                )
                .await?;
            confirms.push(c);
        }
        let confirmed = tokio::time::timeout(CONFIRM_TIMEOUT, async {
            for c in confirms {
                if !c.await?.is_ack() {
                    return Err(BusError::Nacked);
                }
            }
            Ok(())
        })
        .await
        .unwrap_or(Err(BusError::Unconfirmed));
        if matches!(confirmed, Err(BusError::Nacked | BusError::Unconfirmed)) {
            // A stored permit: the owner's select sees it even if it was not waiting yet.
            self.nacked.notify_one();
        }
        confirmed
    }
}

/// Reads a string header set by [`Publisher`].
pub fn header_str(props: &BasicProperties, key: &str) -> Option<String> {
    let table = props.headers().as_ref()?;
    match table.inner().get(key)? {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        AMQPValue::LongLongInt(n) => Some(n.to_string()),
        AMQPValue::LongInt(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a node's `scheme://host:port` names this machine (`localhost`, `127.0.0.0/8`, `::1`).
fn on_loopback(place: &str) -> bool {
    let host = place
        .split_once("://")
        .map_or(place, |(_, rest)| rest)
        .rsplit_once(':')
        .map_or(place, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod meta_tests {
    use super::*;

    #[test]
    fn plaintext_is_warned_about_only_where_it_crosses_a_network() {
        let warn = |list: &str| Brokers::parse(list, None).unwrap().transport_warning();
        // The dev stack's broker, on this machine.
        assert_eq!(warn("amqp://guest:guest@127.0.0.1:5672/%2f"), None);
        assert_eq!(warn("amqp://localhost:5672"), None);
        assert!(on_loopback("amqp://[::1]:5673"));
        assert_eq!(warn("amqps://rabbit.internal:5671"), None);
        assert!(
            warn("amqp://rabbit.internal:5672")
                .unwrap()
                .contains("plaintext")
        );
        assert!(warn("amqp://10.0.0.7:5672").unwrap().contains("plaintext"));
        assert!(
            warn("amqps://a.internal:5671,amqp://b.internal:5672")
                .unwrap()
                .contains("mixes")
        );
        // A loopback node beside a remote one in TLS: only the remote counts.
        assert_eq!(warn("amqp://127.0.0.1:5672,amqps://b.internal:5671"), None);
        assert!(on_loopback("amqp://127.8.0.1:5672") && !on_loopback("amqp://localhost.evil:5672"));
    }

    #[test]
    fn reconnect_waits_grow_to_a_ceiling_and_never_end() {
        let waits: Vec<_> = reconnect_backoff().take(12).collect();
        assert_eq!(waits.len(), 12, "it never gives up");
        assert!(waits[0] < std::time::Duration::from_millis(250));
        assert!(waits[6] > waits[0]);
        // Jitter adds up to one more delay on top of the ceiling.
        assert!(
            waits
                .iter()
                .all(|w| *w <= std::time::Duration::from_secs(20))
        );
    }

    #[test]
    fn delivery_meta_survives_the_headers_round_trip() {
        let mut meta = DeliveryMeta {
            delivery_id: uuid::Uuid::new_v4(),
            event_id: uuid::Uuid::new_v4(),
            org_id: uuid::Uuid::new_v4(),
            event_type: EventType::LeadCreated,
            attempt: 3,
            occurred_at_ms: Some(1_763_720_000_123),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            not_before_ms: Some(1_763_720_009_000),
            test: true,
            seq: Some(89_262_305_312_769),
            endpoint_id: Some(uuid::Uuid::new_v4()),
        };
        let props = |m: &DeliveryMeta| {
            Publisher::properties(&Outgoing {
                exchange: "",
                routing_key: "",
                body: b"",
                headers: m.headers(),
                message_id: None,
                content_type: "application/json",
            })
        };
        assert_eq!(DeliveryMeta::from_properties(&props(&meta)).unwrap(), meta);
        (
            meta.occurred_at_ms,
            meta.traceparent,
            meta.not_before_ms,
            meta.seq,
            meta.endpoint_id,
        ) = (None, None, None, None, None);
        assert_eq!(
            meta.endpoint_id(),
            meta.org_id,
            "an earlier version's message"
        );
        assert_eq!(DeliveryMeta::from_properties(&props(&meta)).unwrap(), meta);
        let mut bare = props(&meta);
        bare = bare.with_headers(FieldTable::default());
        assert!(DeliveryMeta::from_properties(&bare).is_err());
        let mut unknown = meta.clone().headers();
        unknown.retain(|(k, _)| *k != headers::EVENT_TYPE);
        unknown.push((headers::EVENT_TYPE, "lead.deleted".into()));
        let props = Publisher::properties(&Outgoing {
            exchange: "",
            routing_key: "",
            body: b"",
            headers: unknown,
            message_id: None,
            content_type: "application/json",
        });
        assert_eq!(
            DeliveryMeta::from_properties(&props),
            Err(MetaError::Malformed(
                headers::EVENT_TYPE,
                "lead.deleted".into()
            ))
        );
    }
}
