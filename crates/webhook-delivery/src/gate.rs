//! Per-org fairness inside one `webhook-delivery` process: the facts the delivery rules need
//! (how many attempts each org has in flight, whether a receiver asked for a pause, how long an
//! org's attempts take) and the slots themselves. The rules are [`crate::decide`]'s.
//!
//! - **In-flight cap, work-conserving:** an org may hold `cap` of the process's `slots` at once,
//!   and borrow idle ones beyond that on the terms of [`decide::admit`]. An org that cannot
//!   start parks its message (a TTL queue, no attempt used) and counts as waiting until the
//!   message is back.
//! - **Back-off:** after a 429 or 503 with `Retry-After`, no attempt for that org starts before
//!   the time the receiver asked for.
//!
//! Both are per process: with N replicas an org can hold up to N x cap slots in total, and a
//! back-off learned by one replica is carried to the others by the failed message's
//! `not-before` header only. That keeps the hot path free of shared state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::decide::{self, Hold, OrgSlots, Slots};

/// How much one attempt moves an org's typical duration (exponential moving average).
const EWMA_WEIGHT: f64 = 0.2;

/// Orgs idle this long are forgotten (their typical duration too), so the map stays small.
const FORGET_AFTER: Duration = Duration::from_secs(600);

struct OrgState {
    in_flight: usize,
    not_before: Option<Instant>,
    /// A message of this org is parked because it was at its cap, until about this time.
    waiting_until: Option<Instant>,
    /// Typical attempt duration (moving average), once one attempt finished.
    typical: Option<Duration>,
    /// When its first attempt started (what [`decide::SETTLE_PARK`] is measured from).
    first_started: Option<Instant>,
    last_seen: Instant,
}

impl OrgState {
    fn new(now: Instant) -> Self {
        OrgState {
            in_flight: 0,
            not_before: None,
            waiting_until: None,
            typical: None,
            first_started: None,
            last_seen: now,
        }
    }
}

struct State {
    orgs: HashMap<Uuid, OrgState>,
    in_flight: usize,
}

pub struct OrgGate {
    cap: usize,
    slots: usize,
    attempt_timeout: Duration,
    state: Mutex<State>,
}

/// An attempt slot of one org; released on drop.
pub struct Permit {
    gate: Arc<OrgGate>,
    org: Uuid,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        if let Some(o) = st.orgs.get_mut(&self.org) {
            o.in_flight = o.in_flight.saturating_sub(1);
        }
    }
}

fn remaining(t: Option<Instant>, now: Instant) -> Option<Duration> {
    t.filter(|t| *t > now).map(|t| t - now)
}

impl OrgGate {
    /// `slots`: the process's attempt slots (`QUALIFIER_DELIVERY_CONCURRENCY`); `cap`: what
    /// one org may always hold (`QUALIFIER_DELIVERY_ORG_CONCURRENCY`).
    pub fn new(cap: usize, slots: usize, attempt_timeout: Duration) -> Arc<OrgGate> {
        let cap = cap.max(1);
        Arc::new(OrgGate {
            cap,
            attempt_timeout,
            slots: slots.max(cap),
            state: Mutex::new(State {
                orgs: HashMap::new(),
                in_flight: 0,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for `org`, or why it must wait (with what the park rule needs to know:
    /// [`crate::decide::park_wait`]).
    pub fn enter(self: &Arc<Self>, org: Uuid) -> Result<Permit, Hold> {
        let now = Instant::now();
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.orgs.len() > 1024 {
            st.orgs
                .retain(|_, o| o.in_flight > 0 || now.duration_since(o.last_seen) < FORGET_AFTER);
        }
        // Another org waits with less than its cap in flight: idle slots are its, not ours.
        let others_starved = st.orgs.iter().any(|(id, o)| {
            *id != org && o.in_flight < self.cap && remaining(o.waiting_until, now).is_some()
        });
        let process = Slots {
            slots: self.slots,
            in_flight: st.in_flight,
            cap: self.cap,
            others_starved,
            attempt_timeout: self.attempt_timeout,
        };
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        o.last_seen = now;
        let view = OrgSlots {
            in_flight: o.in_flight,
            paused_for: remaining(o.not_before, now),
            typical: o.typical,
            first_started_ago: o.first_started.map(|t| now.duration_since(t)),
        };
        decide::admit(&view, &process)?;
        o.first_started.get_or_insert(now);
        o.in_flight += 1;
        st.in_flight += 1;
        Ok(Permit {
            gate: self.clone(),
            org,
        })
    }

    /// A message of `org` was parked at its cap for `wait`: other orgs yield idle slots to it
    /// meanwhile.
    pub fn waiting(&self, org: Uuid, wait: Duration) {
        let now = Instant::now();
        let mut st = self.lock();
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        let until = now + wait;
        o.waiting_until = Some(o.waiting_until.map_or(until, |t| t.max(until)));
    }

    /// One attempt of `org` took `took` (feeds the typical duration the park rule uses).
    pub fn observe(&self, org: Uuid, took: Duration) {
        let now = Instant::now();
        let mut st = self.lock();
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        o.typical = Some(match o.typical {
            None => took,
            Some(t) => t.mul_f64(1.0 - EWMA_WEIGHT) + took.mul_f64(EWMA_WEIGHT),
        });
    }

    /// The receiver asked for a pause: no new attempt for `org` until `wait` has passed (the
    /// delivery rules clamped it already: [`decide::parse_retry_after`]).
    pub fn back_off(&self, org: Uuid, wait: Duration) {
        let now = Instant::now();
        let until = now + wait;
        let mut st = self.lock();
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        o.not_before = Some(o.not_before.map_or(until, |t| t.max(until)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    fn at_cap(r: Result<Permit, Hold>) -> bool {
        matches!(r, Err(Hold::AtCap { .. }))
    }

    #[test]
    fn under_contention_the_cap_counts_slots_per_org_and_frees_them_on_drop() {
        // 4 slots, 2 per org: with another org waiting, nobody goes beyond its cap.
        let gate = OrgGate::new(2, 4, T);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        gate.waiting(c, Duration::from_secs(5));
        let p1 = gate.enter(a).unwrap();
        let _p2 = gate.enter(a).unwrap();
        assert!(at_cap(gate.enter(a)));
        let _other = gate.enter(b).expect("another org is not affected");
        drop(p1);
        assert!(gate.enter(a).is_ok(), "a freed slot is usable");
    }

    #[test]
    fn a_lone_org_uses_idle_slots_but_leaves_a_cap_free_for_newcomers() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20));
        let held: Vec<_> = (0..6).map(|_| gate.enter(a).expect("idle slots")).collect();
        assert!(at_cap(gate.enter(a)), "the last cap's worth stays free");
        let _b1 = gate.enter(b).expect("a newcomer finds a slot at once");
        let _b2 = gate.enter(b).expect("and its whole cap");
        assert!(at_cap(gate.enter(b)), "no slot left");
        drop(held);
    }

    #[test]
    fn an_org_waiting_elsewhere_stops_others_from_going_beyond_their_cap() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20));
        let _a: Vec<_> = (0..2).map(|_| gate.enter(a).unwrap()).collect();
        gate.waiting(b, Duration::from_secs(5));
        assert!(at_cap(gate.enter(a)), "b waits, so a keeps to its cap");
    }

    #[test]
    fn back_off_holds_the_org_until_it_passes() {
        let gate = OrgGate::new(4, 16, T);
        let a = Uuid::new_v4();
        gate.back_off(a, Duration::from_millis(50));
        assert!(matches!(
            gate.enter(a),
            Err(Hold::BackingOff { for_ms }) if for_ms <= 50
        ));
        assert!(gate.enter(Uuid::new_v4()).is_ok());
        std::thread::sleep(Duration::from_millis(60));
        assert!(gate.enter(a).is_ok());
    }

    #[test]
    fn the_typical_duration_follows_recent_attempts() {
        let gate = OrgGate::new(1, 2, T);
        let a = Uuid::new_v4();
        let _p = gate.enter(a).unwrap();
        for _ in 0..30 {
            gate.observe(a, Duration::from_secs(10));
        }
        match gate.enter(a) {
            Err(Hold::AtCap {
                typical_ms: Some(ms),
                ..
            }) => assert!((9_000..=10_000).contains(&ms)),
            _ => panic!("at cap with a typical duration"),
        }
    }
}
