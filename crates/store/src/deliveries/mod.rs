//! The delivery log: one delivery per event (the outbox row), its status and its attempts.
//! - `state`: every move of a delivery's state, one function each (the one home of its writes);
//! - `attempts`: the worker's hot-path read (what an attempt starts from);
//! - `filter`: which deliveries a list, a count or a bulk replay is about, as statements;
//! - `lists`: the lists, the console's search, one delivery;
//! - `replays`: one delivery or a filter's matches put back to the relay, paced;
//! - `counting`: a dry run's count, from the hourly totals where they vouch for the range;
//! - `logs`: rewriting old attempt logs into the compact form;
//! - `rows`: the deliveries in rows of their own, kept beside the outbox, and their history's fill.

use diesel::{Queryable, QueryableByName, Selectable};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::{deliveries, outbox};
use crate::secrets::OpenError;
use crate::webhooks::WebhookForDelivery;
use qualifier_domain::delivery::{AttemptEntry, DeliveryState};
use qualifier_domain::health::EndpointState;
use qualifier_domain::pace::WaitingFor;
use qualifier_domain::{DeliveryStatus, EventType};

mod attempts;
pub mod state;
pub use state::{Outcome, Written};
mod counting;
mod filter;
mod lists;
mod logs;
mod replays;
mod rows;

pub use crate::partitions::{DeliveryRef, day_bounds};
pub use filter::DeliveryFilter;
pub(crate) use lists::listed_endpoint;
pub use logs::CompactedBatch;
pub use replays::{ReplayCount, replay_answer};
pub use rows::Fill;

#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    pub id: Uuid,
    /// The endpoint it goes to.
    pub endpoint_id: Uuid,
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
    /// Why a delivery not yet sent waits: for the endpoint's throttle, or for an earlier
    /// delivery of its lead (docs/delivery.md, "Throttle and order"). Present only then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingFor>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub delivery: Delivery,
    pub attempt_log: Vec<AttemptEntry>,
}

/// The columns of a delivery as the API shows it, from its event (`o`) and its own row (`d`,
/// joined by [`EVENT_WITH_DELIVERY`]): what [`Delivered`] reads.
const DELIVERED_COLUMNS: &str = "o.seq, d.delivery_id, d.endpoint_id, o.event_id, o.event_type, \
     d.state::text AS state, d.retrying, d.attempts, d.last_status_code, d.last_error, \
     o.created_at, d.updated_at, o.erased_at";

/// An event and its deliveries' rows (one per endpoint it went to), found by their key's first
/// column from the event.
const EVENT_WITH_DELIVERY: &str = "outbox o JOIN deliveries d ON d.seq = o.seq";

/// A delivery read from its own row and its event's: the state as the delivery row keeps it
/// ([`DeliveryState`]), the rest as the event was written. Read by name from
/// [`DELIVERED_COLUMNS`] in a statement written whole, or selected (`as_select`) from `outbox`
/// joined to `deliveries` in one diesel builds.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = outbox)]
struct Delivered {
    #[diesel(sql_type = diesel::sql_types::Int8)]
    seq: i64,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    #[diesel(select_expression = deliveries::delivery_id)]
    delivery_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    #[diesel(select_expression = deliveries::endpoint_id)]
    endpoint_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    event_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Text)]
    event_type: EventType,
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(select_expression = deliveries::state)]
    state: DeliveryState,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    #[diesel(select_expression = deliveries::retrying)]
    retrying: bool,
    #[diesel(sql_type = diesel::sql_types::Int4)]
    #[diesel(select_expression = deliveries::attempts)]
    attempts: i32,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Int4>)]
    #[diesel(select_expression = deliveries::last_status_code)]
    last_status_code: Option<i32>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    #[diesel(select_expression = deliveries::last_error)]
    last_error: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = diesel::sql_types::Timestamptz)]
    #[diesel(select_expression = deliveries::updated_at)]
    updated_at: OffsetDateTime,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    erased_at: Option<OffsetDateTime>,
}

impl Delivered {
    fn summary(&self) -> Delivery {
        Delivery {
            id: self.delivery_id,
            endpoint_id: self.endpoint_id,
            event_id: self.event_id,
            event_type: self.event_type,
            status: self.state.status(self.retrying),
            attempts: self.attempts,
            last_status_code: self.last_status_code,
            last_error: self.last_error.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            erased: self.erased_at.is_some(),
            waiting_for: self.state.waiting_for(),
        }
    }
}

/// [`Delivered`] with its attempt log and whether its event is a test: one delivery's page.
#[derive(Debug, Clone, QueryableByName)]
struct DeliveredDetail {
    #[diesel(embed)]
    delivered: Delivered,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    attempt_log: Value,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    is_test: bool,
}
/// The state an attempt starts from (see [`Deliveries::delivery_contexts`]).
#[derive(Clone)]
pub struct DeliveryContext {
    pub status: DeliveryStatus,
    /// Its row's state and the instant it is due, as read at `read_at`: whether a message that
    /// carries it may send it ([`qualifier_domain::delivery::DeliveryState::waits_in_row`]).
    pub state: qualifier_domain::delivery::DeliveryState,
    pub due_at: Option<OffsetDateTime>,
    pub read_at: OffsetDateTime,
    /// The endpoint it goes to (its health, throttle and order are that endpoint's).
    pub endpoint: crate::endpoints::EndpointKey,
    /// `Some(Err(_))` when the webhook exists but its sealed secret cannot be opened (the
    /// `QUALIFIER_SECRET_KEY` changed): the attempt fails like any other and can be replayed
    /// after the secret is rotated, instead of requeueing forever.
    pub webhook: Option<Result<WebhookForDelivery, OpenError>>,
    /// Its endpoint's health as of the read.
    pub health: EndpointGlance,
    /// The throttle's turn the delivery holds, when it waited for one in its row.
    pub paced_at: Option<OffsetDateTime>,
    /// Its place in its lead's order, when its webhook orders per lead and it is neither a
    /// test event nor a replay.
    pub order: Option<LeadOrder>,
}

/// A delivery in its lead's order (docs/delivery.md, "Throttle and order").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadOrder {
    pub org_id: Uuid,
    /// A lead's order is kept per endpoint.
    pub endpoint_id: Uuid,
    pub lead_id: Uuid,
    pub seq: i64,
    /// An earlier delivery of the lead is pending or retrying (as of the read).
    pub earlier_pending: bool,
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
/// One attempt's outcome to record with [`Deliveries::record_attempts`]: its log entry, the
/// status it leads to and, for a failed attempt that will be retried, its next attempt, written
/// in the same statement (one write settles a failed attempt).
#[derive(Debug, Clone)]
pub struct AttemptWrite {
    pub delivery: DeliveryRef,
    pub entry: AttemptEntry,
    pub status: DeliveryStatus,
    pub next: Option<NextAttempt>,
}

/// A delivery's next attempt, due at an instant: it waits in its row for the relay, as
/// [`Deliveries::schedule_attempts`] schedules one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextAttempt {
    pub attempt: u32,
    pub at: time::OffsetDateTime,
}
