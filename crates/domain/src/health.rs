//! An org endpoint's health (docs/delivery.md, "Endpoint health"): whether its deliveries are attempted
//! (`healthy`), held while probes find out when it is back (`failing`), or not sent at all
//! (`disabled`). The rules that move it live in `webhook-delivery`'s `decide/health.rs`; this is the
//! state they move, as the store keeps it and the API shows it.

use time::OffsetDateTime;

named_enum! {
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum EndpointState {
        Healthy,
        /// Failures in a row: deliveries wait (no attempt spent), probes run.
        Failing,
        /// Failing too long, or it answered 410 Gone: `enabled` is false until someone re-enables.
        Disabled,
    }
}

/// The health object of `GET …/webhook` (the fields without `serde(skip)`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EndpointHealth {
    pub state: EndpointState,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub failing_since: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub last_success_at: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub last_failure_at: Option<OffsetDateTime>,
    /// In the delivery log's wording (never an address).
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// The first failure of the current run (what the failing span is measured from).
    #[serde(skip)]
    pub streak_started_at: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub next_probe_at: Option<OffsetDateTime>,
    /// The wait before the next probe; doubles after each failed one.
    #[serde(skip)]
    pub probe_interval_ms: Option<u64>,
    pub disabled_reason: Option<String>,
}

impl Default for EndpointHealth {
    fn default() -> Self {
        EndpointHealth {
            state: EndpointState::Healthy,
            failing_since: None,
            last_success_at: None,
            last_failure_at: None,
            last_error: None,
            consecutive_failures: 0,
            streak_started_at: None,
            next_probe_at: None,
            probe_interval_ms: None,
            disabled_reason: None,
        }
    }
}

impl EndpointHealth {
    /// Healthy with no failure to remember: a success changes nothing, so it writes nothing.
    pub fn is_clean(&self) -> bool {
        self.state == EndpointState::Healthy && self.consecutive_failures == 0
    }
}

/// A change of state that someone is told about (an operational event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthChange {
    Failing,
    Recovered,
    Disabled,
}

impl HealthChange {
    /// The operational event's `type`.
    pub fn event_type(self) -> &'static str {
        match self {
            HealthChange::Failing => "endpoint.failing",
            HealthChange::Recovered => "endpoint.recovered",
            HealthChange::Disabled => "endpoint.disabled",
        }
    }
}

/// What happens to the deliveries held while an endpoint failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldDeliveries {
    /// They stay held.
    Keep,
    /// They go back to the relay, oldest first, with the attempts they had left.
    Release,
    /// They end `skipped`.
    Skip,
}

/// A new health and everything it brings, as data: the delivery rules decide it, the store
/// carries it out in one transaction under the endpoint's row lock.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthPlan {
    pub health: EndpointHealth,
    /// The change of state, if any (each queues its operational event).
    pub change: Option<HealthChange>,
    pub held: HeldDeliveries,
    /// The webhook's `enabled` becomes false.
    pub disable_webhook: bool,
}
