//! The outbox relay: moves committed events from the `outbox` table to RabbitMQ.
//!
//! It runs inside every `lead-api` process (one less thing to deploy; replicas are safe because
//! each batch is claimed with `FOR UPDATE SKIP LOCKED`). A batch is published with publisher
//! confirms and marked published in the same transaction only after every confirm arrived, so a
//! crash at any point re-publishes (same delivery ids) and never drops. It wakes on the
//! `qualifier_outbox` NOTIFY sent at commit, with a one-second poll as a safety net.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use qualifier_bus::{DeliveryMeta, Outgoing, Publisher, Topology};
use qualifier_store::outbox::{Unpublished, relay_batch};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio::sync::Notify;

use crate::token_filter::TokenFilter;
use tokio_util::sync::CancellationToken;

const BATCH: i64 = 500;
const POLL: Duration = Duration::from_secs(1);
const BACKLOG_SAMPLE: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct RelayStatus {
    /// True while connected to RabbitMQ with the topology declared (half of `/readyz`).
    pub broker_ready: AtomicBool,
}

pub struct Relay {
    pub store: Store,
    /// Kept current from the same LISTEN connection.
    pub tokens: Arc<TokenFilter>,
    pub database_url: String,
    pub amqp_url: String,
    pub topology: Topology,
    pub status: Arc<RelayStatus>,
}

async fn sleep_or_cancel(d: Duration, shutdown: &CancellationToken) {
    tokio::select! { _ = tokio::time::sleep(d) => {}, _ = shutdown.cancelled() => {} }
}

/// Keeps a LISTEN connection open: an outbox notification wakes the relay, a token notification
/// adds the new token's fingerprint to the filter. The filter is reloaded whenever the connection
/// comes up, and marked stale while it is down (notifications may be missed).
async fn listen(
    database_url: String,
    store: Store,
    tokens: Arc<TokenFilter>,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
) {
    let mut backoff = qualifier_bus::reconnect_backoff();
    while !shutdown.is_cancelled() {
        match tokio_postgres::connect(&database_url, tokio_postgres::NoTls).await {
            Ok((client, mut connection)) => {
                let (wake2, tokens2) = (wake.clone(), tokens.clone());
                let pump = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(Ok(msg)) = messages.next().await {
                        if let tokio_postgres::AsyncMessage::Notification(n) = msg {
                            match n.channel() {
                                "qualifier_tokens" => tokens2.add_hex(n.payload()),
                                _ => wake2.notify_one(),
                            }
                        }
                    }
                });
                let listening = client
                    .batch_execute("LISTEN qualifier_outbox; LISTEN qualifier_tokens")
                    .await
                    .is_ok();
                // Listening first, then reading: a token created in between is in one or both.
                let loaded = match store.token_fingerprints().await {
                    Ok(all) if listening => {
                        tokens.replace(all);
                        true
                    }
                    _ => false,
                };
                if listening && loaded {
                    // Anything committed while we were not listening is picked up now.
                    wake.notify_one();
                    backoff = qualifier_bus::reconnect_backoff();
                    tokio::select! { _ = pump => {}, _ = shutdown.cancelled() => return }
                    tokens.mark_stale();
                } else {
                    pump.abort();
                }
                tracing::warn!("outbox LISTEN connection lost; reconnecting");
            }
            Err(e) => tracing::warn!(error = %e, "outbox LISTEN connection failed"),
        }
        let wait = backoff.next().unwrap_or(Duration::from_secs(10));
        sleep_or_cancel(wait, &shutdown).await;
    }
}

fn to_message<'a>(topology_exchange: &'a str, row: &'a Unpublished) -> Outgoing<'a> {
    let meta = DeliveryMeta {
        delivery_id: row.delivery_id,
        event_id: row.event_id,
        org_id: row.org_id,
        event_type: row.event_type,
        attempt: 1,
        occurred_at_ms: Some(qualifier_domain::timefmt::unix_millis(row.created_at)),
        traceparent: row.traceparent.clone(),
        not_before_ms: None,
        test: row.is_test,
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
            let n = relay_batch(&mut conn, BATCH, |rows| async move {
                let msgs: Vec<Outgoing<'_>> =
                    rows.iter().map(|r| to_message(exchange, r)).collect();
                publisher.publish_all(&msgs).await
            })
            .await?;
            total += n;
            if n < BATCH as usize {
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
        let wake = Arc::new(Notify::new());
        let listener = tokio::spawn(listen(
            self.database_url.clone(),
            self.store.clone(),
            self.tokens.clone(),
            wake.clone(),
            shutdown.clone(),
        ));
        let mut backoff = qualifier_bus::reconnect_backoff();
        while !shutdown.is_cancelled() {
            let connected = async {
                let conn = qualifier_bus::connect(
                    &self.amqp_url,
                    &format!("lead-api relay {}", self.topology.prefix),
                )
                .await?;
                let publisher = Publisher::new(&conn).await?;
                self.topology.declare(publisher.channel()).await?;
                Ok::<_, qualifier_bus::BusError>((conn, publisher))
            }
            .await;
            let (conn, publisher) = match connected {
                Ok(c) => c,
                Err(e) => {
                    let wait = backoff.next().unwrap_or(Duration::from_secs(10));
                    tracing::warn!(error = %e, wait_ms = wait.as_millis() as u64, "relay cannot reach RabbitMQ; retrying");
                    self.status.broker_ready.store(false, Ordering::Relaxed);
                    sleep_or_cancel(wait, &shutdown).await;
                    continue;
                }
            };
            backoff = qualifier_bus::reconnect_backoff();
            self.status.broker_ready.store(true, Ordering::Relaxed);
            tracing::info!("outbox relay connected");
            while !shutdown.is_cancelled() {
                match self.drain(&publisher).await {
                    Ok(n) => {
                        if n > 0 {
                            metrics::counter!(m::OUTBOX_PUBLISHED).increment(n as u64);
                            tracing::debug!(published = n, "outbox relayed");
                        }
                        // Paced replays are due at their own instants: wake for the next one.
                        let due = self.store.next_replay_due().await.ok().flatten();
                        let nap = due.map_or(POLL, |d| d.clamp(Duration::from_millis(5), POLL));
                        tokio::select! {
                            _ = wake.notified() => {}
                            _ = tokio::time::sleep(nap) => {}
                            _ = shutdown.cancelled() => {}
                        }
                        // An idle relay publishes nothing, so it would not notice a lost broker
                        // by itself: checked every poll, which keeps `/readyz` honest.
                        if !conn.status().connected() {
                            tracing::warn!("relay lost RabbitMQ; reconnecting");
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %qualifier_store::cause_chain(&e), "outbox relay batch failed; it stays in the outbox");
                        if !conn.status().connected() {
                            break;
                        }
                        sleep_or_cancel(Duration::from_millis(200), &shutdown).await;
                    }
                }
            }
            self.status.broker_ready.store(false, Ordering::Relaxed);
            let _ = conn.close(200, "shutdown".into()).await;
        }
        listener.abort();
        sampler.abort();
    }
}
