//! The consumer loop: bounded concurrency, ack only after the outcome is durable, reconnect on
//! broker loss, drain in-flight work on shutdown (unacked messages return to the queue).
//!
//! The worker carries out plans; it decides nothing. A message asks the delivery rules
//! ([`crate::decide`]) three times, once per decision: whether it may start
//! ([`decide::plan_admission`], asked through the gate, which counts the slots it weighs),
//! whether to send ([`decide::before_attempt`]) and what the attempt's outcome leads to
//! ([`decide::plan_after_attempt`]). Every branch below is on the variants of their answers.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures_util::StreamExt;
use qualifier_bus::lapin::message::Delivery;
use qualifier_bus::lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
};
use qualifier_bus::lapin::types::FieldTable;
use qualifier_bus::lapin::{Channel, Connection, Consumer};
use qualifier_bus::{BusError, DeliveryMeta, MetaError, Outgoing, Publisher, Topology};
use qualifier_domain::DeliveryStatus;
use qualifier_domain::delivery::AttemptEntry;
use qualifier_domain::health::EndpointState;
use qualifier_domain::timefmt::now_millis;
use qualifier_store::deliveries::{AttemptWrite, DeliveryContext, DeliveryRef, Outcome};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::batch::{BatchError, Batcher};
use crate::decide::{self, Admission, After, Before, HealthUpdate, Pacing, ParkPlan, Sent};
use crate::gate;
use crate::sender::{DeliveryJob, Sender};
use qualifier_store::pacing::Turn;

fn unix_ms() -> i64 {
    qualifier_domain::timefmt::unix_millis(now_millis())
}

const QUEUE_SAMPLE: Duration = Duration::from_secs(2);

/// Why an attempt's outcome is not durable: the message goes back to the queue and is tried
/// again (a duplicate request is possible, a lost event is not).
#[derive(Debug, thiserror::Error)]
pub enum NotDurable {
    #[error("reading the delivery's context failed")]
    Context(#[source] BatchError),
    #[error("recording the attempt failed")]
    Record(#[source] BatchError),
    #[error("recording the attempt alone, its row having been locked, failed")]
    RecordAlone(#[source] StoreError),
    #[error("marking the delivery skipped failed")]
    Skip(#[source] StoreError),
    #[error("publishing the message's next hop failed")]
    Publish(#[source] BusError),
    #[error("holding the delivery for its endpoint's outage failed")]
    Hold(#[source] StoreError),
    #[error("the endpoint is no longer failing; the delivery goes round again")]
    NotHeld,
    #[error("scheduling the delivery's next attempt failed")]
    Schedule(#[source] StoreError),
    #[error("waiting for the throttle or the lead's order failed")]
    Wait(#[source] StoreError),
}

/// A park at least this long waits in the delivery's row rather than in a park queue (a
/// receiver's `Retry-After`, a long back-off): what waits that long is kept where an erasure
/// reaches it. Shorter parks (an org at its in-flight cap) stay in the broker, where they cost
/// no database write and last seconds.
const PARK_IN_ROW_FROM_MS: u64 = 16_000;

#[derive(Default)]
pub struct WorkerStatus {
    pub broker_ready: AtomicBool,
}

pub struct Worker {
    pub store: Store,
    pub sender: Sender,
    pub topology: Topology,
    pub brokers: qualifier_bus::Brokers,
    pub concurrency: usize,
    pub status: Arc<WorkerStatus>,
    /// Per-org in-flight cap and `Retry-After` back-off.
    pub gate: Arc<gate::OrgGate>,
    /// How long shutdown waits for in-flight attempts (the attempt timeout plus a margin).
    pub drain_timeout: Duration,
    /// One attempt's whole-request timeout (`QUALIFIER_DELIVERY_TIMEOUT_MS`).
    pub attempt_timeout: Duration,
    /// Context reads and outcome writes, batched across concurrent attempts.
    pub contexts: Batcher<DeliveryRef, Option<DeliveryContext>>,
    /// Each answers whether the delivery's lead was erased, or hands the write back when its
    /// lead is being erased ([`Store::record_attempts`]).
    pub outcomes: Batcher<AttemptWrite, Recorded>,
    /// The endpoint-health settings (docs/delivery.md, "Endpoint health").
    pub health: decide::HealthRules,
    /// Whether state changes queue an operational event (an operator webhook is configured).
    pub notify_operator: bool,
}

impl Worker {
    /// The two batchers over `store` (inside a Tokio runtime).
    pub fn batchers(
        store: &Store,
    ) -> (
        Batcher<DeliveryRef, Option<DeliveryContext>>,
        Batcher<AttemptWrite, Recorded>,
    ) {
        // Two flushers each: one batch in flight while the next one gathers.
        let s = store.clone();
        let contexts = Batcher::spawn(128, 2, move |ids: Vec<DeliveryRef>| {
            let s = s.clone();
            async move { s.delivery_contexts(&ids).await }
        });
        let s = store.clone();
        let outcomes = Batcher::spawn(128, 2, move |writes: Vec<AttemptWrite>| {
            let s = s.clone();
            async move {
                let outcomes = s.record_attempts(&writes).await?;
                Ok::<_, StoreError>(
                    outcomes
                        .into_iter()
                        .zip(writes)
                        .map(|(o, w)| match o {
                            Outcome::Written { erased } => Recorded::Written { erased },
                            Outcome::Locked => Recorded::Skipped(w),
                        })
                        .collect(),
                )
            }
        });
        (contexts, outcomes)
    }

    /// Records one attempt's outcome (durable when this returns Ok); true when the delivery's
    /// lead was erased meanwhile.
    async fn record(
        &self,
        job: &DeliveryJob,
        entry: AttemptEntry,
        status: DeliveryStatus,
    ) -> Result<bool, NotDurable> {
        let write = AttemptWrite {
            delivery: job.delivery(),
            entry,
            status,
        };
        match self
            .outcomes
            .call(write)
            .await
            .map_err(NotDurable::Record)?
        {
            Recorded::Written { erased } => Ok(erased),
            // Its lead is being erased: this one waits for the erasure alone, on its own
            // connection, while the batches go on for the rest.
            Recorded::Skipped(write) => self
                .store
                .record_attempt(&write)
                .await
                .map_err(NotDurable::RecordAlone),
        }
    }
}

fn parse_job(d: &Delivery) -> Result<DeliveryJob, MetaError> {
    Ok(DeliveryJob {
        meta: DeliveryMeta::from_properties(&d.properties)?,
        body: d.data.clone(),
        probe: false,
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
fn record_metrics(job: &DeliveryJob, record: &AttemptEntry, step: &After) {
    let (outcome, result) = match step {
        After::Succeeded => ("delivered", "success"),
        After::Retry { .. } => ("retrying", "failure"),
        After::Hold { .. } => ("held", "failure"),
        After::Dead => ("dead", "failure"),
    };
    metrics::counter!(m::DELIVERIES, "outcome" => outcome).increment(1);
    metrics::histogram!(m::ATTEMPT_DURATION, "result" => result)
        .record(record.duration_ms as f64 / 1000.0);
    if let (After::Succeeded, Some(at)) = (step, job.meta.occurred_at_ms) {
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

/// An attempt's outcome after the batch: durable, or handed back (its lead is being erased) to
/// be written alone, so the batch needs no copy of each write.
pub enum Recorded {
    /// Durable; whether the delivery's lead was erased by then.
    Written { erased: bool },
    /// Not written: the batch skipped it.
    Skipped(AttemptWrite),
}

/// Where a request stands with its endpoint's throttle ([`Worker::await_turn`]).
enum Paced {
    /// It may go now, without having waited.
    Now,
    /// It waited here for its turn, which is now: what it read before the wait is stale.
    AfterWait,
    /// It waits for its turn in its row (or ended meanwhile): its message is done with.
    Done,
}

impl Worker {
    /// Makes one attempt, if the rules say so, and makes its outcome durable. Err means "not
    /// durable": the message must go back to the queue.
    async fn deliver_attempt(
        &self,
        publisher: &Publisher,
        job: &DeliveryJob,
    ) -> Result<(), NotDurable> {
        // A wait for the lead's order that cannot begin (the earlier delivery ended between the
        // read and the wait) goes round again from a fresh read, a few times at most.
        let mut rounds = 0;
        // Set once the throttle's turn was waited for: the fresh read after the wait sends on
        // that turn rather than taking another.
        let mut turn_taken = false;
        let (ctx, sent) = loop {
            // One read: the delivery's status and the org's webhook as it is now.
            let ctx: Option<DeliveryContext> = self
                .contexts
                .call(job.delivery())
                .await
                .map_err(NotDurable::Context)?;
            let sent: Sent = match decide::before_attempt(&job.meta, ctx.as_ref()) {
                Before::Drop => {
                    // A crash may have come between its end and its release of the next one.
                    self.release_next(ctx.as_ref()).await;
                    return Ok(());
                }
                Before::Orphan => {
                    tracing::error!(delivery_id = %job.meta.delivery_id, "message for a delivery that does not exist dropped");
                    return Ok(());
                }
                Before::Hold => {
                    metrics::counter!(m::DELIVERIES, "outcome" => "held").increment(1);
                    return self.hold(job, job.meta.attempt).await;
                }
                Before::WaitForEarlier => {
                    let Some(order) = ctx.as_ref().and_then(|c| c.order) else {
                        return Err(NotDurable::NotHeld);
                    };
                    match self
                        .store
                        .wait_for_earlier(job.delivery(), order.lead_id, job.meta.attempt)
                        .await
                    {
                        Ok(true) => {
                            metrics::counter!(m::PARKED, "reason" => "earlier_delivery")
                                .increment(1);
                            return Ok(());
                        }
                        Ok(false) if rounds < 3 => {
                            rounds += 1;
                            continue;
                        }
                        Ok(false) => return Err(NotDurable::NotHeld),
                        Err(e) => return Err(NotDurable::Wait(e)),
                    }
                }
                Before::Skip(reason) => {
                    metrics::counter!(m::DELIVERIES, "outcome" => "skipped").increment(1);
                    tracing::info!(delivery_id = %job.meta.delivery_id, reason = reason.as_str(), "delivery skipped");
                    self.store
                        .mark_skipped(job.delivery(), reason.as_str())
                        .await
                        .map_err(NotDurable::Skip)?;
                    self.release_next(ctx.as_ref()).await;
                    return Ok(());
                }
                Before::FailWithoutRequest(why) => {
                    tracing::error!(delivery_id = %job.meta.delivery_id, error = %why.message, "attempt failed before any request");
                    Sent::without_request(now_millis(), why)
                }
                Before::Send(hook) => {
                    if !turn_taken {
                        let paced_at = ctx.as_ref().and_then(|c| c.paced_at);
                        match self.await_turn(job, hook, paced_at).await? {
                            Paced::Done => return Ok(()),
                            Paced::Now => {}
                            // Whatever happened while it waited (the lead erased, the delivery
                            // ended, the webhook changed) is read again before the request:
                            // nothing goes out on a reading older than the wait.
                            Paced::AfterWait => {
                                turn_taken = true;
                                continue;
                            }
                        }
                    }
                    let sent = self.sender.send(job, hook).await;
                    self.gate
                        .observe(job.meta.org_id, Duration::from_millis(sent.duration_ms));
                    sent
                }
            };
            break (ctx, sent);
        };
        let plan = decide::plan_after_attempt(
            &sent,
            &job.meta,
            ctx.as_ref().map(|c| &c.health),
            &self.topology.retry_delays_ms,
            &self.health,
            unix_ms(),
            now_millis(),
        );
        let state = match plan.health.clone() {
            HealthUpdate::Unknown => None,
            HealthUpdate::Unchanged(state) => Some(state),
            HealthUpdate::Apply(input) => self.apply_health(job, input).await,
        };
        let step = plan.next(state);
        let record = plan.record;
        record_metrics(job, &record, &step);
        let id = job.meta.delivery_id;
        match &step {
            After::Succeeded => {
                tracing::debug!(delivery_id = %id, status = ?record.status_code, ms = record.duration_ms, "delivered");
            }
            After::Retry { .. } => {
                tracing::info!(delivery_id = %id, attempt = job.meta.attempt, error = ?record.error, "attempt failed; retrying later");
            }
            After::Dead => {
                tracing::warn!(delivery_id = %id, error = ?record.error, "last attempt failed; dead-lettering");
            }
            After::Hold { .. } => {
                tracing::info!(delivery_id = %id, attempt = job.meta.attempt, error = ?record.error, "attempt failed while the endpoint fails; held until it is back");
            }
        }
        let ends = matches!(step, After::Succeeded | After::Dead);
        let erased = self.record(job, record, step.status()).await?;
        if ends {
            self.release_next(ctx.as_ref()).await;
        }
        if erased {
            // The lead was erased while the request was out: the row is over (skipped) and
            // kept nothing of the answer. Nothing goes on, since a retry, a hold or a dead
            // letter would carry or resend the event as it was before the erasure.
            tracing::info!(delivery_id = %id, "lead erased during the attempt; the delivery ends here");
            return Ok(());
        }
        let (exchange, routing_key, next) = match step {
            After::Succeeded => return Ok(()),
            After::Hold { resume_attempt } => return self.hold(job, resume_attempt).await,
            After::Retry {
                queue,
                not_before_ms,
                org_back_off,
            } => {
                if let Some(wait) = org_back_off {
                    self.gate.back_off(job.meta.org_id, wait);
                }
                // The retry waits in the delivery's row, not as a copy of the body in a retry
                // queue (`Store::schedule_attempt`); the relay sends it again when it is due.
                let delay = self.topology.retry_delays_ms[queue] as i64;
                let at = not_before_ms.unwrap_or(0).max(unix_ms() + delay);
                return self
                    .schedule(job, job.meta.attempt + 1, at)
                    .await
                    .map_err(NotDurable::Schedule);
            }
            // The dead letter says which delivery died (its headers), not what it carried: the
            // body stays in the database only, where retention and erasure reach it (a queue
            // keeps a message until someone purges it, and no one can take one message out).
            // Replays are sent from the database, so nothing reads the body here.
            After::Dead => (
                self.topology.dead_exchange(),
                String::new(),
                DeliveryJob {
                    body: Vec::new(),
                    ..job.clone()
                },
            ),
        };
        publisher
            .publish_all(&[job_message(&next, &exchange, &routing_key)])
            .await
            .map_err(NotDurable::Publish)
    }

    /// Waits for the endpoint's throttle (docs/delivery.md, "Throttle and order"): whether the
    /// request may go now, went on after a wait (and must read its delivery again), or now waits
    /// for its turn in its row (or ended meanwhile) and its message is done with.
    async fn await_turn(
        &self,
        job: &DeliveryJob,
        hook: &qualifier_store::webhooks::WebhookForDelivery,
        paced_at: Option<time::OffsetDateTime>,
    ) -> Result<Paced, NotDurable> {
        let rate = hook.webhook.max_per_second;
        let mut turn_in_ms =
            paced_at.map(|t| (t - time::OffsetDateTime::now_utc()).whole_milliseconds() as i64);
        loop {
            let wait = match decide::pacing(rate, turn_in_ms) {
                Pacing::Free => return Ok(Paced::Now),
                Pacing::Holding { wait } => wait,
                Pacing::Take { rate, wait_here } => {
                    let turn = self
                        .store
                        .take_turn(
                            job.meta.org_id,
                            rate,
                            job.delivery(),
                            job.meta.attempt,
                            wait_here,
                        )
                        .await
                        .map_err(NotDurable::Wait)?;
                    match turn {
                        Turn::Wait(wait) => wait,
                        Turn::Parked => {
                            metrics::counter!(m::PARKED, "reason" => "throttle").increment(1);
                            return Ok(Paced::Done);
                        }
                        Turn::Ended => return Ok(Paced::Done),
                    }
                }
            };
            if wait.is_zero() {
                return Ok(Paced::Now);
            }
            let due = tokio::time::Instant::now() + wait;
            tokio::time::sleep_until(due).await;
            let late = tokio::time::Instant::now().saturating_duration_since(due);
            if decide::woke_in_time(rate, late) {
                return Ok(Paced::AfterWait);
            }
            tracing::debug!(
                delivery_id = %job.meta.delivery_id,
                late_ms = late.as_millis() as u64,
                "woke a spacing after its turn; taking another"
            );
            turn_in_ms = None;
        }
    }

    /// A delivery in its lead's order is over: the lead's next waiting delivery may go. A
    /// failure here is logged only: the health loop's safety net releases it within seconds.
    async fn release_next(&self, ctx: Option<&DeliveryContext>) {
        let Some(order) = ctx.and_then(|c| c.order) else {
            return;
        };
        if let Err(e) = self
            .store
            .release_next_of_lead(order.org_id, order.lead_id)
            .await
        {
            tracing::warn!(lead_id = %order.lead_id, error = %qualifier_store::cause_chain(&e), "next delivery of the lead not released; the safety net will");
        }
    }

    /// Holds the delivery in its row while its endpoint fails (then the message is acked).
    async fn hold(&self, job: &DeliveryJob, resume_attempt: u32) -> Result<(), NotDurable> {
        match self
            .store
            .hold_delivery(job.delivery(), resume_attempt)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(NotDurable::NotHeld),
            Err(e) => Err(NotDurable::Hold(e)),
        }
    }

    /// Applies what an attempt showed of its endpoint to the shared health (under its row's
    /// lock: one truth across replicas) and returns the state it leaves; `None` when it could
    /// not be written (health is bookkeeping: the attempt's step then stands as decided).
    async fn apply_health(
        &self,
        job: &DeliveryJob,
        input: decide::HealthInput,
    ) -> Option<EndpointState> {
        let step = input.step();
        match self
            .store
            .change_health(job.meta.org_id, self.notify_operator, move |h| {
                step.apply(h)
            })
            .await
        {
            Ok((h, change)) => {
                if let Some(c) = change {
                    tracing::warn!(org_id = %job.meta.org_id, change = c.event_type(), error = ?h.last_error, "endpoint health changed");
                }
                Some(h.state)
            }
            Err(e) => {
                tracing::warn!(org_id = %job.meta.org_id, error = %qualifier_store::cause_chain(&e), "endpoint health not updated");
                None
            }
        }
    }

    /// Parks `job` as the plan says (it waits without using an attempt) and acks the original.
    async fn park(&self, publisher: &Publisher, d: Delivery, job: &DeliveryJob, plan: ParkPlan) {
        metrics::counter!(m::PARKED, "reason" => plan.reason).increment(1);
        if let Some(wait) = plan.org_waits {
            self.gate.waiting(job.meta.org_id, wait);
        }
        let wait = qualifier_bus::PARK_TIERS_MS[plan.tier];
        if wait >= PARK_IN_ROW_FROM_MS {
            let at = plan.not_before_ms.unwrap_or(0).max(unix_ms() + wait as i64);
            let parked = self
                .schedule(job, job.meta.attempt, at)
                .await
                .map_err(NotDurable::Schedule);
            return self.settle(d, job, parked).await;
        }
        let queue = self.topology.parked_queue(plan.tier);
        let mut held = job.clone();
        if let Some(t) = plan.not_before_ms {
            held.meta.not_before_ms = Some(t);
        }
        let parked = publisher
            .publish_all(&[job_message(&held, "", &queue)])
            .await
            .map_err(NotDurable::Publish);
        self.settle(d, job, parked).await;
    }

    /// Attempt `attempt` of `job`'s delivery at `at_ms` (Unix milliseconds), from its row. A
    /// delivery that ended meanwhile (erased, its webhook disabled) is not scheduled, and
    /// nothing goes on: its message is done with either way.
    async fn schedule(
        &self,
        job: &DeliveryJob,
        attempt: u32,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_ms) * 1_000_000)
            .unwrap_or_else(|_| now_millis());
        let scheduled = self
            .store
            .schedule_attempt(job.delivery(), attempt, at)
            .await?;
        if !scheduled {
            tracing::info!(delivery_id = %job.meta.delivery_id, "delivery ended while its attempt was out; nothing scheduled");
        }
        Ok(())
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
        let permit = match self.gate.admit(&job.meta, unix_ms()) {
            Admission::Start(permit) => permit,
            Admission::Park(plan) => return self.park(&publisher, d, &job, plan).await,
            Admission::WaitHere { limit, .. } => {
                let waiting = metrics::gauge!(m::WAITING_FOR_SLOT);
                waiting.increment(1.0);
                let slot = self.gate.wait_for_slot(&job.meta, limit, unix_ms).await;
                waiting.decrement(1.0);
                match slot {
                    Ok(permit) => permit,
                    Err(plan) => return self.park(&publisher, d, &job, plan).await,
                }
            }
        };
        let in_flight = metrics::gauge!(m::IN_FLIGHT);
        in_flight.increment(1.0);
        let result =
            tracing::Instrument::instrument(self.deliver_attempt(&publisher, &job), span).await;
        in_flight.decrement(1.0);
        drop(permit);
        self.settle(d, &job, result).await;
    }

    /// Acks once the outcome is durable; otherwise the message goes back to the queue.
    async fn settle(&self, d: Delivery, job: &DeliveryJob, result: Result<(), NotDurable>) {
        match result {
            Ok(()) => {
                let _ = d.acker.ack(BasicAckOptions::default()).await;
            }
            Err(e) => {
                tracing::warn!(delivery_id = %job.meta.delivery_id, error = %qualifier_store::cause_chain(&e), "outcome not durable; requeueing");
                tokio::time::sleep(decide::REQUEUE_PAUSE).await;
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
        let name = format!("webhook-delivery {}", self.topology.prefix);
        let consuming = Consuming {
            worker: self.clone(),
            tracker: TaskTracker::new(),
        };
        qualifier_bus::keep_connected(
            &self.brokers,
            &name,
            &consuming,
            &self.status.broker_ready,
            &shutdown,
        )
        .await;
    }
}

/// The worker as a broker client: a publisher (retries, parks, dead letters) and a consumer of
/// the work queue on each connection; the attempts it started outlive a connection.
struct Consuming {
    worker: Arc<Worker>,
    tracker: TaskTracker,
}

impl qualifier_bus::Session for Consuming {
    type Ready = (Publisher, Channel, Consumer);

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
        let consumer = ch
            .basic_consume(
                w.topology.work_queue().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        Ok((publisher, ch, consumer))
    }

    async fn run(
        &self,
        conn: &Connection,
        (publisher, ch, mut consumer): Self::Ready,
        shutdown: &CancellationToken,
    ) {
        let w = &self.worker;
        let sampler = match conn.create_channel().await {
            Ok(c) => Some(tokio::spawn(sample_queues(c, w.topology.clone()))),
            Err(_) => None,
        };
        tracing::info!(queue = %w.topology.work_queue(), concurrency = w.concurrency, "consuming");
        loop {
            tokio::select! {
                next = consumer.next() => match next {
                    Some(Ok(d)) => {
                        self.tracker.spawn(w.clone().handle(publisher.clone(), d));
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
                    break;
                }
            }
        }
        if let Some(s) = sampler {
            s.abort();
        }
        if shutdown.is_cancelled() {
            // Not ready while it drains: it takes no new message.
            w.status.broker_ready.store(false, std::sync::atomic::Ordering::Relaxed);
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
