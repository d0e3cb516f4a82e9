//! The moves of a delivery made inside statements that do more than move it: the event's
//! insert, the relay's mark, a throttle turn, a replay's slot, an erasure, a test event's
//! endpoint, the end of an expired day and the compaction of old logs. Each is the part of its statement that writes the
//! delivery rows, kept here so that this directory holds every write of `deliveries`
//! (`scripts/lint-delivery-state.sh` refuses one anywhere else in `crates/`); the statement
//! around it stays beside the work it does, which names its parameters.

/// The deliveries of the events `e` just inserted, one per endpoint that wants the event
/// (`qualifier_deliveries_made`), each `queued` with the columns' defaults: the `d` of the
/// lead's write (`crate::leads::statement`) for an org without filters.
macro_rules! made_for_events {
    () => {
        "INSERT INTO deliveries
           SELECT x.* FROM e CROSS JOIN LATERAL qualifier_deliveries_made(e::outbox) x
           RETURNING seq, endpoint_id, org_id, created_at, state, due_at"
    };
}
/// The same for an org with filters: none for the endpoints whose filter left the event out
/// (`f.filtered`, beside the event: `crate::filters::filtered_deliveries`).
macro_rules! made_for_filtered_events {
    () => {
        "INSERT INTO deliveries
           SELECT x.* FROM e JOIN f USING (event_id)
                CROSS JOIN LATERAL qualifier_deliveries_made(e::outbox, f.filtered) x
           WHERE e.deliveries_written
           RETURNING seq, endpoint_id, org_id, created_at, state, due_at"
    };
}
pub(crate) use made_for_events;
pub(crate) use made_for_filtered_events;

/// Out: each delivery the relay claimed from `deliveries_due` (`v`: its `seq`, endpoint and
/// whether it was due; `$4`..`$5` the batch's `seq` range), unless it ended or waits in its
/// row (the claim does not take a waiting row, but a wait must never be undone by a mark,
/// which would leave the row `out` with its message already taken and acked). The `out` of
/// the relay's mark (`crate::outbox`, `MARK`).
macro_rules! marked_out {
    () => {
        "UPDATE deliveries d SET
                state = CASE WHEN d.state IN ('succeeded', 'dead', 'skipped', 'held',
                                              'after_earlier') THEN d.state
                             ELSE 'out' END,
                due_at = NULL
         FROM unnest($1::int8[], $8::uuid[], $9::bool[]) AS v(seq, endpoint_id, due)
         WHERE v.due AND d.seq = v.seq AND d.endpoint_id = v.endpoint_id
           AND d.seq BETWEEN $4 AND $5"
    };
}
pub(crate) use marked_out;

/// Waiting in its row for the throttle turn `t.at` decided by the statement around it, when
/// that turn is too far off to wait for in a worker (`t.far`): delivery `$6` of the days `$7`
/// to `$8`, sent by the relay `$4` seconds before its turn, resuming at attempt `$5`, unless
/// it ended or waits for its endpoint or its lead (`crate::pacing`, `take_turn`).
macro_rules! parked_for_turn {
    () => {
        concat!(
            "UPDATE deliveries d SET ",
            crate::deliveries::state::wait_for_turn_set!("t.at", "$4", "$5"),
            "
                 FROM decided t
                 WHERE t.far AND ",
            crate::deliveries::state::delivery_in_days!("$6", "$7", "$8"),
            " AND ",
            crate::deliveries::state::open!(),
            "
                   AND d.state NOT IN ('held', 'after_earlier')
                 RETURNING d.seq"
        )
    };
}
pub(crate) use parked_for_turn;

/// The deliveries waiting for a throttle turn (`$2`: their `seq`s in the order they waited)
/// sent back to the relay when the endpoint's throttle is removed, spread at `$4` a second
/// from the `$3`-th (`crate::pacing`, `retime`).
pub(crate) fn unthrottled() -> String {
    format!(
        "UPDATE deliveries d SET {}
         FROM unnest($2::int8[]) WITH ORDINALITY AS x(seq, i)
         WHERE d.seq = x.seq AND {}",
        super::requeue("clock_timestamp() + make_interval(secs => ($3 + x.i - 1) / $4)"),
        super::WAITING_FOR_TURN
    )
}

/// A new turn for each waiting delivery `t` (its `seq` and turn `at`) of endpoint `$5`, when
/// its throttle changes (`crate::pacing`, `retime`).
pub(crate) fn retimed() -> String {
    format!(
        "UPDATE deliveries d SET {}
         FROM t WHERE d.seq = t.seq AND d.endpoint_id = $5
         RETURNING 1",
        super::new_turn("t.at", "$3")
    )
}

/// Replayed: the deliveries `$2` (in the order they are sent) of endpoint `$7` of org `$1`
/// that are in the states asked for (`asked`, an SQL condition), each given the next of the
/// org's replay slots from `slot.first`, `$3` seconds apart (`crate::deliveries::replays`).
pub(crate) fn replayed(asked: &str) -> String {
    format!(
        "UPDATE deliveries d SET {}
         FROM slot, unnest($2::int8[]) WITH ORDINALITY AS v(seq, i)
         WHERE d.seq = v.seq AND d.org_id = $1 AND d.endpoint_id = $7 AND {asked}",
        super::replay("slot.first + make_interval(secs => $3 * (v.i - 1))")
    )
}

/// Ended by its lead's erasure: each delivery of the events `$1` (their days `$2`..`$3`)
/// skipped for `erased` unless it had already ended as sent or skipped, its answers stripped
/// and marked `erased`; due for the relay only if its event never had a feed position and is
/// no test event, so that the feed gives it one (the worker then finds the delivery ended)
/// (`crate::erasure`).
pub(crate) const ERASED: &str = "UPDATE deliveries d SET
             state = CASE WHEN d.state IN ('succeeded', 'skipped') THEN d.state
                          ELSE 'skipped' END,
             last_error = CASE WHEN d.state IN ('succeeded', 'skipped') THEN d.last_error
                               ELSE 'erased' END,
             retrying = false,
             due_at = CASE WHEN o.feed_pos IS NULL AND NOT o.is_test
                                AND NOT EXISTS (SELECT 1 FROM event_feed f WHERE f.seq = o.seq)
                           THEN '-infinity'::timestamptz END,
             turn_at = NULL, resume_attempt = NULL,
             attempt_log = coalesce(
                 (SELECT jsonb_agg(e - 'response_body' - 'request_headers' - 'signatures' - 'b' - 'g'
                           ORDER BY i)
                  FROM jsonb_array_elements(d.attempt_log) WITH ORDINALITY AS t(e, i)),
                 '[]'::jsonb),
             erased = true,
             updated_at = clock_timestamp()
         FROM outbox o
         WHERE o.seq = ANY($1) AND (o.seq >> 32) BETWEEN $2 AND $3
           AND d.seq = o.seq";

/// A test event's one delivery (`$2`, made for the primary endpoint by the event's insert)
/// given to endpoint `$1`, the endpoint asked for, with its place in the relay's queue
/// (`crate::test_events`). Its state does not move.
pub(crate) const TO_ENDPOINT: &str = "WITH moved AS (UPDATE deliveries SET endpoint_id = $1
                                WHERE seq = qualifier_delivery_seq($2, 0, 1073741824)
                                  AND delivery_id = $2 AND endpoint_id <> $1
                                RETURNING seq)
                 UPDATE deliveries_unsent u SET endpoint_id = $1
                 FROM moved m WHERE u.seq = m.seq";

/// Old attempt logs compacted: each delivery `$1` given the log `$2`; its state does not move
/// (`crate::deliveries::logs`).
pub(crate) const LOGS_COMPACTED: &str = "UPDATE deliveries d SET attempt_log = v.log
                     FROM unnest($1::int8[], $2::jsonb[]) AS v(seq, log) WHERE d.seq = v.seq";

/// Dead for `Event expired`: each delivery of the day's partition `table` that has not ended,
/// before the day is dropped (`crate::partitions`, `end_expired`). Written on the partition,
/// not through `deliveries`, so that only that day is read.
pub(crate) fn expired(table: &str) -> String {
    format!(
        "UPDATE {table} d
         SET state = 'dead', last_error = 'Event expired', due_at = NULL, resume_attempt = NULL,
             retrying = false, updated_at = clock_timestamp()
         FROM orgs g
         WHERE d.org_id = g.id AND {}",
        super::open!()
    )
}
