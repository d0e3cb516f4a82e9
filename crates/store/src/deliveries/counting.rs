//! A dry run's count: from the hourly totals where they vouch for the range, from the rows
//! (each delivery's own, mostly through `deliveries_org_state` alone) for the rest.

use crate::answer::ReadToEnd;
use time::OffsetDateTime;
use uuid::Uuid;

use super::DeliveryFilter;
use crate::StoreError;
use qualifier_domain::DeliveryStatus;

impl DeliveryFilter {
    /// The org's deliveries that match and were not erased, counted (a dry-run bulk replay).
    ///
    /// A filter of statuses and times only is counted mostly from `delivery_hours`: the whole
    /// hours of its range from `delivery_hour_cover.covered_from` on (at most 24 rows a day
    /// for the org, plus the changes not folded yet) and, through the index, only the rows
    /// of the partial hours at its two ends and of the hours before the cover
    /// ([`HourSplit`]). So a month of 50,000 dead deliveries is about 720 rows read, not
    /// 50,000 index entries (docs/performance-log.md, "History at scale"). Any other filter
    /// (types, a lead) is counted through the index alone.
    pub(super) async fn count(
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
        // The hourly totals are the org's, every endpoint's together: they answer for one
        // endpoint only while the org has no other.
        let alone: i64 =
            diesel::sql_query("SELECT count(*) AS n FROM webhooks WHERE org_id = $1 AND id <> $2")
                .bind::<diesel::sql_types::Uuid, _>(org_id)
                .bind::<diesel::sql_types::Uuid, _>(self.endpoint_id.unwrap_or(org_id))
                .one::<Counted>(conn)
                .await
                .map(|c| c.n)?;
        if !by_hours || alone > 0 {
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
        .one(conn)
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

    /// The same count row by row ([`DeliveryFilter::selection`]): an index entry per delivery
    /// counted, mostly.
    async fn count_rows(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        org_id: Uuid,
    ) -> Result<usize, StoreError> {
        let (sql, binds) = self.selection("count(*) AS n");
        let n: Counted = binds.bound(sql, org_id).one(conn).await?;
        Ok(usize::try_from(n.n).unwrap_or(0))
    }
}

#[derive(diesel::QueryableByName)]
struct Counted {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[derive(diesel::QueryableByName)]
struct Totals {
    /// Whether the cover row exists (made by the migrations).
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

#[cfg(test)]
mod tests {
    use super::*;
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
}
