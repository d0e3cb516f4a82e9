//! The transactional outbox: events are appended in the transaction of the change that caused
//! them, so an event exists if and only if its change committed; the relay claims committed
//! rows, publishes them and marks them published (rows stay: they are the delivery log).

use crate::answer::ReadToEnd;
use diesel::sql_types::{Array, Int8};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::{Envelope, EventType};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::schema::outbox;

/// Appends one event. `conn` must be inside the transaction of the change; `compress`:
/// [`Store::compress_payloads`].
pub async fn append(
    conn: &mut AsyncPgConnection,
    env: &Envelope,
    compress: bool,
) -> Result<(), diesel::result::Error> {
    insert(conn, env, false, compress).await.map(|_| ())
}

/// Inserts an event; returns its delivery id. The endpoints whose filters the event does not
/// match are written on its row (`crate::filters`), unless it is a test event (which goes to
/// the endpoint asked for); the insert is made only while the filters matched are still the
/// org's, else it is made again with them read afresh.
pub(crate) async fn insert(
    conn: &mut AsyncPgConnection,
    env: &Envelope,
    is_test: bool,
    compress: bool,
) -> Result<Uuid, diesel::result::Error> {
    use diesel::sql_types::{Bool, Bytea, Nullable, Text, Uuid as SqlUuid};
    #[derive(QueryableByName)]
    struct Inserted {
        #[diesel(sql_type = Int8)]
        inserted: i64,
    }
    let delivery_id = Uuid::new_v4();
    let payload = crate::payload::pack(env.to_bytes(), compress);
    let mut filters = crate::filters::held(env.org_id);
    for _ in 0..crate::filters::ATTEMPTS {
        let filtered = if is_test {
            None
        } else {
            crate::filters::as_text(filters.filtered(env))
        };
        let done: Inserted =
            crate::prepared::prepared::<SqlUuid, _>(INSERT_EVENT_HEAD, INSERT_EVENT_TAIL, env.id)
                .bind::<SqlUuid, _>(env.org_id)
                .bind::<Text, _>(env.event_type.as_str())
                .bind::<Bytea, _>(&payload)
                .bind::<SqlUuid, _>(delivery_id)
                // The request's trace context, so the delivery attempt joins the same trace.
                .bind::<Nullable<Text>, _>(qualifier_telemetry::current_traceparent())
                .bind::<Bool, _>(is_test)
                .bind::<Nullable<SqlUuid>, _>(Some(env.data.lead_id()))
                .bind::<Nullable<Text>, _>(filtered)
                .bind::<Int8, _>(filters.version)
                .one(conn)
                .await?;
        if done.inserted == 1 {
            return Ok(delivery_id);
        }
        filters = crate::filters::reload(conn, env.org_id).await?;
    }
    Err(diesel::result::Error::QueryBuilderError(
        "the organisation's filters kept changing during this write".into(),
    ))
}

/// [`insert`]'s statement, around its parameters: the event's row when the filters matched
/// (`filters_version`) are the org's or it is a test event. An event that names no filtered
/// endpoint leaves its deliveries to the outbox's row trigger, as every event did before
/// filters; one that names some (`filtered`) writes its own here, without those endpoints,
/// and wakes the relay as the trigger would. Its text is fixed, so each connection prepares
/// it once.
const INSERT_EVENT_HEAD: &str = "WITH p(event_id, org_id, event_type, payload, delivery_id,
         traceparent, is_test, lead_id, filtered, filters_version) AS (VALUES (";
const INSERT_EVENT_TAIL: &str = concat!(
    ")),
     f AS (SELECT event_id, string_to_array(filtered, ',')::uuid[] AS filtered FROM p),
     e AS (
         INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, traceparent,
                             is_test, lead_id, deliveries_written)
         SELECT event_id, org_id, event_type, payload, delivery_id, traceparent, is_test,
                lead_id,
                filtered IS NOT NULL
         FROM p
         WHERE is_test
            OR coalesce((SELECT x.filters_version FROM orgs x WHERE x.id = p.org_id), 0)
               = p.filters_version
         RETURNING *),
     ",
    crate::filters::filtered_deliveries!(),
    "
     SELECT count(*) AS inserted,
            (SELECT count(pg_notify('qualifier_outbox', '')) FROM (SELECT FROM d LIMIT 1) w)
            AS relay_woken
     FROM e"
);

/// An outbox row the relay must publish, with the attempt its delivery resumes at (read from
/// the delivery's own row: [`CLAIM_NEW`]).
#[derive(Debug, Clone, QueryableByName)]
#[diesel(table_name = outbox)]
pub struct Unpublished {
    pub seq: i64,
    /// The delivery's own id (`X-Qualifier-Delivery`): one per event and endpoint.
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub delivery_id: Uuid,
    /// The endpoint it goes to.
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub org_id: Uuid,
    pub event_type: EventType,
    /// The envelope, as stored until [`relay_batch`] reads it out as sent.
    pub payload: Vec<u8>,
    pub created_at: OffsetDateTime,
    pub traceparent: Option<String>,
    pub is_test: bool,
    /// Its place in the events feed (the outbox's `feed_pos`, or `event_feed`'s once the outbox
    /// retired): `None` for an event published for the first time.
    pub feed_pos: Option<i64>,
    /// The attempt a delivery held during its endpoint's outage resumes at (`None`: attempt 1,
    /// a new event or a replay).
    pub resume_attempt: Option<i32>,
    /// Claimed from `deliveries_due` (a retry, a replay, a turn, or a new event's delivery
    /// stored before `deliveries_unsent`): the mark writes its row. A delivery
    /// claimed from `deliveries_unsent` alone is not written again by the relay.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub due: bool,
    /// Whether it still waits for its first publication: false for a queued one that moved
    /// meanwhile (ended, or waiting in its row after a relay died between its publish and its
    /// mark), which the relay drops from its queue without sending it again.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub ready: bool,
}

impl Unpublished {
    /// The attempt its message starts at: where the delivery rules held it (`resume_attempt`,
    /// chosen by `crates/webhook-delivery/src/decide/attempt.rs`, `during_outage`), else the
    /// first. A stored value below 1 can only be a hand edit and counts as the first.
    pub fn start_attempt(&self) -> u32 {
        self.resume_attempt.map_or(1, |a| a.max(1) as u32)
    }
}

/// `SET LOCAL` of each of [`crate::pool::KEY_LOOKUP_PLANS`], as one string sent once.
fn key_lookup_plans_local() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        crate::pool::KEY_LOOKUP_PLANS
            .iter()
            .map(|s| format!("SET LOCAL {s};"))
            .collect()
    })
}

/// The relays' turn as [`relay_batch`] reads it with its lock: the feed's last position, and
/// whether the queue of new deliveries is whole (`deliveries_unsent_whole`).
#[derive(QueryableByName)]
struct Turn {
    #[diesel(sql_type = Int8)]
    head: i64,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    whole: bool,
}

/// How many deliveries `qualifier_unsent_restore` put back in the relay's queue.
#[derive(QueryableByName)]
struct Restored {
    #[diesel(sql_type = Int8)]
    n: i64,
}

/// What one [`relay_batch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relayed {
    /// Messages published.
    pub published: usize,
    /// Rows claimed: those published and those only taken out of the queue (moved since they
    /// were queued). A full claim means more may be waiting, whatever was published.
    pub claimed: usize,
}

/// Claims up to `limit` new events and up to `limit` replays that are due, lets `publish` send
/// them, and marks them published in the same transaction once it returns Ok. A crash or an error
/// before the commit leaves them unpublished, to be sent again (same delivery ids).
///
/// The same transaction gives each new event its events-feed position. It first locks the one
/// `feed_head` row and keeps that lock until it commits, so relays (one per lead-api replica) take
/// turns: positions are handed out in the order their batches commit, and a feed reader that has
/// seen position p will never later see a smaller one appear. Claiming after the lock also means
/// the batch holds every earlier committed event: a lead's later event is only written after its
/// earlier one committed (the lead row is locked first), so a lead's events keep their order.
/// The cost is that relays do not publish in parallel; one relay moves tens of thousands of
/// events per second (docs/performance.md), well beyond what the API can commit.
///
/// New events locked by another transaction are skipped, not waited for: the only writer that
/// locks an event never published (its queue's row, or its event's and delivery's rows once
/// due) is an erasure (`Leads::erase_lead`), which holds its lead's row too, so no later event
/// of that lead can commit meanwhile and skipping keeps each lead's order. Waiting instead
/// would stall every org's relay behind one org's erasure; the skipped rows are published,
/// reduced, by the round after the erasure commits.
pub async fn relay_batch<F, Fut, E>(
    conn: &mut AsyncPgConnection,
    limit: i64,
    publish: F,
) -> Result<Relayed, StoreError>
where
    F: FnOnce(Vec<Unpublished>) -> Fut + Send,
    Fut: std::future::Future<Output = Result<(), E>> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    use diesel::sql_types::Nullable;
    crate::tx::transaction(&mut *conn, async move |conn| {
        // Before the first statement, so that every statement below is planned with them: the
        // session's pool plans generically and keeps a plan for the connection's life, and the
        // mark below, planned while the day's partition was small, stayed a hash join over a
        // sequential scan of it (`crate::pool::KEY_LOOKUP_PLANS`). One round trip.
        diesel_async::SimpleAsyncConnection::batch_execute(conn, key_lookup_plans_local()).await?;
        let turn: Turn = crate::prepared::prepared::<Int8, _>(
            "SELECT f.pos AS head, EXISTS (SELECT 1 FROM deliveries_unsent_whole) AS whole
             FROM feed_head f LIMIT ",
            " FOR UPDATE OF f",
            1,
        )
        .one(conn)
        .await?;
        let head = turn.head;
        // The queue of new deliveries is unlogged: emptied by a crash or a
        // failover, it is put back whole before anything is claimed from it, under this turn,
        // so that the claim below still finds every new event in `seq` order.
        if !turn.whole {
            let restored: Restored = diesel::sql_query("SELECT qualifier_unsent_restore() AS n")
                .one(conn)
                .await?;
            tracing::warn!(
                restored = restored.n,
                "the relay's queue of new deliveries was emptied (a crash or a failover of \
                 PostgreSQL) and is put back from the deliveries still queued"
            );
        }
        // New events' deliveries first, in `seq` order, up to a batch from their queue
        // (`deliveries_unsent`) and up to a batch stored due at `-infinity` in the deliveries'
        // own index (`deliveries_due`, `(due_at, seq)`); then what is scheduled and due now, up
        // to another, so a flood of new events never starves the retries. Fixed text, so each
        // is prepared once per connection.
        let mut rows: Vec<Unpublished> =
            crate::prepared::prepared::<Int8, _>(CLAIM_UNSENT, CLAIM_UNSENT_TAIL, limit)
                .load(conn)
                .await?;
        let stored_due: Vec<Unpublished> =
            crate::prepared::prepared::<Int8, _>(CLAIM_NEW, CLAIM_TAIL, limit)
                .load(conn)
                .await?;
        if !stored_due.is_empty() {
            rows = merge_new(rows, stored_due);
        }
        // What moved since it was queued (ended, or waiting for the lead's order) is only
        // dropped from the queue, not published; it keeps its place in the list until the
        // positions are given below, so that an event whose every delivery ended before its
        // first publication is still in the feed, at its place in commit order.
        let due: Vec<Unpublished> =
            crate::prepared::prepared::<Int8, _>(CLAIM_SCHEDULED, CLAIM_TAIL, limit)
                .load(conn)
                .await?;
        rows.extend(due);
        if rows.is_empty() {
            return Ok(Relayed {
                published: 0,
                claimed: 0,
            });
        }
        // The message carries the envelope itself, whatever form it is stored in: the worker
        // signs and sends the message's bytes (`crate::payload`).
        for r in rows.iter_mut().filter(|r| r.ready) {
            r.payload = crate::payload::unpack_owned(std::mem::take(&mut r.payload))?;
        }
        // What the feed's row of each holds beside its position, from the claim: the mark
        // reads no event row again.
        let orgs: Vec<Uuid> = rows.iter().map(|r| r.org_id).collect();
        let types: Vec<&'static str> = rows.iter().map(|r| r.event_type.as_str()).collect();
        // The positions given now: to the new events, in outbox order (`rows` starts with
        // them, by seq), test events excepted; an event that has one keeps it. One per event,
        // given at its first delivery in the batch: the others of an event sent to several
        // endpoints are beside it (same `seq`).
        let mut next = head;
        let mut given: Option<i64> = None;
        let positions: Vec<Option<i64>> = rows
            .iter()
            .map(|r| match r.feed_pos {
                Some(_) => None,
                None if r.is_test => None,
                None if given == Some(r.seq) => None,
                None => {
                    given = Some(r.seq);
                    next += 1;
                    Some(next)
                }
            })
            .collect();
        // The mark's rows: what is published and what is only positioned, each taken out of
        // the queue (one claimed from `deliveries_due` may be there too, `merge_new`); the
        // stale rows' `due` is false (they come from the queue), so the mark does not write
        // their delivery rows.
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        let endpoints: Vec<Uuid> = rows.iter().map(|r| r.endpoint_id).collect();
        let from_due: Vec<bool> = rows.iter().map(|r| r.due).collect();
        let rows: Vec<Unpublished> = rows.into_iter().filter(|r| r.ready).collect();
        let published = rows.len();
        if published > 0 {
            publish(rows)
                .await
                .map_err(|e| StoreError::Publish(Box::new(e)))?;
        }
        // Prepared (fixed text, `crate::prepared`), like the claim above: at a low event rate
        // the relay runs a batch per event or two, and planning it every time was a visible
        // share of PostgreSQL's CPU per event (docs/performance.md). The batch's days bound
        // both statements to their partitions (`partitions::day_bounds`).
        let (lo, hi) = (
            seqs.iter().copied().min().unwrap_or(0),
            seqs.iter().copied().max().unwrap_or(0),
        );
        crate::prepared::prepared::<Array<Int8>, _>(
            "WITH p(seqs, positions, head) AS (VALUES (",
            MARK,
            &seqs,
        )
        .bind::<Array<Nullable<Int8>>, _>(&positions)
        .bind::<Int8, _>(next)
        .bind::<Int8, _>(lo)
        .bind::<Int8, _>(hi)
        .bind::<Array<diesel::sql_types::Uuid>, _>(&orgs)
        .bind::<Array<diesel::sql_types::Text>, _>(&types)
        .bind::<Array<diesel::sql_types::Uuid>, _>(&endpoints)
        .bind::<Array<diesel::sql_types::Bool>, _>(&from_due)
        .execute(conn)
        .await?;
        Ok(Relayed {
            published,
            claimed: seqs.len(),
        })
    })
    .await
}

/// The new events' deliveries of one claim, from their queue and from `deliveries_due` (each in
/// `seq` order), as one list in `seq` order, as the feed's positions and a lead's messages go:
/// a delivery in both (an erased event's, made due for its position while still queued) once,
/// as claimed from `deliveries_due`, whose row the mark must write.
fn merge_new(unsent: Vec<Unpublished>, due: Vec<Unpublished>) -> Vec<Unpublished> {
    let mut rows: Vec<Unpublished> = unsent.into_iter().chain(due).collect();
    // Stable: of two copies of a delivery, the one from `deliveries_due` comes second.
    rows.sort_by_key(|r| (r.seq, r.endpoint_id));
    let mut out: Vec<Unpublished> = Vec::with_capacity(rows.len());
    for r in rows {
        match out.last_mut() {
            Some(last) if (last.seq, last.endpoint_id) == (r.seq, r.endpoint_id) => *last = r,
            _ => out.push(r),
        }
    }
    out
}

/// The relay's mark of a published batch (`relay_batch`, after its parameters): each delivery
/// taken out of `deliveries_unsent` deleted from it, its own row not written
/// (one that moved since it was queued is not published, only its event given a position);
/// each claimed from `deliveries_due` `out` (an ended one, an erased event published for its
/// feed position, stays ended; one that waits in its row keeps waiting: the claim does not
/// take a waiting row, whose `due_at` its wait cleared, but a wait must never be undone by a
/// mark, which would leave the row `out` with its message already taken and acked); and each
/// position given now appended to the feed (`event_feed`): the
/// event's row is not written again. The delivery row's `turn_at` stays: a throttle's turn is
/// read by the worker. A position already there (which the claim would have read) is left as
/// it is: by a read of the feed's key, not `ON CONFLICT`, whose speculative insertion writes a
/// second write-ahead log record for every row (the relays take turns, so nothing can insert
/// the same position between the read and the insert).
const MARK: &str = concat!(
    ")), out AS (",
    crate::deliveries::state::within::marked_out!(),
    "),
     sent AS (
         DELETE FROM deliveries_unsent u
         USING unnest($1::int8[], $8::uuid[]) AS v(seq, endpoint_id)
         WHERE u.seq = v.seq AND u.endpoint_id = v.endpoint_id),
     fed AS (
         INSERT INTO event_feed (seq, org_id, pos, event_type)
         SELECT v.seq, v.org_id, v.pos, v.event_type
         FROM unnest($1::int8[], $2::int8[], $6::uuid[], $7::text[])
              AS v(seq, pos, org_id, event_type)
         WHERE v.pos IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM event_feed f WHERE f.seq = v.seq))
     UPDATE feed_head SET pos = p.head FROM p WHERE pos <> p.head"
);
/// The relay's claim of what is due, up to `LIMIT $1`, its event's row and its delivery's
/// (joined by the delivery's key; `(seq >> 32)` beside `seq` so that each probe of the outbox
/// reads only its day's partition). Both rows are locked, and a pair another transaction holds
/// either of is skipped (`relay_batch` says why). The due condition is the delivery row's
/// alone: every move reaches that row in its own statement, and PostgreSQL checks the
/// condition again on the row's latest version once it is locked, so a delivery published, or
/// moved later by a throttle's retiming, after the claim's snapshot is left for its time. The
/// event's row is written by nothing but an erasure, and its lock still matters: a claim that
/// waited for an erasure's delivery row reads the event's row again at its latest only if it
/// locks it too, and so publishes the reduced envelope, not the one in its snapshot.
macro_rules! claim_columns {
    ($due:literal, $ready:literal) => {
        concat!(
            "SELECT o.seq, d.delivery_id, d.endpoint_id, o.event_id, o.org_id, o.event_type,
                    o.payload,
                    o.created_at, o.traceparent, o.is_test,
                    coalesce(o.feed_pos, (SELECT f.pos FROM event_feed f WHERE f.seq = o.seq))
                        AS feed_pos,
                    d.resume_attempt, ",
            $due,
            " AS due, ",
            $ready,
            " AS ready"
        )
    };
}
macro_rules! claim_head {
    ($due:literal) => {
        concat!(
            claim_columns!("true", "true"),
            "
             FROM deliveries d
             JOIN outbox o ON o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)
             WHERE ",
            $due,
            "
             ORDER BY d.due_at, d.seq, d.endpoint_id LIMIT "
        )
    };
}
/// New events' deliveries, in `seq` order, from their queue, each delivery and
/// event found by its key from its queue's row: each in a subquery that is not pulled up into
/// a join (`OFFSET 0`, a lock), so it stays a probe per queued row, where a generic plan made
/// while the day's partition was small walked the partition's primary key in the same order
/// instead (`plans.rs` in lead-api's tests: 20,027 rows read for a batch of 8). Only the
/// queue's row is locked ([`CLAIM_UNSENT_TAIL`]), which writes nothing to the write-ahead log
/// (the table is unlogged), where a lock of the event's row wrote a record per
/// event. No writer moves a delivery the relay has never published but an erasure, which
/// deletes its queue's rows first (`crate::erasure`), or an end (a deleted or disabled
/// endpoint), which the worker reads before any request; and the mark does not write the
/// delivery row, so a worker that got the message before the relay's commit settles the
/// attempt without waiting for it.
const CLAIM_UNSENT: &str = concat!(
    claim_columns!("false", "d.state = 'queued' AND d.due_at IS NULL"),
    "
     FROM deliveries_unsent u
     CROSS JOIN LATERAL (SELECT * FROM deliveries x
                         WHERE x.seq = u.seq AND x.endpoint_id = u.endpoint_id OFFSET 0) d
     CROSS JOIN LATERAL (SELECT * FROM outbox y
                         WHERE y.seq = u.seq AND (y.seq >> 32) = (u.seq >> 32) OFFSET 0) o
     ORDER BY u.seq, u.endpoint_id LIMIT "
);
/// The queue's rows of [`CLAIM_UNSENT`] locked, those another transaction holds skipped (an
/// erasure deleting them). A row deleted by an erasure that committed after the claim's
/// snapshot is skipped too: PostgreSQL finds it gone when it locks it, so the claim never
/// publishes an envelope its erasure has replaced.
const CLAIM_UNSENT_TAIL: &str = " FOR UPDATE OF u SKIP LOCKED";
/// New events' deliveries stored due at `-infinity` (by 0.3.0, or while the outbox
/// follows the delivery rows), and erased events' still to be given their feed position: in
/// `seq` order.
const CLAIM_NEW: &str = claim_head!("d.due_at = '-infinity'");
/// Scheduled (a retry held for an outage, a replay, a throttle's turn) and due now. `now()`,
/// the transaction's start a moment ago, keeps the text fixed.
const CLAIM_SCHEDULED: &str = claim_head!("d.due_at > '-infinity' AND d.due_at <= now()");
const CLAIM_TAIL: &str = " FOR UPDATE OF o, d SKIP LOCKED";

impl crate::facets::Upkeep<'_> {
    /// How long until the next scheduled delivery is due (a replay, a retry held for an
    /// outage, a throttle's turn: the first after `-infinity` in `deliveries_due`), if any is
    /// waiting: the relay sleeps exactly that long, so paced replays leave at their slots
    /// rather than in one-second bursts.
    pub async fn next_replay_due(&self) -> Result<Option<std::time::Duration>, StoreError> {
        let mut conn = self.conn().await?;
        #[derive(diesel::QueryableByName)]
        struct Wait {
            #[diesel(sql_type = diesel::sql_types::Double)]
            wait: f64,
        }
        // Prepared (the floor is its one parameter): the relay asks this every round. No row
        // when nothing is scheduled: `GREATEST` ignores a NULL argument, so `GREATEST(0,
        // min(...))` over no rows was 0, "due now", and the relay polled every 5 ms with
        // nothing to do (about 200 rounds a second per replica; CHANGELOG.md, 0.1.0).
        let w: Option<Wait> = crate::prepared::prepared::<diesel::sql_types::Double, _>(
            "SELECT GREATEST(",
            ", d.wait)::float8 AS wait
               FROM (SELECT EXTRACT(EPOCH FROM min(due_at) - clock_timestamp())::float8 AS wait
                       FROM deliveries WHERE due_at > '-infinity') d
              WHERE d.wait IS NOT NULL",
            0.0f64,
        )
        .one(&mut conn)
        .await
        .optional()?;
        Ok(w.map(|w| std::time::Duration::from_secs_f64(w.wait)))
    }
}

impl crate::facets::Upkeep<'_> {
    /// Operational events older than `keep`, the oldest `batch` of them, removed (index
    /// `ops_events_created`): they are kept as long as events are, never for ever.
    pub async fn expire_ops_events(
        &self,
        keep: std::time::Duration,
        batch: i64,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        // A parameter, so the index reads only what is past retention (see `expire_events`).
        let cutoff = qualifier_domain::timefmt::now_millis()
            - time::Duration::seconds_f64(keep.as_secs_f64());
        let n = diesel::sql_query(
            "DELETE FROM ops_events WHERE id IN (
                 SELECT id FROM ops_events
                 WHERE created_at < $1
                 ORDER BY created_at LIMIT $2)",
        )
        .bind::<diesel::sql_types::Timestamptz, _>(cutoff)
        .bind::<Int8, _>(batch)
        .execute(&mut conn)
        .await?;
        Ok(n)
    }
}

/// The relay's backlog: unpublished events and due replays and retries, and how long the
/// oldest of them has waited to be published, in seconds. A delivery scheduled for later (a
/// retry's wait, a replay's slot) is not backlog until it is due.
#[derive(Debug, Clone, Copy, diesel::QueryableByName)]
pub struct Backlog {
    #[diesel(sql_type = Int8)]
    pub count: i64,
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_age_seconds: f64,
}

impl crate::facets::Upkeep<'_> {
    /// Reads the backlog through `deliveries_unsent` and the deliveries' `deliveries_due`
    /// index: new events' deliveries waiting since their creation, the rest since their due
    /// time. The index holds only what waits for the relay, so the read follows the backlog,
    /// not the history kept.
    pub async fn outbox_backlog(&self) -> Result<Backlog, StoreError> {
        let mut conn = self.conn().await?;
        // New deliveries wait in `deliveries_unsent`, the oldest first by
        // `seq`; the rest due in `deliveries_due`.
        let b = diesel::sql_query(
            "SELECT ((SELECT count(*) FROM deliveries_unsent) + due.n)::int8 AS count,
                    COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - least(due.since,
                        (SELECT d.created_at FROM deliveries_unsent u
                         JOIN deliveries d ON d.seq = u.seq AND d.endpoint_id = u.endpoint_id
                         ORDER BY u.seq, u.endpoint_id LIMIT 1))),
                        0)::float8 AS oldest_age_seconds
             FROM (SELECT count(*) AS n,
                          min(CASE WHEN due_at = '-infinity' THEN created_at ELSE due_at END)
                              AS since
                   FROM deliveries WHERE due_at <= clock_timestamp()) due",
        )
        .one(&mut conn)
        .await?;
        Ok(b)
    }
}

#[cfg(test)]
mod tests;
