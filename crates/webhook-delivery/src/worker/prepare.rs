//! The first stage of an attempt: read the delivery and its endpoint as they are now, ask the
//! rules whether to send ([`decide::before_attempt`]), and carry out every answer that sends
//! nothing (drop, skip, hold, wait for the lead's order, wait for the throttle's turn).

use qualifier_domain::delivery::NoAnswer;
use qualifier_store::deliveries::{DeliveryContext, EndpointGlance, LeadOrder};
use qualifier_store::pacing::Turn;
use qualifier_store::webhooks::WebhookForDelivery;
use qualifier_telemetry::metrics::{self as m, metrics};

use super::{NotDurable, Worker};
use crate::decide::{self, Before, Pacing};
use crate::sender::DeliveryJob;

/// What the send stage goes on with, once a delivery is prepared.
pub(super) struct Prepared {
    /// What the request is.
    pub go: Go,
    /// Its endpoint's health as of the read (what the outcome is weighed against).
    pub health: EndpointGlance,
    /// Its place in its lead's order, released when it ends.
    pub order: Option<LeadOrder>,
}

pub(super) enum Go {
    /// Send to this webhook, as it is now.
    Send(Box<WebhookForDelivery>),
    /// The attempt fails without a request (its secret cannot be opened).
    FailWithoutRequest(NoAnswer),
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
    /// The delivery ready to send, or `None` when its message is done with and nothing is
    /// sent (it ended, was skipped or now waits in its row). Err: not durable.
    pub(super) async fn prepare(&self, job: &DeliveryJob) -> Result<Option<Prepared>, NotDurable> {
        // A wait for the lead's order that cannot begin (the earlier delivery ended between the
        // read and the wait) goes round again from a fresh read, once: the read and the wait
        // ask one condition (`qualifier_earlier_pending`), and an earlier delivery that is over
        // stays over for the order (a replay goes outside it), so the fresh read cannot find
        // one pending again.
        let mut order_cleared = false;
        // Set once the throttle's turn was waited for: the fresh read after the wait sends on
        // that turn rather than taking another.
        let mut turn_taken = false;
        loop {
            // One read: the delivery's status and the org's webhook as it is now.
            let mut ctx: Option<DeliveryContext> = self
                .contexts
                .call(job.delivery())
                .await
                .map_err(NotDurable::Context)?;
            let go = match decide::before_attempt(&job.meta, ctx.as_ref()) {
                Before::Drop => {
                    tracing::debug!("delivery already ended; message dropped");
                    // A crash may have come between its end and its release of the next one.
                    self.release_next(ctx.as_ref().and_then(|c| c.order)).await;
                    return Ok(None);
                }
                Before::NotDue => {
                    tracing::debug!("not due by its row; left there");
                    metrics::counter!(m::PARKED, "reason" => "not_due").increment(1);
                    return Ok(None);
                }
                Before::Orphan => {
                    tracing::error!(delivery_id = %job.meta.delivery_id, "message for a delivery that does not exist dropped");
                    return Ok(None);
                }
                Before::Hold => {
                    tracing::debug!("held while its endpoint fails");
                    metrics::counter!(m::DELIVERIES, "outcome" => "held").increment(1);
                    self.hold(job, job.meta.attempt).await?;
                    return Ok(None);
                }
                Before::WaitForEarlier(order) => {
                    match self
                        .store
                        .deliveries()
                        .wait_for_earlier(job.delivery(), order.lead_id, job.meta.attempt)
                        .await
                    {
                        Ok(true) => {
                            tracing::debug!("waits in its row for an earlier delivery");
                            metrics::counter!(m::PARKED, "reason" => "earlier_delivery")
                                .increment(1);
                            return Ok(None);
                        }
                        Ok(false) if !order_cleared => {
                            order_cleared = true;
                            continue;
                        }
                        Ok(false) => return Err(NotDurable::OrderChanged),
                        Err(e) => return Err(NotDurable::Wait(e)),
                    }
                }
                Before::Skip(reason) => {
                    metrics::counter!(m::DELIVERIES, "outcome" => "skipped").increment(1);
                    tracing::info!(delivery_id = %job.meta.delivery_id, reason = reason.as_str(), "delivery skipped");
                    self.store
                        .deliveries()
                        .mark_skipped(job.delivery(), reason.as_str())
                        .await
                        .map_err(NotDurable::Skip)?;
                    self.release_next(ctx.as_ref().and_then(|c| c.order)).await;
                    return Ok(None);
                }
                Before::FailWithoutRequest(why) => {
                    tracing::error!(delivery_id = %job.meta.delivery_id, error = %why.message, "attempt failed before any request");
                    Go::FailWithoutRequest(why)
                }
                Before::Send(hook) => {
                    if !turn_taken {
                        let paced_at = ctx.as_ref().and_then(|c| c.paced_at);
                        match self.await_turn(job, hook, paced_at).await? {
                            Paced::Done => {
                                tracing::debug!("waits in its row for its turn, or ended");
                                return Ok(None);
                            }
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
                    // The rules answered `Send` with the context's own webhook: it is taken out
                    // of the context (no copy of its secrets) for the send stage.
                    match ctx.as_mut().and_then(|c| c.webhook.take()) {
                        Some(Ok(hook)) => Go::Send(Box::new(hook)),
                        _ => return Err(NotDurable::ContextChanged),
                    }
                }
            };
            // `before_attempt` answers `Orphan` when there is no row, so there is one here.
            let Some(ctx) = ctx else {
                return Err(NotDurable::ContextChanged);
            };
            return Ok(Some(Prepared {
                go,
                health: ctx.health,
                order: ctx.order,
            }));
        }
    }

    /// Waits for the endpoint's throttle (docs/delivery.md, "Throttle and order"): whether the
    /// request may go now, went on after a wait (and must read its delivery again), or now waits
    /// for its turn in its row (or ended meanwhile) and its message is done with.
    async fn await_turn(
        &self,
        job: &DeliveryJob,
        hook: &WebhookForDelivery,
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
                        .deliveries()
                        .take_turn(
                            job.endpoint(),
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
}
