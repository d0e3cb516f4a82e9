//! The last stage of an attempt: ask the rules what the answer leads to
//! ([`decide::plan_after_attempt`]), apply it to the endpoint's health, make the outcome
//! durable, and carry out the next step (done, retry from the row, hold, dead-letter).

use qualifier_bus::Publisher;
use qualifier_domain::DeliveryStatus;
use qualifier_domain::delivery::AttemptEntry;
use qualifier_domain::health::EndpointState;
use qualifier_domain::timefmt::now_millis;
use qualifier_store::deliveries::{AttemptWrite, NextAttempt};
use qualifier_telemetry::metrics::{self as m, metrics};

use super::prepare::Prepared;
use super::rows::at_instant;
use super::{NotDurable, Recorded, Worker, job_message, unix_ms};
use crate::decide::{self, After, HealthUpdate, Sent};
use crate::sender::DeliveryJob;

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

impl Worker {
    /// Makes what `sent` showed durable and carries out its next step. Err: not durable.
    pub(super) async fn settle(
        &self,
        publisher: &Publisher,
        job: &DeliveryJob,
        prepared: &Prepared,
        sent: Sent,
    ) -> Result<(), NotDurable> {
        let plan = decide::plan_after_attempt(
            &sent,
            &job.meta,
            Some(&prepared.health),
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
        // A retry waits in the delivery's row, not as a copy of the body in a retry queue: its
        // next attempt is scheduled by the outcome's own write, and the relay sends it again
        // when it is due.
        let next = match &step {
            After::Retry { due_ms, .. } => Some(NextAttempt {
                attempt: job.meta.attempt + 1,
                at: at_instant(*due_ms),
            }),
            _ => None,
        };
        // The receiver's pause is what it answered, whether or not the outcome's write
        // commits: known to the gate first, so that a bundle sent back because a write failed
        // (its own or a sibling part's) finds the endpoint paused rather than sends again.
        if let After::Retry {
            org_back_off: Some(wait),
            ..
        } = &step
        {
            self.gate.back_off(job.meta.units(), *wait);
        }
        let (erased, scheduled) = self.record(job, record, step.status(), next).await?;
        if ends {
            self.release_next(prepared.order).await;
        }
        if erased {
            // The lead was erased while the request was out: the row is over (skipped) and
            // kept nothing of the answer. Nothing goes on, since a retry, a hold or a dead
            // letter would carry or resend the event as it was before the erasure.
            tracing::info!(delivery_id = %id, "lead erased during the attempt; the delivery ends here");
            return Ok(());
        }
        match step {
            After::Succeeded => Ok(()),
            After::Hold { resume_attempt } => self.hold(job, resume_attempt).await,
            After::Retry { .. } => {
                if !scheduled {
                    tracing::info!(delivery_id = %id, "delivery ended or waits while its attempt was out; nothing scheduled");
                }
                Ok(())
            }
            // The dead letter says which delivery died (its headers), not what it carried: the
            // body stays in the database only, where retention and erasure reach it (a queue
            // keeps a message until someone purges it, and no one can take one message out).
            // Replays are sent from the database, so nothing reads the body here.
            After::Dead => {
                let exchange = self.topology.dead_exchange();
                let letter = DeliveryJob {
                    body: Vec::new(),
                    ..job.clone()
                };
                publisher
                    .publish_all(&[job_message(&letter, &exchange, "")])
                    .await
                    .map_err(NotDurable::Publish)
            }
        }
    }

    /// Records one attempt's outcome and schedules its `next` attempt (durable when this
    /// returns Ok): whether the delivery's lead was erased meanwhile, and whether `next` was
    /// scheduled.
    async fn record(
        &self,
        job: &DeliveryJob,
        entry: AttemptEntry,
        status: DeliveryStatus,
        next: Option<NextAttempt>,
    ) -> Result<(bool, bool), NotDurable> {
        let write = AttemptWrite {
            delivery: job.delivery(),
            entry,
            status,
            next,
        };
        let written = match self
            .outcomes
            .call(write)
            .await
            .map_err(NotDurable::Record)?
        {
            Recorded::Written(written) => written,
            // Its lead is being erased: this one waits for the erasure alone, on its own
            // connection, while the batches go on for the rest.
            Recorded::Skipped(write) => self
                .store
                .deliveries()
                .record_attempt(&write)
                .await
                .map_err(NotDurable::RecordAlone)?,
        };
        Ok((written.erased, written.scheduled))
    }

    /// Applies what an attempt showed of its endpoint to the shared health (under its row's
    /// lock: one truth across replicas) and returns the state it leaves; `None` when it could
    /// not be written (health is bookkeeping: the attempt's step then stands as decided).
    async fn apply_health(
        &self,
        job: &DeliveryJob,
        input: decide::HealthInput,
    ) -> Option<EndpointState> {
        self.health_writes
            .call((job.endpoint(), input.step()))
            .await
            .ok()
            .flatten()
    }
}

/// The health writes of a batch ([`Worker::batchers`]): each endpoint's steps in the order they
/// came, as few writes under its row lock as [`decide::fold_steps`] allows (one, unless its
/// state changes on the way). Each step answers the state its write left; a write that failed
/// answers `None` for its steps and those after them (the attempt goes on as if health were
/// unknown, as it always did when its write failed).
pub(super) async fn weigh_health(
    store: &qualifier_store::Store,
    notify_operator: bool,
    writes: Vec<super::HealthWrite>,
) -> Vec<Option<EndpointState>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut out = vec![None; writes.len()];
    let mut endpoints: Vec<(qualifier_store::webhooks::EndpointKey, Vec<usize>)> = Vec::new();
    for (i, (key, _)) in writes.iter().enumerate() {
        match endpoints.iter_mut().find(|(k, _)| k == key) {
            Some((_, steps)) => steps.push(i),
            None => endpoints.push((*key, vec![i])),
        }
    }
    for (key, indices) in endpoints {
        let mut rest = &indices[..];
        while !rest.is_empty() {
            let steps: Vec<decide::HealthStep> =
                rest.iter().map(|&i| writes[i].1.clone()).collect();
            let used = Arc::new(AtomicUsize::new(steps.len()));
            let took = used.clone();
            let written = store
                .endpoints()
                .change_health(key, notify_operator, move |h| {
                    let (plan, n) = decide::fold_steps(h, &steps);
                    took.store(n, Ordering::Relaxed);
                    plan
                })
                .await;
            match written {
                Ok((h, change)) => {
                    if let Some(c) = change {
                        tracing::warn!(org_id = %key.org_id, endpoint_id = %key.endpoint_id, change = c.event_type(), error = ?h.last_error, "endpoint health changed");
                    }
                    let n = used.load(Ordering::Relaxed).clamp(1, rest.len());
                    for &i in &rest[..n] {
                        out[i] = Some(h.state);
                    }
                    rest = &rest[n..];
                }
                Err(e) => {
                    tracing::warn!(org_id = %key.org_id, endpoint_id = %key.endpoint_id, error = %qualifier_store::cause_chain(&e), "endpoint health not updated");
                    break;
                }
            }
        }
    }
    out
}
