//! One message, one attempt: admitted by the gate, then three stages, each in its file:
//!
//! - [`prepare`]: read the delivery and its endpoint as they are now and ask the rules
//!   ([`decide::before_attempt`]) whether to send; every answer that sends nothing (drop, skip,
//!   hold, wait for the lead's order or the throttle's turn) ends there;
//! - send: the request ([`crate::sender`]);
//! - [`settle`]: what the answer leads to ([`decide::plan_after_attempt`]), made durable, then
//!   its next step (retry from the row, hold, dead-letter).
//!
//! The message is acked only once its outcome is durable, and goes back to the queue otherwise
//! ([`NotDurable`]). [`consume`] is the broker side: the consumer and publisher on each
//! connection, bounded concurrency, draining in-flight attempts at shutdown. The worker carries
//! out plans; it decides nothing: every branch is on the variants of the rules' answers.

mod bundle;
mod consume;
mod prepare;
mod rows;
mod settle;
mod underway;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use qualifier_bus::lapin::Acker;
use qualifier_bus::lapin::message::Delivery;
use qualifier_bus::lapin::options::{BasicAckOptions, BasicNackOptions};
use qualifier_bus::{BusError, DeliveryMeta, MetaError, Outgoing, Publisher, Topology};
use qualifier_domain::health::EndpointState;
use qualifier_domain::timefmt::now_millis;
use qualifier_store::deliveries::{AttemptWrite, DeliveryContext, DeliveryRef, Outcome, Written};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::batch::{BatchError, Batcher};
use crate::decide::{self, Admission, Lane, ParkPlan, Sent};
use crate::gate;
use crate::sender::{DeliveryJob, Sender};
use prepare::Go;

/// How long the health writes' batch gathers steps before it writes them
/// ([`Worker::batchers`]): well under the failing span (a minute when deployed) and a
/// probe's first wait (5 s), so the state a failure leads to is not noticeably late.
const HEALTH_LINGER: Duration = Duration::from_millis(50);

/// How long an outcome batch gathers after its first attempt: attempts end one at a time, and
/// without it the two flushers wrote half as many per batch as when each outcome waited for the
/// relay's commit (two outcome commits per ten events instead of one; docs/performance.md).
/// An ack and the release of an ordered lead's next delivery wait that much longer.
const OUTCOME_LINGER: Duration = Duration::from_millis(2);

/// `job` as a message again (a park or a dead letter), with all of its headers.
fn job_message<'a>(job: &'a DeliveryJob, exchange: &'a str, routing_key: &'a str) -> Outgoing<'a> {
    Outgoing {
        exchange,
        routing_key,
        body: &job.body,
        headers: job.meta.headers(),
        message_id: Some(job.meta.delivery_id.to_string()),
        content_type: "application/json",
    }
}

fn unix_ms() -> i64 {
    qualifier_domain::timefmt::unix_millis(now_millis())
}

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
    #[error(
        "the lead's earlier delivery ended while this one was to wait for it; the delivery goes round again"
    )]
    OrderChanged,
    #[error(
        "the delivery's context read without the row or webhook its rules answered on; the delivery goes round again"
    )]
    ContextChanged,
    #[error("scheduling the delivery's next attempt failed")]
    Schedule(#[source] BatchError),
    #[error("waiting for the throttle or the lead's order failed")]
    Wait(#[source] StoreError),
    #[error("the process stopped before every part of the bundle was tried")]
    Interrupted,
}

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
    /// The fair share (an org's cap, its endpoints' shares) and each endpoint's `Retry-After`.
    pub gate: Arc<gate::OrgGate>,
    /// How long shutdown waits for in-flight attempts (the attempt timeout plus a margin).
    pub drain_timeout: Duration,
    /// One attempt's whole-request timeout (`QUALIFIER_DELIVERY_TIMEOUT_MS`).
    pub attempt_timeout: Duration,
    /// Context reads and outcome writes, batched across concurrent attempts.
    pub contexts: Batcher<DeliveryRef, Option<DeliveryContext>>,
    /// Each answers whether the delivery's lead was erased, or hands the write back when its
    /// lead is being erased ([`Deliveries::record_attempts`]).
    pub outcomes: Batcher<AttemptWrite, Recorded>,
    /// What attempts' answers do to their endpoints' health: the steps of one endpoint that
    /// ended meanwhile weighed in one write ([`decide::fold_steps`]); each answers the state
    /// the endpoint is in after it (`None`: not written).
    pub health_writes: Batcher<HealthWrite, Option<EndpointState>>,
    /// The waits parked in delivery rows (a long park at an org's cap, a long `Retry-After`),
    /// written together: each answers whether its row was still open to schedule.
    pub schedules: Batcher<Scheduled, bool>,
    /// Parked deliveries called forward as their endpoint's slots free, written together:
    /// each answers whether its row still waited ([`Deliveries::call_forward`]).
    pub calls: Batcher<DeliveryRef, bool>,
    /// The endpoint-health settings (docs/delivery.md, "Endpoint health").
    pub health: decide::HealthRules,
    /// Whether state changes queue an operational event (an operator webhook is configured).
    pub notify_operator: bool,
    /// The deliveries with an attempt under way here: a second copy of one waits for it.
    pub(crate) underway: underway::Underway,
}

impl Worker {
    /// The three batchers over `store` (inside a Tokio runtime).
    pub fn batchers(store: &Store, notify_operator: bool) -> Batchers {
        // Two flushers each: one batch in flight while the next one gathers.
        let s = store.clone();
        let contexts = Batcher::spawn(128, 2, move |ids: Vec<DeliveryRef>| {
            let s = s.clone();
            async move { s.deliveries().delivery_contexts(&ids).await }
        });
        let s = store.clone();
        // Gathered for `OUTCOME_LINGER`: each batch is a statement and a commit (a WAL flush).
        let outcomes =
            Batcher::spawn_lingering(128, 2, OUTCOME_LINGER, move |writes: Vec<AttemptWrite>| {
                let s = s.clone();
                async move {
                    let outcomes = s.deliveries().record_attempts(&writes).await?;
                    Ok::<_, StoreError>(
                        outcomes
                            .into_iter()
                            .zip(writes)
                            .map(|(o, w)| match o {
                                Outcome::Written(written) => Recorded::Written(written),
                                Outcome::Locked => Recorded::Skipped(w),
                            })
                            .collect(),
                    )
                }
            });
        let s = store.clone();
        // One flusher, each batch gathered for `HEALTH_LINGER`: a failing endpoint's steps
        // come with each of its failed attempts, one at a time, and each write locks its row
        // and commits; weighed together they are one write per linger instead of one per
        // failure. The attempts wait that much longer for their health's answer, which only
        // a failing (or recovering) endpoint's attempts ask for.
        let health_writes =
            Batcher::spawn_lingering(128, 1, HEALTH_LINGER, move |writes: Vec<HealthWrite>| {
                let s = s.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(
                        settle::weigh_health(&s, notify_operator, writes).await,
                    )
                }
            });
        let s = store.clone();
        // Gathered for `OUTCOME_LINGER`, as the outcomes: an org whose endpoints are slow parks
        // its overflow in rows one message at a time, hundreds a second, and each alone was a
        // transaction and a commit taken from the attempts of every other org.
        let schedules =
            Batcher::spawn_lingering(128, 2, OUTCOME_LINGER, move |items: Vec<Scheduled>| {
                let s = s.clone();
                async move { s.deliveries().schedule_attempts(&items).await }
            });
        let s = store.clone();
        // Gathered as the parks are: a slow org's endpoints free a slot each every few
        // seconds, and several calls go in one statement.
        let calls =
            Batcher::spawn_lingering(128, 1, OUTCOME_LINGER, move |items: Vec<DeliveryRef>| {
                let s = s.clone();
                async move {
                    let called: std::collections::HashSet<uuid::Uuid> = s
                        .deliveries()
                        .call_forward(&items)
                        .await?
                        .into_iter()
                        .collect();
                    Ok::<_, StoreError>(items.iter().map(|d| called.contains(&d.id)).collect())
                }
            });
        Batchers {
            contexts,
            outcomes,
            health_writes,
            schedules,
            calls,
        }
    }
}

/// A wait parked in a delivery's row: the delivery, the attempt it resumes at, and when.
pub type Scheduled = (DeliveryRef, u32, time::OffsetDateTime);

/// One attempt's step for its endpoint's health.
pub type HealthWrite = (qualifier_store::webhooks::EndpointKey, decide::HealthStep);

/// The worker's batchers ([`Worker::batchers`]).
pub struct Batchers {
    pub contexts: Batcher<DeliveryRef, Option<DeliveryContext>>,
    pub outcomes: Batcher<AttemptWrite, Recorded>,
    pub health_writes: Batcher<HealthWrite, Option<EndpointState>>,
    pub schedules: Batcher<Scheduled, bool>,
    pub calls: Batcher<DeliveryRef, bool>,
}

fn parse_job(d: &Delivery) -> Result<DeliveryJob, MetaError> {
    Ok(DeliveryJob {
        meta: DeliveryMeta::from_properties(&d.properties)?,
        body: d.data.clone(),
        probe: false,
    })
}

/// An attempt's outcome after the batch: durable, or handed back (its lead is being erased) to
/// be written alone, so the batch needs no copy of each write.
pub enum Recorded {
    /// Durable.
    Written(Written),
    /// Not written: the batch skipped it.
    Skipped(AttemptWrite),
}

impl Worker {
    /// One attempt in three stages: prepare (read, and carry out every answer that sends
    /// nothing), send, settle (make the outcome durable, then its next step). Err means "not
    /// durable": the message must go back to the queue.
    async fn deliver_attempt(
        &self,
        publisher: &Publisher,
        job: &DeliveryJob,
    ) -> Result<(), NotDurable> {
        let Some(prepared) = self.prepare(job).await? else {
            return Ok(());
        };
        let sent = match &prepared.go {
            Go::Send(hook) => {
                tracing::debug!("sending");
                let sent = self.sender.send(job, hook).await;
                self.gate.observe(
                    job.meta.units(),
                    Duration::from_millis(sent.duration_ms),
                    sent.delivered(),
                );
                sent
            }
            Go::FailWithoutRequest(why) => Sent::without_request(now_millis(), why.clone()),
        };
        self.settle(publisher, job, &prepared, sent).await
    }

    /// Parks `job` as the plan says: it waits without using an attempt, in its row or in a
    /// park queue. Ok once the wait is durable (the message it came in may then be acked).
    async fn park(
        &self,
        publisher: &Publisher,
        job: &DeliveryJob,
        plan: ParkPlan,
    ) -> Result<(), NotDurable> {
        metrics::counter!(m::PARKED, "reason" => plan.reason).increment(1);
        tracing::debug!(delivery_id = %job.meta.delivery_id, reason = plan.reason, "parked by the gate");
        let in_row = plan.in_row_until(unix_ms());
        if let Some(wait) = plan.org_waits {
            // Parked at its share in its row: the endpoint's next freed slot here may call it
            // forward (`OrgGate::call_forward`).
            let callable = in_row.map(|_| (job.meta.delivery_id, job.meta.seq));
            self.gate.waiting(job.meta.units(), wait, callable);
        }
        if let Some(at) = in_row {
            return self
                .schedule(job, job.meta.attempt, at)
                .await
                .map_err(NotDurable::Schedule);
        }
        let queue = self.topology.parked_queue(plan.tier);
        let mut held = job.clone();
        if let Some(t) = plan.not_before_ms {
            held.meta.not_before_ms = Some(t);
        }
        publisher
            .publish_all(&[job_message(&held, "", &queue)])
            .await
            .map_err(NotDurable::Publish)
    }

    /// The slot an attempt of `of` freed goes to the delivery of the endpoint parked longest in
    /// its row, when the gate says so ([`crate::gate::OrgGate::call_forward`]): its row is made
    /// due now, after the attempt's own outcome and before its ack (the slot is free already).
    /// A call that fails only leaves the delivery to come back at its own due time.
    async fn call_forward(&self, of: qualifier_domain::units::EndpointOf) {
        let Some(called) = self.gate.call_forward(of) else {
            return;
        };
        let d = DeliveryRef {
            id: called.id,
            seq: called.seq,
        };
        match self.calls.call(d).await {
            Ok(true) => metrics::counter!(m::CALLED_FORWARD).increment(1),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(delivery_id = %called.id, error = %e, "calling a parked delivery forward failed; it comes back at its own due time");
            }
        }
    }

    /// A message of one delivery: its attempt, then its ack (or its return to the queue).
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
        let result = self.attempt(&publisher, &job, d.redelivered).await;
        let label = job.meta.delivery_id.to_string();
        acknowledge(&d.acker, &label, result).await;
    }

    /// One delivery, from a message of its own or a part of a bundle: its lane, its admission
    /// (or its park), then its three stages. Ok once what it led to is durable.
    pub(super) async fn attempt(
        &self,
        publisher: &Publisher,
        job: &DeliveryJob,
        redelivered: bool,
    ) -> Result<(), NotDurable> {
        let span = tracing::info_span!("delivery.attempt", delivery_id = %job.meta.delivery_id,
            event_id = %job.meta.event_id, org_id = %job.meta.org_id, endpoint_id = %job.meta.endpoint_id(), attempt = job.meta.attempt,
            trace_id = tracing::field::Empty);
        // The attempt joins the trace of the request that caused the event.
        qualifier_telemetry::set_remote_parent(&span, job.meta.traceparent.as_deref());
        if let Some(t) = qualifier_telemetry::trace_id(&span) {
            span.record("trace_id", t);
        }
        // Each message's arrival, its admission, its request's start and every way it ends
        // without a request are logged at debug: what a delivery left `out` is traced with (the
        // chaos run keeps these logs), and where its time went (scripts/delivery-steps.py).
        tracing::debug!(parent: &span, redelivered, "message received");
        // Another copy of this delivery under way here: after its attempt, the row says
        // whether this one is due.
        let _underway = self
            .underway
            .enter(job.meta.delivery_id, self.attempt_timeout * 2)
            .await;
        // A failing endpoint's messages go after the others' (`decide::Lane`).
        let _foreground = match self.gate.lane(job.meta.units().endpoint) {
            Lane::Foreground => Some(self.gate.foreground()),
            Lane::Background => {
                self.gate
                    .after_foreground(decide::BACKGROUND_WAIT_MAX)
                    .await;
                None
            }
        };
        let permit = match self.gate.admit(&job.meta, unix_ms()) {
            Admission::Start(permit) => permit,
            Admission::Park(plan) => return self.park(publisher, job, plan).await,
            Admission::WaitHere { limit, .. } => {
                let waiting = metrics::gauge!(m::WAITING_FOR_SLOT);
                waiting.increment(1.0);
                let slot = self.gate.wait_for_slot(&job.meta, limit, unix_ms).await;
                waiting.decrement(1.0);
                match slot {
                    Ok(permit) => permit,
                    Err(plan) => return self.park(publisher, job, plan).await,
                }
            }
        };
        tracing::debug!(parent: &span, "admitted");
        let in_flight = metrics::gauge!(m::IN_FLIGHT);
        in_flight.increment(1.0);
        let result =
            tracing::Instrument::instrument(self.deliver_attempt(publisher, job), span).await;
        in_flight.decrement(1.0);
        drop(permit);
        self.call_forward(job.meta.units()).await;
        result
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let name = format!("webhook-delivery {}", self.topology.prefix);
        let tracker = TaskTracker::new();
        let consuming = consume::Consuming {
            worker: self.clone(),
            tracker: tracker.clone(),
            parts: Arc::new(bundle::Parts {
                slots: Arc::new(tokio::sync::Semaphore::new(self.concurrency.max(1))),
                tracker,
            }),
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

/// Acks a message once what it carried is durable; otherwise it goes back to the queue (after
/// a short pause, so a database that is down is not asked again at once). `label` names it in
/// the log: a delivery id, or a bundle.
async fn acknowledge(acker: &Acker, label: &str, result: Result<(), NotDurable>) {
    match result {
        Ok(()) => {
            let _ = acker.ack(BasicAckOptions::default()).await;
        }
        Err(e) => {
            tracing::warn!(delivery = label, error = %qualifier_store::cause_chain(&e), "outcome not durable; requeueing");
            tokio::time::sleep(decide::REQUEUE_PAUSE).await;
            let _ = acker
                .nack(BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                })
                .await;
        }
    }
}
