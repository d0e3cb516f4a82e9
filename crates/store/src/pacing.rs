//! Receivers set the pace (docs/delivery.md, "Throttle and order"): the turns of a throttled
//! endpoint, shared by every `webhook-delivery` replica, and the waits of a lead's deliveries
//! behind its earlier ones. Only endpoints with a throttle or `per_lead` ordering reach this
//! module; the delivery rules (`crates/webhook-delivery/src/decide/pace.rs`) say when.
//!
//! **Turns.** `endpoint_pacing` holds an endpoint's next free turn. Taking one moves it on by
//! the spacing (one second over the rate) under the row's lock, so turns are handed out one at
//! a time across replicas, in the order they are asked for, and two turns are never closer than
//! the spacing: any one-second window holds at most `max_per_second` turns, plus one. A
//! delivery whose turn is near waits for it in the process; one whose turn is further off waits
//! in its row, holding the turn (`paced_at`), and the relay sends it again shortly before it
//! ([`qualifier_domain::pace::SENT_AHEAD`]). Waiting spends no attempt.
//!
//! **Order.** A delivery of a lead waits, in its row (`held_at` with `waiting_for =
//! 'earlier_delivery'`), while an earlier delivery of the same lead is pending or failed, and
//! the delivery that ends the wait releases the next one. Both run under a transaction-level
//! advisory lock of the lead, so a wait begun while the earlier delivery ends is either seen
//! and released, or not begun: no delivery waits for a release that already happened.

use crate::answer::ReadToEnd;
use diesel::sql_types::{BigInt, Bool, Double, Int4, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use qualifier_domain::pace::{MaxPerSecond, SENT_AHEAD};
use std::time::Duration;
use uuid::Uuid;

use crate::StoreError;
use crate::endpoints::EndpointKey;
use crate::partitions::{DeliveryRef, day_bounds};

/// What taking a turn came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The turn is this far off (zero when it is now): wait, then send.
    Wait(Duration),
    /// The turn was further off than the caller waits in the process: the delivery now waits
    /// in its row, holding the turn, and the relay sends it again just before it.
    Parked,
    /// The turn was further off, and the delivery ended meanwhile (finished, erased, held for
    /// an outage): nothing is sent.
    Ended,
}

#[derive(diesel::QueryableByName)]
struct Taken {
    #[diesel(sql_type = Double)]
    wait_ms: f64,
    #[diesel(sql_type = Bool)]
    far: bool,
    #[diesel(sql_type = BigInt)]
    parked: i64,
}

#[derive(diesel::QueryableByName)]
struct Blocked {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Bool)]
    blocked: bool,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl crate::facets::Deliveries<'_> {
    /// Takes the endpoint's next turn for `delivery`'s attempt `attempt`. When the turn is
    /// more than `wait_here` off, the delivery is parked in its row until then (same
    /// statement, so the turn is never taken without being held).
    pub async fn take_turn(
        &self,
        at: EndpointKey,
        rate: MaxPerSecond,
        delivery: DeliveryRef,
        attempt: u32,
        wait_here: Duration,
    ) -> Result<Turn, StoreError> {
        let (lo, hi) = day_bounds([delivery.seq]);
        let mut conn = self.conn().await?;
        // Prepared (fixed text): the parameters as a row first, the statement after it.
        let taken: Taken = crate::prepared::prepared::<SqlUuid, _>(
            "WITH params(org) AS (VALUES (",
            concat!(
                ")), turn AS (
                 INSERT INTO endpoint_pacing AS p (org_id, endpoint_id, next_at)
                 VALUES ($1, $9, clock_timestamp() + make_interval(secs => $2))
                 ON CONFLICT (endpoint_id) DO UPDATE
                     SET next_at = GREATEST(p.next_at, clock_timestamp())
                                   + make_interval(secs => $2)
                 RETURNING next_at - make_interval(secs => $2) AS at),
             -- Whether the turn is too far off to wait for here, decided once: the park below
             -- and the answer must agree (two readings of the clock could straddle the line,
             -- and a message acked with its row neither parked nor sent would be lost).
             decided AS MATERIALIZED (
                 SELECT at, at > clock_timestamp() + make_interval(secs => $3) AS far,
                        (EXTRACT(EPOCH FROM at - clock_timestamp()) * 1000)::float8 AS wait_ms
                 FROM turn),
             parked AS (",
                crate::deliveries::state::within::parked_for_turn!(),
                ")
             SELECT t.wait_ms, t.far, (SELECT count(*) FROM parked) AS parked FROM decided t"
            ),
            at.org_id,
        )
        .bind::<Double, _>(secs(rate.spacing()))
        .bind::<Double, _>(secs(wait_here))
        .bind::<Double, _>(secs(SENT_AHEAD))
        .bind::<Int4, _>(i32::try_from(attempt).unwrap_or(i32::MAX))
        .bind::<SqlUuid, _>(delivery.id)
        .bind::<BigInt, _>(lo)
        .bind::<BigInt, _>(hi)
        .bind::<SqlUuid, _>(at.endpoint_id)
        .one(&mut conn)
        .await?;
        if !taken.far {
            return Ok(Turn::Wait(Duration::from_secs_f64(
                taken.wait_ms.max(0.0) / 1000.0,
            )));
        }
        if taken.parked == 0 {
            return Ok(Turn::Ended);
        }
        // The relay sleeps until the earliest instant it knows of; this one may be earlier.
        crate::deliveries::state::wake_relay(&mut conn).await?;
        Ok(Turn::Parked)
    }

    /// Takes the endpoint's next turn for a request that has no row (a probe): how long until
    /// it.
    pub async fn take_probe_turn(
        &self,
        at: EndpointKey,
        rate: MaxPerSecond,
    ) -> Result<Duration, StoreError> {
        #[derive(diesel::QueryableByName)]
        struct Wait {
            #[diesel(sql_type = Double)]
            wait_ms: f64,
        }
        let mut conn = self.conn().await?;
        let w: Wait = diesel::sql_query(
            "INSERT INTO endpoint_pacing AS p (org_id, endpoint_id, next_at)
             VALUES ($1, $3, clock_timestamp() + make_interval(secs => $2))
             ON CONFLICT (endpoint_id) DO UPDATE
                 SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $2)
             RETURNING (EXTRACT(EPOCH FROM next_at - make_interval(secs => $2)
                                - clock_timestamp()) * 1000)::float8 AS wait_ms",
        )
        .bind::<SqlUuid, _>(at.org_id)
        .bind::<Double, _>(secs(rate.spacing()))
        .bind::<SqlUuid, _>(at.endpoint_id)
        .one(&mut conn)
        .await?;
        Ok(Duration::from_secs_f64(w.wait_ms.max(0.0) / 1000.0))
    }

    /// For each delivery (its id, its row's org, endpoint, lead and sequence number), whether
    /// an earlier delivery of its lead to the same endpoint is not over yet, in one round trip.
    pub async fn earlier_pending(
        &self,
        rows: &[(Uuid, Uuid, Uuid, Uuid, i64)],
    ) -> Result<Vec<bool>, StoreError> {
        use diesel::sql_types::Array;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
        let orgs: Vec<Uuid> = rows.iter().map(|r| r.1).collect();
        let endpoints: Vec<Uuid> = rows.iter().map(|r| r.2).collect();
        let leads: Vec<Uuid> = rows.iter().map(|r| r.3).collect();
        let seqs: Vec<i64> = rows.iter().map(|r| r.4).collect();
        let mut conn = self.conn().await?;
        let found: Vec<Blocked> = crate::prepared::prepared::<Array<SqlUuid>, _>(
            "WITH params(ids) AS (VALUES (",
            concat!(
                ")) SELECT o.id, ",
                crate::deliveries::state::earlier_pending!(),
                " AS blocked
                 FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int8[], $5::uuid[])
                      AS o(id, org_id, lead_id, seq, endpoint_id)"
            ),
            &ids,
        )
        .bind::<Array<SqlUuid>, _>(&orgs)
        .bind::<Array<SqlUuid>, _>(&leads)
        .bind::<Array<BigInt>, _>(&seqs)
        .bind::<Array<SqlUuid>, _>(&endpoints)
        .load(&mut conn)
        .await?;
        Ok(crate::answers_in_order(
            &ids,
            found.into_iter().filter(|b| b.blocked).map(|b| b.id),
        ))
    }
}

/// The deliveries to endpoint `$5` (of org `$1`) waiting in their rows for a turn of its
/// throttle.
const WAITING: &str = crate::deliveries::state::WAITING_FOR_TURN;

/// How many waiting rows one step of [`Deliveries::retime`] moves, in a transaction of its own.
const RETIME_CHUNK: usize = 1000;

/// How fast the deliveries that waited for a throttle now removed are let go (per second):
/// spread out rather than all due at once, so they do not go ahead of every other org's due
/// retries in the relay's queue.
pub const RELEASE_PER_SECOND: f64 = 100.0;

/// The row ids of `$1`'s deliveries waiting for a turn, in the order of their turns.
#[derive(diesel::QueryableByName)]
struct WaitingRow {
    #[diesel(sql_type = BigInt)]
    seq: i64,
}

/// The re-timings of this process (one [`Store`]'s clones share it): at most one runs at a time
/// across the process, each endpoint's at most once at a time, and a change saved while its
/// endpoint's re-timing runs is applied after it, at the latest rate. However many saves arrive
/// at once, re-timing holds at most one of the pool's connections, and only for a step.
#[derive(Debug)]
pub struct Retimer {
    /// The endpoints being re-timed, each with the rate saved since its re-timing began.
    running: std::sync::Mutex<std::collections::HashMap<Uuid, Option<Option<MaxPerSecond>>>>,
    /// One step of one re-timing at a time across the process.
    step: tokio::sync::Semaphore,
    /// Woken when an endpoint's re-timing ends ([`Deliveries::retimed`]).
    ended: tokio::sync::Notify,
}

impl Default for Retimer {
    fn default() -> Self {
        Retimer {
            running: Default::default(),
            step: tokio::sync::Semaphore::new(1),
            ended: tokio::sync::Notify::new(),
        }
    }
}

impl Retimer {
    fn running(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<Uuid, Option<Option<MaxPerSecond>>>>
    {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl crate::facets::Deliveries<'_> {
    /// Re-times what waits for `at`'s throttle at `rate` in the background ([`Retimer`]): at
    /// once when nothing re-times the endpoint, else after the re-timing under way.
    pub fn retime_later(&self, at: EndpointKey, rate: Option<MaxPerSecond>) {
        {
            let mut running = self.retimer.running();
            if let Some(next) = running.get_mut(&at.endpoint_id) {
                *next = Some(rate);
                return;
            }
            running.insert(at.endpoint_id, None);
        }
        let store = self.0.clone();
        tokio::spawn(async move {
            let mut rate = rate;
            loop {
                if let Err(e) = store.deliveries().retime(at, rate).await {
                    tracing::warn!(org_id = %at.org_id, endpoint_id = %at.endpoint_id, error = %crate::cause_chain(&e), "re-timing the deliveries waiting for the throttle failed");
                }
                let mut running = store.retimer.running();
                match running.get_mut(&at.endpoint_id).and_then(Option::take) {
                    Some(next) => rate = next,
                    None => {
                        running.remove(&at.endpoint_id);
                        drop(running);
                        store.retimer.ended.notify_waiters();
                        return;
                    }
                }
            }
        });
    }

    /// Waits until no re-timing of `endpoint` runs in this process (tests, tools).
    pub async fn retimed(&self, endpoint: Uuid) {
        loop {
            let ended = self.retimer.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.retimer.running().contains_key(&endpoint) {
                return;
            }
            ended.await;
        }
    }

    /// The throttle changed (after the webhook's save committed): the deliveries waiting for it
    /// take new turns at the new rate, in the order of the turns they held, the first one
    /// spacing from now; with no throttle left they go at [`RELEASE_PER_SECOND`]. So a change
    /// applies to what already waits, not only to what comes next.
    ///
    /// A step at a time, [`RETIME_CHUNK`] rows each in a transaction of its own: the org's turn
    /// row is locked only for a step, so turns taken meanwhile (each holding a connection while
    /// it waits) wait for one short step, never for the whole backlog. A delivery whose row kept
    /// its old turn (a step that failed, a process stopped between steps) is still throttled:
    /// the worker takes a new turn for a turn that is not near (`decide::pacing`).
    pub async fn retime(
        &self,
        at: EndpointKey,
        rate: Option<MaxPerSecond>,
    ) -> Result<(), StoreError> {
        let org_id = at.org_id;
        // Each step takes the process's one re-timing turn and a connection, and gives both
        // back before the next.
        macro_rules! step {
            () => {{
                let turn = self.retimer.step.acquire().await.map_err(|_| {
                    StoreError::Unavailable("the re-timing turns were closed".into())
                })?;
                (turn, self.conn().await?)
            }};
        }
        let (turn, mut conn) = step!();
        let waiting: Vec<WaitingRow> = diesel::sql_query(format!(
            "SELECT d.seq FROM deliveries d WHERE {} ORDER BY d.turn_at, d.seq",
            WAITING.replace("$5", "$2")
        ))
        .bind::<SqlUuid, _>(org_id)
        .bind::<SqlUuid, _>(at.endpoint_id)
        .load(&mut conn)
        .await?;
        let seqs: Vec<i64> = waiting.into_iter().map(|w| w.seq).collect();
        drop((turn, conn));
        let Some(rate) = rate else {
            for (k, chunk) in seqs.chunks(RETIME_CHUNK).enumerate() {
                let (_turn, mut conn) = step!();
                diesel::sql_query(crate::deliveries::state::within::unthrottled())
                    .bind::<SqlUuid, _>(org_id)
                    .bind::<diesel::sql_types::Array<BigInt>, _>(chunk)
                    .bind::<Double, _>((k * RETIME_CHUNK) as f64)
                    .bind::<Double, _>(RELEASE_PER_SECOND)
                    .bind::<SqlUuid, _>(at.endpoint_id)
                    .execute(&mut conn)
                    .await?;
            }
            let (_turn, mut conn) = step!();
            diesel::sql_query("DELETE FROM endpoint_pacing WHERE endpoint_id = $1")
                .bind::<SqlUuid, _>(at.endpoint_id)
                .execute(&mut conn)
                .await?;
            if !seqs.is_empty() {
                crate::deliveries::state::wake_relay(&mut conn).await?;
            }
            return Ok(());
        };
        // The turns handed out before the change and not held in rows (deliveries waiting for
        // a near turn in a worker, or sent ahead by the relay) still go at their times, all
        // before the earliest turn held in a row, or before the next free turn when no row
        // waits: the new turns start there at the earliest (`anchor`), so no second holds an
        // old turn and a full second of new ones. Starting at `now` put up to two old turns
        // beside fifty new ones when 5 a second was raised to 50. Later steps start at the
        // next free turn, after whatever turns were taken between steps.
        // With nothing waiting, one empty step still moves the next free turn to the new rate.
        let chunks: Vec<&[i64]> = if seqs.is_empty() {
            vec![&[]]
        } else {
            seqs.chunks(RETIME_CHUNK).collect()
        };
        for (k, chunk) in chunks.into_iter().enumerate() {
            let (_turn, mut conn) = step!();
            let head = if k == 0 {
                "(SELECT min(turn_at) FROM r),"
            } else {
                ""
            };
            // The step's rows are locked before the turn row: a step held up by a row (an
            // erasure, an outcome) holds no lock that turn-takers wait for. Both shapes' rows,
            // the event's too: the delivery rows' trigger writes it at the end of the step,
            // after the turn row is locked.
            let moved = crate::deliveries::state::within::retimed();
            let sql = format!(
                "WITH w AS (SELECT x.seq, x.i FROM unnest($4::int8[]) WITH ORDINALITY AS x(seq, i)),
                      r AS MATERIALIZED (
                          SELECT d.seq, d.turn_at, w.i FROM w JOIN deliveries d ON d.seq = w.seq
                          JOIN outbox o ON o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)
                          WHERE {WAITING} FOR UPDATE OF d, o),
                      locked AS MATERIALIZED (
                          SELECT next_at FROM endpoint_pacing
                          WHERE endpoint_id = $5 AND (SELECT count(*) FROM r) >= 0 FOR UPDATE),
                      anchor AS (
                          SELECT coalesce({head}
                                          (SELECT next_at FROM locked),
                                          clock_timestamp()) AS at),
                      t AS (
                          SELECT r.seq, GREATEST(clock_timestamp() + make_interval(secs => $2 * r.i),
                                                 anchor.at + make_interval(secs => $2 * (r.i - 1))) AS at
                          FROM r, anchor),
                      moved AS ({moved})
                 INSERT INTO endpoint_pacing AS p (org_id, endpoint_id, next_at)
                 SELECT $1, $5, GREATEST(clock_timestamp() + make_interval(secs => $2 * (n.moved + 1)),
                                     anchor.at + make_interval(secs => $2 * n.moved))
                 FROM anchor, (SELECT count(*) AS moved FROM moved) AS n
                 ON CONFLICT (endpoint_id) DO UPDATE SET next_at = EXCLUDED.next_at"
            );
            diesel::sql_query(sql)
                .bind::<SqlUuid, _>(org_id)
                .bind::<Double, _>(secs(rate.spacing()))
                .bind::<Double, _>(secs(SENT_AHEAD))
                .bind::<diesel::sql_types::Array<BigInt>, _>(chunk)
                .bind::<SqlUuid, _>(at.endpoint_id)
                .execute(&mut conn)
                .await?;
        }
        let (_turn, mut conn) = step!();
        crate::deliveries::state::wake_relay(&mut conn).await?;
        Ok(())
    }
}
