//! The lists, the console's search, one delivery with its log, and replays.

use crate::answer::ReadToEnd;
use diesel::sql_types::Array;
use diesel::{
    BoolExpressionMethods, ExpressionMethods, JoinOnDsl, OptionalExtension, QueryDsl,
    SelectableHelper,
};
use diesel_async::RunQueryDsl;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    DELIVERED_COLUMNS, Delivered, DeliveredDetail, Delivery, DeliveryDetail, EVENT_WITH_DELIVERY,
};
use crate::endpoints::EndpointKey;
use crate::partitions::{DeliveryIs, SeqBound, UpToDay, until_day};
use crate::planner::{in_index_order, index_only};
use crate::schema::{deliveries, outbox};
use crate::{Store, StoreError};
use qualifier_domain::delivery::AttemptEntry;
use qualifier_domain::delivery::DeliveryState;
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
            // (`Store::expire_events`): a replay would only hold it there.
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
/// Which deliveries a list or a bulk replay is about; empty lists mean "any".
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// The endpoint whose deliveries (`None`: the org's primary's, as before several
    /// endpoints; a list is one endpoint's, so that its pages are one row per event).
    pub endpoint_id: Option<Uuid>,
    pub statuses: Vec<DeliveryStatus>,
    pub event_types: Vec<EventType>,
    pub lead_id: Option<Uuid>,
    pub since: Option<OffsetDateTime>,
    pub until: Option<OffsetDateTime>,
}

impl DeliveryFilter {
    /// The org's deliveries that match and whose event was not erased (an empty list of types
    /// matches any; a replay always asks for statuses), for a bulk replay and its dry run:
    /// each delivery's state read from its own row, as the lists read it. `what` is the
    /// statement's select list over the delivery `d` (its `seq` and `created_at`, or a count).
    ///
    /// Each filter reaches its rows through an index (docs/performance.md, "History at
    /// scale"), the same two walks as a page of the list:
    /// - statuses that are few among an org's deliveries and no lead
    ///   ([`Self::walks_states`]): the deliveries' own index by state,
    ///   `deliveries_org_state`, one range per state, counted from the index alone but for
    ///   what only the event knows: its type when one is asked for, and its erasure for a
    ///   `skipped` delivery (an erased event's delivery is always `skipped` or `succeeded`:
    ///   its erasure ends it so, and `outbox_stays_erased` keeps it so);
    /// - otherwise the events' indexes (`outbox_org_lead` with a lead, `outbox_org_type`
    ///   with types, `outbox_org_seq`), each event's delivery found by its key.
    ///
    /// A time bound is a range of sequence numbers beside the exact condition, so neither a
    /// replay that ends a month ago nor a count over a day walks the rest of the org's history.
    pub(super) fn selection(&self, what: &str) -> (String, SelectionBinds) {
        let binds = SelectionBinds {
            retrying: StatusIs::new(&self.statuses).retrying,
            since: self.since,
            until: self.until,
            types: self
                .event_types
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect(),
            lead: self.lead_id,
            endpoint: self.endpoint_id,
        };
        // $1 org, $2 the `retrying` of the states before the end, $3 since, $4 until, $5 types
        // (empty: any), $6 lead (NULL: any), $7 the endpoint (resolved by the caller:
        // `listed_endpoint`).
        let of_state = state_asked(&states_literal(&self.states()), "$2");
        let sql = if self.walks_states() {
            format!(
                "SELECT {what} FROM deliveries d
                 WHERE d.org_id = $1 AND {of_state} AND d.endpoint_id = $7
                   AND ($3::timestamptz IS NULL OR (d.created_at >= $3 AND d.seq >= {since}))
                   AND ($4::timestamptz IS NULL OR (d.created_at < $4 AND d.seq < {until}))
                   AND $6::uuid IS NULL
                   AND ((d.state <> 'skipped' AND cardinality($5::text[]) = 0)
                        OR EXISTS (SELECT 1 FROM outbox o
                                   WHERE o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32)
                                     AND o.erased_at IS NULL
                                     AND (cardinality($5::text[]) = 0
                                          OR o.event_type = ANY($5::text[]))))",
                since = seq_at("$3", true),
                until = seq_at("$4", false),
            )
        } else {
            format!(
                "SELECT {what} FROM {EVENT_WITH_DELIVERY}
                 WHERE o.org_id = $1 AND o.erased_at IS NULL AND {of_state}
                   AND d.endpoint_id = $7
                   AND ($3::timestamptz IS NULL OR (o.created_at >= $3 AND o.seq >= {since}))
                   AND ($4::timestamptz IS NULL
                        OR (o.created_at < $4 AND o.seq < {until}
                            AND (o.seq >> 32) <= floor(extract(epoch FROM $4) / 86400)::int8 + 1))
                   AND ($6::uuid IS NULL OR o.lead_id = $6)
                   AND (cardinality($5::text[]) = 0 OR o.event_type = ANY($5::text[]))",
                since = seq_at("$3", true),
                until = seq_at("$4", false),
            )
        };
        (sql, binds)
    }

    /// A list asked for states that are few among an org's deliveries (no `succeeded`) and for
    /// no lead: its page walks the deliveries' index by state ([`Store::list_deliveries_at`]).
    fn walks_states(&self) -> bool {
        !self.statuses.is_empty()
            && !self.statuses.contains(&DeliveryStatus::Succeeded)
            && self.lead_id.is_none()
    }

    /// The states the statuses asked for ([`Self::states`]) and the `retrying` asked of those
    /// before the end, as the parameters of [`state_asked`].
    fn states_asked(&self) -> (Vec<String>, Vec<bool>) {
        let states = self
            .states()
            .iter()
            .map(|(s, _)| s.as_str().to_owned())
            .collect();
        (states, StatusIs::new(&self.statuses).retrying)
    }

    /// The delivery states the statuses asked for are, each with the `retrying` it must have
    /// (`None`: either): an ended status is its state; `pending` and `failed` are every state
    /// before the end, not retrying or retrying ([`DeliveryState::status`]).
    fn states(&self) -> Vec<(DeliveryState, Option<bool>)> {
        let pending = self.statuses.contains(&DeliveryStatus::Pending);
        let failed = self.statuses.contains(&DeliveryStatus::Failed);
        let mut states: Vec<(DeliveryState, Option<bool>)> = DeliveryState::all()
            .iter()
            .filter(|s| !s.is_final() && (pending || failed))
            .map(|s| (*s, (pending != failed).then_some(failed)))
            .collect();
        states.extend(
            DeliveryState::all()
                .iter()
                .filter(|s| s.is_final() && self.statuses.contains(&s.status(false)))
                .map(|s| (*s, None)),
        );
        states
    }
}

/// The filters of a [`DeliveryFilter`] on its events (types, lead, time bounds) applied to `q`,
/// any boxed query that reads `outbox`: the events' own, or joined to their deliveries.
macro_rules! events_narrowed {
    ($f:expr, $q:expr) => {{
        let f: &DeliveryFilter = $f;
        let mut q = $q;
        match f.event_types.as_slice() {
            [] => {}
            [one] => q = q.filter(outbox::event_type.eq(*one)),
            many => q = q.filter(outbox::event_type.eq_any(many.to_vec())),
        }
        if let Some(l) = f.lead_id {
            q = q.filter(outbox::lead_id.eq(l));
        }
        // Each time bound as a range of sequence numbers, with the exact condition beside it
        // (`SeqBound`).
        if let Some(t) = f.since {
            q = q
                .filter(SeqBound { at: t, since: true })
                .filter(outbox::created_at.ge(t));
        }
        if let Some(t) = f.until {
            q = q
                .filter(SeqBound {
                    at: t,
                    since: false,
                })
                .filter(outbox::created_at.lt(t))
                .filter(UpToDay { day: until_day(t) });
        }
        q
    }};
}
use events_narrowed;

/// Deliveries whose status is one of these, on their own rows (`deliveries`): an ended state
/// asked for, or before the end with the `retrying` a `pending` or `failed` asks for. Fixed
/// text, so a page with it is prepared once per connection.
#[derive(Debug, Clone, diesel::query_builder::QueryId)]
struct StatusIs {
    ended: Vec<String>,
    retrying: Vec<bool>,
}

impl StatusIs {
    fn new(statuses: &[DeliveryStatus]) -> StatusIs {
        StatusIs {
            ended: statuses
                .iter()
                .filter(|s| s.is_final())
                .map(|s| s.as_str().to_owned())
                .collect(),
            retrying: [
                (DeliveryStatus::Pending, false),
                (DeliveryStatus::Failed, true),
            ]
            .iter()
            .filter(|(s, _)| statuses.contains(s))
            .map(|(_, r)| *r)
            .collect(),
        }
    }
}

crate::partitions::boolean_filter!(StatusIs);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for StatusIs {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        use diesel::sql_types::{Array, Bool, Text};
        out.push_sql("(deliveries.state::text = ANY(");
        out.push_bind_param::<Array<Text>, _>(&self.ended)?;
        out.push_sql(
            ") OR (deliveries.state NOT IN ('succeeded', 'dead', 'skipped') \
             AND deliveries.retrying = ANY(",
        );
        out.push_bind_param::<Array<Bool>, _>(&self.retrying)?;
        out.push_sql(")))");
        Ok(())
    }
}

/// The delivery row `d` is in one of the states `states` (a `delivery_state[]` expression),
/// with one of the `retrying` values `retrying` (a `bool[]` parameter) if it has not ended: the
/// condition of [`DeliveryFilter::states_asked`], for a statement written whole.
fn state_asked(states: &str, retrying: &str) -> String {
    format!(
        "d.state = ANY({states})
         AND (d.state IN ('succeeded', 'dead', 'skipped') OR d.retrying = ANY({retrying}::bool[]))"
    )
}

/// `states` as a constant of the statement's text (`'{dead,failed}'::delivery_state[]`), for
/// a count or a selection that walks `deliveries_org_state`. That index leaves the succeeded
/// deliveries out, and PostgreSQL uses a partial index only where the statement proves its
/// condition while it is planned: a constant array proves `state <> 'succeeded'`, a parameter
/// cast from `text[]` does not (the cast is evaluated only when the statement runs). Given the
/// parameter, a dry run's count walked the primary key over its time range instead, every
/// org's deliveries (4,598 rows read for 90 counted, on the bench's history of 2.5 million),
/// and its cost estimate passed `jit_above_cost`. The names are the enum's own, never input.
fn states_literal(states: &[(DeliveryState, Option<bool>)]) -> String {
    let names: Vec<&str> = states.iter().map(|(s, _)| s.as_str()).collect();
    format!("'{{{}}}'::delivery_state[]", names.join(","))
}

/// [`SeqBound`]'s sequence number for the time parameter `param` (`$n`), a lower bound
/// (`since`) or an upper one, for a statement written whole.
fn seq_at(param: &str, since: bool) -> String {
    let (before, after) = crate::partitions::seq_bound_text(since);
    format!("{before}{param}{after}")
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
         UPDATE deliveries d SET {}
         FROM slot, unnest($2::int8[]) WITH ORDINALITY AS v(seq, i)
         WHERE d.seq = v.seq AND d.org_id = $1 AND d.endpoint_id = $7 AND {}",
        super::state::replay("slot.first + make_interval(secs => $3 * (v.i - 1))"),
        state_asked("$5::text[]::delivery_state[]", "$6")
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

/// The values of a [`DeliveryFilter::selection`]'s parameters after the org's.
pub(super) struct SelectionBinds {
    retrying: Vec<bool>,
    since: Option<OffsetDateTime>,
    until: Option<OffsetDateTime>,
    types: Vec<String>,
    lead: Option<Uuid>,
    endpoint: Option<Uuid>,
}

impl SelectionBinds {
    /// `sql`, a [`DeliveryFilter::selection`], with its parameters bound.
    pub(super) fn bound(
        self,
        sql: String,
        org_id: Uuid,
    ) -> diesel::query_builder::BoxedSqlQuery<
        'static,
        diesel::pg::Pg,
        diesel::query_builder::SqlQuery,
    > {
        use diesel::sql_types::{Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
        diesel::sql_query(sql)
            .into_boxed()
            .bind::<SqlUuid, _>(org_id)
            .bind::<Array<Bool>, _>(self.retrying)
            .bind::<Nullable<Timestamptz>, _>(self.since)
            .bind::<Nullable<Timestamptz>, _>(self.until)
            .bind::<Array<Text>, _>(self.types)
            .bind::<Nullable<SqlUuid>, _>(self.lead)
            .bind::<SqlUuid, _>(self.endpoint.unwrap_or(org_id))
    }
}

/// A delivery a bulk replay selected.
#[derive(diesel::QueryableByName)]
struct Chosen {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    seq: i64,
    #[diesel(sql_type = diesel::sql_types::Timestamptz)]
    created_at: OffsetDateTime,
}
