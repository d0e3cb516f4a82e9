//! What each promise counts. A promise kept per org is broken the moment it is counted per
//! endpoint (an org with four endpoints takes four shares), and one kept per endpoint is broken
//! when counted per message (a bundle carries several deliveries): the unit is part of the
//! promise, so it is a type here, and the code that keeps a promise takes the type of its unit.
//!
//! - [`OrgId`]: fair share of a process's attempt slots, the test-event quota;
//! - [`EndpointId`]: health, the throttle, a lead's order, a receiver's `Retry-After`, the
//!   attempts' lane (failing endpoints go after the others), the share inside its org;
//! - the delivery (its row): attempts and the instant its next one is due;
//! - the lead: erasure and revisions.
//!
//! [`Promise::unit`] is the table; `docs/decisions.md` ("What each promise counts") says why.

use std::fmt;
use uuid::Uuid;

/// An organisation: the unit of fairness between customers and of their quotas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OrgId(pub Uuid);

/// An endpoint (a receiver of one org): the unit of health, throttle, order and back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointId(pub Uuid);

/// An endpoint with the org it belongs to: what a delivery's attempt is counted against, at
/// both levels of the fair share. Built only from both ids, so one is never passed for the
/// other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndpointOf {
    pub org: OrgId,
    pub endpoint: EndpointId,
}

impl EndpointOf {
    pub fn new(org: Uuid, endpoint: Uuid) -> Self {
        EndpointOf {
            org: OrgId(org),
            endpoint: EndpointId(endpoint),
        }
    }
}

impl fmt::Display for OrgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for EndpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The units a promise can be kept per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Org,
    Endpoint,
    Delivery,
    Lead,
}

/// The promises whose unit has been mistaken before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promise {
    /// `QUALIFIER_DELIVERY_ORG_CONCURRENCY`: an org's attempts in flight in one process.
    FairShare,
    /// Test events: 10 a minute.
    TestEventQuota,
    /// Share of its org's slots: no endpoint takes them all while a sibling waits.
    ShareInOrg,
    Health,
    Throttle,
    LeadOrder,
    RetryAfter,
    /// Failing endpoints' attempts wait behind the others'.
    Lane,
    /// Attempts of a cycle (five, then dead).
    Attempts,
    /// Nothing is attempted before its row says it is due.
    DueTime,
    Erasure,
    Revisions,
}

impl Promise {
    /// What the promise counts.
    pub const fn unit(self) -> Unit {
        match self {
            Promise::FairShare | Promise::TestEventQuota => Unit::Org,
            Promise::ShareInOrg
            | Promise::Health
            | Promise::Throttle
            | Promise::LeadOrder
            | Promise::RetryAfter
            | Promise::Lane => Unit::Endpoint,
            Promise::Attempts | Promise::DueTime => Unit::Delivery,
            Promise::Erasure | Promise::Revisions => Unit::Lead,
        }
    }
}
