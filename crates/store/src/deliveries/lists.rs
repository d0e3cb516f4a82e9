//! The lists, the console's search, one delivery with its log, and replays.

use crate::answer::ReadToEnd;
use diesel::{
    BoolExpressionMethods, ExpressionMethods, JoinOnDsl, OptionalExtension, QueryDsl,
    SelectableHelper,
};
use diesel_async::RunQueryDsl;
use uuid::Uuid;

use super::filter::{DeliveryFilter, StatusIs, events_narrowed, seq_at};
use super::{DELIVERED_COLUMNS, Delivered, DeliveredDetail, Delivery, DeliveryDetail};
use crate::StoreError;
use crate::partitions::{DeliveryIs, SeqBound, UpToDay, until_day};
use crate::planner::in_index_order;
use crate::schema::{deliveries, outbox};
use qualifier_domain::delivery::AttemptEntry;

/// The lists, the console's search and replays.
impl crate::facets::Deliveries<'_> {
    /// One page of an org's deliveries, newest first, keyset-paginated on the outbox sequence
    /// (`outbox_org_seq`, or `outbox_org_lead` with a lead): rows committed meanwhile are newer
    /// than any cursor, so a walk visits every older row exactly once. Returns the page and the
    /// sequence to continue below, `None` on the last page.
    /// [`Deliveries::list_deliveries_at`] without the positions.
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
        // A page is one walk of one index in sequence order, newest first, that stops at the
        // page's end or at a lower bound (docs/performance-log.md, "History at scale"):
        // - the events' own (`outbox_org_seq`, `outbox_org_lead` with a lead, `outbox_org_type`
        //   with one type), each event's delivery found by its key, when the filter asks for no
        //   status, for `succeeded` (most deliveries are), or for a lead (its rows are the
        //   fewest whatever else the filter asks);
        // - otherwise the deliveries' own by state (`deliveries_org_state`), each delivery's
        //   event found by its key: the states asked for are few among the org's deliveries.
        let mut rows = if f.walks_states() {
            self.page_by_state(org_id, f, before_seq, limit).await?
        } else {
            self.page_by_event(org_id, f, before_seq, limit).await?
        };
        let more = rows.len() as i64 > limit;
        rows.truncate(usize::try_from(limit).unwrap_or(0));
        let next = if more {
            rows.last().map(|r| r.seq)
        } else {
            None
        };
        Ok((rows.iter().map(|r| (r.seq, r.summary())).collect(), next))
    }

    /// A page walked along the events' indexes, `limit + 1` rows.
    async fn page_by_event(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<Vec<Delivered>, StoreError> {
        let mut conn = self.conn().await?;
        // Two things make it walk the index whatever the statistics say:
        // - The org is `= ANY($1)` with a one-element array, not `=`. An equality makes the
        //   org a constant, which PostgreSQL drops from the order, so a partition's primary
        //   key (`seq`) would give the order too, and on statistics that overrate an org's
        //   share of the open partition the planner walked it newest first through other
        //   orgs' rows (4,596 rows read for a page of 51 in the bench's plan check). `= ANY`
        //   of one element selects what the equality does, but keeps the org in the order,
        //   which only the org's indexes give. And it is still an equality to the index scan,
        //   so a bound on `seq` after it (a `since`, a page's `before_seq`) starts and ends the
        //   scan. A range on the org (`>= org AND <= org`) keeps it in the order too, but
        //   would not end the scan at a `since`: a page not filled would read the org's older
        //   entries of every partition.
        // - The order names the index: the org descending walks `outbox_org_type` backwards
        //   (the type an equality, so a constant), which `outbox_org_seq` (org ascending, then
        //   `seq` descending) cannot give; the org ascending leaves `outbox_org_seq`, and with
        //   a lead `outbox_org_lead`.
        let one_type = f.lead_id.is_none() && f.event_types.len() == 1;
        let endpoint = listed_endpoint(&mut conn, org_id, f.endpoint_id).await?;
        // Each event's delivery found by its whole key from the event's row: the endpoint as
        // an expression of the event's org (`coalesce($endpoint, org_id)`, the org's id naming
        // its first endpoint), so that every plan probes the key per event. As a constant, the
        // planner read the endpoint's deliveries whole and joined them (the bench's plan check:
        // 108,320 rows read for a page of 51).
        let other = (endpoint != org_id).then_some(endpoint);
        let key_endpoint = diesel::dsl::sql::<diesel::sql_types::Uuid>("coalesce(")
            .bind::<diesel::sql_types::Nullable<diesel::sql_types::Uuid>, _>(other)
            .sql(", outbox.org_id)");
        let q = events_narrowed!(
            f,
            outbox::table
                .inner_join(
                    deliveries::table.on(deliveries::seq
                        .eq(outbox::seq)
                        .and(deliveries::endpoint_id.eq(key_endpoint))),
                )
                .filter(outbox::org_id.eq_any(vec![org_id]))
                .into_boxed()
        );
        let q = if f.statuses.is_empty() {
            q
        } else {
            q.filter(StatusIs::new(&f.statuses))
        };
        let mut q = if one_type {
            q.order((outbox::org_id.desc(), outbox::seq.desc()))
        } else {
            q.order((outbox::org_id.asc(), outbox::seq.desc()))
        };
        if let Some(b) = before_seq {
            q = q.filter(outbox::seq.lt(b));
        }
        let q = q.limit(limit + 1).select(Delivered::as_select());
        // One index gives the order, so the plan is the same for every org and every value,
        // and the session keeps it ([`in_index_order`]).
        crate::tx::transaction(&mut conn, async move |conn| {
            in_index_order(conn, true).await?;
            Ok(q.load::<Delivered>(conn).await?)
        })
        .await
    }

    /// A page walked along the deliveries' index by state, `limit + 1` rows: one walk per
    /// state asked for, newest first, merged (`MergeAppend`), so a page reads about its own
    /// rows of each, whatever the org's history holds. Each walk is ordered and limited in its
    /// own branch: a branch without them is planned on its own, unordered, and the union was
    /// then read whole and sorted. Each delivery's event is found from it (a lateral subquery
    /// kept apart by `OFFSET 0`): on statistics where a state is common, the planner walked the
    /// org's events newest first instead, through every newer one of another state. Planned
    /// with the call's values: the branches are the states asked for.
    async fn page_by_state(
        &self,
        org_id: Uuid,
        f: &DeliveryFilter,
        before_seq: Option<i64>,
        limit: i64,
    ) -> Result<Vec<Delivered>, StoreError> {
        use diesel::sql_types::{Array, Int8, Nullable, Text, Timestamptz, Uuid as SqlUuid};
        // $1 org, $2 limit, $3 before, $4 types (empty: any), $5 since, $6 until.
        let mut branches = Vec::new();
        for (state, retrying) in f.states() {
            let retrying = match retrying {
                Some(r) => format!(" AND d.retrying = {r}"),
                None => String::new(),
            };
            branches.push(format!(
                "(SELECT {DELIVERED_COLUMNS}
                 FROM deliveries d
                 CROSS JOIN LATERAL (
                     SELECT * FROM outbox o
                     WHERE o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)
                     OFFSET 0) o
                 WHERE d.org_id = $1 AND d.state = '{state}'{retrying} AND d.seq < $3
                   AND d.endpoint_id = $7
                   AND (cardinality($4::text[]) = 0 OR o.event_type = ANY($4::text[]))
                   AND ($5::timestamptz IS NULL
                        OR (o.created_at >= $5 AND d.seq >= {since}))
                   AND ($6::timestamptz IS NULL
                        OR (o.created_at < $6 AND d.seq < {until}))
                 ORDER BY d.seq DESC LIMIT $2)",
                state = state.as_str(),
                since = seq_at("$5", true),
                until = seq_at("$6", false),
            ));
        }
        let sql = format!(
            "SELECT * FROM ({}) page ORDER BY seq DESC LIMIT $2",
            branches.join(" UNION ALL ")
        );
        let types: Vec<&str> = f.event_types.iter().map(|t| t.as_str()).collect();
        let mut conn = self.conn().await?;
        let endpoint = listed_endpoint(&mut conn, org_id, f.endpoint_id).await?;
        let q = diesel::sql_query(sql)
            .bind::<SqlUuid, _>(org_id)
            .bind::<Int8, _>(limit + 1)
            .bind::<Int8, _>(before_seq.unwrap_or(i64::MAX))
            .bind::<Array<Text>, _>(types)
            .bind::<Nullable<Timestamptz>, _>(f.since)
            .bind::<Nullable<Timestamptz>, _>(f.until)
            .bind::<SqlUuid, _>(endpoint);
        crate::tx::transaction(&mut conn, async move |conn| {
            in_index_order(conn, false).await?;
            Ok(q.load::<Delivered>(conn).await?)
        })
        .await
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
        // Each lookup is a probe of its index in every partition, planned with its values on
        // each call (a search is an administrator's, not a loop's). The two ids are unique, so
        // their lookups have no order and no limit: with them, the planner walked the org's
        // events newest first until a match (the bench's plan check: 119,957 rows read for
        // one answer); a lead's are the newest of `outbox_org_lead`, in its order.
        let mut rows: Vec<Delivered> = Vec::new();
        // A delivery id is an event's first delivery's (found through the event's own index),
        // else another endpoint's (through the delivery rows'), then an event id.
        for from in [FIRST_DELIVERY_BY_ID, DELIVERY_BY_ID, EVENT_BY_ID] {
            if from == DELIVERY_BY_ID && !rows.is_empty() {
                continue;
            }
            rows.extend(
                diesel::sql_query(format!(
                    "SELECT {DELIVERED_COLUMNS} FROM {from} WHERE o.org_id = $1"
                ))
                .bind::<SqlUuid, _>(org_id)
                .bind::<SqlUuid, _>(id)
                .load::<Delivered>(&mut conn)
                .await?,
            );
        }
        rows.extend(
            diesel::sql_query(format!(
                "SELECT {DELIVERED_COLUMNS} FROM {LEAD_SEARCH}
                 WHERE o.org_id = $1 AND o.lead_id = $2 ORDER BY o.seq DESC LIMIT $3"
            ))
            .bind::<SqlUuid, _>(org_id)
            .bind::<SqlUuid, _>(id)
            .bind::<Int8, _>(limit)
            .load::<Delivered>(&mut conn)
            .await?,
        );
        // An id that is both (a UUID is random; only a test makes it so) is listed once.
        rows.sort_by_key(|r| (std::cmp::Reverse(r.seq), r.endpoint_id));
        rows.dedup_by_key(|r| (r.seq, r.endpoint_id));
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
        let mut row: Option<DeliveredDetail> = None;
        for from in [FIRST_DELIVERY_BY_ID, DELIVERY_BY_ID] {
            row = diesel::sql_query(format!(
                "SELECT {DELIVERED_COLUMNS}, d.attempt_log, o.is_test FROM {from}
                 WHERE o.org_id = $1"
            ))
            .bind::<SqlUuid, _>(org_id)
            .bind::<SqlUuid, _>(delivery_id)
            .one(&mut conn)
            .await
            .optional()?;
            if row.is_some() {
                break;
            }
        }
        let row = row.ok_or(StoreError::NotFound("Delivery not found"))?;
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
            .inner_join(deliveries::table.on(deliveries::seq.eq(outbox::seq)))
            .filter(outbox::org_id.eq(org_id))
            .filter(DeliveryIs { id: delivery_id })
            .select(outbox::payload)
            .first_row(&mut conn)
            .await
            .optional()?
            .ok_or(StoreError::NotFound("Delivery not found"))?;
        Ok(crate::payload::unpack_owned(stored)?)
    }
}

/// The delivery of id `$2` when it is its event's first one (the primary endpoint's, which keeps
/// the event's delivery id): the event through its own unique index, then the delivery by its
/// key. Most deliveries, and every one of an org with one endpoint.
const FIRST_DELIVERY_BY_ID: &str =
    "outbox o JOIN deliveries d ON d.seq = o.seq AND d.delivery_id = $2 AND o.delivery_id = $2";

/// The delivery of id `$2` and its event, for the deliveries to an org's other endpoints: the
/// delivery's row first, by its own index (`deliveries_own_id`, which holds only the rows whose
/// id is their own; `OFFSET 0` keeps it apart), then its event's by its key. Not yet planned well on every history (the bench's plan check read a partition of
/// delivery rows for one), so it is asked only when [`FIRST_DELIVERY_BY_ID`] finds nothing.
const DELIVERY_BY_ID: &str =
    "(SELECT * FROM deliveries WHERE delivery_id = $2 AND own_id IS NOT FALSE
                                OFFSET 0) d
     JOIN outbox o ON o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)";

/// A lead's events and their deliveries to the endpoint keyed by the org's id (its first
/// endpoint, as every org had it before several), each found by its whole key: with the key's
/// first column alone the planner walked the org's events by `seq` instead of the lead's index
/// (the bench's plan check). The deliveries to an org's other endpoints are found by their own
/// id or their event's.
const LEAD_SEARCH: &str =
    "outbox o JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id";

/// The deliveries of event `$2` (one per endpoint it went to) and the event.
const EVENT_BY_ID: &str = "outbox o JOIN deliveries d ON d.seq = o.seq AND o.event_id = $2";

/// The endpoint whose deliveries a list, a count, a replay or a chart is about: the one it
/// names, else the org's primary, else the org's id (the key of the deliveries recorded while
/// it had no endpoint).
pub(crate) async fn listed_endpoint(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
    endpoint_id: Option<Uuid>,
) -> Result<Uuid, StoreError> {
    if let Some(id) = endpoint_id {
        return Ok(id);
    }
    let primary =
        crate::endpoints::resolve(conn, crate::endpoints::EndpointRef::primary(org_id)).await?;
    Ok(primary.unwrap_or(org_id))
}
