//! How a receiver sets the pace of its deliveries (docs/delivery.md, "Throttle and order"): a
//! request rate its endpoint takes at most (`max_per_second`) and whether a lead's deliveries go
//! one at a time in event order (`ordering`). The settings live on the org's webhook; the rules
//! that apply them are the delivery rules' (`crates/webhook-delivery/src/decide/pace.rs`).

use std::time::Duration;

named_enum! {
    /// `none`: deliveries go as soon as they can, retries overtaking. `per_lead`: one lead's
    /// deliveries one at a time, in the order its events occurred; leads stay independent.
    #[derive(Default)]
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum DeliveryOrdering {
        #[default]
        None,
        PerLead,
    }
}

named_enum! {
    /// Why a delivery that is neither finished nor retrying waits (the deliveries list shows
    /// it): for its turn under the endpoint's throttle, or for an earlier delivery of its lead.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum WaitingFor {
        Throttle,
        EarlierDelivery,
    }
}

/// The most requests per second a throttle can be set to, and the least.
pub const MAX_PER_SECOND_LIMIT: u32 = 1000;
pub const MIN_PER_SECOND: u32 = 1;

/// The 422 message of a `max_per_second` out of range or not an integer.
pub const MAX_PER_SECOND_MESSAGE: &str =
    "max_per_second must be an integer from 1 to 1000, or null";
/// The 422 message of an `ordering` that is not one of its names.
pub const ORDERING_MESSAGE: &str = "ordering must be \"none\" or \"per_lead\"";

/// A throttle's rate: requests per second, from 1 to 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct MaxPerSecond(u32);

impl MaxPerSecond {
    /// `n` when it is within 1..=1000.
    pub fn new(n: u64) -> Option<MaxPerSecond> {
        u32::try_from(n)
            .ok()
            .filter(|n| (MIN_PER_SECOND..=MAX_PER_SECOND_LIMIT).contains(n))
            .map(MaxPerSecond)
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// The time between two requests' turns: one second over the rate.
    pub fn spacing(self) -> Duration {
        Duration::from_secs(1) / self.0
    }
}

/// How long before its turn the relay sends a delivery that waits for the throttle, so that the
/// time a message takes from the database to the worker is spent before the turn, not after it
/// (the worker waits out the rest).
pub const SENT_AHEAD: Duration = Duration::from_millis(100);

/// The webhook's pace: its throttle and its ordering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pace {
    pub max_per_second: Option<MaxPerSecond>,
    pub ordering: DeliveryOrdering,
}

/// A stored rate as the settings know it: a value outside the range (only a hand edit can write
/// one) is clamped into it, never dropped, so an edit cannot lift a throttle.
pub fn stored_rate(n: Option<i64>) -> Option<MaxPerSecond> {
    n.map(|n| MaxPerSecond(n.clamp(MIN_PER_SECOND.into(), MAX_PER_SECOND_LIMIT.into()) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_from_one_to_a_thousand() {
        assert_eq!(MaxPerSecond::new(0), None);
        assert_eq!(MaxPerSecond::new(1).map(MaxPerSecond::get), Some(1));
        assert_eq!(MaxPerSecond::new(1000).map(MaxPerSecond::get), Some(1000));
        assert_eq!(MaxPerSecond::new(1001), None);
        assert_eq!(MaxPerSecond::new(u64::MAX), None);
    }

    #[test]
    fn spacing_is_a_second_over_the_rate() {
        assert_eq!(
            MaxPerSecond::new(5).unwrap().spacing(),
            Duration::from_millis(200)
        );
        assert_eq!(
            MaxPerSecond::new(1000).unwrap().spacing(),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn names_are_the_documented_ones() {
        assert_eq!(DeliveryOrdering::PerLead.as_str(), "per_lead");
        assert_eq!(
            "none".parse::<DeliveryOrdering>().unwrap(),
            DeliveryOrdering::None
        );
        assert!("PER_LEAD".parse::<DeliveryOrdering>().is_err());
        assert_eq!(WaitingFor::EarlierDelivery.as_str(), "earlier_delivery");
    }

    #[test]
    fn a_hand_edited_rate_is_clamped_not_lifted() {
        assert_eq!(stored_rate(Some(0)).map(MaxPerSecond::get), Some(1));
        assert_eq!(stored_rate(Some(5000)).map(MaxPerSecond::get), Some(1000));
        assert_eq!(stored_rate(None), None);
    }
}
