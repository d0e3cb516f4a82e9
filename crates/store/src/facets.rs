//! The store by what it keeps. [`Store`] holds the pool, the keys and the settings, and what
//! every request needs (orgs, tokens, idempotency keys); each facet is a view of it that
//! groups the operations on one kind of record, so that a reader finds a lead's operations in
//! [`Leads`], a delivery's in [`Deliveries`], an endpoint's in [`Endpoints`], the console's in
//! [`Console`] and the day-to-day upkeep of the tables in [`Upkeep`]. A facet borrows the
//! store (`store.leads().list_leads(..)`) and reaches its pool and settings through it.

use crate::Store;

macro_rules! facet {
    ($(#[$doc:meta])* $name:ident, $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'a>(pub(crate) &'a Store);

        impl std::ops::Deref for $name<'_> {
            type Target = Store;
            fn deref(&self) -> &Store {
                self.0
            }
        }

        impl Store {
            $(#[$doc])*
            pub fn $method(&self) -> $name<'_> {
                $name(self)
            }
        }
    };
}

facet!(
    /// Leads: reads, writes, handoffs, erasure and the events feed.
    Leads,
    leads
);
facet!(
    /// Deliveries: their lists, attempts and outcomes, waits, throttle turns and replays.
    Deliveries,
    deliveries
);
facet!(
    /// Endpoints: their settings, secrets and certificates, health and test events.
    Endpoints,
    endpoints
);
facet!(
    /// The console: sign-in tickets and sessions, and the hourly totals it charts.
    Console,
    console
);
facet!(
    /// The tables' upkeep: the outbox's partitions and sequence, retention and compaction.
    Upkeep,
    upkeep
);
