//! Planner settings a transaction asks for, each with the reason it needs it: lists,
//! searches, counts and the feed call these before their statements, so the statements keep
//! the plans that read only what they answer whatever the org's statistics say
//! (docs/performance-log.md, "Planning").
//!
//! `lead-api`'s sessions plan a prepared statement once (`QUALIFIER_PLAN_CACHE_MODE`, default
//! `generic`): the statements every event goes through (the lead's write and read, the
//! rate-limit admission and the triggers' statements inside them) are key lookups whose one plan
//! serves every org, and planning them on each call was a tenth of PostgreSQL's CPU per event.
//! The few reads whose best plan depends on the org's own rows ask for custom plans here.

use diesel_async::SimpleAsyncConnection;

/// For the rest of the transaction, no bitmap heap scans: a count over `outbox_org_status`
/// (a dry run, the chart) finds every column it needs in the index, but its entries are
/// scattered one per table page (one delivery in fifty is dead), and PostgreSQL can judge a
/// bitmap scan cheaper, which then reads a table page per entry counted, where the index alone
/// counts 50,000 entries in about 50 ms (docs/performance-log.md, "History at scale").
///
/// Planned with the call's values: which of the org's statuses and hours hold rows decides
/// the plan, and a dry run is rare enough that planning it each time costs nothing.
pub(crate) async fn index_only(
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel::result::Error> {
    conn.batch_execute(
        "SET LOCAL enable_bitmapscan = off; SET LOCAL plan_cache_mode = force_custom_plan",
    )
    .await
}

/// For the rest of the transaction, no sort: a page comes out of an index walked in its
/// order, or not at all. A list's order is one that only the filter's own index gives
/// ([`Deliveries::list_deliveries_at`]), but PostgreSQL may still judge reading every match and
/// sorting them cheaper than walking that index, as it cannot tell that the matches it would
/// read first are the newest. On the bench's history a busy org's list since a day was
/// planned as a bitmap scan of its day, 7,704 rows sorted for a page of 51.
///
/// A plan that keeps a sort anyway (one whose partitions were all left out, which sorts
/// nothing) carries the sort's penalty in its cost, far above `jit_above_cost`: compiled, it
/// took 45-90 ms for an empty answer, one reason the pool's sessions never compile
/// (`crate::pool`, `SESSION_SETTINGS`).
///
/// With `keep_plan`, the statement also keeps the plan it was first given, whatever the
/// session's `plan_cache_mode` (an operator may have set `custom` or `auto` in
/// `QUALIFIER_PLAN_CACHE_MODE`): when only one index gives a list's order, walking it is the
/// only plan left, whatever the org, so planning it again over the month's partitions on each
/// call (up to a millisecond, most of a small org's list or feed page) buys nothing. Without it, the statement is planned with
/// its call's values, whatever the session's mode: two indexes give its order, and which one
/// reads fewer rows depends on the org. One round trip for the settings.
pub(crate) async fn in_index_order(
    conn: &mut diesel_async::AsyncPgConnection,
    keep_plan: bool,
) -> Result<(), diesel::result::Error> {
    conn.batch_execute(if keep_plan {
        "SET LOCAL enable_sort = off; SET LOCAL enable_incremental_sort = off; \
         SET LOCAL plan_cache_mode = force_generic_plan"
    } else {
        "SET LOCAL enable_sort = off; SET LOCAL enable_incremental_sort = off; \
         SET LOCAL plan_cache_mode = force_custom_plan"
    })
    .await
}
