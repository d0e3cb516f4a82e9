//! Where a row of the partitioned outbox lives and how a statement names the partitions it
//! may touch (one partition a day, keyed by `seq >> 32`). The worker's reads and
//! writes, the lists and the counts filter through these, and housekeeping's jobs over whole
//! partitions (`crate::partitions::upkeep`) keep to the same key.

use time::OffsetDateTime;
use uuid::Uuid;

pub mod upkeep;

/// A delivery as its message names it: its id, and its outbox row's sequence number when the
/// message carries it (`x-qualifier-seq`; not on an earlier version's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeliveryRef {
    pub id: Uuid,
    pub seq: Option<i64>,
}

/// The outbox partitions a statement over rows with these sequence numbers may touch, as the
/// partition key's days (`seq >> 32`): from the lowest day to the highest, or all
/// of them if one row's number is unknown. A statement that says
/// `(seq >> 32) BETWEEN lo AND hi` beside its `delivery_id` reads only those partitions (pruned
/// when it starts, even as a generic plan); by `delivery_id` alone it would probe the index of
/// every partition, one per day kept (docs/performance-log.md, "History at scale").
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
/// (`qualifier_outbox_roll`), and a row created before that keeps the previous
/// day's. One day more is allowed for an insert whose `created_at` was read just before
/// midnight and its number drawn just after the move.
pub(crate) fn until_day(until: OffsetDateTime) -> i64 {
    until.unix_timestamp().div_euclid(86_400) + 1
}

/// `(outbox.seq >> 32) <= day`, a filter, from [`until_day`]. One-sided on purpose: the
/// partition key has no statistics, and PostgreSQL takes a two-sided range of it
/// (`BETWEEN`) to keep a two-hundredth of the rows where a one-sided bound keeps a third.
/// Written as `BETWEEN` with no lower end, a busy org's list until a month ago then looked
/// cheaper sorted than walked in order, and read the org's whole day (6,139 rows for a page
/// of 51, in the bench's plan check).
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
pub(crate) struct UpToDay {
    pub(crate) day: i64,
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
pub(crate) struct InDays {
    lo: i64,
    hi: i64,
}

pub(crate) fn in_days((lo, hi): (i64, i64)) -> InDays {
    InDays { lo, hi }
}

pub(crate) use boolean_filter;

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

/// The delivery row of id `id`, found by its key (`qualifier_delivery_seq`: its event's
/// unique index for an event's first delivery, the delivery rows' `deliveries_own_id` for
/// another endpoint's), in any partition: a filter on `deliveries`. By `delivery_id` alone an
/// event's first delivery, which that index leaves out, would be looked for row by row.
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
pub(crate) struct DeliveryIs {
    pub(crate) id: Uuid,
}

boolean_filter!(DeliveryIs);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for DeliveryIs {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.push_sql("deliveries.seq = qualifier_delivery_seq(");
        out.push_bind_param::<diesel::sql_types::Uuid, _>(&self.id)?;
        out.push_sql(", 0, 1073741824) AND deliveries.delivery_id = ");
        out.push_bind_param::<diesel::sql_types::Uuid, _>(&self.id)
    }
}

/// The range of sequence numbers a time bound of a list or a count stands for: `outbox.seq >=`
/// (`since`) or `<` (`until`) a sequence number read from the sequence's marks
/// (`outbox_seq_marks`, migrations/2026-12-05-000059_times_by_sequence_marks): for `since`,
/// the number of the last mark at or before the time, every event created after it having a
/// larger one; for `until`, one past the number of the first mark at or after the time, every
/// event created before it having a smaller one. The bound is taken 5 minutes wide and the
/// exact condition on `created_at` is kept beside it; without a mark on its side it is no
/// bound.
///
/// Written as an expression of fixed text rather than `diesel::dsl::sql`, which marks its
/// statement unsafe to cache: a list or a count with a time bound is then prepared once per
/// connection like the others, not parsed and planned on every call.
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
pub(crate) struct SeqBound {
    pub(crate) at: OffsetDateTime,
    pub(crate) since: bool,
}

boolean_filter!(SeqBound);

/// [`SeqBound`]'s sequence number as SQL text around its time parameter: what comes before the
/// parameter and what after.
pub(crate) const fn seq_bound_text(since: bool) -> (&'static str, &'static str) {
    if since {
        (
            "coalesce((SELECT m.seq FROM outbox_seq_marks m WHERE m.at <= ",
            " - interval '5 minutes' ORDER BY m.at DESC LIMIT 1), -9223372036854775807)",
        )
    } else {
        (
            "coalesce((SELECT m.seq + 1 FROM outbox_seq_marks m WHERE m.at >= ",
            " + interval '5 minutes' ORDER BY m.at LIMIT 1), 9223372036854775807)",
        )
    }
}

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for SeqBound {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        let (before, after) = seq_bound_text(self.since);
        out.push_sql(if self.since {
            "outbox.seq >= "
        } else {
            "outbox.seq < "
        });
        out.push_sql(before);
        out.push_bind_param::<diesel::sql_types::Timestamptz, _>(&self.at)?;
        out.push_sql(after);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
