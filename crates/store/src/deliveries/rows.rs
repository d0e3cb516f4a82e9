//! Deliveries in rows of their own, beside the outbox: the second shape, written while the
//! first (the delivery's state in its event's `outbox` row, [`super::state`]) is still the one
//! read (docs/decisions.md, "Events and deliveries apart").
//!
//! `deliveries` holds one row per (event, endpoint) with the state as one enum and one due
//! time (migrations/2026-12-03-000043_deliveries_of_their_own/up.sql maps the outbox's columns
//! to them, `qualifier_delivery_of`). The outbox's triggers keep it in step with every
//! statement that writes the outbox, whichever release runs the statement; the events stored
//! before those triggers existed are copied here, by [`Deliveries::fill_deliveries`], in batches that
//! housekeeping runs (crates/lead-api/src/housekeeping.rs, `fill_deliveries`).

use diesel::sql_types::{Int4, Int8};

use crate::StoreError;
use crate::answer::ReadToEnd;

/// What one batch of the history's fill did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Copied the delivery rows of this many stored events (fewer than the batch: the last).
    Copied(usize),
    /// Another replica's batch is running.
    Busy,
    /// Every event stored before the triggers has its delivery row.
    Done,
}

#[derive(diesel::QueryableByName)]
struct Read {
    #[diesel(sql_type = Int4)]
    n: i32,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = Int8)]
    count: i64,
}

impl crate::facets::Deliveries<'_> {
    /// One batch of the history's fill: the delivery rows of at most `batch` events stored
    /// before the outbox's triggers existed, oldest first (`qualifier_deliveries_fill`). A row
    /// the triggers wrote meanwhile is left as it is: it is newer.
    pub async fn fill_deliveries(&self, batch: i32) -> Result<Fill, StoreError> {
        let mut conn = self.conn().await?;
        let read: Read = diesel::sql_query("SELECT qualifier_deliveries_fill($1) AS n")
            .bind::<Int4, _>(batch)
            .one(&mut conn)
            .await?;
        Ok(match read.n {
            n if n < 0 => Fill::Done,
            0 => Fill::Busy,
            n => Fill::Copied(n as usize),
        })
    }

    /// How many deliveries the two shapes disagree on, among the events the fill has reached
    /// (`qualifier_deliveries_differ`): 0 when the delivery rows say what the outbox says.
    /// Reads every stored event: a check, not a loop's.
    pub async fn deliveries_differ(&self) -> Result<i64, StoreError> {
        let mut conn = self.conn().await?;
        let c: Count = diesel::sql_query("SELECT qualifier_deliveries_differ() AS count")
            .one(&mut conn)
            .await?;
        Ok(c.count)
    }
}
