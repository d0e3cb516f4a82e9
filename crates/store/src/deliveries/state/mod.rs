//! The one home of a delivery's state: every statement that moves a delivery from one state
//! to another is in this directory, one function per move, over the conditions and the requeue
//! written once here: an attempt's outcome in `outcomes.rs`, every wait and its end in
//! `waits.rs`.
//!
//! A delivery's state is its own row's (`deliveries`, `DeliveryState` in
//! crates/domain/src/delivery.rs): queued for the relay (due at `due_at`), paced (waiting in
//! its row for a throttle turn, `turn_at`), out (with a worker or in a broker queue), held
//! while its endpoint fails, waiting for an earlier delivery of its lead (`after_earlier`),
//! and its three ends, succeeded, dead and skipped; every wait resumes at `resume_attempt`,
//! and `retrying` says an attempt of its cycle failed. The event's outbox row holds the event
//! only: no statement of this release writes a delivery's state there.
//!
//! The moves on the delivery rows (the condition `open!`, the requeue [`requeue`]):
//!
//! - [`Deliveries::schedule_attempts`](crate::Deliveries::schedule_attempts): the next attempt due at an instant (a retry's is scheduled by
//!   its failed attempt's outcome, below, in the same statement), and
//!   [`Deliveries::call_forward`](crate::Deliveries::call_forward): a parked one made due now;
//! - [`Deliveries::hold_delivery`](crate::Deliveries::hold_delivery), [`release_held`], [`Deliveries::release_stray_held`](crate::Deliveries::release_stray_held): an outage's hold
//!   and its end;
//! - [`Deliveries::wait_for_earlier`](crate::Deliveries::wait_for_earlier), [`Deliveries::release_next_of_lead`](crate::Deliveries::release_next_of_lead),
//!   [`Deliveries::release_stray_order_waits`](crate::Deliveries::release_stray_order_waits): the lead's order, over one condition (the SQL
//!   function `qualifier_earlier_pending`; the first two are SQL functions too,
//!   `qualifier_wait_for_earlier` and `qualifier_release_next`);
//! - [`Deliveries::record_attempts`](crate::Deliveries::record_attempts) / [`Deliveries::record_attempt`](crate::Deliveries::record_attempt): an attempt's outcome, and a
//!   retry's requeue (under [`Deliveries::schedule_attempts`](crate::Deliveries::schedule_attempts)'s conditions);
//! - [`Deliveries::mark_skipped`](crate::Deliveries::mark_skipped), [`skip_held`]: ended without a request;
//! - the moves made inside statements that do more than move the delivery, in
//!   [`within`]: the event's insert (`crate::leads::statement`), the relay's mark out
//!   (`crate::outbox`), a throttle turn and its retiming (`crate::pacing`, over the `SET`
//!   lists [`wait_for_turn_set`] and [`new_turn`] and [`WAITING_FOR_TURN`]), a replay
//!   ([`replay`]: `super::replays`), an erasure (`crate::erasure`), a test event's endpoint
//!   (`crate::test_events`) and the compaction of old logs (`super::logs`), which rewrites
//!   the attempt log, not the state.
//!
//! No other source file writes the table: `scripts/lint-delivery-state.sh`, run by
//! `make lint`, refuses an `UPDATE deliveries` or `INSERT INTO deliveries` outside this
//! directory.

use diesel::sql_types::Bool;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use std::time::Duration;

/// The three states a delivery ends in, as an SQL list: sent (`succeeded`), given up
/// (`dead`) and ended without a request (`skipped`). Every condition on whether a delivery
/// has ended is written with it.
macro_rules! ended {
    () => {
        "('succeeded', 'dead', 'skipped')"
    };
}
pub(crate) use ended;

/// A delivery that has not ended, on its own row `d`: the condition every move of a live
/// delivery written on the delivery rows is guarded by. An erased event's delivery has always
/// ended: its erasure ends it `skipped` (or leaves it `succeeded`), and `outbox_stays_erased`
/// keeps it so.
macro_rules! open {
    () => {
        concat!("d.state NOT IN ", $crate::deliveries::state::ended!())
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

/// The delivery row `d` named by the row `$p` of a statement's parameters (`$p.id`, and
/// `$p.seq`: its event's sequence number as its message carries it, null on an earlier
/// release's message, then found from the id) among the days `$lo` to `$hi`: one probe of the
/// key, in those days' partitions only.
macro_rules! carried_row {
    ($p:literal, $lo:literal, $hi:literal) => {
        concat!(
            "d.seq = coalesce(",
            $p,
            ".seq, qualifier_delivery_seq(",
            $p,
            ".id, ",
            $lo,
            ", ",
            $hi,
            "))
                    AND d.delivery_id = ",
            $p,
            ".id
                    AND d.seq >= greatest(",
            $lo,
            "::int8, 0) << 32
                    AND d.seq < (least(",
            $hi,
            "::int8, 1073741824) + 1) << 32"
        )
    };
}
pub(crate) use carried_row;

/// "Send it back to the relay" on the delivery row: queued, due at `at` (an SQL expression),
/// every wait left (an outage's hold, the lead's order, a throttle turn, whose time has passed
/// or changed). The relay publishes it once it is due.
pub(crate) fn requeue(at: &str) -> String {
    format!(requeue_set!("{}"), at)
}

/// [`requeue`]'s text with `$at` a literal, for a statement of fixed text.
macro_rules! requeue_set {
    ($at:literal) => {
        concat!(
            "state = 'queued', due_at = ",
            $at,
            ", turn_at = NULL, updated_at = clock_timestamp()"
        )
    };
}
pub(crate) use requeue_set;

/// Schedules a batch of attempts, each in its row ([`Deliveries::schedule_attempts`](crate::Deliveries::schedule_attempts)):
/// the parameters `$1` ids, `$2` their events' sequence numbers (null on an earlier release's
/// message: found from the event's delivery id), `$3` the instants, `$4` the attempts they
/// resume at, `$5`/`$6` the days the rows are in.
pub(super) const SCHEDULE_HEAD: &str = "WITH p(ids, seqs, dues, resumes) AS (VALUES (";
pub(super) const SCHEDULE_TAIL: &str = concat!(
    ")), v AS (
         SELECT * FROM p, unnest(p.ids, p.seqs, p.dues, p.resumes) AS v(id, seq, due, resume))
     UPDATE deliveries d SET ",
    requeue_set!("v.due"),
    ", resume_attempt = v.resume
       FROM v
      WHERE ",
    carried_row!("v", "$5", "$6"),
    "
        AND d.state NOT IN ('held', 'after_earlier') AND ",
    open!(),
    "
  RETURNING d.delivery_id"
);

/// Called forward ([`Deliveries::call_forward`](crate::Deliveries::call_forward)): the
/// parameters `$1` ids, `$2` their events' sequence numbers, `$3`/`$4` the days the rows are
/// in. Only a row still `queued` for a later instant moves (parked at its share, or a retry's
/// wait: both are sent by the relay as they are once due), to now; nothing else of the row
/// changes, so it resumes at the attempt it was parked at.
pub(super) const CALL_FORWARD_HEAD: &str = "WITH p(ids, seqs) AS (VALUES (";
pub(super) const CALL_FORWARD_TAIL: &str = concat!(
    ")), v AS (
         SELECT * FROM p, unnest(p.ids, p.seqs) AS v(id, seq))
     UPDATE deliveries d SET due_at = clock_timestamp(), updated_at = clock_timestamp()
       FROM v
      WHERE ",
    carried_row!("v", "$3", "$4"),
    "
        AND d.state = 'queued' AND d.due_at > clock_timestamp()
  RETURNING d.delivery_id"
);

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

/// What became of one outcome of a [`Deliveries::record_attempts`](crate::Deliveries::record_attempts) batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Durable.
    Written(Written),
    /// Its lead is being erased: not written; write it alone with [`Deliveries::record_attempt`](crate::Deliveries::record_attempt),
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
/// [`Deliveries::schedule_attempts`](crate::Deliveries::schedule_attempts) would, unless its lead was erased (it has ended), the attempt
/// ended it, the delivery ended while the attempt was in flight (its endpoint deleted, a
/// duplicate that succeeded: an ended delivery stays ended), or it waits for an outage or an
/// earlier delivery of its lead (that wait resumes it). Conditions on the row as it was before
/// the statement.
macro_rules! scheduled {
    () => {
        concat!(
            "(v.due IS NOT NULL AND NOT ",
            erased_now!(),
            " AND v.status NOT IN ",
            ended!(),
            "
              AND d.state NOT IN ('held', 'after_earlier') AND ",
            open!(),
            ")"
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
                                 WHEN d.state IN ",
            ended!(),
            " THEN d.state::text
                                 WHEN v.status IN ",
            ended!(),
            " THEN v.status
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

/// A batch: a row of a lead being erased is left for [`Deliveries::record_attempt`](crate::Deliveries::record_attempt). An erasure
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

// The moves, by what they answer: an attempt's outcome, and every wait and its end.
mod outcomes;
mod waits;
pub(crate) mod within;
pub(crate) use waits::{release_held, skip_endpoint, skip_held};
