//! What a message does to its delivery's row besides an attempt's outcome, from whichever
//! stage finds it must (prepare before a request, settle after one, the gate's park before
//! either): hold it while its endpoint fails, leave it waiting in the row until an instant, and
//! let the lead's next delivery go once this one is over. The stages call these and each
//! other only forward (prepare, send, settle); nothing here calls a stage.

use qualifier_domain::timefmt::now_millis;
use qualifier_store::deliveries::LeadOrder;

use super::{NotDurable, Worker};
use crate::batch::BatchError;
use crate::sender::DeliveryJob;

/// `at_ms` (Unix milliseconds) as an instant; now if it is out of range.
pub(super) fn at_instant(at_ms: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_ms) * 1_000_000)
        .unwrap_or_else(|_| now_millis())
}

impl Worker {
    /// A delivery in its lead's order is over: the lead's next waiting delivery may go. A
    /// failure here is logged only: the health loop's safety net releases it within seconds.
    pub(super) async fn release_next(&self, order: Option<LeadOrder>) {
        let Some(order) = order else {
            return;
        };
        if let Err(e) = self
            .store
            .deliveries()
            .release_next_of_lead(
                qualifier_store::webhooks::EndpointKey {
                    org_id: order.org_id,
                    endpoint_id: order.endpoint_id,
                },
                order.lead_id,
            )
            .await
        {
            tracing::warn!(lead_id = %order.lead_id, error = %qualifier_store::cause_chain(&e), "next delivery of the lead not released; the safety net will");
        }
    }

    /// Holds the delivery in its row while its endpoint fails (then the message is acked).
    pub(super) async fn hold(
        &self,
        job: &DeliveryJob,
        resume_attempt: u32,
    ) -> Result<(), NotDurable> {
        match self
            .store
            .deliveries()
            .hold_delivery(job.delivery(), resume_attempt)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(NotDurable::NotHeld),
            Err(e) => Err(NotDurable::Hold(e)),
        }
    }

    /// Attempt `attempt` of `job`'s delivery at `at_ms` (Unix milliseconds), from its row. A
    /// delivery that ended meanwhile (erased, its webhook disabled) is not scheduled, and
    /// nothing goes on: its message is done with either way.
    pub(super) async fn schedule(
        &self,
        job: &DeliveryJob,
        attempt: u32,
        at_ms: i64,
    ) -> Result<(), BatchError> {
        let scheduled = self
            .schedules
            .call((job.delivery(), attempt, at_instant(at_ms)))
            .await?;
        if !scheduled {
            tracing::info!(delivery_id = %job.meta.delivery_id, "delivery ended while its attempt was out; nothing scheduled");
        }
        Ok(())
    }
}
