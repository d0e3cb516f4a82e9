//! The worker's hot path: what attempts start from, read for a batch in one round trip, and
//! their outcomes, recorded for a batch in one statement and one commit.

use diesel::sql_types::Array;
use diesel::{ExpressionMethods, NullableExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use uuid::Uuid;

use super::{AttemptWrite, DeliveryContext, EndpointGlance, LeadOrder};
use crate::partitions::{DeliveryRef, day_bounds, in_days};
use crate::schema::{endpoint_health, outbox, webhooks};
use crate::webhooks::WebhookRow;
use crate::{Store, StoreError};
use qualifier_domain::DeliveryStatus;
use qualifier_domain::health::EndpointState;
use qualifier_domain::pace::DeliveryOrdering;
use serde_json::Value;
use time::OffsetDateTime;

/// What became of one outcome of a [`Store::record_attempts`] batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Durable; whether the delivery's lead was erased by then.
    Written { erased: bool },
    /// Its lead is being erased: not written; write it alone with [`Store::record_attempt`],
    /// which waits for the erasure.
    Locked,
}

/// The outcome statement after its parameters: each outcome applied to its row, found through
/// `outbox_delivery_id`, with `$guard` as one more condition on the row.
macro_rules! record_tail {
    ($guard:literal) => {
        concat!(
            ")) UPDATE outbox o SET status = v.status, attempts = o.attempts + 1,
                    failed_attempts = o.failed_attempts + (v.err IS NOT NULL)::int,
                    last_status_code = v.code, last_error = v.err,
                    attempt_log = o.attempt_log || jsonb_build_array(v.entry),
                    updated_at = clock_timestamp()
             FROM p, unnest(p.ids, p.statuses, p.codes, p.errs, p.entries)
                  AS v(id, status, code, err, entry)
             WHERE o.delivery_id = v.id AND (o.seq >> 32) BETWEEN $6 AND $7",
            $guard,
            "
             RETURNING o.delivery_id, o.erased_at IS NOT NULL AS erased"
        )
    };
}

/// A batch: a row of a lead being erased is left for [`Store::record_attempt`]. An erasure
/// holds its lead's erasure lock (`crate::erasure::ERASING`) from before it locks any row; a
/// batch takes it shared, and a lead whose lock it cannot have at once is skipped, so the batch
/// never waits on the erasure's row locks. Shared locks among batches never conflict, and
/// taking one writes nothing (a `FOR UPDATE … SKIP LOCKED` would write a lock record per row
/// on the path every event takes).
const RECORD_SKIPPING_LOCKED: &str = record_tail!(
    "
               AND (o.lead_id IS NULL
                    OR pg_try_advisory_xact_lock_shared(hashtextextended(o.lead_id::text, 20)))"
);
/// One outcome alone, waiting for its row as any write does.
const RECORD_WAITING: &str = record_tail!("");

/// A row [`Store::record_attempts`] wrote.
#[derive(diesel::QueryableByName)]
struct Recorded {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    delivery_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    erased: bool,
}

impl Store {
    /// What attempts need to know, for many deliveries in one round trip, in the order asked
    /// (the worker batches the reads of attempts starting at the same time): each delivery's
    /// current status (to drop duplicates of finished work) and its org's webhook as it is now,
    /// secret opened. `None` for a delivery that does not exist.
    pub async fn delivery_contexts(
        &self,
        deliveries: &[DeliveryRef],
    ) -> Result<Vec<Option<DeliveryContext>>, StoreError> {
        let delivery_ids: Vec<Uuid> = deliveries.iter().map(|d| d.id).collect();
        let days = day_bounds(deliveries.iter().map(|d| d.seq));
        let mut conn = self.conn().await?;
        type Row = (
            (
                Uuid,
                DeliveryStatus,
                i64,
                Uuid,
                Option<Uuid>,
                bool,
                Option<bool>,
            ),
            Option<OffsetDateTime>,
            Option<WebhookRow>,
            Option<EndpointState>,
            Option<i32>,
        );
        let rows: Vec<Row> = outbox::table
            .left_join(webhooks::table)
            .left_join(endpoint_health::table)
            .filter(outbox::delivery_id.eq_any(&delivery_ids))
            .filter(in_days(days))
            .select((
                (
                    outbox::delivery_id,
                    outbox::status,
                    outbox::seq,
                    outbox::org_id,
                    outbox::lead_id,
                    outbox::is_test,
                    outbox::replayed,
                ),
                outbox::paced_at,
                Option::<WebhookRow>::as_select(),
                endpoint_health::state.nullable(),
                endpoint_health::consecutive_failures.nullable(),
            ))
            .load(&mut conn)
            .await?;
        drop(conn);
        let mut by_id: std::collections::HashMap<Uuid, DeliveryContext> = rows
            .into_iter()
            .map(
                |(
                    (id, status, seq, org_id, lead, is_test, replayed),
                    paced_at,
                    hook,
                    state,
                    failures,
                )| {
                    let webhook = hook.map(|r| self.open_for_delivery(r));
                    let health = EndpointGlance {
                        state: state.unwrap_or(EndpointState::Healthy),
                        consecutive_failures: failures.unwrap_or(0).max(0) as u32,
                    };
                    // In its lead's order: the webhook orders per lead, and the delivery is
                    // neither a test event nor a replay (docs/delivery.md, "Throttle and order").
                    let per_lead = matches!(&webhook, Some(Ok(w))
                        if w.webhook.ordering == DeliveryOrdering::PerLead);
                    let order = lead
                        .filter(|_| per_lead && !is_test && replayed != Some(true))
                        .map(|lead_id| LeadOrder {
                            org_id,
                            lead_id,
                            seq,
                            earlier_pending: false,
                        });
                    (
                        id,
                        DeliveryContext {
                            status,
                            webhook,
                            health,
                            paced_at,
                            order,
                        },
                    )
                },
            )
            .collect();
        // Only deliveries in a lead's order ask whether an earlier one is pending: one more
        // round trip for them, none for anyone else.
        let ordered: Vec<(Uuid, Uuid, Uuid, i64)> = by_id
            .iter()
            .filter(|(_, c)| !c.status.is_final())
            .filter_map(|(id, c)| {
                let o = c.order.as_ref()?;
                Some((*id, o.org_id, o.lead_id, o.seq))
            })
            .collect();
        if !ordered.is_empty() {
            let blocked = self.earlier_pending(&ordered).await?;
            for ((id, ..), b) in ordered.iter().zip(blocked) {
                if let Some(o) = by_id.get_mut(id).and_then(|c| c.order.as_mut()) {
                    o.earlier_pending = b;
                }
            }
        }
        // Cloned, not moved: an id twice in one batch (a redelivery racing its original) gets
        // its row both times.
        Ok(delivery_ids
            .iter()
            .map(|id| by_id.get(id).cloned())
            .collect())
    }

    /// Records attempts and the statuses they lead to, many in one statement and one commit: the
    /// worker's group commit. Every outcome it answers [`Outcome::Written`] for is durable when
    /// this returns Ok.
    ///
    /// A row of a lead being erased is skipped, not waited for, and answered
    /// [`Outcome::Locked`]: its caller writes that one alone ([`Store::record_attempt`]), so a
    /// batch of many orgs' outcomes never waits on one lead's erasure (docs/reliability.md,
    /// "A 2xx is a commit"), and neither does the flusher that runs it.
    ///
    /// A written outcome says whether its delivery's lead was erased by the time it was written
    /// (the same statement reads it, under the row's lock): an attempt in flight when the
    /// erasure committed must not be retried, since its message still carries the event as it
    /// was (`outbox_stays_erased`, migration 32, has already ended the row skipped and stripped
    /// the receiver's answer from the entry).
    pub async fn record_attempts(
        &self,
        writes: &[AttemptWrite],
    ) -> Result<Vec<Outcome>, StoreError> {
        let ids: Vec<Uuid> = writes.iter().map(|w| w.delivery.id).collect();
        let written = self.write_outcomes(writes, RECORD_SKIPPING_LOCKED).await?;
        let found: std::collections::HashMap<Uuid, bool> = written
            .into_iter()
            .map(|r| (r.delivery_id, r.erased))
            .collect();
        Ok(ids
            .iter()
            .map(|id| match found.get(id) {
                Some(&erased) => Outcome::Written { erased },
                None => Outcome::Locked,
            })
            .collect())
    }

    /// One outcome [`Store::record_attempts`] found locked, written alone: it waits for the
    /// lock like any write. Whether the delivery's lead was erased; false, as for a written
    /// one, when its row is gone (its partition expired).
    pub async fn record_attempt(&self, write: &AttemptWrite) -> Result<bool, StoreError> {
        let written = self
            .write_outcomes(std::slice::from_ref(write), RECORD_WAITING)
            .await?;
        Ok(written.iter().any(|r| r.erased))
    }

    async fn write_outcomes(
        &self,
        writes: &[AttemptWrite],
        tail: &'static str,
    ) -> Result<Vec<Recorded>, StoreError> {
        use diesel::sql_types::{Jsonb, Nullable, Text};
        let ids: Vec<Uuid> = writes.iter().map(|w| w.delivery.id).collect();
        let (lo, hi) = day_bounds(writes.iter().map(|w| w.delivery.seq));
        let statuses: Vec<DeliveryStatus> = writes.iter().map(|w| w.status).collect();
        let codes: Vec<Option<i32>> = writes
            .iter()
            .map(|w| w.entry.status_code.map(i32::from))
            .collect();
        let errors: Vec<Option<&str>> = writes.iter().map(|w| w.entry.error.as_deref()).collect();
        let entries: Vec<Value> = writes
            .iter()
            .map(|w| w.entry.stored(self.compress_payloads))
            .collect();
        let mut conn = self.conn().await?;
        // Prepared (fixed text, `crate::prepared`): as `sql_query` this was planned on every
        // call, about 0.1 ms each, which at a low event rate (a batch per event) was a tenth
        // of PostgreSQL's CPU per event (docs/performance.md).
        Ok(
            crate::prepared::prepared::<Array<diesel::sql_types::Uuid>, _>(
                "WITH p(ids, statuses, codes, errs, entries) AS (VALUES (",
                tail,
                &ids,
            )
            .bind::<Array<Text>, _>(&statuses)
            .bind::<Array<Nullable<diesel::sql_types::Int4>>, _>(&codes)
            .bind::<Array<Nullable<Text>>, _>(&errors)
            .bind::<Array<Jsonb>, _>(&entries)
            .bind::<diesel::sql_types::BigInt, _>(lo)
            .bind::<diesel::sql_types::BigInt, _>(hi)
            .load::<Recorded>(&mut conn)
            .await?,
        )
    }

    /// Ends a delivery without a request (webhook missing, disabled or not subscribed).
    pub async fn mark_skipped(
        &self,
        delivery: DeliveryRef,
        reason: &str,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        diesel::update(
            outbox::table
                .filter(outbox::delivery_id.eq(delivery.id))
                .filter(in_days(day_bounds([delivery.seq]))),
        )
        .set((
            outbox::status.eq(DeliveryStatus::Skipped),
            outbox::last_error.eq(reason),
            outbox::updated_at.eq(qualifier_domain::timefmt::now_millis()),
        ))
        .execute(&mut conn)
        .await?;
        Ok(())
    }

    /// Schedules attempt `attempt` of a delivery for `at`: the row waits for it unpublished,
    /// and the relay publishes it again from the row once it is due (the waits of retries and
    /// of long back-offs). So a waiting delivery is kept only in its row, where an erasure
    /// reaches it, never as a copy of its body in a broker queue that no one can take one
    /// message out of. False, and nothing scheduled, when the delivery ended meanwhile (its
    /// lead erased, its webhook disabled): nothing goes on then.
    pub async fn schedule_attempt(
        &self,
        delivery: DeliveryRef,
        attempt: u32,
        at: time::OffsetDateTime,
    ) -> Result<bool, StoreError> {
        use diesel::sql_types::{BigInt, Int4, Timestamptz};
        use diesel_async::AsyncConnection;
        let (lo, hi) = day_bounds([delivery.seq]);
        let mut conn = self.conn().await?;
        conn.transaction::<bool, StoreError, _>(async move |conn| {
            let n = diesel::sql_query(
                "UPDATE outbox o SET published_at = NULL, replay_at = $2, resume_attempt = $3,
                        paced_at = NULL, waiting_for = NULL, updated_at = clock_timestamp()
                 WHERE o.delivery_id = $1 AND (o.seq >> 32) BETWEEN $4 AND $5
                   AND o.status IN ('pending', 'failed') AND o.erased_at IS NULL
                   AND o.held_at IS NULL",
            )
            .bind::<diesel::sql_types::Uuid, _>(delivery.id)
            .bind::<Timestamptz, _>(at)
            .bind::<Int4, _>(i32::try_from(attempt).unwrap_or(i32::MAX))
            .bind::<BigInt, _>(lo)
            .bind::<BigInt, _>(hi)
            .execute(conn)
            .await?;
            if n > 0 {
                // The relay sleeps until the earliest instant it knows of; this one may be
                // earlier (sent at the commit).
                crate::outbox::wake_relay(conn).await?;
            }
            Ok(n > 0)
        })
        .await
    }
}
