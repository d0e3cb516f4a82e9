//! The outbox relay: moves committed events from the `outbox` table to RabbitMQ.
//!
//! It runs inside every `lead-api` process (one less thing to deploy). Replicas take turns: a
//! batch starts by locking the one `feed_head` row (which also assigns the events' feed
//! positions in commit order), so two relays never publish the same rows at once and positions
//! never interleave; see `qualifier_store::outbox::relay_batch`. A batch is published with
//! publisher confirms and marked published in the same transaction only after every confirm
//! arrived, so a crash at any point re-publishes (same delivery ids) and never drops. It wakes
//! on the `qualifier_outbox` NOTIFY sent at commit ([`crate::notifications`]), with a one-second
//! poll as a safety net.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use qualifier_bus::lapin::Connection;
use qualifier_bus::{BusError, DeliveryMeta, Outgoing, Publisher, Topology};
use qualifier_store::outbox::{Unpublished, relay_batch};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio::sync::Notify;

use tokio_util::sync::CancellationToken;

const BATCH: i64 = 500;
/// The longest sleep between rounds; the outcome statement leaves a row due later unwoken.
const POLL: Duration = qualifier_store::deliveries::state::RELAY_POLL;
const BACKLOG_SAMPLE: Duration = Duration::from_secs(2);
/// The shortest sleep before a scheduled row (a retry, a replay, a throttle's turn): the rows
/// due within it go in one round. A failing endpoint's retries are due at instants of their
/// own, a few hundred a second at a steady pace; a round for each (its transaction, its
/// publish, its commit) was what they cost everyone else's events. A retry or a replay goes
/// at most this much after its instant; a turn is sent `SENT_AHEAD` (100 ms) before it, so
/// it is still sent ahead.
const DUE_TOGETHER: Duration = Duration::from_millis(25);

#[derive(Default)]
pub struct RelayStatus {
    /// True while connected to RabbitMQ with the topology declared (half of `/readyz`).
    pub broker_ready: AtomicBool,
}

pub struct Relay {
    pub store: Store,
    /// Notified when an outbox row commits (or the LISTEN connection came back).
    pub wake: Arc<Notify>,
    pub brokers: qualifier_bus::Brokers,
    pub topology: Topology,
    pub status: Arc<RelayStatus>,
}

async fn sleep_or_cancel(d: Duration, shutdown: &CancellationToken) {
    tokio::select! { _ = tokio::time::sleep(d) => {}, _ = shutdown.cancelled() => {} }
}

fn to_message<'a>(topology_exchange: &'a str, row: &'a Unpublished) -> Outgoing<'a> {
    let meta = DeliveryMeta {
        delivery_id: row.delivery_id,
        event_id: row.event_id,
        org_id: row.org_id,
        event_type: row.event_type,
        attempt: row.start_attempt(),
        occurred_at_ms: Some(qualifier_domain::timefmt::unix_millis(row.created_at)),
        traceparent: row.traceparent.clone(),
        not_before_ms: None,
        test: row.is_test,
        seq: Some(row.seq),
        endpoint_id: Some(row.endpoint_id),
    };
    Outgoing {
        exchange: topology_exchange,
        routing_key: row.event_type.as_str(),
        body: &row.payload,
        headers: meta.headers(),
        message_id: Some(row.delivery_id.to_string()),
    }
}

impl Relay {
    /// Publishes batches until the outbox is empty; returns how many rows it published.
    async fn drain(&self, publisher: &Publisher) -> Result<usize, StoreError> {
        let exchange = self.topology.events_exchange();
        let mut total = 0;
        loop {
            let mut conn = self.store.pool.get().await.map_err(StoreError::from_pool)?;
            let exchange = &exchange;
            let batch = relay_batch(&mut conn, BATCH, |rows| async move {
                let msgs: Vec<Outgoing<'_>> =
                    rows.iter().map(|r| to_message(exchange, r)).collect();
                let published = publisher.publish_all(&msgs).await;
                if published.is_ok() && tracing::enabled!(tracing::Level::DEBUG) {
                    let ids: Vec<String> = rows
                        .iter()
                        .map(|r| format!("{}#{}", r.delivery_id, r.start_attempt()))
                        .collect();
                    tracing::debug!(deliveries = ?ids, "published, not yet marked");
                }
                published
            })
            .await?;
            total += batch.published;
            // A claim short of a batch emptied the queue; a full one, even of rows that were
            // only taken out of it, may have left more.
            if batch.claimed < BATCH as usize {
                return Ok(total);
            }
        }
    }

    /// Samples the backlog gauges every few seconds (a scrape never touches the database).
    async fn sample_backlog(store: Store, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(BACKLOG_SAMPLE);
        while !shutdown.is_cancelled() {
            tokio::select! { _ = tick.tick() => {}, _ = shutdown.cancelled() => return }
            if let Ok(b) = store.outbox_backlog().await {
                metrics::gauge!(m::OUTBOX_BACKLOG).set(b.count as f64);
                metrics::gauge!(m::OUTBOX_OLDEST_AGE).set(b.oldest_age_seconds);
            }
        }
    }

    pub async fn run(self, shutdown: CancellationToken) {
        let sampler = tokio::spawn(Self::sample_backlog(self.store.clone(), shutdown.clone()));
        qualifier_bus::keep_connected(
            &self.brokers,
            &format!("lead-api relay {}", self.topology.prefix),
            &self,
            &self.status.broker_ready,
            &shutdown,
        )
        .await;
        sampler.abort();
    }
}

impl qualifier_bus::Session for Relay {
    type Ready = Publisher;

    async fn set_up(&self, conn: &Connection) -> Result<Publisher, BusError> {
        let publisher = Publisher::new(conn).await?;
        self.topology.declare(publisher.channel()).await?;
        Ok(publisher)
    }

    /// Drains the outbox whenever woken, until the broker is lost or refuses a publish.
    async fn run(&self, conn: &Connection, publisher: Publisher, shutdown: &CancellationToken) {
        tracing::info!("outbox relay connected");
        while !shutdown.is_cancelled() {
            match self.drain(&publisher).await {
                Ok(n) => {
                    if n > 0 {
                        metrics::counter!(m::OUTBOX_PUBLISHED).increment(n as u64);
                        tracing::debug!(published = n, "outbox relayed");
                    }
                    // Scheduled rows are due at their own instants: wake for the next one,
                    // and for those due soon after it in the same round.
                    let due = self.store.next_replay_due().await.ok().flatten();
                    let nap = due.map_or(POLL, |d| d.clamp(DUE_TOGETHER, POLL));
                    tokio::select! {
                        _ = self.wake.notified() => {}
                        _ = tokio::time::sleep(nap) => {}
                        _ = shutdown.cancelled() => {}
                    }
                    // An idle relay publishes nothing, so it would not notice a lost broker
                    // by itself: checked every poll, which keeps `/readyz` honest.
                    if !conn.status().connected() {
                        tracing::warn!("relay lost RabbitMQ; reconnecting");
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %qualifier_store::cause_chain(&e), "outbox relay batch failed; it stays in the outbox");
                    if !conn.status().connected() {
                        return;
                    }
                    // A broker nack leaves this channel unable to publish (see
                    // `Publisher::nacked`): a new connection, after the usual short wait.
                    let refused = tokio::select! {
                        _ = publisher.nacked() => true,
                        _ = sleep_or_cancel(Duration::from_millis(200), shutdown) => false,
                    };
                    if refused {
                        sleep_or_cancel(Duration::from_millis(200), shutdown).await;
                        tracing::warn!("broker refused a publish; reconnecting");
                        return;
                    }
                }
            }
        }
    }
}
