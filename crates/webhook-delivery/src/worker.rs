//! The consumer loop: bounded concurrency, ack only after the outcome is durable, reconnect on
//! broker loss, drain in-flight work on shutdown (unacked messages return to the queue).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use qualifier_bus::lapin::message::Delivery;
use qualifier_bus::lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
};
use qualifier_bus::lapin::types::FieldTable;
use qualifier_bus::{DeliveryMeta, Outgoing, Publisher, Topology};
use qualifier_store::Store;
use qualifier_store::deliveries::{AttemptRecord, AttemptWrite, DeliveryContext, status};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::batch::Batcher;
use crate::gate;
use crate::sender::{DeliveryJob, Outcome, Sender};

fn unix_ms() -> i64 {
    qualifier_domain::timefmt::unix_millis(qualifier_domain::timefmt::now_millis())
}

pub const MAX_ATTEMPTS: u32 = 5;
const QUEUE_SAMPLE: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct WorkerStatus {
    pub broker_ready: AtomicBool,
}

pub struct Worker {
    pub store: Store,
    pub sender: Sender,
    pub topology: Topology,
    pub amqp_url: String,
    pub concurrency: usize,
    pub status: Arc<WorkerStatus>,
    /// Per-org in-flight cap and `Retry-After` back-off.
    pub gate: Arc<gate::OrgGate>,
    /// How long shutdown waits for in-flight attempts (the attempt timeout plus a margin).
    pub drain_timeout: Duration,
    /// Context reads and outcome writes, batched across concurrent attempts.
    pub contexts: Batcher<uuid::Uuid, Option<DeliveryContext>>,
    pub outcomes: Batcher<AttemptWrite, ()>,
}

impl Worker {
    /// The two batchers over `store` (inside a Tokio runtime).
    pub fn batchers(
        store: &Store,
    ) -> (
        Batcher<uuid::Uuid, Option<DeliveryContext>>,
        Batcher<AttemptWrite, ()>,
    ) {
        // Two flushers each: one batch in flight while the next one gathers.
        let s = store.clone();
        let contexts = Batcher::spawn(128, 2, move |ids: Vec<uuid::Uuid>| {
            let s = s.clone();
            async move { s.delivery_contexts(&ids).await.map_err(|e| e.to_string()) }
        });
        let s = store.clone();
        let outcomes = Batcher::spawn(128, 2, move |writes: Vec<AttemptWrite>| {
            let s = s.clone();
            async move {
                s.record_attempts(&writes)
                    .await
                    .map(|()| vec![(); writes.len()])
                    .map_err(|e| e.to_string())
            }
        });
        (contexts, outcomes)
    }

    /// Records one attempt's outcome (durable when this returns Ok).
    async fn record(
        &self,
        job: &DeliveryJob,
        record: AttemptRecord,
        status: &'static str,
    ) -> Result<(), String> {
        self.outcomes
            .call(AttemptWrite {
                delivery_id: job.meta.delivery_id,
                attempt: job.meta.attempt,
                record,
                status,
            })
            .await
    }
}

fn parse_job(d: &Delivery) -> Result<DeliveryJob, String> {
    Ok(DeliveryJob {
        meta: DeliveryMeta::from_properties(&d.properties)?,
        body: d.data.clone(),
    })
}

/// `job` as a message again (retry, park or dead letter), with all of its headers.
fn job_message<'a>(job: &'a DeliveryJob, exchange: &'a str, routing_key: &'a str) -> Outgoing<'a> {
    Outgoing {
        exchange,
        routing_key,
        body: &job.body,
        headers: job.meta.headers(),
        message_id: Some(job.meta.delivery_id.to_string()),
    }
}

/// Attempt latency, event-to-delivery latency and the outcome count of one attempt.
fn record_outcome(job: &DeliveryJob, outcome: &Outcome) {
    let (outcome_label, rec) = match outcome {
        Outcome::Skipped(_) => ("skipped", None),
        Outcome::Delivered(r) => ("delivered", Some((r, "success"))),
        Outcome::Failed { record: r, .. } if job.meta.attempt < MAX_ATTEMPTS => {
            ("retrying", Some((r, "failure")))
        }
        Outcome::Failed { record: r, .. } => ("dead", Some((r, "failure"))),
    };
    metrics::counter!(m::DELIVERIES, "outcome" => outcome_label).increment(1);
    if let Some((r, result)) = rec {
        metrics::histogram!(m::ATTEMPT_DURATION, "result" => result)
            .record(r.duration_ms as f64 / 1000.0);
    }
    if let (Outcome::Delivered(_), Some(at)) = (outcome, job.meta.occurred_at_ms) {
        metrics::histogram!(m::EVENT_TO_DELIVERY).record((unix_ms() - at).max(0) as f64 / 1000.0);
    }
}

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
        let (Ok(work), Ok(dead)) = (
            depth(topology.work_queue()).await,
            depth(topology.dead_queue()).await,
        ) else {
            return;
        };
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "work").set(work);
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "retry").set(retry);
        metrics::gauge!(m::QUEUE_DEPTH, "queue" => "dead").set(dead);
    }
}

impl Worker {
    /// Makes one attempt and makes its outcome durable. Err means "not durable": the message
    /// must go back to the queue.
    async fn process(&self, publisher: &Publisher, job: &DeliveryJob) -> Result<(), String> {
        // One read: the delivery's status and the org's webhook as it is now. A duplicate of a
        // delivery that already ended (a redelivery after a crash between the outcome and the
        // ack) is dropped instead of being sent again.
        let ctx = self
            .contexts
            .call(job.meta.delivery_id)
            .await?
            .ok_or_else(|| "delivery row not found".to_owned())?;
        if matches!(
            ctx.status.as_str(),
            status::SUCCEEDED | status::SKIPPED | status::DEAD
        ) {
            return Ok(());
        }
        let outcome = match ctx.webhook {
            Some(Err(e)) => {
                tracing::error!(delivery_id = %job.meta.delivery_id, error = %e, "signing secret unreadable");
                Outcome::Failed {
                    record: AttemptRecord {
                        started_at: qualifier_domain::timefmt::now_millis(),
                        duration_ms: 0,
                        status_code: None,
                        error: Some(
                            "signing secret unreadable (QUALIFIER_SECRET_KEY changed?); rotate the secret"
                                .into(),
                        ),
                    },
                    retry_after: None,
                }
            }
            Some(Ok(hook)) => self.sender.attempt(job, Some(&hook)).await,
            None => self.sender.attempt(job, None).await,
        };
        record_outcome(job, &outcome);
        match outcome {
            Outcome::Skipped(reason) => {
                tracing::info!(delivery_id = %job.meta.delivery_id, reason, "delivery skipped");
                self.store
                    .mark_skipped(job.meta.delivery_id, reason)
                    .await
                    .map_err(|e| e.to_string())
            }
            Outcome::Delivered(rec) => {
                tracing::debug!(delivery_id = %job.meta.delivery_id, status = ?rec.status_code, ms = rec.duration_ms, "delivered");
                self.record(job, rec, status::SUCCEEDED).await
            }
            Outcome::Failed {
                record: rec,
                retry_after,
            } if job.meta.attempt < MAX_ATTEMPTS => {
                tracing::info!(delivery_id = %job.meta.delivery_id, attempt = job.meta.attempt, error = ?rec.error, "attempt failed; retrying later");
                self.record(job, rec, status::FAILED).await?;
                let delays = &self.topology.retry_delays_ms;
                let scheduled = (job.meta.attempt as usize - 1).min(delays.len() - 1);
                let mut next = job.clone();
                next.meta.attempt = job.meta.attempt + 1;
                let queue = match retry_after {
                    // The receiver asked for a pause: the whole org waits at least that long,
                    // and this message carries the time so any replica honours it.
                    Some(wait) if Duration::from_millis(delays[scheduled]) < wait => {
                        self.gate.back_off(job.meta.org_id, wait);
                        next.meta.not_before_ms = Some(unix_ms() + wait.as_millis() as i64);
                        gate::retry_queue_for(delays, wait)
                    }
                    Some(wait) => {
                        self.gate.back_off(job.meta.org_id, wait);
                        scheduled
                    }
                    None => scheduled,
                };
                let queue = self.topology.retry_queue(queue);
                let msg = job_message(&next, "", &queue);
                publisher
                    .publish_all(&[msg])
                    .await
                    .map_err(|e| e.to_string())
            }
            Outcome::Failed { record: rec, .. } => {
                tracing::warn!(delivery_id = %job.meta.delivery_id, error = ?rec.error, "last attempt failed; dead-lettering");
                self.record(job, rec, status::DEAD).await?;
                let exchange = self.topology.dead_exchange();
                let msg = job_message(job, &exchange, "");
                publisher
                    .publish_all(&[msg])
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }

    async fn handle(self: Arc<Self>, publisher: Publisher, d: Delivery) {
        let job = match parse_job(&d) {
            Ok(j) => j,
            Err(e) => {
                // A message we cannot read will never become readable: drop it loudly.
                tracing::error!(error = %e, "unreadable delivery message dropped");
                let _ = d.acker.ack(BasicAckOptions::default()).await;
                return;
            }
        };
        let span = tracing::info_span!("delivery.attempt", delivery_id = %job.meta.delivery_id,
            event_id = %job.meta.event_id, org_id = %job.meta.org_id, attempt = job.meta.attempt,
            trace_id = tracing::field::Empty);
        // The attempt joins the trace of the request that caused the event.
        qualifier_telemetry::set_remote_parent(&span, job.meta.traceparent.as_deref());
        if let Some(t) = qualifier_telemetry::trace_id(&span) {
            span.record("trace_id", t);
        }
        // Wait without using an attempt when the receiver asked for a pause, or when the org
        // already holds its share of this process's slots.
        let permit = if job.meta.not_before_ms.is_some_and(|t| t > unix_ms()) {
            Err(gate::Wait::BackingOff)
        } else {
            self.gate.enter(job.meta.org_id)
        };
        let permit = match permit {
            Ok(p) => p,
            Err(why) => {
                metrics::counter!(m::PARKED, "reason" => match why {
                    gate::Wait::AtCap => "at_cap",
                    gate::Wait::BackingOff => "backing_off",
                })
                .increment(1);
                let queue = self.topology.parked_queue();
                let parked = publisher
                    .publish_all(&[job_message(&job, "", &queue)])
                    .await;
                self.settle(d, &job, parked.map_err(|e| e.to_string()))
                    .await;
                return;
            }
        };
        let in_flight = metrics::gauge!(m::IN_FLIGHT);
        in_flight.increment(1.0);
        let result = tracing::Instrument::instrument(self.process(&publisher, &job), span).await;
        in_flight.decrement(1.0);
        drop(permit);
        self.settle(d, &job, result).await;
    }

    /// Acks once the outcome is durable; otherwise the message goes back to the queue.
    async fn settle(&self, d: Delivery, job: &DeliveryJob, result: Result<(), String>) {
        match result {
            Ok(()) => {
                let _ = d.acker.ack(BasicAckOptions::default()).await;
            }
            Err(e) => {
                tracing::warn!(delivery_id = %job.meta.delivery_id, error = %e, "outcome not durable; requeueing");
                // A short pause keeps a database outage from spinning the message in a hot loop.
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = d
                    .acker
                    .nack(BasicNackOptions {
                        requeue: true,
                        ..Default::default()
                    })
                    .await;
            }
        }
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let tracker = TaskTracker::new();
        while !shutdown.is_cancelled() {
            let setup = async {
                let conn = qualifier_bus::connect(&self.amqp_url).await?;
                let publisher = Publisher::new(&conn).await?;
                self.topology.declare(publisher.channel()).await?;
                let ch = conn.create_channel().await?;
                // Prefetch = concurrency: the broker never gives us more than we work on at once,
                // so other replicas get the rest.
                ch.basic_qos(
                    self.concurrency.min(u16::MAX as usize) as u16,
                    BasicQosOptions::default(),
                )
                .await?;
                let consumer = ch
                    .basic_consume(
                        self.topology.work_queue().into(),
                        "".into(),
                        BasicConsumeOptions::default(),
                        FieldTable::default(),
                    )
                    .await?;
                Ok::<_, qualifier_bus::BusError>((conn, publisher, ch, consumer))
            }
            .await;
            let (conn, publisher, ch, mut consumer) = match setup {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach RabbitMQ; retrying");
                    self.status.broker_ready.store(false, Ordering::Relaxed);
                    tokio::select! { _ = tokio::time::sleep(Duration::from_secs(1)) => {}, _ = shutdown.cancelled() => {} }
                    continue;
                }
            };
            self.status.broker_ready.store(true, Ordering::Relaxed);
            let sampler = match conn.create_channel().await {
                Ok(c) => Some(tokio::spawn(sample_queues(c, self.topology.clone()))),
                Err(_) => None,
            };
            tracing::info!(queue = %self.topology.work_queue(), concurrency = self.concurrency, "consuming");
            loop {
                tokio::select! {
                    next = consumer.next() => match next {
                        Some(Ok(d)) => {
                            tracker.spawn(self.clone().handle(publisher.clone(), d));
                        }
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "consumer error; reconnecting");
                            break;
                        }
                        None => {
                            tracing::warn!("consumer closed; reconnecting");
                            break;
                        }
                    },
                    _ = shutdown.cancelled() => {
                        // Stop taking new messages, finish what is in flight, then close: whatever
                        // is still unacked returns to the queue for another replica.
                        let _ = ch.basic_cancel(consumer.tag(), BasicCancelOptions::default()).await;
                        break;
                    }
                }
            }
            self.status.broker_ready.store(false, Ordering::Relaxed);
            if let Some(s) = sampler {
                s.abort();
            }
            if shutdown.is_cancelled() {
                tracker.close();
                if tokio::time::timeout(self.drain_timeout, tracker.wait())
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "in-flight deliveries did not finish in time; they return to the queue"
                    );
                }
            }
            let _ = conn.close(200, "bye".into()).await;
        }
    }
}
