//! Human handoff: requested by the AI, accepted by an operator, released back to the AI.

use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

named_enum! {
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum HandoffState {
        Requested,
        Accepted,
        Released,
    }
}

impl HandoffState {
    /// The state machine: requested -> accepted -> released, nothing else.
    pub fn can_move_to(self, next: HandoffState) -> bool {
        matches!(
            (self, next),
            (HandoffState::Requested, HandoffState::Accepted)
                | (HandoffState::Accepted, HandoffState::Released)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Handoff {
    pub id: Uuid,
    pub lead_id: Uuid,
    pub state: HandoffState,
    pub reason: Option<String>,
    pub operator: Option<String>,
    #[serde(with = "crate::timefmt::millis")]
    pub requested_at: OffsetDateTime,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub accepted_at: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub released_at: Option<OffsetDateTime>,
}

#[cfg(test)]
mod tests {
    use super::HandoffState::{self, *};

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for st in [Requested, Accepted, Released] {
            assert_eq!(st.as_str().parse::<HandoffState>(), Ok(st));
        }
        assert!("open".parse::<HandoffState>().is_err());
    }

    #[test]
    fn only_forward_transitions_are_allowed() {
        assert!(Requested.can_move_to(Accepted));
        assert!(Accepted.can_move_to(Released));
        assert!(!Requested.can_move_to(Released));
        assert!(!Released.can_move_to(Accepted));
        assert!(!Accepted.can_move_to(Accepted));
        assert!(!Released.can_move_to(Requested));
    }
}
