//! The delivery log: one delivery per event (the outbox row), its status and its attempts.

use diesel::NullableExpressionMethods;
use diesel::sql_types::Array;
use diesel::{
    ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable, SelectableHelper,
};
use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::{endpoint_health, outbox, webhooks};
use crate::secrets::OpenError;
use crate::webhooks::{WebhookForDelivery, WebhookRow};
use crate::{Store, StoreError};
use qualifier_domain::delivery::AttemptEntry;
use qualifier_domain::health::EndpointState;
use qualifier_domain::{DeliveryStatus, EventType};

/// A delivery with its attempt log: what one delivery's page shows.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbox)]
struct DeliveryRow {
    #[diesel(embed)]
    summary: SummaryRow,
    attempt_log: Value,
    is_test: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: EventType,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub created_at: OffsetDateTime,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub updated_at: OffsetDateTime,
    /// The event's lead was erased: its payload is the reduced envelope (docs/api.md, "Erasing
    /// a lead"). Present only then.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub erased: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub delivery: Delivery,
    pub attempt_log: Vec<AttemptEntry>,
}

/// A delivery as the lists show it: what [`DeliveryRow`] holds but its attempt log, which a
/// list never shows and so never reads.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbox)]
struct SummaryRow {
    delivery_id: Uuid,
    event_id: Uuid,
    event_type: EventType,
    status: DeliveryStatus,
    attempts: i32,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    erased_at: Option<OffsetDateTime>,
}

impl SummaryRow {
    fn summary(&self) -> Delivery {
        Delivery {
            id: self.delivery_id,
            event_id: self.event_id,
            event_type: self.event_type,
            status: self.status,
            attempts: self.attempts,
            last_status_code: self.last_status_code,
            last_error: self.last_error.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            erased: self.erased_at.is_some(),
        }
    }
}

impl DeliveryRow {
    fn summary(&self) -> Delivery {
        self.summary.summary()
    }
}

/// The state an attempt starts from (see [`Store::delivery_contexts`]).
#[derive(Clone)]
pub struct DeliveryContext {
    pub status: DeliveryStatus,
    /// `Some(Err(_))` when the webhook exists but its sealed secret cannot be opened (the
    /// `QUALIFIER_SECRET_KEY` changed): the attempt fails like any other and can be replayed
    /// after the secret is rotated, instead of requeueing forever.
    pub webhook: Option<Result<WebhookForDelivery, OpenError>>,
    /// Its endpoint's health as of the read.
    pub health: EndpointGlance,
}

/// What an attempt needs to know of its endpoint's health: whether to send at all, and whether
/// a success has failures to reset (a clean endpoint's success writes nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointGlance {
    pub state: EndpointState,
    pub consecutive_failures: u32,
}

impl Default for EndpointGlance {
    fn default() -> Self {
        EndpointGlance {
            state: EndpointState::Healthy,
            consecutive_failures: 0,
        }
    }
}

/// A delivery as its message names it: its id, and its outbox row's sequence number when the
/// message carries it (`x-qualifier-seq`; not on an earlier version's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeliveryRef {
    pub id: Uuid,
    pub seq: Option<i64>,
}

/// The outbox partitions a statement over rows with these sequence numbers may touch, as the
/// partition key's days (`seq >> 32`, migration 28): from the lowest day to the highest, or all
/// of them if one row's number is unknown. A statement that says
/// `(seq >> 32) BETWEEN lo AND hi` beside its `delivery_id` reads only those partitions (pruned
/// when it starts, even as a generic plan); by `delivery_id` alone it would probe the index of
/// every partition, one per day kept (docs/performance.md, "History at scale").
pub fn day_bounds(seqs: impl IntoIterator<Item = Option<i64>>) -> (i64, i64) {
    let mut bounds: Option<(i64, i64)> = None;
    for seq in seqs {
        let Some(day) = seq.map(|s| s >> 32) else {
            return (i64::MIN, i64::MAX);
        };
        bounds = Some(bounds.map_or((day, day), |(lo, hi)| (lo.min(day), hi.max(day))));
    }
    bounds.unwrap_or((i64::MIN, i64::MAX))
}

/// The last partition day (`seq >> 32`) that can hold a row created before `until`, so that a
/// list or a count that ends in the past leaves the newer partitions out when it is planned;
/// the sequence bound beside it ([`SeqBound`]) is a value found while the statement runs,
/// which prunes nothing, so a small org's list that ends a month ago otherwise probed the
/// index of every day kept since.
///
/// A row's sequence number never carries a later day than its creation time: housekeeping
/// moves the sequence to a day's numbers only once that day has begun
/// (`qualifier_outbox_roll`, migration 28), and a row created before that keeps the previous
/// day's. One day more is allowed for an insert whose `created_at` was read just before
/// midnight and its number drawn just after the move.
fn until_day(until: OffsetDateTime) -> i64 {
    until.unix_timestamp().div_euclid(86_400) + 1
}

/// `(outbox.seq >> 32) <= day`, a filter, from [`until_day`]. One-sided on purpose: the
/// partition key has no statistics, and PostgreSQL takes a two-sided range of it
/// (`BETWEEN`) to keep a two-hundredth of the rows where a one-sided bound keeps a third.
/// Written as `BETWEEN` with no lower end, a busy org's list until a month ago then looked
/// cheaper sorted than walked in order, and read the org's whole day (6,139 rows for a page
/// of 51, in the bench's plan check).
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
struct UpToDay {
    day: i64,
}

/// The trait impls that make a type with its own `QueryFragment` a boolean condition that
/// diesel accepts in a `filter` on any table (the fragment names `outbox` itself).
macro_rules! boolean_filter {
    ($t:ty) => {
        impl diesel::Expression for $t {
            type SqlType = diesel::sql_types::Bool;
        }
        impl<QS> diesel::AppearsOnTable<QS> for $t {}
        impl<QS> diesel::SelectableExpression<QS> for $t {}
        impl diesel::expression::ValidGrouping<()> for $t {
            type IsAggregate = diesel::expression::is_aggregate::Never;
        }
    };
}

/// `(outbox.seq >> 32) BETWEEN lo AND hi`, a filter, from [`day_bounds`]' pair. Fixed text
/// (not `diesel::dsl::sql`, which marks its statement unsafe to cache), so the worker's context
/// read stays prepared once per connection.
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
struct InDays {
    lo: i64,
    hi: i64,
}

fn in_days((lo, hi): (i64, i64)) -> InDays {
    InDays { lo, hi }
}

boolean_filter!(InDays);
boolean_filter!(UpToDay);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for InDays {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.push_sql("(outbox.seq >> 32) BETWEEN ");
        out.push_bind_param::<diesel::sql_types::BigInt, _>(&self.lo)?;
        out.push_sql(" AND ");
        out.push_bind_param::<diesel::sql_types::BigInt, _>(&self.hi)
    }
}

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for UpToDay {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.push_sql("(outbox.seq >> 32) <= ");
        out.push_bind_param::<diesel::sql_types::BigInt, _>(&self.day)
    }
}

/// One attempt's outcome to record with [`Store::record_attempts`]: its log entry and the
/// status it leads to.
#[derive(Debug, Clone)]
pub struct AttemptWrite {
    pub delivery: DeliveryRef,
    pub entry: AttemptEntry,
    pub status: DeliveryStatus,
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
            Uuid,
            DeliveryStatus,
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
                outbox::delivery_id,
                outbox::status,
                Option::<WebhookRow>::as_select(),
                endpoint_health::state.nullable(),
                endpoint_health::consecutive_failures.nullable(),
            ))
            .load(&mut conn)
            .await?;
        drop(conn);
        let by_id: std::collections::HashMap<Uuid, DeliveryContext> = rows
            .into_iter()
            .map(|(id, status, hook, state, failures)| {
                let webhook = hook.map(|r| self.open_for_delivery(r));
                let health = EndpointGlance {
                    state: state.unwrap_or(EndpointState::Healthy),
                    consecutive_failures: failures.unwrap_or(0).max(0) as u32,
                };
                (
                    id,
                    DeliveryContext {
                        status,
                        webhook,
                        health,
                    },
                )
            })
            .collect();
        // Cloned, not moved: an id twice in one batch (a redelivery racing its original) gets
        // its row both times.
        Ok(delivery_ids
            .iter()
            .map(|id| by_id.get(id).cloned())
            .collect())
    }

    /// Records attempts and the statuses they lead to, many in one statement and one commit: the
    /// worker's group commit. Every outcome in the batch is durable when this returns Ok.
    pub async fn record_attempts(&self, writes: &[AttemptWrite]) -> Result<(), StoreError> {
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
        crate::prepared::prepared::<Array<diesel::sql_types::Uuid>, _>(
            "WITH p(ids, statuses, codes, errs, entries) AS (VALUES (",
            ")) UPDATE outbox o SET status = v.status, attempts = o.attempts + 1,
                    failed_attempts = o.failed_attempts + (v.err IS NOT NULL)::int,
                    last_status_code = v.code, last_error = v.err,
                    attempt_log = o.attempt_log || jsonb_build_array(v.entry),
                    updated_at = clock_timestamp()
             FROM p, unnest(p.ids, p.statuses, p.codes, p.errs, p.entries)
                  AS v(id, status, code, err, entry)
             WHERE o.delivery_id = v.id AND (o.seq >> 32) BETWEEN $6 AND $7",
            &ids,
        )
        .bind::<Array<Text>, _>(&statuses)
        .bind::<Array<Nullable<diesel::sql_types::Int4>>, _>(&codes)
        .bind::<Array<Nullable<Text>>, _>(&errors)
        .bind::<Array<Jsonb>, _>(&entries)
        .bind::<diesel::sql_types::BigInt, _>(lo)
        .bind::<diesel::sql_types::BigInt, _>(hi)
        .execute(&mut conn)
        .await?;
        Ok(())
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
    /// `outbox_org_lead`), merged here. One statement with `delivery_id = $2 OR event_id = $2
    /// OR lead_id = $2 … ORDER BY seq DESC LIMIT n` was planned over the partitioned outbox as
    /// a walk of the org's rows newest first until a match, which for an id from a month ago
    /// read every row of the org in between (179,338 rows for one answer, as a generic plan).
    pub async fn find_deliveries(
        &self,
        org_id: Uuid,
        id: Uuid,
        limit: i64,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut conn = self.conn().await?;
        // Each lookup is a probe of its index in every partition, whichever the org: the
        // same plan for all, kept rather than made again three times per search.
        let mut rows = conn
            .transaction::<_, StoreError, _>(async move |conn| {
                same_plan_for_every_org(conn).await?;
                let mut rows: Vec<(i64, SummaryRow)> = outbox::table
                    .filter(outbox::org_id.eq(org_id))
                    .filter(outbox::delivery_id.eq(id))
                    .select((outbox::seq, SummaryRow::as_select()))
                    .load(conn)
                    .await?;
                rows.extend(
                    outbox::table
                        .filter(outbox::org_id.eq(org_id))
                        .filter(outbox::event_id.eq(id))
                        .select((outbox::seq, SummaryRow::as_select()))
                        .load::<(i64, SummaryRow)>(conn)
                        .await?,
                );
                rows.extend(
                    outbox::table
                        .filter(outbox::org_id.eq(org_id))
                        .filter(outbox::lead_id.eq(id))
                        .order(outbox::seq.desc())
                        .limit(limit)
                        .select((outbox::seq, SummaryRow::as_select()))
                        .load::<(i64, SummaryRow)>(conn)
                        .await?,
                );
                Ok(rows)
            })
            .await?;
        // An id that is both (a UUID is random; only a test makes it so) is listed once.
        rows.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        rows.dedup_by_key(|(seq, _)| *seq);
        rows.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(rows.iter().map(|(_, r)| r.summary()).collect())
    }

    pub async fn get_delivery(
        &self,
        org_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<DeliveryDetail, StoreError> {
        let mut conn = self.conn().await?;
        let row: DeliveryRow = outbox::table
            .filter(outbox::org_id.eq(org_id))
            .filter(outbox::delivery_id.eq(delivery_id))
            .select(DeliveryRow::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or(StoreError::NotFound("Delivery not found"))?;
        let id = row.summary.delivery_id.to_string();
        // Each entry keeps only what differs per attempt; the headers it was sent with are
        // rebuilt from the delivery itself.
        let request = qualifier_domain::delivery::Request {
            event_type: row.summary.event_type.as_str(),
            delivery_id: &id,
            test: row.is_test,
            probe: false,
        };
        Ok(DeliveryDetail {
            delivery: row.summary(),
            // Entries are written through the same type; one that does not read back (hand-edited
            // rows) is left out rather than failing the whole page.
            attempt_log: row
                .attempt_log
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(AttemptEntry::from_stored)
                .map(|e| e.for_display(&request))
                .collect(),
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
            .first(&mut conn)
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
        conn.transaction::<(), StoreError, _>(async move |conn| {
            let (seq, current, erased): (i64, DeliveryStatus, Option<OffsetDateTime>) =
                outbox::table
                    .filter(outbox::org_id.eq(org_id))
                    .filter(outbox::delivery_id.eq(delivery_id))
                    .select((outbox::seq, outbox::status, outbox::erased_at))
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?
                    .ok_or(StoreError::NotFound("Delivery not found"))?;
            if erased.is_some() {
                return Err(StoreError::Conflict("Event erased".into()));
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
    /// already scheduled. Returns how many matched; a dry run changes nothing.
    pub async fn replay_matching(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        dry_run: bool,
        rate_per_second: u32,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let f = f.clone();
        conn.transaction::<usize, StoreError, _>(async move |conn| {
            // Unlike the list, a replay with no status matches nothing rather than everything.
            if f.statuses.is_empty() {
                return Ok(0);
            }
            // Erased events are never sent again: not counted, not scheduled.
            let matching = || f.matching(org_id).filter(outbox::erased_at.is_null());
            // A dry run is counted from the hourly totals where they vouch for the range, and
            // where the rows are for the rest, reading none of them out.
            if dry_run {
                index_only(conn).await?;
                return f.count(conn, org_id).await;
            }
            let seqs: Vec<i64> = matching()
                .order(outbox::seq.asc())
                .select(outbox::seq)
                .load(conn)
                .await?;
            if seqs.is_empty() {
                return Ok(0);
            }
            schedule_replays(conn, org_id, &seqs, &f.statuses, rate_per_second).await
        })
        .await
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
    fn matching(&self, org_id: Uuid) -> outbox::BoxedQuery<'static, diesel::pg::Pg> {
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

impl DeliveryFilter {
    /// The org's deliveries that match and were not erased, counted (a dry-run bulk replay).
    ///
    /// A filter of statuses and times only is counted mostly from `delivery_hours`: the whole
    /// hours of its range from `delivery_hour_cover.covered_from` on (at most 24 rows a day
    /// for the org, plus the changes not folded yet) and, through the index, only the rows
    /// of the partial hours at its two ends and of the hours before the cover
    /// ([`HourSplit`]). So a month of 50,000 dead deliveries is about 720 rows read, not
    /// 50,000 index entries (docs/performance.md, "History at scale"). Any other filter
    /// (types, a lead) is counted through the index alone.
    async fn count(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        org_id: Uuid,
    ) -> Result<usize, StoreError> {
        use diesel::sql_types::{Bool, Nullable};
        let by_hours = self.event_types.is_empty()
            && self.lead_id.is_none()
            && self.statuses.iter().all(|s| {
                matches!(
                    s,
                    DeliveryStatus::Dead | DeliveryStatus::Failed | DeliveryStatus::Skipped
                )
            });
        if !by_hours {
            return self.count_rows(conn, org_id).await;
        }
        // The cover and the whole hours' sum in one statement: the hours from the later of
        // the cover and `since` (rounded up), to `until` (rounded down). The split below takes
        // the same hours; with none, the sum is 0 and the rows answer for the whole range.
        let has = |s| self.statuses.contains(&s);
        // The cover is read by uncorrelated subqueries (run once): as a correlated one under a
        // one-row table, PostgreSQL estimated the statement at the cost of thousands of runs
        // and compiled it (JIT), 90 ms for a statement that reads 720 rows.
        let whole: Totals = diesel::sql_query(
            "SELECT EXISTS (SELECT 1 FROM delivery_hour_cover) AS known,
                    (SELECT covered_from FROM delivery_hour_cover
                     WHERE isfinite(covered_from)) AS covered_from,
                    coalesce(sum(CASE WHEN $2 THEN dead ELSE 0 END
                                 + CASE WHEN $3 THEN failed ELSE 0 END
                                 + CASE WHEN $4 THEN skipped - erased_skipped ELSE 0 END),
                             0)::int8 AS n
             FROM (SELECT hour, dead, failed, skipped, erased_skipped
                   FROM delivery_hours WHERE org_id = $1
                   UNION ALL
                   SELECT hour, dead, failed, skipped, erased_skipped
                   FROM delivery_hour_changes WHERE org_id = $1) t
             WHERE hour >= (SELECT covered_from FROM delivery_hour_cover)
               AND ($5::timestamptz IS NULL OR hour >= $5)
               AND ($6::timestamptz IS NULL OR hour < $6)",
        )
        .bind::<diesel::sql_types::Uuid, _>(org_id)
        .bind::<Bool, _>(has(DeliveryStatus::Dead))
        .bind::<Bool, _>(has(DeliveryStatus::Failed))
        .bind::<Bool, _>(has(DeliveryStatus::Skipped))
        .bind::<Nullable<diesel::sql_types::Timestamptz>, _>(self.since.map(hour_ceil))
        .bind::<Nullable<diesel::sql_types::Timestamptz>, _>(self.until.map(hour_floor))
        .get_result(conn)
        .await?;
        if !whole.known {
            return self.count_rows(conn, org_id).await;
        }
        let Some(split) = HourSplit::of(self.since, self.until, whole.covered_from) else {
            return self.count_rows(conn, org_id).await;
        };
        let mut n = usize::try_from(whole.n).unwrap_or(0);
        for (since, until) in [split.head, split.tail.map(|(b, u)| (Some(b), u))]
            .into_iter()
            .flatten()
        {
            let part = DeliveryFilter {
                since,
                until: Some(until),
                ..self.clone()
            };
            n += part.count_rows(conn, org_id).await?;
        }
        Ok(n)
    }

    /// The same count through `outbox_org_status` alone: an index entry per delivery counted.
    async fn count_rows(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        org_id: Uuid,
    ) -> Result<usize, StoreError> {
        let n: i64 = self
            .matching(org_id)
            .filter(outbox::erased_at.is_null())
            .count()
            .get_result(conn)
            .await?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

#[derive(diesel::QueryableByName)]
struct Totals {
    /// Whether the cover row exists (migration 29 makes it).
    #[diesel(sql_type = diesel::sql_types::Bool)]
    known: bool,
    /// `None`: covered from the start (`-infinity`).
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    covered_from: Option<OffsetDateTime>,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// A count's time range `[since, until)` cut where the hourly totals can answer it: the whole
/// hours from the cover on (`hours`, either end open), and the rest, counted row by row
/// (`head`: before the first such hour, from `since` or from the start; `tail`: the partial
/// hour before `until`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HourSplit {
    /// The statement that sums them computes the same range in SQL, with the cover it reads
    /// (`DeliveryFilter::count`); `tests/api/chart.rs` holds the sum and the split together
    /// to the outbox's own count.
    #[cfg_attr(not(test), allow(dead_code))]
    hours: (Option<OffsetDateTime>, Option<OffsetDateTime>),
    head: Option<(Option<OffsetDateTime>, OffsetDateTime)>,
    tail: Option<(OffsetDateTime, OffsetDateTime)>,
}

impl HourSplit {
    /// `covered_from`: `None` when every hour is covered. `None` back when the range holds no
    /// whole covered hour: the index then counts it all.
    fn of(
        since: Option<OffsetDateTime>,
        until: Option<OffsetDateTime>,
        covered_from: Option<OffsetDateTime>,
    ) -> Option<HourSplit> {
        let first = match (since.map(hour_ceil), covered_from) {
            (Some(a), Some(c)) => Some(a.max(c)),
            (a, c) => a.or(c),
        };
        let end = until.map(hour_floor);
        if let (Some(a), Some(b)) = (first, end)
            && a >= b
        {
            return None;
        }
        Some(HourSplit {
            hours: (first, end),
            head: first
                .filter(|a| since.is_none_or(|s| s < *a))
                .map(|a| (since, a)),
            tail: until.zip(end).filter(|(u, b)| b < u).map(|(u, b)| (b, u)),
        })
    }
}

fn hour_floor(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(time::UtcOffset::UTC);
    t.replace_time(time::Time::from_hms(t.hour(), 0, 0).unwrap_or(time::Time::MIDNIGHT))
}

fn hour_ceil(t: OffsetDateTime) -> OffsetDateTime {
    let f = hour_floor(t);
    if f == t { f } else { f + time::Duration::HOUR }
}

/// For the rest of the transaction, each statement keeps the plan it was first given, whatever
/// the session's `plan_cache_mode` (lead-api plans every call again,
/// `QUALIFIER_PLAN_CACHE_MODE`). Only for statements whose best plan is the same for every org
/// and every value: a probe of a unique index, or a walk of an index in the order asked for.
/// Planning one again over a month's partitions costs up to a millisecond, most of a small
/// org's call (docs/performance.md, "Planning"); a generic plan where the org's own
/// statistics matter (a status or a type filter) can read a busy org's rows to answer a quiet
/// one's, so those keep their custom plans.
pub(crate) async fn same_plan_for_every_org(
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel::result::Error> {
    set_local(conn, "SET LOCAL plan_cache_mode = force_generic_plan").await
}

/// For the rest of the transaction, no bitmap heap scans: a count over `outbox_org_status`
/// (a dry run, the chart) finds every column it needs in the index, but its entries are
/// scattered one per table page (one delivery in fifty is dead), and PostgreSQL can judge a
/// bitmap scan cheaper, which then reads a table page per entry counted, where the index alone
/// counts 50,000 entries in about 50 ms (docs/performance.md, "History at scale").
pub(crate) async fn index_only(
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel::result::Error> {
    set_local(conn, "SET LOCAL enable_bitmapscan = off").await
}

/// For the rest of the transaction, no sort: a page comes out of an index walked in its
/// order, or not at all. A list's order is one that only the filter's own index gives
/// ([`Store::list_deliveries_at`]), but PostgreSQL may still judge reading every match and
/// sorting them cheaper than walking that index, as it cannot tell that the matches it would
/// read first are the newest. On the bench's history a busy org's list since a day was
/// planned as a bitmap scan of its day, 7,704 rows sorted for a page of 51.
///
/// JIT goes off with them: a plan that keeps a sort anyway (one whose partitions were all
/// left out, which sorts nothing) carries the sort's penalty in its cost, far above
/// `jit_above_cost`, and compiling it took 45-90 ms for an empty answer.
///
/// With `keep_plan`, the statement also keeps the plan it was first given
/// ([`same_plan_for_every_org`]): when only one index gives a list's order, walking it is the
/// only plan left, whatever the org, so planning it again over the month's partitions on each
/// call (most of a small org's list) buys nothing. One round trip for the settings.
async fn in_index_order(
    conn: &mut diesel_async::AsyncPgConnection,
    keep_plan: bool,
) -> Result<(), diesel::result::Error> {
    conn.batch_execute(if keep_plan {
        "SET LOCAL enable_sort = off; SET LOCAL enable_incremental_sort = off; SET LOCAL jit = off; \
         SET LOCAL plan_cache_mode = force_generic_plan"
    } else {
        "SET LOCAL enable_sort = off; SET LOCAL enable_incremental_sort = off; SET LOCAL jit = off"
    })
    .await
}

/// Runs one `SET LOCAL`: the setting ends with the transaction, so a pooled session goes back
/// to its own for the next caller whatever happens.
async fn set_local(
    conn: &mut diesel_async::AsyncPgConnection,
    statement: &'static str,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query(statement).execute(conn).await.map(|_| ())
}

/// The range of sequence numbers a time bound of a list or a count stands for: `outbox.seq >=`
/// (`since`) or `<` (`until`) the first sequence number created at or after the time, through
/// `outbox_created_at`. A row's sequence and creation time can disagree by up to one
/// transaction's length, so the bound is taken 5 minutes wide and the exact condition on
/// `created_at` is kept beside it.
///
/// Written as an expression of fixed text rather than `diesel::dsl::sql`, which marks its
/// statement unsafe to cache: a list or a count with a time bound is then prepared once per
/// connection like the others, not parsed and planned on every call (over the outbox's
/// partitions, twice: the outer scan and this lookup).
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
struct SeqBound {
    at: OffsetDateTime,
    since: bool,
}

boolean_filter!(SeqBound);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for SeqBound {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.push_sql(if self.since {
            "outbox.seq >= coalesce((SELECT f.seq FROM outbox f WHERE f.created_at >= "
        } else {
            "outbox.seq < coalesce((SELECT f.seq FROM outbox f WHERE f.created_at >= "
        });
        out.push_bind_param::<diesel::sql_types::Timestamptz, _>(&self.at)?;
        out.push_sql(if self.since {
            " - interval '5 minutes' ORDER BY f.created_at LIMIT 1), 9223372036854775807)"
        } else {
            " + interval '5 minutes' ORDER BY f.created_at LIMIT 1), 9223372036854775807)"
        });
        Ok(())
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
    let updated = diesel::sql_query(
        "WITH slot AS (
             INSERT INTO replay_pacing AS p (org_id, next_at)
             VALUES ($1, clock_timestamp() + make_interval(secs => $3 * $4))
             ON CONFLICT (org_id) DO UPDATE
                 SET next_at = GREATEST(p.next_at, clock_timestamp()) + make_interval(secs => $3 * $4)
             RETURNING next_at - make_interval(secs => $3 * $4) AS first)
         UPDATE outbox o
         SET status = 'pending', published_at = NULL, held_at = NULL, resume_attempt = NULL,
             replay_at = slot.first + make_interval(secs => $3 * (v.i - 1)),
             updated_at = clock_timestamp()
         FROM slot, unnest($2::int8[]) WITH ORDINALITY AS v(seq, i)
         WHERE o.seq = v.seq AND o.org_id = $1 AND o.status = ANY($5::text[])",
    )
    .bind::<diesel::sql_types::Uuid, _>(org_id)
    .bind::<Array<Int8>, _>(seqs)
    .bind::<Double, _>(spacing)
    .bind::<Double, _>(n)
    .bind::<Array<Text>, _>(statuses)
    .execute(conn)
    .await?;
    diesel::sql_query("SELECT pg_notify('qualifier_outbox', '')")
        .execute(conn)
        .await?;
    Ok(updated)
}

/// One batch of [`Store::compact_attempt_logs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompactedBatch {
    /// The highest sequence the batch looked at (where the next one starts); `None` when
    /// there was nothing after `after`.
    pub through_seq: Option<i64>,
    pub rows_read: usize,
    pub rows_rewritten: usize,
}

impl Store {
    /// Rewrites the attempt logs of up to `batch` rows after sequence `after` into the form
    /// the worker writes now: each entry's `request_headers` replaced by its two signatures,
    /// shortened (`AttemptEntry::signatures`), and, in compact storage
    /// ([`Store::compress_payloads`]), every entry in the compact form; nothing else changes. One short
    /// transaction per batch, its rows locked while it runs (an attempt recorded meanwhile
    /// waits, rather than being overwritten). Idempotent: a row already compact is read and
    /// left alone, so a run cut short is resumed from the last `through_seq` it printed, or
    /// from the start (`qualifierctl compact-attempt-logs`).
    pub async fn compact_attempt_logs(
        &self,
        after: i64,
        batch: i64,
    ) -> Result<CompactedBatch, StoreError> {
        use diesel::sql_types::{Int8, Jsonb};
        let compact = self.compress_payloads;
        let mut conn = self.conn().await?;
        conn.transaction::<CompactedBatch, StoreError, _>(async move |conn| {
            let rows: Vec<(i64, Value)> = outbox::table
                .filter(outbox::seq.gt(after))
                .order(outbox::seq.asc())
                .limit(batch)
                .select((outbox::seq, outbox::attempt_log))
                .for_update()
                .load(conn)
                .await?;
            let through_seq = rows.last().map(|r| r.0);
            let rows_read = rows.len();
            let (seqs, logs): (Vec<i64>, Vec<Value>) = rows
                .into_iter()
                .filter_map(|(seq, log)| compact_log(log, compact).map(|l| (seq, l)))
                .unzip();
            if !seqs.is_empty() {
                diesel::sql_query(
                    "UPDATE outbox o SET attempt_log = v.log
                     FROM unnest($1::int8[], $2::jsonb[]) AS v(seq, log) WHERE o.seq = v.seq",
                )
                .bind::<Array<Int8>, _>(&seqs)
                .bind::<Array<Jsonb>, _>(&logs)
                .execute(conn)
                .await?;
            }
            Ok(CompactedBatch {
                through_seq,
                rows_read,
                rows_rewritten: seqs.len(),
            })
        })
        .await
    }
}

/// A log with its entries' headers replaced by their signatures and, with `compact`, every
/// entry in the compact form ([`AttemptEntry::stored`]); `None` when nothing would change. An
/// entry neither form reads is left as it is.
fn compact_log(mut log: Value, compact: bool) -> Option<Value> {
    let mut changed = false;
    for e in log.as_array_mut().into_iter().flatten() {
        if compact {
            if e.get("n").is_some() {
                continue;
            }
            let Some(mut entry) = AttemptEntry::from_stored(e) else {
                continue;
            };
            if !entry.request_headers.is_empty() {
                entry.signatures = AttemptEntry::stored_signatures(&entry.request_headers);
                entry.request_headers.clear();
            }
            *e = entry.stored(true);
            changed = true;
            continue;
        }
        let Some(obj) = e.as_object_mut() else {
            continue;
        };
        let Some(headers) = obj.remove("request_headers") else {
            continue;
        };
        changed = true;
        let headers: Vec<(String, String)> = serde_json::from_value(headers).unwrap_or_default();
        let signatures = AttemptEntry::stored_signatures(&headers);
        if !signatures.is_empty() {
            obj.insert("signatures".into(), serde_json::json!(signatures));
        }
    }
    changed.then_some(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::datetime;

    #[test]
    fn a_count_takes_whole_covered_hours_from_the_totals_and_the_rest_from_the_rows() {
        let t = |s: &str| {
            Some(OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap())
        };
        // Covered from the start, the last 30 days: the partial first hour by rows, the
        // rest (to now and beyond) from the totals.
        let split = HourSplit::of(t("2026-10-27T17:25:10Z"), None, None).unwrap();
        assert_eq!(split.hours, (t("2026-10-27T18:00:00Z"), None));
        assert_eq!(
            split.head,
            Some((t("2026-10-27T17:25:10Z"), datetime!(2026-10-27 18:00 UTC)))
        );
        assert_eq!(split.tail, None);
        // Covered from a later hour (a deployment upgraded with history): rows up to it.
        let split =
            HourSplit::of(t("2026-10-27T17:25:10Z"), None, t("2026-11-20T09:00:00Z")).unwrap();
        assert_eq!(split.hours.0, t("2026-11-20T09:00:00Z"));
        assert_eq!(split.head.unwrap().1, datetime!(2026-11-20 09:00 UTC));
        // No lower bound at all: everything before the cover by rows.
        let split = HourSplit::of(None, None, t("2026-11-20T09:00:00Z")).unwrap();
        assert_eq!(split.head, Some((None, datetime!(2026-11-20 09:00 UTC))));
        // Both bounds on the hour, covered: no row is counted one by one.
        let split =
            HourSplit::of(t("2026-11-20T09:00:00Z"), t("2026-11-21T09:00:00Z"), None).unwrap();
        assert_eq!((split.head, split.tail), (None, None));
        assert_eq!(
            split.hours,
            (t("2026-11-20T09:00:00Z"), t("2026-11-21T09:00:00Z"))
        );
        // An upper bound inside an hour: that hour's part by rows; another offset is the
        // same instant.
        let split = HourSplit::of(None, t("2026-11-21T11:30:00+02:00"), None).unwrap();
        assert_eq!(split.hours, (None, t("2026-11-21T09:00:00Z")));
        assert_eq!(
            split.tail,
            Some((
                datetime!(2026-11-21 09:00 UTC),
                datetime!(2026-11-21 09:30 UTC)
            ))
        );
        // Less than a whole covered hour: all by rows.
        assert_eq!(
            HourSplit::of(t("2026-11-21T09:10:00Z"), t("2026-11-21T09:50:00Z"), None),
            None
        );
        assert_eq!(
            HourSplit::of(None, t("2026-11-21T09:50:00Z"), t("2026-11-21T09:00:00Z")),
            None
        );
    }

    #[test]
    fn bounds_span_the_days_of_the_known_rows_and_open_up_for_one_unknown() {
        let day = |d: i64, n: i64| Some((d << 32) + n);
        assert_eq!(
            day_bounds([day(20783, 9), day(20781, 1), day(20783, 2)]),
            (20781, 20783)
        );
        assert_eq!(day_bounds([day(20783, 0)]), (20783, 20783));
        assert_eq!(
            day_bounds([Some(5)]),
            (0, 0),
            "the legacy partition's rows are day 0"
        );
        assert_eq!(day_bounds([day(20783, 1), None]), (i64::MIN, i64::MAX));
        assert_eq!(day_bounds([]), (i64::MIN, i64::MAX));
    }

    #[test]
    fn a_compacted_log_keeps_every_field_but_the_headers_and_shows_the_same() {
        let hex = "c".repeat(64);
        let old = json!([
            {"attempt": 1, "started_at": "2026-11-21T10:15:02.481Z", "duration_ms": 3,
             "status_code": 500, "error": "HTTP 500", "response_body": "no",
             "request_headers": [["Content-Type", "application/json"],
                                 ["X-Qualifier-Event", "lead.created"],
                                 ["X-Qualifier-Signature", format!("sha256={hex}")],
                                 ["X-Qualifier-Delivery", "d-1"],
                                 ["X-Qualifier-Timestamp", "2026-11-21T10:15:02.481Z"],
                                 ["webhook-id", "d-1"],
                                 ["webhook-timestamp", "1795256102"],
                                 ["webhook-signature", "v1,Zm9vYmFyYmF6cXV4"]]},
            {"attempt": 2, "started_at": "2026-11-21T10:15:03.481Z", "duration_ms": 0,
             "status_code": null, "error": "refused", "error_kind": "refused_address"}
        ]);
        let new = compact_log(old.clone(), false).unwrap();
        assert_eq!(
            new[0]["signatures"],
            json!(["sha256=cccccccc…", "v1,Zm9vYmFy…"])
        );
        assert!(new[0].get("request_headers").is_none());
        assert_eq!(new[0]["response_body"], "no");
        assert_eq!(new[1], old[1], "an entry with no request is left as it was");
        assert!(new.to_string().len() < old.to_string().len() / 2);
        // Shown the same before and after.
        let request = qualifier_domain::delivery::Request {
            event_type: "lead.created",
            delivery_id: "d-1",
            test: false,
            probe: false,
        };
        let show = |log: &Value| -> Vec<AttemptEntry> {
            log.as_array()
                .unwrap()
                .iter()
                .map(|e| AttemptEntry::from_stored(e).unwrap().for_display(&request))
                .collect()
        };
        assert_eq!(show(&new), show(&old));
        assert_eq!(
            compact_log(new.clone(), false),
            None,
            "a compact log is left alone"
        );

        // Into the compact form, from the old or from the full one: shown the same again, at
        // a fraction of the size, and left alone on a second pass.
        let short = compact_log(old.clone(), true).unwrap();
        assert_eq!(compact_log(new.clone(), true), Some(short.clone()));
        assert_eq!(short[0]["n"], 1);
        assert_eq!(short[0]["g"], json!(["sha256=cccccccc…", "v1,Zm9vYmFy…"]));
        assert_eq!(show(&short), show(&old));
        assert!(short.to_string().len() + 60 < new.to_string().len());
        assert_eq!(compact_log(short, true), None);
        // An entry neither form reads stays as it was.
        assert_eq!(compact_log(json!([{"x": 1}]), true), None);
    }
}
