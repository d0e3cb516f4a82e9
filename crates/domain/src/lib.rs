//! Qualifier's domain: leads, stages, handoffs, webhook events and the validated values they are
//! made of. No IO lives here, so both services and the receiver kit can share it and every rule
//! is unit-tested beside the type that enforces it ("parse, don't validate").

#[macro_use]
mod named;

pub mod client_cert;
pub mod delivery;
pub mod destination;
pub mod event;
pub mod filter;
pub mod handoff;
pub mod health;
pub mod lead;
pub mod netguard;
pub mod pace;
pub mod receiver;
#[cfg(feature = "diesel")]
mod sql;
#[cfg(feature = "diesel")]
pub use sql::DeliveryStateSql;
pub mod timefmt;
pub mod units;
pub mod validate;

pub use delivery::DeliveryStatus;
pub use event::{Envelope, EventData, EventType};
pub use handoff::{Handoff, HandoffState};
pub use lead::{ExternalRef, Lead, Stage};
pub use validate::FieldError;
