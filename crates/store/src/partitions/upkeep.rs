//! Housekeeping's jobs over whole outbox partitions: how many days one holds, rolling them
//! forward, expiring the ones past retention, and compacting the closed ones. The rules of the
//! partitioned outbox live here and in `crate::partitions`; `lead-api`'s housekeeping only
//! calls them (crates/lead-api/src/housekeeping.rs).

use crate::answer::ReadToEnd;
use std::time::Duration;

use diesel::OptionalExtension;
use diesel::sql_types::Int8;
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use time::OffsetDateTime;

use crate::StoreError;

/// How many days one outbox partition holds: a fifth of the retention, from one to seven, so a
/// deployment keeps six or seven partitions (more only past 35 days kept) and an event is kept
/// at most that much past its retention. Each partition costs every statement that cannot be
/// pruned a little planning and an index probe, so they are kept few
/// (`migrations/2026-11-26-000028_outbox_partitioned/up.sql`).
pub fn partition_days(retention: Duration) -> i32 {
    let days = retention.as_secs() / 86_400;
    (days / 5).clamp(1, 7) as i32
}

impl crate::facets::Upkeep<'_> {
    /// Housekeeping's first step each round: outbox partitions of `span_days` each exist
    /// through tomorrow, and the sequence is in today's numbers once today has begun
    /// (`qualifier_outbox_roll`). Returns how many partitions it created.
    pub async fn roll_outbox(&self, span_days: i32) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let n = diesel::sql_query("SELECT qualifier_outbox_roll($1)::int8 AS count")
            .bind::<diesel::sql_types::Integer, _>(span_days)
            .one::<Count>(&mut conn)
            .await?;
        Ok(n.count as usize)
    }

    /// Retention: drops each outbox partition whose events all expired (created more than
    /// `keep` ago) and are finished. Returns how many partitions it dropped.
    ///
    /// A partition (a span of days) is dropped whole, so removing it costs PostgreSQL the same
    /// whatever it holds and leaves nothing to vacuum; an event is kept between `keep` and
    /// `keep` plus a span. What it reads is bounded by the number of partitions and orgs, never
    /// by rows:
    /// - a delivery still unfinished when its event expires (pending or failed: an endpoint's
    ///   long outage, a replay) ends `dead` with `Event expired` and leaves with the partition:
    ///   no tenant's failing endpoint or replays can keep every org's events past retention
    ///   (a replay of an expired event is refused, `Deliveries::replay_delivery`). The update
    ///   reads the partition's unfinished rows through `outbox_org_status`, one probe per org;
    /// - `feed_head.expired_through` is raised to the partition's highest feed position before
    ///   it goes, so a cursor from before it is told it expired;
    /// - the partition is detached concurrently (no lock that stops readers or writers), then
    ///   dropped: once detached, no writer reaches its rows (they all write through `outbox`),
    ///   so an attempt that ended meanwhile changes nothing there. A detach cut short is
    ///   finished by the next round.
    pub async fn expire_events(&self, keep: std::time::Duration) -> Result<usize, StoreError> {
        let cutoff = qualifier_domain::timefmt::now_millis()
            - time::Duration::seconds_f64(keep.as_secs_f64());
        let mut conn = self.conn().await?;
        let mut dropped = 0;
        for (name, part) in partitions(&mut conn).await? {
            if !name.expired(cutoff) || part.seq_now < name.upper() {
                // Partitions are in range order: the later ones are newer still.
                break;
            }
            let table = name.table();
            if name == PartitionName::Legacy {
                // The table from before partitions: its newest event decides (`newest_of`).
                let newest: Option<NewestRow> = diesel::sql_query(newest_of(&table))
                    .one(&mut conn)
                    .await
                    .optional()?;
                if newest.and_then(|n| n.newest).is_some_and(|n| n > cutoff) {
                    break;
                }
            }
            if part.attached && !part.detaching {
                end_expired(&mut conn, name).await?;
                // The partition's highest position, in the outbox's rows or in the feed's
                // partition of the same days, org by org through their
                // indexes.
                diesel::sql_query(format!(
                    "UPDATE feed_head SET expired_through = m.top
                     FROM (SELECT max(greatest(x.top, y.top)) AS top FROM orgs g
                           CROSS JOIN LATERAL
                               (SELECT max(o.feed_pos) AS top FROM {table} o
                                WHERE o.org_id = g.id AND o.feed_pos IS NOT NULL) x
                           CROSS JOIN LATERAL
                               (SELECT max(f.pos) AS top FROM {feed} f
                                WHERE f.org_id = g.id) y) m
                     WHERE m.top > feed_head.expired_through",
                    feed = name.feed_table()
                ))
                .execute(&mut conn)
                .await?;
            }
            // The hourly totals stop vouching for the partition's hours before its rows go, so
            // a dry run never counts rows that are gone: it counts those hours through the
            // index instead (`DeliveryFilter::count_by_hours`). Its newest creation time as
            // `newest_of` bounds it; no row is added to a partition this old.
            diesel::sql_query(format!(
                "UPDATE delivery_hour_cover c
                 SET covered_from = date_trunc('hour', p.newest, 'UTC') + interval '1 hour'
                 FROM ({}) p
                 WHERE date_trunc('hour', p.newest, 'UTC') + interval '1 hour' > c.covered_from",
                newest_of(&table)
            ))
            .execute(&mut conn)
            .await?;
            if part.attached {
                detach(&mut conn, "outbox", &table, part.detaching).await?;
            }
            conn.batch_execute(&format!("DROP TABLE {table}")).await?;
            diesel::sql_query("DELETE FROM outbox_compacted WHERE partition = $1")
                .bind::<diesel::sql_types::Text, _>(&table)
                .execute(&mut conn)
                .await?;
            dropped += 1;
        }
        drop_stray_delivery_partitions(&mut conn).await?;
        // The sequence's marks of days no partition can still hold (a partition outlives its
        // retention by at most its span, seven days), through their key.
        diesel::sql_query(
            "DELETE FROM outbox_seq_marks WHERE at < $1::timestamptz - interval '8 days'",
        )
        .bind::<diesel::sql_types::Timestamptz, _>(cutoff)
        .execute(&mut conn)
        .await?;
        Ok(dropped)
    }

    /// Rebuilds the indexes of the oldest partition that no longer takes new events and was
    /// not rebuilt yet (`REINDEX … CONCURRENTLY`: readers and writers go on), and notes it in
    /// `outbox_compacted`. Returns how many it rebuilt (0 or 1: one per round bounds a round's
    /// work). Most of the outbox's indexes take each new entry at the end of one org's run, in
    /// the middle of the index, where a full page splits in half; built again from their
    /// entries they are about 40% smaller (docs/performance-log.md, "History at scale").
    pub async fn compact_outbox(&self) -> Result<usize, StoreError> {
        let closed = qualifier_domain::timefmt::now_millis() - time::Duration::hours(1);
        let mut conn = self.conn().await?;
        let Some((name, _)) = partitions(&mut conn).await?.into_iter().find(|(n, p)| {
            matches!(n, PartitionName::Days { .. })
                && p.attached
                && !p.detaching
                && !p.compacted
                && n.expired(closed)
                && p.seq_now >= n.upper()
        }) else {
            return Ok(0);
        };
        let table = name.table();
        // A rebuild can take minutes on a busy span; the statement timeout is for requests.
        conn.batch_execute("SET statement_timeout = 0").await?;
        let rebuilt = conn
            .batch_execute(&format!("REINDEX TABLE CONCURRENTLY {table}"))
            .await;
        conn.batch_execute("RESET statement_timeout").await?;
        rebuilt?;
        diesel::sql_query(
            "INSERT INTO outbox_compacted (partition) VALUES ($1) ON CONFLICT DO NOTHING",
        )
        .bind::<diesel::sql_types::Text, _>(&table)
        .execute(&mut conn)
        .await?;
        Ok(1)
    }
}

impl crate::facets::Upkeep<'_> {
    /// Builds `deliveries_own_id` on each partition of the delivery rows that does not have it
    /// yet, concurrently (readers and writers go on), and attaches it; once every partition has
    /// it, drops `deliveries_delivery_id`, which it replaces
    /// (migrations/2026-12-05-000058_first_deliveries_found_by_their_event builds it on the
    /// empty partitions only). Returns how many partitions it indexed. Nothing to do, and
    /// nothing read but the catalogue, once the old index is gone.
    ///
    /// One housekeeper at a time (every replica runs the job): one that finds another at it
    /// returns 0 and leaves the work to it. It does not wait for the other: a session waiting
    /// for a lock holds a snapshot, and a concurrent build waits for every older snapshot to
    /// end, so the two would wait on each other (PostgreSQL ends one as a deadlock).
    pub async fn index_delivery_ids(&self) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let state: IndexState = diesel::sql_query(
            "SELECT to_regclass('deliveries_own_id') IS NOT NULL AS new_there,
                    CASE WHEN to_regclass('deliveries_delivery_id') IS NOT NULL
                         THEN pg_try_advisory_lock(hashtext('qualifier.index_delivery_ids'))
                         ELSE false END AS mine",
        )
        .one(&mut conn)
        .await?;
        if !state.mine {
            return Ok(0);
        }
        // Session-level (a concurrent build cannot run in a transaction), so let go whatever
        // happened.
        let done = index_and_drop(&mut conn, state.new_there).await;
        let unlocked = conn
            .batch_execute("SELECT pg_advisory_unlock(hashtext('qualifier.index_delivery_ids'))")
            .await;
        let built = done?;
        unlocked?;
        Ok(built)
    }
}

impl crate::facets::Upkeep<'_> {
    /// A mark of the outbox's sequence (`outbox_seq_marks`: every number handed out by now is
    /// at most the mark's), at most one a minute and only once the sequence moved past the
    /// last mark: what a time bound of a list reads in place of an index of every event's
    /// creation time (`crate::partitions::SeqBound`,
    /// migrations/2026-12-05-000059_times_by_sequence_marks). True when it wrote one. Cheap to
    /// call often: it reads the sequence and the last mark, and writes nothing most of the
    /// time; two replicas at once may both write one, and both are true.
    pub async fn mark_outbox_sequence(&self) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let n = diesel::sql_query(
            "INSERT INTO outbox_seq_marks (at, seq)
             SELECT clock_timestamp(), s.top
             FROM (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS top
                   FROM outbox_seq_seq) s
             WHERE NOT EXISTS (SELECT 1 FROM (SELECT m.at, m.seq FROM outbox_seq_marks m
                                              ORDER BY m.at DESC LIMIT 1) l
                               WHERE l.at > clock_timestamp() - interval '1 minute'
                                  OR l.seq >= s.top)
             ON CONFLICT (at) DO NOTHING",
        )
        .execute(&mut conn)
        .await?;
        Ok(n > 0)
    }
}

/// [`Upkeep::index_delivery_ids`]' work, its lock held: the missing partitions' indexes (when the
/// new index is there at all), then the old index's drop once the new one is whole. Its drop
/// locks the table for a moment; a busy round gives way (`lock_timeout`) and the next one
/// tries again.
async fn index_and_drop(
    conn: &mut AsyncPgConnection,
    new_there: bool,
) -> Result<usize, StoreError> {
    if !new_there {
        return Ok(0);
    }
    conn.batch_execute("SET statement_timeout = 0").await?;
    let built = build_own_id_indexes(conn).await;
    conn.batch_execute("RESET statement_timeout").await?;
    let built = built?;
    conn.batch_execute(
        "DO $$
         BEGIN
             IF (SELECT i.indisvalid FROM pg_index i
                 WHERE i.indexrelid = 'deliveries_own_id'::regclass) THEN
                 SET LOCAL lock_timeout = '500ms';
                 DROP INDEX IF EXISTS deliveries_delivery_id;
             END IF;
         END
         $$",
    )
    .await
    .or_else(|e| match e {
        diesel::result::Error::DatabaseError(_, ref info)
            if info.message().contains("lock timeout") =>
        {
            Ok(())
        }
        e => Err(e),
    })?;
    Ok(built)
}

/// Each partition of the delivery rows without `deliveries_own_id`: the index built on it
/// concurrently, then attached. Returns how many.
async fn build_own_id_indexes(conn: &mut AsyncPgConnection) -> Result<usize, StoreError> {
    // The partitions without an index attached to the new one, with the name it is given
    // (an earlier round's build cut short leaves an invalid index of that name behind).
    let missing: Vec<Named> = diesel::sql_query(
            "SELECT p.inhrelid::regclass::text AS name FROM pg_inherits p
             WHERE p.inhparent = 'deliveries'::regclass
               AND NOT EXISTS (SELECT 1 FROM pg_inherits x JOIN pg_index i ON i.indexrelid = x.inhrelid
                               WHERE x.inhparent = 'deliveries_own_id'::regclass
                                 AND i.indrelid = p.inhrelid)",
        )
        .load(conn)
        .await?;
    for part in &missing {
        let index = format!("{}_own_id", part.name);
        conn.batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {index}"))
            .await?;
        conn.batch_execute(&format!(
            "CREATE INDEX CONCURRENTLY {index} ON {} (delivery_id) WHERE own_id IS NOT FALSE",
            part.name
        ))
        .await?;
        conn.batch_execute(&format!(
            "ALTER INDEX deliveries_own_id ATTACH PARTITION {index}"
        ))
        .await?;
    }
    Ok(missing.len())
}

#[derive(diesel::QueryableByName)]
struct IndexState {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    new_there: bool,
    /// The old index is left and this session took the job's lock.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    mine: bool,
}

#[derive(diesel::QueryableByName)]
struct Named {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

/// A statement whose one row's `newest` is no earlier than the newest creation time of an
/// event of `table` (an outbox partition), NULL when it holds none: the time of the first mark
/// of the sequence at or past its highest `seq` (`outbox_seq_marks`), or now without one. Read
/// through two keys, not the partition's rows (it has no index by creation time since
/// migrations/2026-12-05-000059_times_by_sequence_marks); later than the newest by up to the
/// marks' minute, which keeps a partition a minute longer or its hours out of the totals' cover
/// a minute sooner, both on the safe side.
fn newest_of(table: &str) -> String {
    format!(
        "SELECT CASE WHEN t.top IS NULL THEN NULL
                     ELSE coalesce((SELECT m.at FROM outbox_seq_marks m WHERE m.seq >= t.top
                                    ORDER BY m.at LIMIT 1), clock_timestamp()) END AS newest
         FROM (SELECT max(seq) AS top FROM {table}) t"
    )
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = Int8)]
    count: i64,
}

/// The outbox's partitions, and tables detached from it and not dropped yet, oldest first.
async fn partitions(
    conn: &mut AsyncPgConnection,
) -> Result<Vec<(PartitionName, Partition)>, StoreError> {
    let parts: Vec<Partition> = diesel::sql_query(
        "SELECT c.relname::text AS name, i.inhrelid IS NOT NULL AS attached,
                coalesce(i.inhdetachpending, false) AS detaching,
                EXISTS (SELECT 1 FROM outbox_compacted k WHERE k.partition = c.relname)
                    AS compacted,
                (SELECT last_value FROM outbox_seq_seq) AS seq_now
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
         LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
         WHERE c.relkind = 'r' AND c.relname ~ '^outbox_(legacy|d[0-9]{1,7}_[0-9]{1,7})$'",
    )
    .load(conn)
    .await?;
    let mut parts: Vec<(PartitionName, Partition)> = parts
        .into_iter()
        .filter_map(|p| PartitionName::parse(&p.name).map(|n| (n, p)))
        .collect();
    parts.sort_by_key(|(n, _)| n.lower());
    Ok(parts)
}

/// Detaches `table` from `parent` without locking out its readers and writers (`CONCURRENTLY`),
/// or finishes a detach that was cut short (`FINALIZE`). Waiting for the transactions that still
/// see the partition may outlast the statement timeout; a detach cut short is left pending and
/// finished next round.
async fn detach(
    conn: &mut AsyncPgConnection,
    parent: &str,
    table: &str,
    pending: bool,
) -> Result<(), StoreError> {
    let how = if pending { "FINALIZE" } else { "CONCURRENTLY" };
    conn.batch_execute("SET statement_timeout = 0").await?;
    let detached = conn
        .batch_execute(&format!(
            "ALTER TABLE {parent} DETACH PARTITION {table} {how}"
        ))
        .await;
    // The session's timeout must not stay off on a pooled connection.
    conn.batch_execute("RESET statement_timeout").await?;
    Ok(detached?)
}

/// Drops each partition of `deliveries` and of `event_feed` whose outbox partition (the same
/// days) is gone: a delivery row and a feed position go with their event. After retention
/// dropped the outbox's, or after the release before this one did (it knows nothing of these
/// tables), or after a round cut short between the two.
async fn drop_stray_delivery_partitions(conn: &mut AsyncPgConnection) -> Result<(), StoreError> {
    for parent in ["deliveries", "event_feed"] {
        let strays: Vec<Partition> = diesel::sql_query(format!(
            "SELECT c.relname::text AS name, i.inhrelid IS NOT NULL AS attached,
                    coalesce(i.inhdetachpending, false) AS detaching, false AS compacted,
                    0::int8 AS seq_now
             FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
             LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
             WHERE c.relkind = 'r' AND c.relname ~ '^{parent}_(legacy|d[0-9]{{1,7}}_[0-9]{{1,7}})$'
               AND NOT EXISTS (SELECT 1 FROM pg_class t
                               WHERE t.relnamespace = c.relnamespace
                                 AND t.relname = 'outbox_' || substring(c.relname FROM {from}))",
            from = parent.len() + 2
        ))
        .load(conn)
        .await?;
        for stray in strays {
            // Only names this module gives; anything else is not touched.
            let Some(name) = stray
                .name
                .strip_prefix(&format!("{parent}_"))
                .and_then(|days| PartitionName::parse(&format!("outbox_{days}")))
            else {
                continue;
            };
            let table = match parent {
                "deliveries" => name.delivery_table(),
                _ => name.feed_table(),
            };
            if stray.attached {
                detach(conn, parent, &table, stray.detaching).await?;
            }
            conn.batch_execute(&format!("DROP TABLE {table}")).await?;
        }
    }
    Ok(())
}

/// Ends every unfinished delivery of `table` (an outbox partition past retention): `dead`
/// with `Event expired`, nothing held, nothing left for the relay to publish. Written on the
/// delivery partition of the same days, found through its `deliveries_org_state` index org by
/// org, so the cost follows the unfinished deliveries, not the partition's size: a statement on
/// a partition named directly runs none of the table's triggers. Returns how many it ended.
async fn end_expired(
    conn: &mut AsyncPgConnection,
    name: PartitionName,
) -> Result<usize, StoreError> {
    let ended = diesel::sql_query(crate::deliveries::state::within::expired(
        &name.delivery_table(),
    ))
    .execute(conn)
    .await?;
    // Nor anything of those days in the relay's queue of new deliveries, ended
    // above: the partition's drop runs no trigger.
    diesel::sql_query("DELETE FROM deliveries_unsent WHERE seq >= $1 AND seq < $2")
        .bind::<Int8, _>(name.lower())
        .bind::<Int8, _>(name.upper())
        .execute(conn)
        .await?;
    Ok(ended)
}

#[derive(diesel::QueryableByName)]
struct NewestRow {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    newest: Option<OffsetDateTime>,
}

#[derive(diesel::QueryableByName)]
struct Partition {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    attached: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    detaching: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    compacted: bool,
    #[diesel(sql_type = Int8)]
    seq_now: i64,
}

/// An outbox partition, by its name: the table from before partitions (every
/// row day 0), or the days `[first, last)` since the Unix epoch (`outbox_d<first>_<last>`),
/// whose rows have `seq >> 32` in that range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionName {
    Legacy,
    Days { first: i64, last: i64 },
}

/// The first day a partition can start on, and so `outbox_legacy`'s end.
const LEGACY_END_DAY: i64 = 20_000;

impl PartitionName {
    pub fn parse(name: &str) -> Option<Self> {
        if name == "outbox_legacy" {
            return Some(Self::Legacy);
        }
        let (first, last) = name.strip_prefix("outbox_d")?.split_once('_')?;
        let day = |d: &str| {
            (!d.is_empty() && d.len() <= 7 && d.bytes().all(|b| b.is_ascii_digit()))
                .then(|| d.parse().ok())
                .flatten()
        };
        let (first, last) = (day(first)?, day(last)?);
        (first < last).then_some(Self::Days { first, last })
    }

    /// Its table's name, safe to write into SQL (digits and letters only).
    pub fn table(self) -> String {
        match self {
            Self::Legacy => "outbox_legacy".to_owned(),
            Self::Days { first, last } => format!("outbox_d{first}_{last}"),
        }
    }

    /// The partition of `event_feed` that holds the same days
    /// (migrations/2026-12-04-000049_the_feed_in_a_table_of_its_own/up.sql).
    pub fn feed_table(self) -> String {
        match self {
            Self::Legacy => "event_feed_legacy".to_owned(),
            Self::Days { first, last } => format!("event_feed_d{first}_{last}"),
        }
    }

    /// The partition of `deliveries` that holds the same days
    /// (migrations/2026-12-03-000043_deliveries_of_their_own/up.sql).
    pub fn delivery_table(self) -> String {
        match self {
            Self::Legacy => "deliveries_legacy".to_owned(),
            Self::Days { first, last } => format!("deliveries_d{first}_{last}"),
        }
    }

    pub fn lower(self) -> i64 {
        match self {
            Self::Legacy => i64::MIN,
            Self::Days { first, .. } => first << 32,
        }
    }

    /// The sequence number past the highest it can hold.
    pub fn upper(self) -> i64 {
        match self {
            Self::Legacy => LEGACY_END_DAY << 32,
            Self::Days { last, .. } => last << 32,
        }
    }

    /// Whether every event it can hold was created before `cutoff`: a partition takes events
    /// until the sequence moves past its last day, up to a minute into the next day
    /// (housekeeping's round), and a transaction that drew its number before may commit later
    /// still; an hour past the last day's end covers both. The legacy table is judged by its
    /// newest row instead.
    pub fn expired(self, cutoff: OffsetDateTime) -> bool {
        match self {
            Self::Legacy => true,
            Self::Days { last, .. } => {
                let end = OffsetDateTime::UNIX_EPOCH + time::Duration::days(last);
                end + time::Duration::hours(1) <= cutoff
            }
        }
    }
}

#[cfg(test)]
mod tests;
