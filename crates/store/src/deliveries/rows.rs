//! The copy of the history into delivery rows: every delivery has a row of its own in
//! `deliveries` (one per event and endpoint, its state one enum and one due time), and the
//! events stored before those rows existed, whose deliveries' states are in their `outbox`
//! rows' columns, are copied there (`qualifier_deliveries_fill`, mapping the columns with
//! `qualifier_delivery_of`), by [`Deliveries::fill_deliveries`], in batches that housekeeping
//! runs (crates/lead-api/src/housekeeping.rs, `fill_deliveries`) until none is left.

use diesel::sql_types::Int4;

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
}
