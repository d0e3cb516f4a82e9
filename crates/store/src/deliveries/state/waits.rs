//! A delivery's waits and their ends: its next attempt due at an instant, held while its
//! endpoint fails, waiting for an earlier delivery of its lead, and each released or skipped.

use diesel::sql_types::{BigInt, Double, Int4, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use std::time::Duration;
use uuid::Uuid;

use super::{Answer, RELAY_POLL, requeue, wake_relay};
use crate::StoreError;
use crate::answer::ReadToEnd;
use crate::endpoints::EndpointKey;
use crate::partitions::{DeliveryRef, day_bounds};

impl crate::facets::Deliveries<'_> {
    /// Schedules attempt `attempt` of each delivery for its `at`: the row waits for it
    /// unpublished, and the relay publishes it again from the row once it is due (the waits of
    /// retries and of long back-offs). So a waiting delivery is kept only in its row, where an
    /// erasure reaches it, never as a copy of its body in a broker queue that no one can take
    /// one message out of. False, and nothing scheduled, for a delivery that ended meanwhile
    /// (its lead erased, its webhook disabled): nothing goes on then. Each answer in the order
    /// asked.
    ///
    /// All in one statement of fixed text (prepared once per connection), one commit: the
    /// worker gathers the waits it parks in rows (`webhook-delivery`'s `schedules` batcher), so
    /// that an org whose endpoints are slow, parking hundreds of messages a second, costs the
    /// database one statement per batch rather than a parse, a plan and a row lookup per
    /// message. The rows are given in key order, which the join takes them in as a rule; two
    /// batches can only wait for each other over the same deliveries (copies of one message),
    /// and a deadlock between them rolls one back, whose messages go back to the queue. The
    /// relay is woken only
    /// for a wait that ends before its next look ([`RELAY_POLL`]): it finds the others itself,
    /// and a wake per park was a relay round per park.
    pub async fn schedule_attempts(
        &self,
        items: &[(DeliveryRef, u32, time::OffsetDateTime)],
    ) -> Result<Vec<bool>, StoreError> {
        use diesel::sql_types::{Array, Nullable, Timestamptz};

        #[derive(diesel::QueryableByName)]
        struct Scheduled {
            #[diesel(sql_type = SqlUuid)]
            delivery_id: Uuid,
        }

        let mut sorted = items.to_vec();
        sorted.sort_by_key(|(d, ..)| (d.seq, d.id));
        let (lo, hi) = day_bounds(sorted.iter().map(|(d, ..)| d.seq));
        let ids: Vec<Uuid> = sorted.iter().map(|(d, ..)| d.id).collect();
        let seqs: Vec<Option<i64>> = sorted.iter().map(|(d, ..)| d.seq).collect();
        let dues: Vec<time::OffsetDateTime> = sorted.iter().map(|(_, _, at)| *at).collect();
        let resumes: Vec<i32> = sorted
            .iter()
            .map(|(_, attempt, _)| i32::try_from(*attempt).unwrap_or(i32::MAX))
            .collect();
        let mut conn = self.conn().await?;
        let written = crate::prepared::prepared::<Array<SqlUuid>, _>(
            super::SCHEDULE_HEAD,
            super::SCHEDULE_TAIL,
            &ids,
        )
        .bind::<Array<Nullable<BigInt>>, _>(&seqs)
        .bind::<Array<Timestamptz>, _>(&dues)
        .bind::<Array<Int4>, _>(&resumes)
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .load::<Scheduled>(&mut conn)
        .await?;
        let done: std::collections::HashSet<Uuid> =
            written.into_iter().map(|r| r.delivery_id).collect();
        let soon = time::OffsetDateTime::now_utc() + RELAY_POLL;
        if items
            .iter()
            .any(|(d, _, at)| *at < soon && done.contains(&d.id))
        {
            // The relay sleeps until the earliest instant it knows of; this one may be
            // earlier (sent at the commit).
            wake_relay(&mut conn).await?;
        }
        Ok(items.iter().map(|(d, ..)| done.contains(&d.id)).collect())
    }

    /// Calls parked deliveries forward: each still waiting in its row for a later instant
    /// (parked at its endpoint's share, `queued` and due after now) is made due now, and the
    /// relay is woken to publish it. The worker calls one forward each time an attempt of its
    /// endpoint ends (`webhook-delivery`'s gate, `OrgGate::call_forward`), so a backlog parked
    /// in its rows comes back one delivery per freed slot, instead of each message coming back
    /// at a guessed instant and parking again when its slot is still taken. One that moved
    /// meanwhile (published at its own due time, ended, held) is left as it is. The ids of
    /// those called, in no order.
    pub async fn call_forward(&self, items: &[DeliveryRef]) -> Result<Vec<Uuid>, StoreError> {
        use diesel::sql_types::{Array, Nullable};

        #[derive(diesel::QueryableByName)]
        struct Called {
            #[diesel(sql_type = SqlUuid)]
            delivery_id: Uuid,
        }

        let mut sorted = items.to_vec();
        sorted.sort_by_key(|d| (d.seq, d.id));
        let (lo, hi) = day_bounds(sorted.iter().map(|d| d.seq));
        let ids: Vec<Uuid> = sorted.iter().map(|d| d.id).collect();
        let seqs: Vec<Option<i64>> = sorted.iter().map(|d| d.seq).collect();
        let mut conn = self.conn().await?;
        let called = crate::prepared::prepared::<Array<SqlUuid>, _>(
            super::CALL_FORWARD_HEAD,
            super::CALL_FORWARD_TAIL,
            &ids,
        )
        .bind::<Array<Nullable<BigInt>>, _>(&seqs)
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .load::<Called>(&mut conn)
        .await?;
        if !called.is_empty() {
            wake_relay(&mut conn).await?;
        }
        Ok(called.into_iter().map(|c| c.delivery_id).collect())
    }

    /// Holds a delivery while its endpoint is failing: it leaves the broker (the caller acks)
    /// and waits in its row, to resume at `resume_attempt`. False when the endpoint is no longer
    /// failing or the delivery already ended: the caller must not ack then. The health row is
    /// read `FOR SHARE`, so a recovery either sees this hold (and releases it) or waits for it.
    pub async fn hold_delivery(
        &self,
        delivery: crate::partitions::DeliveryRef,
        resume_attempt: u32,
    ) -> Result<bool, StoreError> {
        let (lo, hi) = crate::partitions::day_bounds([delivery.seq]);
        let mut conn = self.conn().await?;
        // One waiting for an earlier delivery of its lead keeps waiting for it (a second copy
        // of its message); the release that ends that wait finds the outage and holds it.
        // Prepared (fixed text), the row found by the sequence number its message carries: an
        // org's failing endpoint holds every message of its own that arrives.
        let n = crate::prepared::prepared::<SqlUuid, _>(
            "WITH p(id, seq, resume) AS (VALUES (",
            concat!(
                "))
                 UPDATE deliveries d
                    SET state = CASE WHEN d.state = 'after_earlier' THEN d.state ELSE 'held' END,
                        resume_attempt = p.resume, due_at = NULL, updated_at = clock_timestamp()
                   FROM p
                  WHERE ",
                super::carried_row!("p", "$4", "$5"),
                " AND ",
                open!(),
                "
                    AND EXISTS (SELECT 1 FROM endpoint_health h
                                WHERE h.endpoint_id = d.endpoint_id AND h.state = 'failing'
                                FOR SHARE)"
            ),
            delivery.id,
        )
        .bind::<diesel::sql_types::Nullable<BigInt>, _>(delivery.seq)
        .bind::<Int4, _>(i32::try_from(resume_attempt).unwrap_or(i32::MAX))
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .execute(&mut conn)
        .await?;
        Ok(n > 0)
    }

    /// A safety net: deliveries held for longer than `older_than` by an endpoint that is no
    /// longer failing go back to the relay (how long is the delivery rules' to say).
    pub async fn release_stray_held(
        &self,
        older_than: std::time::Duration,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        // Through `deliveries_waiting`, by when the hold began (its row's last write).
        let n = diesel::sql_query(format!(
            "UPDATE deliveries d SET {}
             WHERE d.state = 'held'
               AND d.updated_at < clock_timestamp() - make_interval(secs => $1 / 1000.0)
               AND NOT EXISTS (SELECT 1 FROM endpoint_health h
                               WHERE h.endpoint_id = d.endpoint_id AND h.state = 'failing')",
            requeue("clock_timestamp()")
        ))
        .bind::<BigInt, _>(older_than.as_millis() as i64)
        .execute(&mut conn)
        .await?;
        Ok(n)
    }

    /// The delivery waits in its row for an earlier delivery of `lead` to be over, to resume at
    /// `attempt`. False when none is pending any more (or the delivery ended): the caller goes
    /// on with it. True also when the row already waits: the message is a second copy of one
    /// whose wait began (a crash before its ack), and the release sends the delivery again.
    pub async fn wait_for_earlier(
        &self,
        delivery: DeliveryRef,
        lead_id: Uuid,
        attempt: u32,
    ) -> Result<bool, StoreError> {
        let (lo, hi) = day_bounds([delivery.seq]);
        let mut conn = self.conn().await?;
        let w: Answer = crate::prepared::prepared::<SqlUuid, _>(
            "SELECT qualifier_wait_for_earlier(",
            ") AS yes",
            delivery.id,
        )
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .bind::<Int4, _>(i32::try_from(attempt).unwrap_or(i32::MAX))
        .bind::<SqlUuid, _>(lead_id)
        .one(&mut conn)
        .await?;
        Ok(w.yes)
    }

    /// A delivery of `lead` is over: the lead's next waiting delivery goes back to the relay,
    /// if nothing earlier than it is still pending. True when one was released.
    pub async fn release_next_of_lead(
        &self,
        at: EndpointKey,
        lead_id: Uuid,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let r: Answer = crate::prepared::prepared::<SqlUuid, _>(
            "SELECT qualifier_release_next(",
            ") AS yes",
            at.org_id,
        )
        .bind::<SqlUuid, _>(at.endpoint_id)
        .bind::<SqlUuid, _>(lead_id)
        .one(&mut conn)
        .await?;
        Ok(r.yes)
    }

    /// A safety net (the health loop's): deliveries waiting longer than `older_than` for an
    /// earlier delivery that is over (its release was lost to a crash), or whose webhook no
    /// longer orders per lead, go back to the relay. Released ones check their order again.
    pub async fn release_stray_order_waits(
        &self,
        older_than: Duration,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let n = diesel::sql_query(format!(
            "UPDATE deliveries d SET {}
             WHERE d.state = 'after_earlier'
               AND d.updated_at < clock_timestamp() - make_interval(secs => $1)
               AND (NOT EXISTS (SELECT 1 FROM webhooks w
                                WHERE w.id = d.endpoint_id AND w.ordering = 'per_lead')
                    OR NOT qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq))",
            requeue("clock_timestamp()")
        ))
        .bind::<Double, _>(older_than.as_secs_f64())
        .execute(&mut conn)
        .await?;
        if n > 0 {
            wake_relay(&mut conn).await?;
        }
        Ok(n)
    }
}

/// Every delivery to the endpoint held for its outage goes back to the relay, oldest first
/// (the relay orders due rows by `due_at`, then `seq`), and the relay is woken. One waiting for
/// an earlier delivery of its lead stays: that delivery's end releases it (`crate::pacing`).
pub(crate) async fn release_held(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
) -> Result<(), StoreError> {
    // Through `deliveries_org_state`: the org's held ones, then the endpoint's among them.
    let n = diesel::sql_query(format!(
        "UPDATE deliveries d SET {}
         WHERE d.org_id = $1 AND d.state = 'held' AND d.endpoint_id = $2",
        requeue("clock_timestamp()")
    ))
    .bind::<SqlUuid, _>(at.org_id)
    .bind::<SqlUuid, _>(at.endpoint_id)
    .execute(conn)
    .await?;
    if n > 0 {
        wake_relay(conn).await?;
    }
    Ok(())
}

/// Every delivery to the endpoint held in its row (for an outage or for its lead's order) ends
/// `skipped` with `reason`, in the caller's transaction: the endpoint was disabled.
pub(crate) async fn skip_held(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    reason: &str,
) -> Result<(), StoreError> {
    skip_of_endpoint(conn, at, "'held', 'after_earlier'", reason).await
}

/// Every delivery to the endpoint not over yet ends `skipped` with `reason`, no request made,
/// in the caller's transaction: the endpoint was deleted. One a worker holds is dropped by it
/// (its row has ended: `decide::attempt`, `Before::Drop`).
pub(crate) async fn skip_endpoint(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    reason: &str,
) -> Result<(), StoreError> {
    skip_of_endpoint(
        conn,
        at,
        "'queued', 'paced', 'out', 'held', 'after_earlier'",
        reason,
    )
    .await
}

/// The endpoint's deliveries in `states` (an SQL list, from the two above) end `skipped`.
async fn skip_of_endpoint(
    conn: &mut AsyncPgConnection,
    at: EndpointKey,
    states: &str,
    reason: &str,
) -> Result<(), StoreError> {
    // Through `deliveries_org_state`: the org's in those states, then the endpoint's.
    diesel::sql_query(format!(
        "UPDATE deliveries d SET state = 'skipped', retrying = false, last_error = $3,
                resume_attempt = NULL, due_at = NULL, turn_at = NULL,
                updated_at = clock_timestamp()
         WHERE d.org_id = $1 AND d.state IN ({states}) AND d.endpoint_id = $2"
    ))
    .bind::<SqlUuid, _>(at.org_id)
    .bind::<SqlUuid, _>(at.endpoint_id)
    .bind::<diesel::sql_types::Text, _>(reason)
    .execute(conn)
    .await?;
    Ok(())
}
