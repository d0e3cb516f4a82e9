//! The worker as a broker client: on each connection, a publisher (parks, dead letters), a
//! consumer of the work queue whose messages each become an attempt, one of the bundles' queue
//! whose messages each become several (`super::bundle`), and the queue-depth gauges. Kept connected by `qualifier_bus::keep_connected`.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use qualifier_bus::lapin::message::Delivery;
use qualifier_bus::lapin::options::{BasicCancelOptions, BasicConsumeOptions, BasicQosOptions};
use qualifier_bus::lapin::types::FieldTable;
use qualifier_bus::lapin::{Channel, Connection, Consumer};
use qualifier_bus::{BusError, Publisher, Topology};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Worker;

const QUEUE_SAMPLE: Duration = Duration::from_secs(2);

/// Samples the queue depths every few seconds with passive declares (they never create a queue).
async fn sample_queues(ch: qualifier_bus::lapin::Channel, topology: Topology) {
    use qualifier_bus::lapin::options::QueueDeclareOptions;
    let passive = QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let depth = |q: String| {
        let ch = ch.clone();
        async move {
            ch.queue_declare(q.as_str().into(), passive, FieldTable::default())
                .await
                .map(|q| q.message_count() as f64)
        }
    };
    let mut tick = tokio::time::interval(QUEUE_SAMPLE);
    loop {
        tick.tick().await;
        let mut retry = 0.0;
        for i in 0..topology.retry_delays_ms.len() {
            let Ok(n) = depth(topology.retry_queue(i)).await else {
                return;
            };
            retry += n;
        }
        let (Ok(work), Ok(bundles), Ok(dead)) = (
            depth(topology.work_queue()).await,
            depth(topology.bundle_queue()).await,
            depth(topology.dead_queue()).await,
        ) else {
            return;
        };
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "work").set(work);
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "bundles").set(bundles);
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "retry").set(retry);
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "dead").set(dead);
    }
}

/// A consumer's next message, or `None` (logged) when the connection is to be made again.
fn received(
    next: Option<Result<Delivery, qualifier_bus::lapin::Error>>,
    what: &str,
) -> Option<Delivery> {
    match next {
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            tracing::warn!(error = %e, "{what} error; reconnecting");
            None
        }
        None => {
            tracing::warn!("{what} closed; reconnecting");
            None
        }
    }
}

/// The worker as a broker client: a publisher (retries, parks, dead letters) and a consumer of
/// the work queue on each connection; the attempts it started outlive a connection.
pub(super) struct Consuming {
    pub worker: Arc<Worker>,
    pub tracker: TaskTracker,
    /// What bundles' parts share (their slots).
    pub parts: Arc<super::bundle::Parts>,
}

impl qualifier_bus::Session for Consuming {
    type Ready = (Publisher, Channel, Consumer, Consumer);

    async fn set_up(&self, conn: &Connection) -> Result<Self::Ready, BusError> {
        let w = &self.worker;
        let publisher = Publisher::new(conn).await?;
        w.topology.declare(publisher.channel()).await?;
        let ch = conn.create_channel().await?;
        // Prefetch = concurrency: the broker never gives us more than we work on at once, so
        // other replicas get the rest.
        ch.basic_qos(
            w.concurrency.min(u16::MAX as usize) as u16,
            BasicQosOptions::default(),
        )
        .await?;
        let consume = |queue: String| {
            ch.basic_consume(
                queue.into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
        };
        let consumer = consume(w.topology.work_queue()).await?;
        // The bundles' queue on the same channel: the prefetch counts each bundle once, and
        // its parts take the slots of `Parts` instead.
        let bundles = consume(w.topology.bundle_queue()).await?;
        Ok((publisher, ch, consumer, bundles))
    }

    async fn run(
        &self,
        conn: &Connection,
        (publisher, ch, mut consumer, mut bundles): Self::Ready,
        shutdown: &CancellationToken,
    ) {
        let w = &self.worker;
        let sampler = match conn.create_channel().await {
            Ok(c) => Some(tokio::spawn(sample_queues(c, w.topology.clone()))),
            Err(_) => None,
        };
        tracing::info!(queue = %w.topology.work_queue(), bundles = %w.topology.bundle_queue(), concurrency = w.concurrency, "consuming");
        loop {
            tokio::select! {
                next = consumer.next() => {
                    let Some(d) = received(next, "consumer") else { break };
                    self.tracker.spawn(w.clone().handle(publisher.clone(), d));
                }
                next = bundles.next() => {
                    let Some(d) = received(next, "bundle consumer") else { break };
                    self.tracker.spawn(w.clone().handle_bundle(
                        publisher.clone(),
                        d,
                        self.parts.clone(),
                        shutdown.clone(),
                    ));
                }
                _ = publisher.nacked() => {
                    // The refused message's delivery went back to the queue (not acked); a new
                    // connection gets a channel that can publish again.
                    tracing::warn!("broker refused a publish; reconnecting");
                    break;
                }
                _ = shutdown.cancelled() => {
                    // Stop taking new messages, finish what is in flight, then close: whatever
                    // is still unacked returns to the queue for another replica.
                    let _ = ch.basic_cancel(consumer.tag(), BasicCancelOptions::default()).await;
                    let _ = ch.basic_cancel(bundles.tag(), BasicCancelOptions::default()).await;
                    break;
                }
            }
        }
        if let Some(s) = sampler {
            s.abort();
        }
        if shutdown.is_cancelled() {
            // Not ready while it drains: it takes no new message.
            w.status
                .broker_ready
                .store(false, std::sync::atomic::Ordering::Relaxed);
            self.tracker.close();
            if tokio::time::timeout(w.drain_timeout, self.tracker.wait())
                .await
                .is_err()
            {
                tracing::warn!(
                    "in-flight deliveries did not finish in time; they return to the queue"
                );
            }
        }
    }
}
