//! Per-org fairness inside one `webhook-delivery` process: the facts the delivery rules need
//! (how many attempts each org has in flight, whether a receiver asked for a pause, how long an
//! org's attempts take) and the slots themselves. The rules are [`crate::decide`]'s
//! (`decide/admission.rs`): the gate counts under its lock, asks [`decide::plan_admission`]
//! once per answer, and carries the answer out (a slot, a wait in the process, or a park).
//!
//! - **In-flight cap, work-conserving:** an org may hold `cap` of the process's `slots` at once,
//!   and borrow idle ones beyond that on the terms of the delivery rules. An org that cannot
//!   start parks its message (a TTL queue, no attempt used) and counts as waiting until the
//!   message is back.
//! - **Back-off:** after a 429 or 503 with `Retry-After`, no attempt for that org starts before
//!   the time the receiver asked for.
//!
//! Both are per process: with N replicas an org can hold up to N x cap slots in total, and a
//! back-off learned by one replica is carried to the others by the failed message's
//! `not-before` header only. That keeps the hot path free of shared state.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use uuid::Uuid;

use qualifier_bus::DeliveryMeta;

use crate::decide::{self, Admission, Lane, Neighbour, OrgSlots, ParkPlan, Process};

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
    /// Its messages waiting in the process for a slot ([`OrgGate::wait_for_slot`]).
    waiting_here: usize,
    /// When each of its messages parked at its cap is due back (earliest first).
    parked: BinaryHeap<Reverse<Instant>>,
    /// Woken once per slot of this org released: its longest-waiting message asks again.
    freed: Arc<Notify>,
    /// Its attempts in a row here that were not answered 2xx (reset by one that was).
    failed_in_a_row: u32,
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
            waiting_here: 0,
            parked: BinaryHeap::new(),
            freed: Arc::new(Notify::new()),
            failed_in_a_row: 0,
        }
    }
}

struct State {
    orgs: HashMap<Uuid, OrgState>,
    in_flight: usize,
    /// Messages waiting in the process for a slot beyond the reserve
    /// ([`OrgGate::wait_for_slot`]).
    waiting_here: usize,
}

pub struct OrgGate {
    cap: usize,
    slots: usize,
    attempt_timeout: Duration,
    state: Mutex<State>,
    /// Woken once per released slot (of any org): the longest-waiting message held in the
    /// process ([`OrgGate::wait_for_slot`]) asks again.
    freed: Notify,
    /// Messages of the foreground lane being handled now ([`OrgGate::foreground`]).
    foreground: AtomicUsize,
    /// Woken when the last of them ends: one background message goes at each such moment
    /// (the others at theirs, or at the end of their longest wait), never all of them at once.
    foreground_idle: Notify,
}

/// A message of the foreground lane while it is handled ([`OrgGate::foreground`]).
pub struct Foreground<'a> {
    gate: &'a OrgGate,
}

impl Drop for Foreground<'_> {
    fn drop(&mut self) {
        // One, not all: a failing endpoint's retries waiting together, let go together at the
        // first idle moment, were a burst of attempts that the next foreground messages then
        // waited behind.
        if self.gate.foreground.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.gate.foreground_idle.notify_one();
        }
    }
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
        let own = st.orgs.get_mut(&self.org).map(|o| {
            o.in_flight = o.in_flight.saturating_sub(1);
            o.freed.clone()
        });
        drop(st);
        // One waiter of its own org (a slot within its cap came back) and one of any org (a
        // slot beyond the reserve may have): not all, as a slot admits at most one message.
        if let Some(own) = own {
            own.notify_one();
        }
        self.gate.freed.notify_one();
    }
}

/// One message counted in `waiting_here` while it waits (also when its task is dropped).
struct Queued<'a> {
    gate: &'a OrgGate,
    org: Uuid,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.waiting_here = st.waiting_here.saturating_sub(1);
        if let Some(o) = st.orgs.get_mut(&self.org) {
            o.waiting_here = o.waiting_here.saturating_sub(1);
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
                waiting_here: 0,
            }),
            freed: Notify::new(),
            foreground: AtomicUsize::new(0),
            foreground_idle: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The delivery rules' answer for `meta`'s message asking for a slot now, with the slot
    /// taken when it may start.
    pub fn admit(self: &Arc<Self>, meta: &DeliveryMeta, now_ms: i64) -> Admission<Permit> {
        self.enter_as(meta, now_ms, false)
    }

    /// `waiter`: the message already waits in the process, so others waiting do not make it
    /// queue again.
    fn enter_as(
        self: &Arc<Self>,
        meta: &DeliveryMeta,
        now_ms: i64,
        waiter: bool,
    ) -> Admission<Permit> {
        // Each endpoint has its share (an org's endpoints are receivers apart; its one
        // webhook of earlier versions is keyed by the org's id).
        let org = meta.endpoint_id();
        let now = Instant::now();
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.orgs.len() > 1024 {
            st.orgs.retain(|_, o| {
                o.in_flight > 0
                    || o.waiting_here > 0
                    || now.duration_since(o.last_seen) < FORGET_AFTER
            });
        }
        let process = Process {
            slots: self.slots,
            in_flight: st.in_flight,
            cap: self.cap,
            queued_ahead: !waiter && st.waiting_here > 0,
            attempt_timeout: self.attempt_timeout,
        };
        let view = {
            let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
            o.last_seen = now;
            while o.parked.peek().is_some_and(|Reverse(due)| *due <= now) {
                o.parked.pop();
            }
            OrgSlots {
                in_flight: o.in_flight,
                paused_for: remaining(o.not_before, now),
                typical: o.typical,
                first_started_ago: o.first_started.map(|t| now.duration_since(t)),
                parked_ahead: o.parked.len(),
                queued_ahead: !waiter && o.waiting_here > 0,
            }
        };
        // The other orgs as the rule weighs them, read in place (no copy per message).
        let neighbours = st
            .orgs
            .iter()
            .filter(|(id, _)| **id != org)
            .map(|(_, o)| Neighbour {
                in_flight: o.in_flight,
                waiting: o.waiting_here > 0 || remaining(o.waiting_until, now).is_some(),
            });
        match decide::plan_admission(meta, now_ms, &view, &process, neighbours) {
            Admission::Start(()) => {}
            Admission::WaitHere { limit, otherwise } => {
                return Admission::WaitHere { limit, otherwise };
            }
            Admission::Park(plan) => return Admission::Park(plan),
        }
        // The entry made above, under the same lock.
        if let Some(o) = st.orgs.get_mut(&org) {
            o.first_started.get_or_insert(now);
            o.in_flight += 1;
        }
        st.in_flight += 1;
        Admission::Start(Permit {
            gate: self.clone(),
            org,
        })
    }

    /// A slot for `meta`'s message, waiting in the process for one to be released for as long
    /// as the rules let it wait here (at least `limit`; each answer while it waits may lengthen
    /// it, as what is known changes); otherwise the plan to park it by. Waiters are woken one
    /// per released slot, longest-waiting first.
    pub async fn wait_for_slot(
        self: &Arc<Self>,
        meta: &DeliveryMeta,
        limit: Duration,
        now_ms: impl Fn() -> i64,
    ) -> Result<Permit, ParkPlan> {
        let org = meta.endpoint_id();
        let started = tokio::time::Instant::now();
        let mut deadline = started + limit;
        let own = {
            let now = Instant::now();
            let mut st = self.lock();
            st.waiting_here += 1;
            let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
            o.waiting_here += 1;
            o.freed.clone()
        };
        let _queued = Queued { gate: self, org };
        loop {
            // Registered before asking, so a slot released between the answer and the wait
            // still wakes this waiter (a notification it does not use passes to the next).
            let freed = self.freed.notified();
            let own_freed = own.notified();
            tokio::pin!(freed, own_freed);
            freed.as_mut().enable();
            own_freed.as_mut().enable();
            match self.enter_as(meta, now_ms(), true) {
                Admission::Start(p) => {
                    // Pass the wake on: the slot that woke this one may not be the only one
                    // free (an org's first attempt ending lets it borrow many at once).
                    self.freed.notify_one();
                    return Ok(p);
                }
                Admission::Park(plan) => return Err(plan),
                Admission::WaitHere { limit, .. } => deadline = deadline.max(started + limit),
            }
            tokio::select! {
                _ = &mut freed => {}
                _ = &mut own_freed => {}
                _ = tokio::time::sleep_until(deadline) => {
                    return match self.enter_as(meta, now_ms(), true) {
                        Admission::Start(p) => Ok(p),
                        Admission::WaitHere { otherwise: plan, .. } | Admission::Park(plan) => Err(plan),
                    };
                }
            }
        }
    }

    /// A message of `org` was parked at its cap for `wait`: other orgs yield idle slots to it
    /// meanwhile.
    pub fn waiting(&self, org: Uuid, wait: Duration) {
        let now = Instant::now();
        let mut st = self.lock();
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        let until = now + wait;
        o.waiting_until = Some(o.waiting_until.map_or(until, |t| t.max(until)));
        o.parked.push(Reverse(until));
    }

    /// One attempt of `org` took `took` (feeds the typical duration the park rule uses) and
    /// was answered 2xx or not (what its lane is: [`decide::lane`]).
    pub fn observe(&self, org: Uuid, took: Duration, delivered: bool) {
        let now = Instant::now();
        let mut st = self.lock();
        let o = st.orgs.entry(org).or_insert_with(|| OrgState::new(now));
        o.typical = Some(match o.typical {
            None => took,
            Some(t) => t.mul_f64(1.0 - EWMA_WEIGHT) + took.mul_f64(EWMA_WEIGHT),
        });
        o.failed_in_a_row = if delivered {
            0
        } else {
            o.failed_in_a_row.saturating_add(1)
        };
    }

    /// The lane of `org`'s messages, by its last attempts here ([`decide::lane`]).
    pub fn lane(&self, org: Uuid) -> Lane {
        let st = self.lock();
        decide::lane(st.orgs.get(&org).map_or(0, |o| o.failed_in_a_row))
    }

    /// Counts a foreground message as handled until the answer is dropped.
    pub fn foreground(&self) -> Foreground<'_> {
        self.foreground.fetch_add(1, Ordering::AcqRel);
        Foreground { gate: self }
    }

    /// Waits until no foreground message is being handled, or `at_most` has passed: a
    /// background message's turn.
    pub async fn after_foreground(&self, at_most: Duration) {
        let deadline = tokio::time::Instant::now() + at_most;
        loop {
            // Registered before the count is read, so the last foreground message ending
            // between the two still wakes this one.
            let idle = self.foreground_idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.foreground.load(Ordering::Acquire) == 0 {
                return;
            }
            tokio::select! {
                _ = &mut idle => {}
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
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

    use crate::decide::Hold;

    /// A message of `org`.
    fn meta_of(org: Uuid) -> DeliveryMeta {
        let mut meta = crate::decide::fixtures::meta(qualifier_domain::EventType::LeadCreated);
        meta.org_id = org;
        meta
    }

    /// A message of `org` waiting in the process for a slot, answered as the slot or the hold
    /// its park plan was made from.
    async fn wait_for_slot(
        gate: &Arc<OrgGate>,
        org: Uuid,
        limit: Duration,
    ) -> Result<Permit, Hold> {
        let meta = meta_of(org);
        gate.wait_for_slot(&meta, limit, || crate::decide::fixtures::NOW)
            .await
            .map_err(|plan| plan.hold)
    }

    /// A message of `org` asking for a slot, answered as the slot or the hold it must wait for.
    fn enter(gate: &Arc<OrgGate>, org: Uuid) -> Result<Permit, Hold> {
        match gate.admit(&meta_of(org), crate::decide::fixtures::NOW) {
            Admission::Start(p) => Ok(p),
            Admission::WaitHere { otherwise, .. } | Admission::Park(otherwise) => {
                Err(otherwise.hold)
            }
        }
    }

    fn at_cap(r: Result<Permit, Hold>) -> bool {
        matches!(r, Err(Hold::AtCap { .. }))
    }

    #[test]
    fn under_contention_the_cap_counts_slots_per_org_and_frees_them_on_drop() {
        // 4 slots, 2 per org: with another org waiting, nobody goes beyond its cap.
        let gate = OrgGate::new(2, 4, T);
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        gate.waiting(c, Duration::from_secs(5));
        let p1 = enter(&gate, a).unwrap();
        let _p2 = enter(&gate, a).unwrap();
        assert!(at_cap(enter(&gate, a)));
        let _other = enter(&gate, b).expect("another org is not affected");
        drop(p1);
        assert!(enter(&gate, a).is_ok(), "a freed slot is usable");
    }

    #[test]
    fn a_lone_org_uses_idle_slots_but_leaves_a_cap_free_for_newcomers() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20), true);
        let held: Vec<_> = (0..6)
            .map(|_| enter(&gate, a).expect("idle slots"))
            .collect();
        assert!(at_cap(enter(&gate, a)), "the last cap's worth stays free");
        let _b1 = enter(&gate, b).expect("a newcomer finds a slot at once");
        let _b2 = enter(&gate, b).expect("and its whole cap");
        assert!(at_cap(enter(&gate, b)), "no slot left");
        drop(held);
    }

    #[test]
    fn an_org_waiting_elsewhere_keeps_the_slots_it_lacks_free() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20), true);
        let _a: Vec<_> = (0..4).map(|_| enter(&gate, a).unwrap()).collect();
        gate.waiting(b, Duration::from_secs(5));
        // 4 free: the reserve's 2 and the 2 that b, waiting with none in flight, lacks.
        assert!(at_cap(enter(&gate, a)), "b waits, so a borrows no further");
        let _b: Vec<_> = (0..2)
            .map(|_| enter(&gate, b).expect("b finds its cap free when its message is back"))
            .collect();
        assert!(at_cap(enter(&gate, a)), "and the reserve stays free");
        let _c = enter(&gate, Uuid::new_v4()).expect("a newcomer finds a slot");
    }

    #[test]
    fn an_org_behind_its_own_parked_messages_is_told_how_many_turns_ahead() {
        let gate = OrgGate::new(2, 8, T);
        let a = Uuid::new_v4();
        let _a: Vec<_> = (0..2).map(|_| enter(&gate, a).unwrap()).collect();
        let turns = |r: Result<Permit, Hold>| match r {
            Err(Hold::AtCap { turns_ahead, .. }) => turns_ahead,
            _ => panic!("at its cap"),
        };
        assert_eq!(turns(enter(&gate, a)), 0);
        for _ in 0..5 {
            gate.waiting(a, Duration::from_secs(5));
        }
        gate.waiting(a, Duration::from_millis(30));
        assert_eq!(turns(enter(&gate, a)), 3, "six parked, two slots");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(turns(enter(&gate, a)), 2, "one came back");
    }

    #[test]
    fn back_off_holds_the_org_until_it_passes() {
        let gate = OrgGate::new(4, 16, T);
        let a = Uuid::new_v4();
        gate.back_off(a, Duration::from_millis(50));
        assert!(matches!(
            enter(&gate, a),
            Err(Hold::BackingOff { for_ms }) if for_ms <= 50
        ));
        assert!(enter(&gate, Uuid::new_v4()).is_ok());
        std::thread::sleep(Duration::from_millis(60));
        assert!(enter(&gate, a).is_ok());
    }

    #[tokio::test]
    async fn a_message_held_by_the_reserve_takes_the_next_released_slot() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20), true);
        let mut held: Vec<_> = (0..6).map(|_| enter(&gate, a).unwrap()).collect();
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { wait_for_slot(&gate, a, Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "no slot beyond the reserve yet");
        // The reserve stays a newcomer's while the message waits.
        let b1 = enter(&gate, b).expect("a newcomer finds a slot at once");
        drop(b1);
        assert!(
            !waiter.is_finished(),
            "a newcomer's slot going back is still the reserve"
        );
        held.pop();
        // A message arriving now queues behind the one already waiting.
        assert!(at_cap(enter(&gate, a)), "no borrowing ahead of a waiter");
        let permit = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken by the released slot")
            .unwrap();
        assert!(permit.is_ok());
        assert!(at_cap(enter(&gate, a)), "and it took that slot");
    }

    #[tokio::test]
    async fn a_waiter_is_parked_after_its_limit_and_a_held_org_at_once() {
        let gate = OrgGate::new(2, 8, T);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(a, Duration::from_millis(20), true);
        let _held: Vec<_> = (0..6).map(|_| enter(&gate, a).unwrap()).collect();
        let started = std::time::Instant::now();
        let r = wait_for_slot(&gate, a, Duration::from_millis(100)).await;
        assert!(matches!(r, Err(Hold::AtCap { may_wait: true, .. })));
        assert!(started.elapsed() >= Duration::from_millis(100));
        // An org whose first attempts have run past the settle time without one ending (maybe
        // a hanging endpoint) does not wait here: it is parked without delay.
        let _b: Vec<_> = (0..2).map(|_| enter(&gate, b).unwrap()).collect();
        tokio::time::sleep(decide::SETTLE_PARK + Duration::from_millis(20)).await;
        let started = std::time::Instant::now();
        let r = wait_for_slot(&gate, b, Duration::from_secs(5)).await;
        assert!(matches!(
            r,
            Err(Hold::AtCap {
                may_wait: false,
                ..
            })
        ));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_typical_duration_follows_recent_attempts() {
        let gate = OrgGate::new(1, 2, T);
        let a = Uuid::new_v4();
        let _p = enter(&gate, a).unwrap();
        for _ in 0..30 {
            gate.observe(a, Duration::from_secs(10), true);
        }
        match enter(&gate, a) {
            Err(Hold::AtCap {
                typical_ms: Some(ms),
                ..
            }) => assert!((9_000..=10_000).contains(&ms)),
            _ => panic!("at cap with a typical duration"),
        }
    }

    #[tokio::test]
    async fn a_failing_endpoints_message_waits_for_the_foreground_to_end_or_its_longest_wait() {
        let gate = OrgGate::new(2, 8, T);
        let (healthy, failing) = (Uuid::new_v4(), Uuid::new_v4());
        gate.observe(healthy, Duration::from_millis(5), true);
        gate.observe(failing, Duration::from_millis(5), false);
        assert_eq!(gate.lane(healthy), Lane::Foreground);
        assert_eq!(gate.lane(failing), Lane::Background);
        assert_eq!(
            gate.lane(Uuid::new_v4()),
            Lane::Foreground,
            "unknown: foreground"
        );
        let long = Duration::from_secs(60);

        // Nothing in the foreground: it goes at once (well inside its minute-long wait).
        tokio::time::timeout(Duration::from_secs(5), gate.after_foreground(long))
            .await
            .expect("went at once");

        // A foreground message being handled: it waits, and goes when that one ends.
        let fg = gate.foreground();
        let g = gate.clone();
        let waiting = tokio::spawn(async move { g.after_foreground(long).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "it waits for the foreground");
        drop(fg);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("it goes when the foreground ends")
            .unwrap();

        // Two waiting: the foreground's end lets one go, not both; the other goes at the next
        // idle moment.
        let fg = gate.foreground();
        let (g1, g2) = (gate.clone(), gate.clone());
        let first = tokio::spawn(async move { g1.after_foreground(long).await });
        let second = tokio::spawn(async move { g2.after_foreground(long).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        drop(fg);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        // The lone foreground message of the next moment holds the other one back.
        let fg = gate.foreground();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            [first.is_finished(), second.is_finished()]
                .iter()
                .filter(|f| **f)
                .count(),
            1,
            "one goes at the idle moment"
        );
        drop(fg);
        tokio::time::timeout(Duration::from_secs(5), async {
            first.await.unwrap();
            second.await.unwrap();
        })
        .await
        .expect("the other goes at the next idle moment");

        // A foreground that does not end: it goes after its longest wait all the same.
        let _fg = gate.foreground();
        let start = std::time::Instant::now();
        gate.after_foreground(Duration::from_millis(50)).await;
        assert!(start.elapsed() >= Duration::from_millis(50));

        // One success brings the endpoint back to the foreground.
        gate.observe(failing, Duration::from_millis(5), true);
        assert_eq!(gate.lane(failing), Lane::Foreground);
    }
}
