//! The one home of a delivery's state: every statement that moves a delivery from one state
//! to another is here, one function per move, over the conditions and the requeue written once.
//!
//! A delivery's state is its own row's (`deliveries`, `DeliveryState` in
//! crates/domain/src/delivery.rs): queued for the relay (due at `due_at`), paced (waiting in
//! its row for a throttle turn, `turn_at`), out (with a worker or in a broker queue), held
//! while its endpoint fails, waiting for an earlier delivery of its lead (`after_earlier`),
//! and its three ends, succeeded, dead and skipped; every wait resumes at `resume_attempt`,
//! and `retrying` says an attempt of its cycle failed. Its event's outbox row keeps the same
//! state in seven columns, for the release before this one (`published_at`, `held_at`,
//! `waiting_for`, `paced_at`, `replay_at`, `status`, `resume_attempt`), and the two are kept
//! one by triggers both ways: a move written on the delivery row is written back to the
//! outbox, one written on the outbox into the delivery row.
//!
//! The moves on the delivery rows (the condition `open!`, the requeue [`requeue`]):
//!
//! - [`Store::schedule_attempts`]: the next attempt due at an instant (a retry's is scheduled by
//!   its failed attempt's outcome, below, in the same statement);
//! - [`Store::hold_delivery`], [`release_held`], [`Store::release_stray_held`]: an outage's hold
//!   and its end;
//! - [`Store::wait_for_earlier`], [`Store::release_next_of_lead`],
//!   [`Store::release_stray_order_waits`]: the lead's order, over one condition (the SQL
//!   function `qualifier_earlier_pending`; the first two are SQL functions too,
//!   `qualifier_wait_for_earlier` and `qualifier_release_next`);
//! - [`Store::record_attempts`] / [`Store::record_attempt`]: an attempt's outcome, and a
//!   retry's requeue (under [`Store::schedule_attempts`]'s conditions);
//! - [`Store::mark_skipped`], [`skip_held`]: ended without a request;
//! - the `SET` lists of the moves made inside statements that do more than move the
//!   delivery, each used by that one statement: waiting for a throttle turn and a new turn
//!   ([`wait_for_turn_set`], [`new_turn`], over [`WAITING_FOR_TURN`]: `crate::pacing`) and a
//!   replay ([`replay`]: `super::lists`).
//!
//! The moves still written on the outbox's columns, the next to go over: out
//! ([`published_set`], the relay's mark in `crate::outbox`) and ended by an erasure
//! ([`erased_set`]: `crate::erasure`). The event's insert (`crate::leads::write`) creates a
//! delivery queued with the columns' defaults; the compaction of old logs (`super::logs`)
//! rewrites the attempt log, not the state.

use diesel::sql_types::{Array, BigInt, Bool, Double, Int4, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

use super::AttemptWrite;
use crate::answer::ReadToEnd;
use crate::endpoints::EndpointKey;
use crate::partitions::{DeliveryRef, day_bounds};
use crate::{Store, StoreError};
use qualifier_domain::DeliveryStatus;

/// A delivery that has not ended, on its own row `d`: the condition every move of a live
/// delivery written on the delivery rows is guarded by. An erased event's delivery has always
/// ended: its erasure ends it `skipped` (or leaves it `succeeded`), and `outbox_stays_erased`
/// keeps it so.
macro_rules! open {
    () => {
        "d.state NOT IN ('succeeded', 'dead', 'skipped')"
    };
}
pub(crate) use open;

/// The delivery row `d` of delivery `$id` whose event is of a day from `$lo` to `$hi` (its
/// `seq` range: the rows' partition key, so only those days' partitions are read; a message
/// without its `seq` passes every day, `day_bounds`' widest range, clamped to days that can be
/// shifted), found by its key: its `seq` through `qualifier_delivery_seq` (the event's unique
/// index for an event's first delivery, `deliveries_own_id` for another endpoint's:
/// migrations/2026-12-05-000058_first_deliveries_found_by_their_event), then the row.
macro_rules! delivery_in_days {
    ($id:literal, $lo:literal, $hi:literal) => {
        concat!(
            "d.seq = qualifier_delivery_seq(",
            $id,
            ", ",
            $lo,
            ", ",
            $hi,
            ") AND d.delivery_id = ",
            $id,
            " AND d.seq >= greatest(",
            $lo,
            "::int8, 0) << 32 AND d.seq < (least(",
            $hi,
            "::int8, 1073741824) + 1) << 32"
        )
    };
}
pub(crate) use delivery_in_days;

/// "Send it back to the relay" on the delivery row: queued, due at `at` (an SQL expression),
/// every wait left (an outage's hold, the lead's order, a throttle turn, whose time has passed
/// or changed). The relay publishes it once it is due.
pub(crate) fn requeue(at: &str) -> String {
    format!("state = 'queued', due_at = {at}, turn_at = NULL, updated_at = clock_timestamp()")
}

/// Out: published by the relay (`crate::outbox`, `relay_batch`), its events-feed position `$pos`
/// given once (an SQL expression, in the statement's fixed text).
macro_rules! published_set {
    ($pos:literal) => {
        concat!("published_at = clock_timestamp(), feed_pos = ", $pos)
    };
}
pub(crate) use published_set;

/// Waiting in its row for a throttle turn too far off to wait for in a worker: the turn at
/// `$at`, sent by the relay `$ahead` seconds before it, resuming at attempt `$resume` (SQL
/// expressions, in the statement's fixed text: `crate::pacing`, `take_turn`), on the delivery
/// row.
macro_rules! wait_for_turn_set {
    ($at:literal, $ahead:literal, $resume:literal) => {
        concat!(
            "state = 'paced', turn_at = ",
            $at,
            ", due_at = ",
            $at,
            " - make_interval(secs => ",
            $ahead,
            "), resume_attempt = ",
            $resume,
            ", updated_at = clock_timestamp()"
        )
    };
}
pub(crate) use wait_for_turn_set;

/// The deliveries to endpoint `$5` of org `$1` waiting in their rows for a throttle turn, on
/// the delivery rows `d` (through `deliveries_org_state`). What a change of the throttle moves
/// (`crate::pacing`, `retime`).
pub(crate) const WAITING_FOR_TURN: &str =
    "d.org_id = $1 AND d.state = 'paced' AND d.turn_at IS NOT NULL AND d.endpoint_id = $5";

/// A new turn at `at` for a delivery waiting in its row, sent `ahead` seconds before it (SQL
/// expressions): the `SET` list of a throttle's retiming, on the delivery row.
pub(crate) fn new_turn(at: &str, ahead: &str) -> String {
    format!(
        "turn_at = {at}, due_at = {at} - make_interval(secs => {ahead}),
         updated_at = clock_timestamp()"
    )
}

/// A replay: pending again from the first attempt (`resume_attempt` cleared, not retrying),
/// outside its lead's order (`replayed`), sent back to the relay due at `at` (`super::lists`),
/// on the delivery row.
pub(crate) fn replay(at: &str) -> String {
    format!(
        "retrying = false, resume_attempt = NULL, replayed = true, {}",
        requeue(at)
    )
}

/// Ended by its lead's erasure (`crate::erasure`): skipped with `erased` unless it had already
/// ended as sent or skipped, every wait cleared. An event never published is still published
/// once, so that the feed gives it a position (its delivery is over, and the worker drops the
/// message); a replay waiting for its slot is not sent.
macro_rules! erased_set {
    () => {
        "status = CASE WHEN o.status IN ('succeeded', 'skipped') THEN o.status
                       ELSE 'skipped' END,
         last_error = CASE WHEN o.status IN ('succeeded', 'skipped') THEN o.last_error
                           ELSE 'erased' END,
         held_at = NULL, waiting_for = NULL, paced_at = NULL, resume_attempt = NULL,
         replay_at = NULL,
         published_at = CASE WHEN o.feed_pos IS NULL THEN o.published_at
                             ELSE coalesce(o.published_at, clock_timestamp()) END,
         updated_at = clock_timestamp()"
    };
}
pub(crate) use erased_set;

/// An earlier delivery of the row `o`'s lead is not over (pending or retrying): the lead-order
/// condition, defined once as an SQL function
/// (migrations/2026-12-02-000042_delivery_state_in_one_place/up.sql) that the functions of the
/// lead's order call too.
macro_rules! earlier_pending {
    () => {
        "qualifier_earlier_pending(o.org_id, o.endpoint_id, o.lead_id, o.seq)"
    };
}
pub(crate) use earlier_pending;

/// Wakes every relay (`qualifier_outbox`, sent at the commit of `conn`'s transaction): a row
/// was put back for it, maybe due earlier than the instant it sleeps until.
pub(crate) async fn wake_relay(conn: &mut AsyncPgConnection) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT pg_notify('qualifier_outbox', '')")
        .execute(conn)
        .await
        .map(|_| ())
}

/// How often the relay looks for due rows when nothing wakes it (crates/lead-api/src/relay.rs
/// sleeps at most this long): a row due later needs no `NOTIFY`.
pub const RELAY_POLL: Duration = Duration::from_secs(1);

/// A function's yes or no (`qualifier_wait_for_earlier`, `qualifier_release_next`).
#[derive(diesel::QueryableByName)]
struct Answer {
    #[diesel(sql_type = Bool)]
    yes: bool,
}

/// A durable outcome: whether the delivery's lead was erased by then, and whether its next
/// attempt ([`AttemptWrite::next`]) was scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub erased: bool,
    pub scheduled: bool,
}

/// What became of one outcome of a [`Store::record_attempts`] batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Durable.
    Written(Written),
    /// Its lead is being erased: not written; write it alone with [`Store::record_attempt`],
    /// which waits for the erasure.
    Locked,
}

/// Whether the delivery `d`'s event was erased, in the outcome statement: as the event's row
/// (`e`) says in the statement's snapshot, or as the delivery's row says once locked (its
/// `erased` mark, which every erasure sets, whatever the delivery's state was).
/// The erasure lock the guards take is taken after the snapshot, so an erasure that committed
/// in between is seen only in the delivery's row, which PostgreSQL reads again at its latest
/// once it waited for it.
macro_rules! erased_now {
    () => {
        "(e.erased_at IS NOT NULL OR d.erased)"
    };
}

/// The outcome's next attempt is scheduled in the same write (`v.due`, `v.resume`): a failed
/// attempt that will be retried goes back to the relay due at its retry's instant, as
/// [`Store::schedule_attempts`] would, unless its lead was erased (it has ended), the attempt
/// ended it, the delivery ended while the attempt was in flight (its endpoint deleted, a
/// duplicate that succeeded: an ended delivery stays ended), or it waits for an outage or an
/// earlier delivery of its lead (that wait resumes it). Conditions on the row as it was before
/// the statement.
macro_rules! scheduled {
    () => {
        concat!(
            "(v.due IS NOT NULL AND NOT ",
            erased_now!(),
            " AND v.status NOT IN ('succeeded', 'dead', 'skipped')
              AND d.state NOT IN ('held', 'after_earlier', 'succeeded', 'dead', 'skipped'))"
        )
    };
}

/// The outcome statement after its parameters: each outcome applied to its delivery's row,
/// found by its key (the event's `seq`, which the message carries, and the delivery's own id;
/// the primary key, whatever the plan: an equality on `seq` leaves the planner no walk of a
/// partition's keys through a range, which a generic plan made while the day's partition was
/// small once chose, taking a lock for every row it passed), with `$guard` as one more
/// condition on the row; its event's row by the same `seq`. A message of a release that did not
/// carry the `seq` names its event's one delivery, whose `seq` the event's unique index gives.
/// Whether the event was erased: `erased_now!`. An
/// erased event's delivery stays as its erasure left it, as `outbox_stays_erased` keeps the
/// event's row: ended `skipped` unless this attempt succeeded, the entry without
/// the receiver's answer, the request's headers and the signatures.
macro_rules! record_tail {
    ($guard:literal) => {
        concat!(
            ")), v AS (
                 SELECT * FROM p, unnest(p.ids, p.statuses, p.codes, p.errs, p.entries,
                                         $8::int8[], $9::timestamptz[], $10::int4[])
                      AS v(id, status, code, err, entry, seq, due, resume))
             UPDATE deliveries d SET
                    state = CASE WHEN ",
            erased_now!(),
            "
                                 THEN CASE WHEN v.status IN ('succeeded', 'skipped')
                                           THEN v.status ELSE 'skipped' END
                                 WHEN d.state IN ('succeeded', 'dead', 'skipped') THEN d.state::text
                                 WHEN v.status IN ('succeeded', 'dead', 'skipped') THEN v.status
                                 WHEN ",
            scheduled!(),
            " THEN 'queued'
                                 ELSE d.state::text END::delivery_state,
                    due_at = CASE WHEN ",
            scheduled!(),
            " THEN v.due ELSE d.due_at END,
                    turn_at = CASE WHEN ",
            scheduled!(),
            " THEN NULL ELSE d.turn_at END,
                    retrying = NOT ",
            erased_now!(),
            " AND v.status = 'failed',
                    attempts = d.attempts + 1,
                    failed_attempts = d.failed_attempts + (v.err IS NOT NULL)::int,
                    last_status_code = v.code,
                    last_error = CASE WHEN ",
            erased_now!(),
            " AND v.status NOT IN ('succeeded', 'skipped')
                                      THEN 'erased' ELSE v.err END,
                    attempt_log = d.attempt_log || jsonb_build_array(
                        CASE WHEN ",
            erased_now!(),
            "
                             THEN v.entry - 'response_body' - 'request_headers' - 'signatures'
                                  - 'b' - 'g'
                             ELSE v.entry END),
                    resume_attempt = CASE WHEN ",
            erased_now!(),
            " THEN NULL WHEN ",
            scheduled!(),
            " THEN v.resume ELSE d.resume_attempt END,
                    updated_at = clock_timestamp()
             FROM v, outbox e
             WHERE d.seq = coalesce(v.seq, (SELECT o.seq FROM outbox o
                                             WHERE o.delivery_id = v.id
                                               AND (o.seq >> 32) BETWEEN $6 AND $7))
               AND d.delivery_id = v.id
               AND e.seq = d.seq AND (e.seq >> 32) BETWEEN $6 AND $7",
            $guard,
            "
             RETURNING d.delivery_id,
                       e.erased_at IS NOT NULL
                       OR d.last_error IS NOT DISTINCT FROM 'erased' AS erased,
                       v.due IS NOT NULL AND d.state = 'queued' AS scheduled"
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
               AND (d.lead_id IS NULL
                    OR pg_try_advisory_xact_lock_shared(hashtextextended(d.lead_id::text, 20)))"
);
/// One outcome alone: it waits for its lead's erasure to end (the erasure lock, shared) before
/// it locks any row, then for its row as any write does.
const RECORD_WAITING: &str = record_tail!(
    "
               AND (d.lead_id IS NULL
                    OR pg_advisory_xact_lock_shared(hashtextextended(d.lead_id::text, 20))
                       IS NOT NULL)"
);

/// A row [`Store::record_attempts`] wrote.
#[derive(diesel::QueryableByName)]
struct Recorded {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    delivery_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    erased: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    scheduled: bool,
}

impl Store {
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

    /// One outcome [`Store::record_attempts`] found locked, written alone: it waits for the
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
        // message on another replica, dead) keeps the end it had.
        diesel::sql_query(concat!(
            "UPDATE deliveries d SET state = 'skipped', retrying = false, last_error = $2,
                    updated_at = clock_timestamp()
             WHERE ",
            delivery_in_days!("$1", "$3", "$4"),
            " AND ",
            open!()
        ))
        .bind::<SqlUuid, _>(delivery.id)
        .bind::<diesel::sql_types::Text, _>(reason)
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .execute(&mut conn)
        .await?;
        Ok(())
    }

    /// Schedules attempt `attempt` of each delivery for its `at`: the row waits for it
    /// unpublished, and the relay publishes it again from the row once it is due (the waits of
    /// retries and of long back-offs). So a waiting delivery is kept only in its row, where an
    /// erasure reaches it, never as a copy of its body in a broker queue that no one can take
    /// one message out of. False, and nothing scheduled, for a delivery that ended meanwhile
    /// (its lead erased, its webhook disabled): nothing goes on then. Each answer in the order
    /// asked.
    ///
    /// All in one transaction, one commit: the worker gathers the waits it parks in rows
    /// (`webhook-delivery`'s `schedules` batcher), so that an org whose endpoints are slow,
    /// parking hundreds of messages a second, costs the database one commit per batch rather
    /// than one per message. The rows are updated in key order, as every batch of writes to
    /// them is, so two batches never wait for each other in a circle. The relay is woken only
    /// for a wait that ends before its next look ([`RELAY_POLL`]): it finds the others itself,
    /// and a wake per park was a relay round per park.
    pub async fn schedule_attempts(
        &self,
        items: &[(DeliveryRef, u32, time::OffsetDateTime)],
    ) -> Result<Vec<bool>, StoreError> {
        use diesel::sql_types::Timestamptz;

        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| (items[i].0.seq, items[i].0.id));
        let soon = time::OffsetDateTime::now_utc() + RELAY_POLL;
        let items = items.to_vec();
        let statement = format!(
            "UPDATE deliveries d SET {}, resume_attempt = $3
             WHERE {} AND {} AND d.state NOT IN ('held', 'after_earlier')",
            requeue("$2"),
            delivery_in_days!("$1", "$4", "$5"),
            open!()
        );
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            let mut scheduled = vec![false; items.len()];
            let mut wake = false;
            for i in order {
                let (delivery, attempt, at) = items[i];
                let (lo, hi) = day_bounds([delivery.seq]);
                let n = diesel::sql_query(&statement)
                    .bind::<diesel::sql_types::Uuid, _>(delivery.id)
                    .bind::<Timestamptz, _>(at)
                    .bind::<Int4, _>(i32::try_from(attempt).unwrap_or(i32::MAX))
                    .bind::<BigInt, _>(lo)
                    .bind::<BigInt, _>(hi)
                    .execute(conn)
                    .await?;
                scheduled[i] = n > 0;
                wake |= n > 0 && at < soon;
            }
            if wake {
                // The relay sleeps until the earliest instant it knows of; this one may be
                // earlier (sent at the commit).
                wake_relay(conn).await?;
            }
            Ok(scheduled)
        })
        .await
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
        let n = diesel::sql_query(concat!(
            "UPDATE deliveries d
             SET state = CASE WHEN d.state = 'after_earlier' THEN d.state ELSE 'held' END,
                 resume_attempt = $2, due_at = NULL, updated_at = clock_timestamp()
             WHERE ",
            delivery_in_days!("$1", "$3", "$4"),
            " AND ",
            open!(),
            "
               AND EXISTS (SELECT 1 FROM endpoint_health h
                           WHERE h.endpoint_id = d.endpoint_id AND h.state = 'failing'
                           FOR SHARE)"
        ))
        .bind::<SqlUuid, _>(delivery.id)
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

impl crate::Store {
    /// Retires the outbox from the deliveries' state
    /// (migrations/2026-12-04-000048_the_outbox_retires/up.sql): true if this call did it,
    /// false if it was done already. Its drops take the outbox's lock, waiting at most half a
    /// second each time behind the running services, then trying again, for about two
    /// minutes.
    pub async fn retire_outbox(&self) -> Result<bool, crate::StoreError> {
        use diesel_async::AsyncConnection;
        #[derive(diesel::QueryableByName)]
        struct Retired {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            retired: bool,
        }
        let mut tries = 1u64;
        loop {
            let mut conn = self.conn().await?;
            let done = conn
                .transaction::<bool, diesel::result::Error, _>(async |conn| {
                    diesel::sql_query("SET LOCAL lock_timeout = '500ms'")
                        .execute(conn)
                        .await?;
                    let r: Retired =
                        diesel::sql_query("SELECT qualifier_outbox_retire() AS retired")
                            .one(conn)
                            .await?;
                    Ok(r.retired)
                })
                .await;
            match done {
                Ok(retired) => return Ok(retired),
                Err(e) if tries < 240 && crate::pool::gave_way(&e) => {
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    tries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
