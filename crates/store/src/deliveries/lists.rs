//! The lists, the console's search, one delivery with its log, and replays.

use crate::answer::ReadToEnd;
use diesel::sql_types::Array;
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, SelectableHelper};
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    DELIVERED_COLUMNS, Delivered, DeliveredDetail, Delivery, DeliveryDetail, EVENT_WITH_DELIVERY,
    SummaryRow,
};
use crate::partitions::{SeqBound, UpToDay, until_day};
use crate::planner::{in_index_order, index_only};
use crate::schema::outbox;
use crate::{Store, StoreError};
use qualifier_domain::delivery::AttemptEntry;
use qualifier_domain::{DeliveryStatus, EventType};

/// The lists, the console's search and replays.
impl Store {
    /// One page of an org's deliveries, newest first, keyset-paginated on the outbox sequence
    /// (`outbox_org_seq`, or `outbox_org_lead` with a lead): rows committed meanwhile are newer
    /// than any cursor, so a walk visits every older row exactly once. Returns the page and the
    /// sequence to continue below, `None` on the last page.
    /// [`Store::list_deliveries_at`] without the positions.
    pub async fn list_deliveries(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<(Vec<Delivery>, Option<i64>), StoreError> {
        let (rows, next) = self
            .list_deliveries_at(org_id, f, before_seq, limit)
            .await?;
        Ok((rows.into_iter().map(|(_, d)| d).collect(), next))
    }

    /// Each delivery with its position (what a page cut short continues below).
    pub async fn list_deliveries_at(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<(Vec<(i64, Delivery)>, Option<i64>), StoreError> {
        let mut conn = self.conn().await?;
        // A page is one walk of the one index that gives the org's rows of the filter in
        // sequence order, newest first, and stops at the page's end or at a lower bound
        // (docs/performance.md, "History at scale"): `outbox_org_lead` with a lead,
        // `outbox_org_status` or `outbox_org_type` with one status or one type, `outbox_org_seq`
        // otherwise. Two things make it so whatever the statistics say:
        // - The org is `= ANY($1)` with a one-element array, not `=`. An equality makes the
        //   org a constant, which PostgreSQL drops from the order, so a partition's primary
        //   key (`seq`) would give the order too, and on statistics that overrate an org's
        //   share of the open partition the planner walked it newest first through other
        //   orgs' rows (4,596 rows read for a page of 51 in the bench's plan check). `= ANY`
        //   of one element selects what the equality does, but keeps the org in the order,
        //   which only the org's indexes give. And it is still an equality to the index scan, so a bound on
        //   `seq` after it (a `since`, a page's `before_seq`) starts and ends the scan. A
        //   range on the org (`>= org AND <= org`) keeps it in the order too, but would not
        //   end the scan at a `since`: a page not filled would read the org's older entries
        //   of every partition.
        // - The order names the index: the org descending walks `outbox_org_status` or
        //   `outbox_org_type` backwards (the status or type an equality, so a constant), which
        //   `outbox_org_seq` (org ascending, then `seq` descending) cannot give; the org
        //   ascending leaves `outbox_org_seq`, and with a lead `outbox_org_lead`, the lead's
        //   rows being the fewest whatever else the filter asks.
        let one_status_or_type =
            f.lead_id.is_none() && (f.statuses.len() == 1 || f.event_types.len() == 1);
        // Then one index gives the order, so the plan is the same for every org and every
        // value, and the session keeps it ([`in_index_order`]). Except with one status and one
        // type: both `outbox_org_status` and `outbox_org_type` give that order, and which
        // reads fewer rows depends on the values, which only a custom plan sees.
        let keep_plan = !(f.lead_id.is_none() && f.statuses.len() == 1 && f.event_types.len() == 1);
        let q = f.bounded(
            outbox::table
                .filter(outbox::org_id.eq_any(vec![org_id]))
                .into_boxed(),
        );
        let mut q = if one_status_or_type {
            q.order((outbox::org_id.desc(), outbox::seq.desc()))
        } else {
            q.order((outbox::org_id.asc(), outbox::seq.desc()))
        };
        if let Some(b) = before_seq {
            q = q.filter(outbox::seq.lt(b));
        }
        let q = q
            .limit(limit + 1)
            .select((outbox::seq, SummaryRow::as_select()));
        let mut rows: Vec<(i64, SummaryRow)> = conn
            .transaction::<_, StoreError, _>(async move |conn| {
                in_index_order(conn, keep_plan).await?;
                Ok(q.load(conn).await?)
            })
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next = if more { rows.last().map(|r| r.0) } else { None };
        Ok((rows.iter().map(|r| (r.0, r.1.summary())).collect(), next))
    }

    /// The org's deliveries whose delivery id, event id or lead id is `id`, newest first (at
    /// most `limit`): one search field for whichever id an administrator has in hand.
    ///
    /// Three lookups, each through its own index in every partition (`delivery_id`, `event_id`,
    /// `outbox_org_lead`), merged here; each event's delivery found by its key. One statement
    /// with `delivery_id = $2 OR event_id = $2 OR lead_id = $2 … ORDER BY seq DESC LIMIT n` was
    /// planned over the partitioned outbox as a walk of the org's rows newest first until a
    /// match, which for an id from a month ago read every row of the org in between (179,338
    /// rows for one answer, as a generic plan).
    pub async fn find_deliveries(
        &self,
        org_id: Uuid,
        id: Uuid,
        limit: i64,
    ) -> Result<Vec<Delivery>, StoreError> {
        use diesel::sql_types::{Int8, Uuid as SqlUuid};
        let mut conn = self.conn().await?;
        let by = |condition: &str| {
            format!(
                "SELECT {DELIVERED_COLUMNS} FROM {EVENT_WITH_DELIVERY}
                 WHERE o.org_id = $1 AND {condition} ORDER BY o.seq DESC LIMIT $3"
            )
        };
        // Each lookup is a probe of its index in every partition, planned with its values on
        // each call (a search is an administrator's, not a loop's).
        let mut rows: Vec<Delivered> = Vec::new();
        for condition in ["o.delivery_id = $2", "o.event_id = $2", "o.lead_id = $2"] {
            rows.extend(
                diesel::sql_query(by(condition))
                    .bind::<SqlUuid, _>(org_id)
                    .bind::<SqlUuid, _>(id)
                    .bind::<Int8, _>(limit)
                    .load::<Delivered>(&mut conn)
                    .await?,
            );
        }
        // An id that is both (a UUID is random; only a test makes it so) is listed once.
        rows.sort_by_key(|r| std::cmp::Reverse(r.seq));
        rows.dedup_by_key(|r| r.seq);
        rows.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(rows.iter().map(Delivered::summary).collect())
    }

    /// One delivery with its attempt log, its state from its own row.
    pub async fn get_delivery(
        &self,
        org_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<DeliveryDetail, StoreError> {
        use diesel::sql_types::Uuid as SqlUuid;
        let mut conn = self.conn().await?;
        let row: DeliveredDetail = diesel::sql_query(format!(
            "SELECT {DELIVERED_COLUMNS}, d.attempt_log, o.is_test FROM {EVENT_WITH_DELIVERY}
             WHERE o.org_id = $1 AND o.delivery_id = $2"
        ))
        .bind::<SqlUuid, _>(org_id)
        .bind::<SqlUuid, _>(delivery_id)
        .one(&mut conn)
        .await
        .optional()?
        .ok_or(StoreError::NotFound("Delivery not found"))?;
        let summary = row.delivered.summary();
        let id = summary.id.to_string();
        // Each entry keeps only what differs per attempt; the headers it was sent with are
        // rebuilt from the delivery itself.
        let request = qualifier_domain::delivery::Request {
            event_type: summary.event_type.as_str(),
            delivery_id: &id,
            test: row.is_test,
            probe: false,
        };
        // Entries are written through the same type; one that does not read back (hand-edited
        // rows) is left out rather than failing the whole page.
        let attempt_log = row
            .attempt_log
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(AttemptEntry::from_stored)
            .map(|e| e.for_display(&request))
            .collect();
        Ok(DeliveryDetail {
            delivery: summary,
            attempt_log,
        })
    }

    /// The body a delivery sends (its event's envelope, byte for byte), for the console.
    pub async fn delivery_payload(
        &self,
        org_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<Vec<u8>, StoreError> {
        let mut conn = self.conn().await?;
        let stored = outbox::table
            .filter(outbox::org_id.eq(org_id))
            .filter(outbox::delivery_id.eq(delivery_id))
            .select(outbox::payload)
            .first_row(&mut conn)
            .await
            .optional()?
            .ok_or(StoreError::NotFound("Delivery not found"))?;
        Ok(crate::payload::unpack_owned(stored)?)
    }

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
        conn.transaction::<(), StoreError, _>(async move |conn| {
            type Row = (i64, DeliveryStatus, Option<OffsetDateTime>, OffsetDateTime);
            let (seq, current, erased, created): Row = outbox::table
                .filter(outbox::org_id.eq(org_id))
                .filter(outbox::delivery_id.eq(delivery_id))
                .select((
                    outbox::seq,
                    outbox::status,
                    outbox::erased_at,
                    outbox::created_at,
                ))
                .for_update()
                .first_row(conn)
                .await
                .optional()?
                .ok_or(StoreError::NotFound("Delivery not found"))?;
            if erased.is_some() {
                return Err(StoreError::Conflict("Event erased".into()));
            }
            // Past retention the event leaves with its partition whatever its state
            // (`Store::expire_events`): a replay would only hold it there.
            if oldest_kept.is_some_and(|t| created < t) {
                return Err(StoreError::Conflict("Event expired".into()));
            }
            if !current.replayable() {
                return Err(StoreError::Conflict("Delivery is still in progress".into()));
            }
            schedule_replays(conn, org_id, &[seq], &[current], rate_per_second).await?;
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
        conn.transaction::<ReplayCount, StoreError, _>(async move |conn| {
            // Unlike the list, a replay with no status matches nothing rather than everything.
            if f.statuses.is_empty() {
                return Ok(ReplayCount::default());
            }
            // Erased events are never sent again: not counted, not scheduled.
            let matching = || f.matching(org_id).filter(outbox::erased_at.is_null());
            // A dry run is counted from the hourly totals where they vouch for the range, and
            // where the rows are for the rest, reading none of them out.
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
            let rows: Vec<(i64, OffsetDateTime)> = matching()
                .order(outbox::seq.asc())
                .select((outbox::seq, outbox::created_at))
                .load(conn)
                .await?;
            let matched = rows.len();
            let seqs: Vec<i64> = rows
                .into_iter()
                .filter(|(_, created)| oldest_kept.is_none_or(|line| *created >= line))
                .map(|(seq, _)| seq)
                .collect();
            let count = ReplayCount {
                matched,
                expired: matched - seqs.len(),
            };
            if !seqs.is_empty() {
                schedule_replays(conn, org_id, &seqs, &f.statuses, rate_per_second).await?;
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
/// Which deliveries a list or a bulk replay is about; empty lists mean "any".
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub statuses: Vec<DeliveryStatus>,
    pub event_types: Vec<EventType>,
    pub lead_id: Option<Uuid>,
    pub since: Option<OffsetDateTime>,
    pub until: Option<OffsetDateTime>,
}

impl DeliveryFilter {
    /// The org's outbox rows that match (an empty list of statuses or types matches any), for
    /// bulk replay and its dry run. The deliveries list applies the same filters through
    /// [`Self::bounded`], with the org as `= ANY` ([`Store::list_deliveries_at`] says why),
    /// so the two can never disagree on a filter.
    ///
    /// Each filter reaches its rows through an index (docs/performance.md, "History at
    /// scale"): one status is an equality, so `outbox_org_status` gives the org's rows of that
    /// status in sequence order, newest first, and a count reads that index alone; a time
    /// bound becomes a range of sequence numbers, found through `outbox_created_at`, so
    /// neither a list that ends a month ago nor a count over a day walks the rest of the
    /// org's history.
    pub(super) fn matching(&self, org_id: Uuid) -> outbox::BoxedQuery<'static, diesel::pg::Pg> {
        self.bounded(outbox::table.filter(outbox::org_id.eq(org_id)).into_boxed())
    }

    /// `q` narrowed to the rows that match every filter but the org's.
    fn bounded(
        &self,
        mut q: outbox::BoxedQuery<'static, diesel::pg::Pg>,
    ) -> outbox::BoxedQuery<'static, diesel::pg::Pg> {
        // `= ANY` over the index's second column would give the rows out of sequence order
        // (PostgreSQL then sorts all of them before a page's LIMIT); one status is `=`.
        match self.statuses.as_slice() {
            [] => {}
            [one] => q = q.filter(outbox::status.eq(*one)),
            many => q = q.filter(outbox::status.eq_any(many.to_vec())),
        }
        match self.event_types.as_slice() {
            [] => {}
            [one] => q = q.filter(outbox::event_type.eq(*one)),
            many => q = q.filter(outbox::event_type.eq_any(many.to_vec())),
        }
        if let Some(l) = self.lead_id {
            q = q.filter(outbox::lead_id.eq(l));
        }
        // Each time bound as a range of sequence numbers, with the exact condition beside it
        // (`SeqBound`).
        if let Some(t) = self.since {
            q = q
                .filter(SeqBound { at: t, since: true })
                .filter(outbox::created_at.ge(t));
        }
        if let Some(t) = self.until {
            q = q
                .filter(SeqBound {
                    at: t,
                    since: false,
                })
                .filter(outbox::created_at.lt(t))
                .filter(UpToDay { day: until_day(t) });
        }
        q
    }
}

/// Takes `seqs.len()` consecutive replay slots of the org (`replay_pacing`, whose row lock also
/// orders concurrent replays of one org) and puts each row back to the relay, due at its slot.
/// A row whose status left `statuses` since it was read (a retry finished it meanwhile) is
/// left alone: PostgreSQL re-checks the condition on the row's latest version. Returns how many
/// rows were put back.
async fn schedule_replays(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
    seqs: &[i64],
    statuses: &[DeliveryStatus],
    rate_per_second: u32,
) -> Result<usize, StoreError> {
    use diesel::sql_types::{Double, Int8, Text};
    let spacing = 1.0 / f64::from(rate_per_second.max(1));
    let n = seqs.len() as f64;
    let updated = diesel::sql_query(format!(
        "WITH slot AS (
             INSERT INTO replay_pacing AS p (org_id, next_at)
             VALUES ($1, clock_timestamp() + make_interval(secs => $3 * $4))
             ON CONFLICT (org_id) DO UPDATE
                 SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $3 * $4)
             RETURNING next_at - make_interval(secs => $3 * $4) AS first)
         UPDATE outbox o SET {}
         FROM slot, unnest($2::int8[]) WITH ORDINALITY AS v(seq, i)
         WHERE o.seq = v.seq AND o.org_id = $1 AND o.status = ANY($5::text[])",
        super::state::replay("slot.first + make_interval(secs => $3 * (v.i - 1))")
    ))
    .bind::<diesel::sql_types::Uuid, _>(org_id)
    .bind::<Array<Int8>, _>(seqs)
    .bind::<Double, _>(spacing)
    .bind::<Double, _>(n)
    .bind::<Array<Text>, _>(statuses)
    .execute(conn)
    .await?;
    crate::deliveries::state::wake_relay(conn).await?;
    Ok(updated)
}
