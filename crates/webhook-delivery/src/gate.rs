//! Per-org fairness inside one `webhook-delivery` process.
//!
//! - **In-flight cap:** an org may hold at most `cap` of the process's attempt slots. One org's
//!   hanging endpoint therefore cannot take the slots every other org needs; its extra messages
//!   are parked (they wait in a TTL queue without using an attempt).
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

use crate::decide::{Hold, MAX_RETRY_AFTER};

#[derive(Default)]
struct OrgState {
    in_flight: usize,
    not_before: Option<Instant>,
}

pub struct OrgGate {
    cap: usize,
    orgs: Mutex<HashMap<Uuid, OrgState>>,
}

/// An attempt slot of one org; released on drop.
pub struct Permit {
    gate: Arc<OrgGate>,
    org: Uuid,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut orgs = self.gate.orgs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(st) = orgs.get_mut(&self.org) {
            st.in_flight = st.in_flight.saturating_sub(1);
            let expired = st.not_before.is_none_or(|t| t <= Instant::now());
            if st.in_flight == 0 && expired {
                orgs.remove(&self.org);
            }
        }
    }
}

impl OrgGate {
    pub fn new(cap: usize) -> Arc<OrgGate> {
        Arc::new(OrgGate {
            cap: cap.max(1),
            orgs: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for `org`, or the reason it must wait (the rule that orders these reasons is
    /// [`crate::decide::hold`]).
    pub fn enter(self: &Arc<Self>, org: Uuid) -> Result<Permit, Hold> {
        let mut orgs = self.orgs.lock().unwrap_or_else(|p| p.into_inner());
        let st = orgs.entry(org).or_default();
        if st.not_before.is_some_and(|t| t > Instant::now()) {
            return Err(Hold::BackingOff);
        }
        if st.in_flight >= self.cap {
            return Err(Hold::AtCap);
        }
        st.in_flight += 1;
        Ok(Permit {
            gate: self.clone(),
            org,
        })
    }

    /// The receiver asked for a pause: no new attempt for `org` until `wait` has passed.
    pub fn back_off(&self, org: Uuid, wait: Duration) {
        let until = Instant::now() + wait.min(MAX_RETRY_AFTER);
        let mut orgs = self.orgs.lock().unwrap_or_else(|p| p.into_inner());
        let st = orgs.entry(org).or_default();
        st.not_before = Some(st.not_before.map_or(until, |t| t.max(until)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_slots_per_org_and_frees_them_on_drop() {
        let gate = OrgGate::new(2);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let p1 = gate.enter(a).unwrap();
        let _p2 = gate.enter(a).unwrap();
        assert_eq!(gate.enter(a).err(), Some(Hold::AtCap));
        let _other = gate.enter(b).expect("another org is not affected");
        drop(p1);
        assert!(gate.enter(a).is_ok(), "a freed slot is usable");
    }

    #[test]
    fn back_off_holds_the_org_until_it_passes() {
        let gate = OrgGate::new(4);
        let a = Uuid::new_v4();
        gate.back_off(a, Duration::from_millis(50));
        assert_eq!(gate.enter(a).err(), Some(Hold::BackingOff));
        assert!(gate.enter(Uuid::new_v4()).is_ok());
        std::thread::sleep(Duration::from_millis(60));
        assert!(gate.enter(a).is_ok());
    }
}
