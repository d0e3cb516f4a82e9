//! An attempt's outcome written on its delivery's row: many in one statement and one commit
//! (the worker's group commit), one alone when its lead is being erased, and a delivery
//! ended without a request.

use diesel::sql_types::{Array, BigInt, Int4, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use serde_json::Value;
use uuid::Uuid;

use super::{Outcome, RECORD_SKIPPING_LOCKED, RECORD_WAITING, RELAY_POLL, Written, wake_relay};
use crate::StoreError;
use crate::deliveries::AttemptWrite;
use crate::partitions::{DeliveryRef, day_bounds};
use qualifier_domain::DeliveryStatus;

/// A row [`Deliveries::record_attempts`] wrote.
#[derive(diesel::QueryableByName)]
struct Recorded {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    delivery_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    erased: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    scheduled: bool,
}

impl crate::facets::Deliveries<'_> {
    /// Records attempts and the statuses they lead to, many in one statement and one commit: the
    /// worker's group commit. Every outcome it answers [`Outcome::Written`] for is durable when
    /// this returns Ok.
    ///
    /// A row of a lead being erased is skipped, not waited for, and answered
    /// [`Outcome::Locked`]: its caller writes that one alone ([`Deliveries::record_attempt`]), so a
    /// batch of many orgs' outcomes never waits on one lead's erasure (docs/reliability.md,
    /// "A 2xx is a commit"), and neither does the flusher that runs it.
    ///
    /// A written outcome says whether its delivery's lead was erased by the time it was written
    /// (the same statement reads it; no erasure of the lead runs meanwhile): an attempt in
    /// flight when the erasure committed must not be retried, since its message still carries
    /// the event as it was (the statement has left the delivery skipped and stripped the
    /// receiver's answer from the entry).
    pub async fn record_attempts(
        &self,
        writes: &[AttemptWrite],
    ) -> Result<Vec<Outcome>, StoreError> {
        let ids: Vec<Uuid> = writes.iter().map(|w| w.delivery.id).collect();
        let written = self.write_outcomes(writes, RECORD_SKIPPING_LOCKED).await?;
        let found: std::collections::HashMap<Uuid, (bool, bool)> = written
            .into_iter()
            .map(|r| (r.delivery_id, (r.erased, r.scheduled)))
            .collect();
        Ok(ids
            .iter()
            .map(|id| match found.get(id) {
                Some(&(erased, scheduled)) => Outcome::Written(Written { erased, scheduled }),
                None => Outcome::Locked,
            })
            .collect())
    }

    /// One outcome [`Deliveries::record_attempts`] found locked, written alone: it waits for the
    /// lock like any write. Neither erased nor scheduled when its row is gone (its partition
    /// expired).
    pub async fn record_attempt(&self, write: &AttemptWrite) -> Result<Written, StoreError> {
        let written = self
            .write_outcomes(std::slice::from_ref(write), RECORD_WAITING)
            .await?;
        Ok(Written {
            erased: written.iter().any(|r| r.erased),
            scheduled: written.iter().any(|r| r.scheduled),
        })
    }

    async fn write_outcomes(
        &self,
        writes: &[AttemptWrite],
        tail: &'static str,
    ) -> Result<Vec<Recorded>, StoreError> {
        use diesel::sql_types::{Jsonb, Nullable, Text};
        let ids: Vec<Uuid> = writes.iter().map(|w| w.delivery.id).collect();
        let (lo, hi) = day_bounds(writes.iter().map(|w| w.delivery.seq));
        // The delivery's row by its key's first column and its own id: one probe of the
        // primary key each, whichever endpoint it goes to (a message of a release that did not
        // carry the event's `seq` finds it from the event's delivery id).
        let seqs: Vec<Option<i64>> = writes.iter().map(|w| w.delivery.seq).collect();
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
        let dues: Vec<Option<time::OffsetDateTime>> =
            writes.iter().map(|w| w.next.map(|n| n.at)).collect();
        let resumes: Vec<Option<i32>> = writes
            .iter()
            .map(|w| w.next.map(|n| i32::try_from(n.attempt).unwrap_or(i32::MAX)))
            .collect();
        // The relay sleeps until the earliest instant it knows of, a poll at most: a retry
        // due before its next poll wakes it (sent at the commit), one due later is found by
        // that poll without a round of its own per failed attempt.
        let wake_before = qualifier_domain::timefmt::now_millis() + RELAY_POLL;
        let wake = dues.iter().flatten().any(|at| *at < wake_before);
        let mut conn = self.conn().await?;
        // Prepared (fixed text, `crate::prepared`): as `sql_query` this was planned on every
        // call, about 0.1 ms each, which at a low event rate (a batch per event) was a tenth
        // of PostgreSQL's CPU per event (docs/performance.md).
        let written = crate::prepared::prepared::<Array<diesel::sql_types::Uuid>, _>(
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
        .bind::<Array<Nullable<diesel::sql_types::BigInt>>, _>(&seqs)
        .bind::<Array<Nullable<diesel::sql_types::Timestamptz>>, _>(&dues)
        .bind::<Array<Nullable<Int4>>, _>(&resumes)
        .load::<Recorded>(&mut conn)
        .await?;
        if wake && written.iter().any(|r| r.scheduled) {
            wake_relay(&mut conn).await?;
        }
        Ok(written)
    }

    /// Ends a delivery without a request (webhook missing, disabled or not subscribed).
    pub async fn mark_skipped(
        &self,
        delivery: DeliveryRef,
        reason: &str,
    ) -> Result<(), StoreError> {
        let (lo, hi) = day_bounds([delivery.seq]);
        let mut conn = self.conn().await?;
        // Only a delivery still open: one that ended meanwhile (delivered by a copy of its
        // message on another replica, dead) keeps the end it had. Prepared (fixed text): an
        // org's events that a webhook does not take end here, one per event.
        crate::prepared::prepared::<SqlUuid, _>(
            "WITH p(id, seq, reason) AS (VALUES (",
            concat!(
                "))
                 UPDATE deliveries d SET state = 'skipped', retrying = false,
                        last_error = p.reason, updated_at = clock_timestamp()
                   FROM p
                  WHERE ",
                super::carried_row!("p", "$4", "$5"),
                " AND ",
                open!()
            ),
            delivery.id,
        )
        .bind::<diesel::sql_types::Nullable<BigInt>, _>(delivery.seq)
        .bind::<diesel::sql_types::Text, _>(reason)
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .execute(&mut conn)
        .await?;
        Ok(())
    }
}
