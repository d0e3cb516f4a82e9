//! Replays: one finished delivery, or every delivery a filter matches (with its dry run),
//! put back to the relay at the org's replay pace.

use crate::answer::ReadToEnd;
use diesel::sql_types::Array;
use diesel::{ExpressionMethods, JoinOnDsl, OptionalExtension, QueryDsl};
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use uuid::Uuid;

use super::filter::{DeliveryFilter, state_asked};
use super::lists::listed_endpoint;
use crate::StoreError;
use crate::endpoints::EndpointKey;
use crate::partitions::DeliveryIs;
use crate::planner::index_only;
use crate::schema::{deliveries, outbox};
use qualifier_domain::delivery::DeliveryState;

impl crate::facets::Deliveries<'_> {
    /// Replay: a finished delivery (dead, succeeded or skipped) gets a fresh cycle of 5 attempts
    /// under the same delivery id. The row goes back to the relay (unpublished, due at the org's
    /// next replay slot), which sends it again with attempt 1; no broker access in the request.
    pub async fn replay_delivery(
        &self,
        org_id: Uuid,
        delivery_id: Uuid,
        rate_per_second: u32,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let oldest_kept = self.oldest_kept();
        crate::tx::transaction(&mut conn, async move |conn| {
            // The delivery's and the event's rows locked, the delivery's first as every
            // writer locks them (docs/decisions.md, "Events and deliveries apart"): the
            // delivery's state and the event's erasure are what the replay checks, and a move
            // meanwhile (an outcome, an erasure) waits for the replay or comes before it.
            type Row = (
                i64,
                Uuid,
                DeliveryState,
                bool,
                Option<OffsetDateTime>,
                OffsetDateTime,
            );
            let (seq, endpoint, state, retrying, erased, created): Row = deliveries::table
                .inner_join(outbox::table.on(outbox::seq.eq(deliveries::seq)))
                .filter(outbox::org_id.eq(org_id))
                .filter(DeliveryIs { id: delivery_id })
                .select((
                    outbox::seq,
                    deliveries::endpoint_id,
                    deliveries::state,
                    deliveries::retrying,
                    outbox::erased_at,
                    outbox::created_at,
                ))
                .for_update()
                .first_row(conn)
                .await
                .optional()?
                .ok_or(StoreError::NotFound("Delivery not found"))?;
            let current = state.status(retrying);
            if erased.is_some() {
                return Err(StoreError::Conflict("Event erased".into()));
            }
            // Past retention the event leaves with its partition whatever its state
            // (`Upkeep::expire_events`): a replay would only hold it there.
            if oldest_kept.is_some_and(|t| created < t) {
                return Err(StoreError::Conflict("Event expired".into()));
            }
            if !current.replayable() {
                return Err(StoreError::Conflict("Delivery is still in progress".into()));
            }
            let only = vec![state.as_str().to_owned()];
            let at = EndpointKey {
                org_id,
                endpoint_id: endpoint,
            };
            schedule_replays(conn, at, &[seq], &only, &[retrying], rate_per_second).await?;
            Ok(())
        })
        .await
    }

    /// Bulk replay (docs/api.md): every delivery of the org that matches `f` is put back
    /// to the relay under its own id, spaced `1 / rate_per_second` apart after the org's replays
    /// already scheduled. A delivery whose event is past retention is counted and left as it
    /// is (`Event expired`), as a single replay refuses it. A dry run changes nothing.
    pub async fn replay_matching(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        dry_run: bool,
        rate_per_second: u32,
    ) -> Result<ReplayCount, StoreError> {
        let mut conn = self.conn().await?;
        let f = f.clone();
        let oldest_kept = self.oldest_kept();
        crate::tx::transaction(&mut conn, async move |conn| {
            // Unlike the list, a replay with no status matches nothing rather than everything.
            if f.statuses.is_empty() {
                return Ok(ReplayCount::default());
            }
            // Erased events are never sent again: not counted, not scheduled
            // ([`DeliveryFilter::selection`]).
            // A dry run is counted from the hourly totals where they vouch for the range, and
            // where the rows are for the rest, reading none of them out.
            let endpoint = listed_endpoint(conn, org_id, f.endpoint_id).await?;
            let mut f = f;
            f.endpoint_id = Some(endpoint);
            if dry_run {
                index_only(conn).await?;
                let matched = f.count(conn, org_id).await?;
                // The expired ones are those the same filter counts up to the retention line.
                let expired = match oldest_kept {
                    Some(line) if f.since.is_none_or(|since| since < line) => {
                        let mut old = f.clone();
                        old.until = Some(f.until.map_or(line, |until| until.min(line)));
                        old.count(conn, org_id).await?
                    }
                    _ => 0,
                };
                return Ok(ReplayCount {
                    matched,
                    expired: expired.min(matched),
                });
            }
            let (sql, binds) = f.selection("d.seq, d.created_at");
            let rows: Vec<Chosen> = binds
                .bound(format!("{sql} ORDER BY d.seq"), org_id)
                .load(conn)
                .await?;
            let matched = rows.len();
            let seqs: Vec<i64> = rows
                .into_iter()
                .filter(|r| oldest_kept.is_none_or(|line| r.created_at >= line))
                .map(|r| r.seq)
                .collect();
            let count = ReplayCount {
                matched,
                expired: matched - seqs.len(),
            };
            if !seqs.is_empty() {
                let (states, retrying) = f.states_asked();
                let at = EndpointKey {
                    org_id,
                    endpoint_id: endpoint,
                };
                schedule_replays(conn, at, &seqs, &states, &retrying, rate_per_second).await?;
            }
            Ok(count)
        })
        .await
    }

    /// The oldest event time still kept (`QUALIFIER_EVENT_RETENTION_DAYS`): an older event
    /// cannot be replayed. `None` when nothing limits it.
    fn oldest_kept(&self) -> Option<OffsetDateTime> {
        self.event_retention.map(|keep| {
            qualifier_domain::timefmt::now_millis()
                - time::Duration::seconds_f64(keep.as_secs_f64())
        })
    }
}

/// What a bulk replay matched, and how many of those it left because their event is past
/// retention (`Event expired`): the rest were replayed (none on a dry run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCount {
    pub matched: usize,
    pub expired: usize,
}

/// A bulk replay's answer, the same from the API and `qualifierctl`: `matched`, `replayed`
/// (0 on a dry run) and, only when some match was left, `not_replayed` by reason
/// (`{"Event expired": n}`): an answer with nothing left is the one clients have always read.
pub fn replay_answer(count: ReplayCount, dry_run: bool) -> serde_json::Value {
    let mut answer = serde_json::json!({
        "matched": count.matched,
        "replayed": if dry_run { 0 } else { count.replayable() },
    });
    if count.expired > 0 {
        answer["not_replayed"] = serde_json::json!({ "Event expired": count.expired });
    }
    answer
}

impl ReplayCount {
    /// How many were (or, on a dry run, would be) replayed.
    pub fn replayable(&self) -> usize {
        self.matched - self.expired
    }
}

/// Takes `seqs.len()` consecutive replay slots of the org (`replay_pacing`, whose row lock also
/// orders concurrent replays of one org) and puts each delivery back to the relay, due at its
/// slot. A delivery whose state left `states` (with the `retrying` asked of one before the end)
/// since it was read (a retry finished it meanwhile) is left alone: PostgreSQL re-checks the
/// condition on the row's latest version. Returns how many were put back.
async fn schedule_replays(
    conn: &mut diesel_async::AsyncPgConnection,
    at: EndpointKey,
    seqs: &[i64],
    states: &[String],
    retrying: &[bool],
    rate_per_second: u32,
) -> Result<usize, StoreError> {
    use diesel::sql_types::{Bool, Double, Int8, Text};
    let spacing = 1.0 / f64::from(rate_per_second.max(1));
    let n = seqs.len() as f64;
    let updated = diesel::sql_query(format!(
        "WITH slot AS (
             INSERT INTO replay_pacing AS p (org_id, next_at)
             VALUES ($1, clock_timestamp() + make_interval(secs => $3 * $4))
             ON CONFLICT (org_id) DO UPDATE
                 SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $3 * $4)
             RETURNING next_at - make_interval(secs => $3 * $4) AS first)
         {}",
        super::state::within::replayed(&state_asked("$5::text[]::delivery_state[]", "$6"))
    ))
    .bind::<diesel::sql_types::Uuid, _>(at.org_id)
    .bind::<Array<Int8>, _>(seqs)
    .bind::<Double, _>(spacing)
    .bind::<Double, _>(n)
    .bind::<Array<Text>, _>(states)
    .bind::<Array<Bool>, _>(retrying)
    .bind::<diesel::sql_types::Uuid, _>(at.endpoint_id)
    .execute(conn)
    .await?;
    crate::deliveries::state::wake_relay(conn).await?;
    Ok(updated)
}

/// A delivery a bulk replay selected.
#[derive(diesel::QueryableByName)]
struct Chosen {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    seq: i64,
    #[diesel(sql_type = diesel::sql_types::Timestamptz)]
    created_at: OffsetDateTime,
}
