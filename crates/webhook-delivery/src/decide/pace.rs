//! The endpoint's throttle (docs/delivery.md, "Throttle and order"): a throttled endpoint
//! receives one request per turn, turns one spacing (a second over `max_per_second`) apart,
//! handed out by `endpoint_pacing` across every replica (`crates/store/src/pacing.rs`). These
//! rules say whether a request holds a turn already, must take one, and how long it may wait
//! for it in the process rather than in its row. Waiting never spends an attempt and is never a
//! failure: nothing here touches the endpoint's health. (The lead order's wait is
//! [`super::Before::WaitForEarlier`].)

use std::time::Duration;

use qualifier_domain::pace::{MaxPerSecond, SENT_AHEAD};

/// The longest a delivery waits for its turn in the process, holding its message; a turn
/// further off is waited for in the delivery's row. A second at most, so that a change of the
/// rate reaches every waiting delivery within a second (the rows are re-timed when it is
/// saved).
const WAIT_HERE_AT_MOST: Duration = Duration::from_secs(1);

/// What a request does about the throttle before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// No throttle: send now.
    Free,
    /// The request holds its turn (it waited for it in its row and the relay sent it back just
    /// before): send once `wait` has passed.
    Holding { wait: Duration },
    /// Take the endpoint's next turn; wait for it here if it is at most `wait_here` off,
    /// otherwise in the delivery's row.
    Take {
        rate: MaxPerSecond,
        wait_here: Duration,
    },
}

/// How long a delivery may wait here for its turn at `rate`: two turns' worth, so that a steady
/// flow goes straight through without a round trip to its row, but never less than the relay's
/// head start (a turn that near is not worth parking for) and never more than
/// [`WAIT_HERE_AT_MOST`].
pub fn turn_wait_here(rate: MaxPerSecond) -> Duration {
    (rate.spacing() * 2).clamp(SENT_AHEAD, WAIT_HERE_AT_MOST)
}

/// Whether a request to an endpoint throttled at `rate` (`None`: no throttle) holds a turn or
/// must take one. `turn_in_ms`: how far off the turn its row holds is (negative: past), when it
/// holds one. A held turn is honoured from the relay's head start before it until one spacing
/// after it: later than that, sending it would put two requests closer than the spacing (the
/// turn after it may be going out now), so it takes a new turn instead.
pub fn pacing(rate: Option<MaxPerSecond>, turn_in_ms: Option<i64>) -> Pacing {
    let Some(rate) = rate else {
        return Pacing::Free;
    };
    let spacing_ms = rate.spacing().as_millis() as i64;
    let ahead_ms = (SENT_AHEAD + WAIT_HERE_AT_MOST).as_millis() as i64;
    match turn_in_ms {
        Some(t) if t > -spacing_ms && t <= ahead_ms => Pacing::Holding {
            wait: Duration::from_millis(t.max(0) as u64),
        },
        _ => Pacing::Take {
            rate,
            wait_here: turn_wait_here(rate),
        },
    }
}

/// Whether a request that slept until its turn and woke `late` after it may still go: the same
/// line as for a held turn in [`pacing`]. A worker that wakes a spacing or more after its turn
/// (a machine short of CPU, a long pause) would send next to the request of the turn after
/// it, and a receiver counting a second would see more than the rate plus one; it takes a new
/// turn instead, and the turn it missed goes unused.
pub fn woke_in_time(rate: Option<MaxPerSecond>, late: Duration) -> bool {
    rate.is_none_or(|r| late < r.spacing())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(n: u64) -> Option<MaxPerSecond> {
        MaxPerSecond::new(n)
    }

    #[test]
    fn no_throttle_sends_at_once_whatever_the_row_holds() {
        assert_eq!(pacing(None, None), Pacing::Free);
        assert_eq!(pacing(None, Some(5_000)), Pacing::Free);
    }

    #[test]
    fn a_throttled_request_without_a_turn_takes_one() {
        assert!(matches!(pacing(rate(5), None), Pacing::Take { .. }));
    }

    #[test]
    fn a_held_turn_is_waited_for_and_honoured_until_one_spacing_after_it() {
        // 5 a second: turns 200 ms apart.
        assert_eq!(
            pacing(rate(5), Some(80)),
            Pacing::Holding {
                wait: Duration::from_millis(80)
            }
        );
        assert_eq!(
            pacing(rate(5), Some(-150)),
            Pacing::Holding {
                wait: Duration::ZERO
            }
        );
        assert!(
            matches!(pacing(rate(5), Some(-200)), Pacing::Take { .. }),
            "a spacing late: the next turn may be going out now"
        );
        assert!(
            matches!(pacing(rate(5), Some(60_000)), Pacing::Take { .. }),
            "a turn far off is stale (the rate changed, or the row was held meanwhile)"
        );
    }

    #[test]
    fn the_wait_here_is_two_turns_within_bounds() {
        assert_eq!(turn_wait_here(rate(5).unwrap()), Duration::from_millis(400));
        assert_eq!(turn_wait_here(rate(1).unwrap()), Duration::from_secs(1));
        assert_eq!(turn_wait_here(rate(1000).unwrap()), SENT_AHEAD);
    }

    #[test]
    fn a_worker_that_wakes_a_spacing_after_its_turn_takes_another() {
        // 5 a second: turns 200 ms apart.
        assert!(woke_in_time(rate(5), Duration::ZERO));
        assert!(woke_in_time(rate(5), Duration::from_millis(199)));
        assert!(!woke_in_time(rate(5), Duration::from_millis(200)));
        assert!(!woke_in_time(rate(1000), Duration::from_millis(2)));
        assert!(
            woke_in_time(None, Duration::from_secs(60)),
            "no throttle: nothing to keep"
        );
    }
}
