//! Fair share inside one `webhook-delivery` process: the facts the delivery rules need (how
//! many attempts each org and each of its endpoints have in flight, whether a receiver asked
//! for a pause, how long an endpoint's attempts take) and the slots themselves. The rules are
//! [`crate::decide`]'s (`decide/admission.rs`): the gate counts under its lock, asks
//! [`decide::plan_admission`] once per answer, and carries the answer out (a slot, a wait in
//! the process, or a park).
//!
//! Two levels, each counted in its own unit (`qualifier_domain::units`):
//! - **The org** ([`OrgId`]): its endpoints together hold `cap` of the process's `slots` at
//!   once, and may borrow idle ones beyond that on the terms of the delivery rules. An org that
//!   cannot start parks its message (a TTL queue, no attempt used) and counts as waiting until
//!   the message is back, so other orgs leave it the slots it lacks.
//! - **The endpoint** ([`EndpointId`]): its share of its org's cap while siblings want slots
//!   too, its receiver's pause (after a 429 or 503 with `Retry-After`, no attempt to that
//!   endpoint starts before the time it asked for), its attempts' typical duration (whether it
//!   may borrow) and its lane (a failing endpoint's messages go after the others').
//!
//! Both are per process: with N replicas an org can hold up to N x cap slots in total, and a
//! back-off learned by one replica is carried to the others by the failed message's
//! `not-before` header and by the delivery's row (its `due_at`). That keeps the hot path free
//! of shared state.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::units::{EndpointId, EndpointOf, OrgId};

use crate::decide::{self, Admission, EndpointSlots, InOrg, Lane, Neighbour, ParkPlan, Process};

/// How much one attempt moves an endpoint's typical duration (exponential moving average).
const EWMA_WEIGHT: f64 = 0.2;

/// Endpoints idle this long are forgotten (their typical duration too), and orgs left without
/// one, so the maps stay small.
const FORGET_AFTER: Duration = Duration::from_secs(600);

/// The forgetting is looked at once the maps hold more endpoints than this.
const FORGET_ABOVE: usize = 1024;

/// What one endpoint holds and is known by, in this process.
struct EndpointState {
    in_flight: usize,
    not_before: Option<Instant>,
    /// A message of this endpoint is parked because it was at its share, until about this time.
    waiting_until: Option<Instant>,
    /// Typical attempt duration (moving average), once one attempt finished.
    typical: Option<Duration>,
    /// When its first attempt started (what [`decide::SETTLE_PARK`] is measured from).
    first_started: Option<Instant>,
    last_seen: Instant,
    /// Its messages waiting in the process for a slot ([`OrgGate::wait_for_slot`]).
    waiting_here: usize,
    /// When each of its messages parked at its share is due back (earliest first).
    parked: BinaryHeap<Reverse<Instant>>,
    /// Its attempts in a row here that were not answered 2xx (reset by one that was).
    failed_in_a_row: u32,
}

impl EndpointState {
    fn new(now: Instant) -> Self {
        EndpointState {
            in_flight: 0,
            not_before: None,
            waiting_until: None,
            typical: None,
            first_started: None,
            last_seen: now,
            waiting_here: 0,
            parked: BinaryHeap::new(),
            failed_in_a_row: 0,
        }
    }

    /// A message of it waits for a slot: parked at its share, or waiting in the process.
    fn waiting(&self, now: Instant) -> bool {
        self.waiting_here > 0 || remaining(self.waiting_until, now).is_some()
    }

    fn idle_since(&self, now: Instant) -> bool {
        self.in_flight == 0
            && self.waiting_here == 0
            && now.duration_since(self.last_seen) >= FORGET_AFTER
    }
}

/// What one org holds in this process, across its endpoints.
struct OrgState {
    in_flight: usize,
    /// Its endpoints known here (the ones [`State::endpoints`] holds).
    endpoints: Vec<EndpointId>,
    /// Woken once per slot of this org released: its longest-waiting message asks again.
    freed: Arc<Notify>,
}

impl OrgState {
    fn new() -> Self {
        OrgState {
            in_flight: 0,
            endpoints: Vec::new(),
            freed: Arc::new(Notify::new()),
        }
    }
}

struct State {
    orgs: HashMap<OrgId, OrgState>,
    endpoints: HashMap<EndpointId, EndpointState>,
    in_flight: usize,
    /// Messages waiting in the process for a slot beyond the reserve
    /// ([`OrgGate::wait_for_slot`]).
    waiting_here: usize,
}

impl State {
    /// The endpoint's entry, made (and made known to its org) on first sight.
    fn endpoint(&mut self, of: EndpointOf, now: Instant) -> &mut EndpointState {
        let State {
            orgs, endpoints, ..
        } = self;
        endpoints.entry(of.endpoint).or_insert_with(|| {
            let org = orgs.entry(of.org).or_insert_with(OrgState::new);
            if !org.endpoints.contains(&of.endpoint) {
                org.endpoints.push(of.endpoint);
            }
            EndpointState::new(now)
        })
    }

    /// Forgets endpoints idle for [`FORGET_AFTER`], and orgs left with none.
    fn forget_idle(&mut self, now: Instant) {
        self.endpoints.retain(|_, e| !e.idle_since(now));
        let endpoints = &self.endpoints;
        self.orgs.retain(|_, o| {
            o.endpoints.retain(|e| endpoints.contains_key(e));
            !o.endpoints.is_empty() || o.in_flight > 0
        });
    }

    /// Whether any endpoint of `org` has a message waiting for a slot.
    fn org_waiting(&self, org: &OrgState, now: Instant) -> bool {
        org.endpoints
            .iter()
            .filter_map(|e| self.endpoints.get(e))
            .any(|e| e.waiting(now))
    }

    /// The endpoint as the delivery rules weigh it, with its siblings (`waiter`: the message
    /// already waits in the process).
    fn slots_of(&self, of: EndpointOf, cap: usize, now: Instant, waiter: bool) -> EndpointSlots {
        let e = &self.endpoints[&of.endpoint];
        let mut org = InOrg::default();
        let siblings: Vec<&EndpointState> = self
            .orgs
            .get(&of.org)
            .map_or(&[][..], |o| &o.endpoints[..])
            .iter()
            .filter(|id| **id != of.endpoint)
            .filter_map(|id| self.endpoints.get(id))
            .collect();
        org.sibling_idle = siblings.iter().any(|s| s.in_flight == 0);
        for s in &siblings {
            org.siblings_in_flight += s.in_flight;
            if s.in_flight > 0 || s.waiting(now) {
                org.active_siblings += 1;
            }
        }
        let share = cap.div_ceil(1 + org.active_siblings).max(1);
        org.siblings_short = siblings
            .iter()
            .filter(|s| s.waiting(now))
            .map(|s| share.saturating_sub(s.in_flight))
            .sum();
        EndpointSlots {
            in_flight: e.in_flight,
            paused_for: remaining(e.not_before, now),
            typical: e.typical,
            first_started_ago: e.first_started.map(|t| now.duration_since(t)),
            parked_ahead: e.parked.len(),
            queued_ahead: !waiter && e.waiting_here > 0,
            org,
        }
    }
}

/// Where the gate reads the time: the system's clock, or a simulated one in the properties'
/// tests.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

pub struct OrgGate {
    clock: Clock,
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

/// An attempt slot of one endpoint of one org; released on drop.
pub struct Permit {
    gate: Arc<OrgGate>,
    of: EndpointOf,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        if let Some(e) = st.endpoints.get_mut(&self.of.endpoint) {
            e.in_flight = e.in_flight.saturating_sub(1);
        }
        let own = st.orgs.get_mut(&self.of.org).map(|o| {
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
    endpoint: EndpointId,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.waiting_here = st.waiting_here.saturating_sub(1);
        if let Some(e) = st.endpoints.get_mut(&self.endpoint) {
            e.waiting_here = e.waiting_here.saturating_sub(1);
        }
    }
}

fn remaining(t: Option<Instant>, now: Instant) -> Option<Duration> {
    t.filter(|t| *t > now).map(|t| t - now)
}

impl OrgGate {
    /// `slots`: the process's attempt slots (`QUALIFIER_DELIVERY_CONCURRENCY`); `cap`: what
    /// one org may always hold across its endpoints (`QUALIFIER_DELIVERY_ORG_CONCURRENCY`).
    pub fn new(cap: usize, slots: usize, attempt_timeout: Duration) -> Arc<OrgGate> {
        Self::with_clock(cap, slots, attempt_timeout, Arc::new(Instant::now))
    }

    /// [`OrgGate::new`] reading the time from `clock`.
    pub fn with_clock(
        cap: usize,
        slots: usize,
        attempt_timeout: Duration,
        clock: Clock,
    ) -> Arc<OrgGate> {
        let cap = cap.max(1);
        Arc::new(OrgGate {
            clock,
            cap,
            attempt_timeout,
            slots: slots.max(cap),
            state: Mutex::new(State {
                orgs: HashMap::new(),
                endpoints: HashMap::new(),
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

    /// Makes `endpoints` known as endpoints of one org before any of them asks for a slot (a
    /// bundle names every endpoint its event goes to): the org's last slot then stays for
    /// whichever of them has nothing in flight from the first message on.
    pub fn know(&self, endpoints: impl IntoIterator<Item = EndpointOf>) {
        let now = (self.clock)();
        let mut st = self.lock();
        for of in endpoints {
            st.endpoint(of, now).last_seen = now;
        }
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
        let of = meta.units();
        let now = (self.clock)();
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.endpoints.len() > FORGET_ABOVE {
            st.forget_idle(now);
        }
        let process = Process {
            slots: self.slots,
            in_flight: st.in_flight,
            cap: self.cap,
            queued_ahead: !waiter && st.waiting_here > 0,
            attempt_timeout: self.attempt_timeout,
        };
        {
            let e = st.endpoint(of, now);
            e.last_seen = now;
            while e.parked.peek().is_some_and(|Reverse(due)| *due <= now) {
                e.parked.pop();
            }
        }
        let view = st.slots_of(of, self.cap, now, waiter);
        // The other orgs as the rule weighs them, read in place (no copy per message).
        let neighbours = st
            .orgs
            .iter()
            .filter(|(id, _)| **id != of.org)
            .map(|(_, o)| Neighbour {
                in_flight: o.in_flight,
                waiting: st.org_waiting(o, now),
            });
        match decide::plan_admission(meta, now_ms, &view, &process, neighbours) {
            Admission::Start(()) => {}
            Admission::WaitHere { limit, otherwise } => {
                return Admission::WaitHere { limit, otherwise };
            }
            Admission::Park(plan) => return Admission::Park(plan),
        }
        // The entries made above, under the same lock.
        let e = st.endpoint(of, now);
        e.first_started.get_or_insert(now);
        e.in_flight += 1;
        if let Some(o) = st.orgs.get_mut(&of.org) {
            o.in_flight += 1;
        }
        st.in_flight += 1;
        Admission::Start(Permit {
            gate: self.clone(),
            of,
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
        let of = meta.units();
        let started = tokio::time::Instant::now();
        let mut deadline = started + limit;
        let own = {
            let now = (self.clock)();
            let mut st = self.lock();
            st.waiting_here += 1;
            st.endpoint(of, now).waiting_here += 1;
            st.orgs
                .get(&of.org)
                .map(|o| o.freed.clone())
                .unwrap_or_default()
        };
        let _queued = Queued {
            gate: self,
            endpoint: of.endpoint,
        };
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
                    // free (an endpoint's first attempt ending lets it borrow many at once).
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

    /// A message of `of` was parked at its share for `wait`: other orgs yield idle slots to
    /// its org meanwhile, and its siblings the slots below its share.
    pub fn waiting(&self, of: EndpointOf, wait: Duration) {
        let now = (self.clock)();
        let mut st = self.lock();
        let e = st.endpoint(of, now);
        let until = now + wait;
        e.waiting_until = Some(e.waiting_until.map_or(until, |t| t.max(until)));
        e.parked.push(Reverse(until));
    }

    /// One attempt to `of` took `took` (feeds the typical duration the park rule uses) and was
    /// answered 2xx or not (what its lane is: [`decide::lane`]).
    pub fn observe(&self, of: EndpointOf, took: Duration, delivered: bool) {
        let now = (self.clock)();
        let mut st = self.lock();
        let e = st.endpoint(of, now);
        e.typical = Some(match e.typical {
            None => took,
            Some(t) => t.mul_f64(1.0 - EWMA_WEIGHT) + took.mul_f64(EWMA_WEIGHT),
        });
        e.failed_in_a_row = if delivered {
            0
        } else {
            e.failed_in_a_row.saturating_add(1)
        };
    }

    /// The lane of `endpoint`'s messages, by its last attempts here ([`decide::lane`]).
    pub fn lane(&self, endpoint: EndpointId) -> Lane {
        let st = self.lock();
        decide::lane(st.endpoints.get(&endpoint).map_or(0, |e| e.failed_in_a_row))
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

    /// The receiver asked for a pause: no new attempt to `of`'s endpoint until `wait` has
    /// passed (the delivery rules clamped it already: [`decide::parse_retry_after`]).
    pub fn back_off(&self, of: EndpointOf, wait: Duration) {
        let now = (self.clock)();
        let until = now + wait;
        let mut st = self.lock();
        let e = st.endpoint(of, now);
        e.not_before = Some(e.not_before.map_or(until, |t| t.max(until)));
    }

    /// An endpoint's typical attempt duration, as the share weighs it.
    #[cfg(test)]
    pub(crate) fn typical(&self, endpoint: EndpointId) -> Option<Duration> {
        self.lock().endpoints.get(&endpoint).and_then(|e| e.typical)
    }

    /// The org's and the process's attempts in flight, and the endpoint's: what the
    /// properties of the share are checked against.
    #[cfg(test)]
    pub(crate) fn counts(&self, of: EndpointOf) -> (usize, usize, usize) {
        let st = self.lock();
        (
            st.in_flight,
            st.orgs.get(&of.org).map_or(0, |o| o.in_flight),
            st.endpoints.get(&of.endpoint).map_or(0, |e| e.in_flight),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    use crate::decide::Hold;

    use uuid::Uuid;

    /// A message of `org`'s one endpoint (keyed by the org's id, as a primary endpoint is).
    fn meta_of(org: Uuid) -> DeliveryMeta {
        let mut meta = crate::decide::fixtures::meta(qualifier_domain::EventType::LeadCreated);
        meta.org_id = org;
        meta
    }

    /// `org`'s one endpoint.
    fn only(org: Uuid) -> EndpointOf {
        EndpointOf::new(org, org)
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
        gate.waiting(only(c), Duration::from_secs(5));
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
        gate.observe(only(a), Duration::from_millis(20), true);
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
        gate.observe(only(a), Duration::from_millis(20), true);
        let _a: Vec<_> = (0..4).map(|_| enter(&gate, a).unwrap()).collect();
        gate.waiting(only(b), Duration::from_secs(5));
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
            gate.waiting(only(a), Duration::from_secs(5));
        }
        gate.waiting(only(a), Duration::from_millis(30));
        assert_eq!(turns(enter(&gate, a)), 3, "six parked, two slots");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(turns(enter(&gate, a)), 2, "one came back");
    }

    #[test]
    fn back_off_holds_the_org_until_it_passes() {
        let gate = OrgGate::new(4, 16, T);
        let a = Uuid::new_v4();
        gate.back_off(only(a), Duration::from_millis(50));
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
        gate.observe(only(a), Duration::from_millis(20), true);
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
        gate.observe(only(a), Duration::from_millis(20), true);
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
            gate.observe(only(a), Duration::from_secs(10), true);
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
        gate.observe(only(healthy), Duration::from_millis(5), true);
        gate.observe(only(failing), Duration::from_millis(5), false);
        assert_eq!(gate.lane(EndpointId(healthy)), Lane::Foreground);
        assert_eq!(gate.lane(EndpointId(failing)), Lane::Background);
        assert_eq!(
            gate.lane(EndpointId(Uuid::new_v4())),
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
        gate.observe(only(failing), Duration::from_millis(5), true);
        assert_eq!(gate.lane(EndpointId(failing)), Lane::Foreground);
    }

    /// A message of `of`.
    fn meta_to(of: EndpointOf) -> DeliveryMeta {
        let mut meta = meta_of(of.org.0);
        meta.endpoint_id = Some(of.endpoint.0);
        meta
    }

    fn enter_to(gate: &Arc<OrgGate>, of: EndpointOf) -> Result<Permit, Hold> {
        match gate.admit(&meta_to(of), crate::decide::fixtures::NOW) {
            Admission::Start(p) => Ok(p),
            Admission::WaitHere { otherwise, .. } | Admission::Park(otherwise) => {
                Err(otherwise.hold)
            }
        }
    }

    #[test]
    fn an_orgs_endpoints_together_hold_at_most_its_cap_and_other_orgs_start() {
        // 64 slots, 16 an org: four hanging endpoints of one org take 16, not 64.
        let gate = OrgGate::new(16, 64, T);
        let org = Uuid::new_v4();
        let eps: Vec<EndpointOf> = (0..4)
            .map(|_| EndpointOf::new(org, Uuid::new_v4()))
            .collect();
        let mut held = Vec::new();
        for _ in 0..16 {
            for ep in &eps {
                if let Ok(p) = enter_to(&gate, *ep) {
                    held.push(p);
                }
            }
        }
        assert_eq!(
            gate.counts(eps[0]).1,
            16,
            "the org's cap, across its endpoints"
        );
        assert_eq!(held.len(), 16);
        let other = Uuid::new_v4();
        let _b: Vec<_> = (0..16)
            .map(|_| enter(&gate, other).expect("another org finds its whole cap"))
            .collect();
    }

    #[test]
    fn a_slow_endpoint_leaves_its_org_a_slot_for_a_sibling() {
        let gate = OrgGate::new(4, 64, T);
        let org = Uuid::new_v4();
        let (slow, quick) = (
            EndpointOf::new(org, Uuid::new_v4()),
            EndpointOf::new(org, Uuid::new_v4()),
        );
        // Alone, an endpoint may use its org's whole cap.
        let alone: Vec<_> = (0..4).map(|_| enter_to(&gate, slow).unwrap()).collect();
        assert!(enter_to(&gate, slow).is_err());
        drop(alone);
        // Once its org is known to have another endpoint with nothing in flight, the last slot
        // is that one's.
        gate.know([slow, quick]);
        let held: Vec<_> = (0..3).map(|_| enter_to(&gate, slow).unwrap()).collect();
        assert!(
            matches!(enter_to(&gate, slow), Err(Hold::AtCap { .. })),
            "the org's last slot stays free"
        );
        let q = enter_to(&gate, quick).expect("the sibling starts at once");
        assert_eq!(gate.counts(quick).1, 4, "and the org is at its cap");
        drop((held, q));
        // Known to be slow, an endpoint with nothing in flight does not take the last slot
        // either: several slow endpoints leave it to a quick one.
        let slow2 = EndpointOf::new(org, Uuid::new_v4());
        gate.observe(slow, T, false);
        gate.observe(slow2, T, false);
        let _s1: Vec<_> = (0..3).map(|_| enter_to(&gate, slow).unwrap()).collect();
        assert!(
            enter_to(&gate, slow2).is_err(),
            "slow, the last slot is not its"
        );
        let _q = enter_to(&gate, quick).expect("the quick sibling's");
    }

    #[test]
    fn above_its_share_an_endpoint_leaves_what_a_waiting_sibling_lacks() {
        let gate = OrgGate::new(8, 64, T);
        let org = Uuid::new_v4();
        let (a, b) = (
            EndpointOf::new(org, Uuid::new_v4()),
            EndpointOf::new(org, Uuid::new_v4()),
        );
        gate.know([a, b]);
        let mut held: Vec<_> = (0..7).map(|_| enter_to(&gate, a).unwrap()).collect();
        // b's message was parked meanwhile (say the org was full): it waits with none.
        gate.waiting(b, Duration::from_secs(5));
        held.truncate(3);
        // 3 of the org's 8 in flight, all a's; a's share is 4, b lacks 4.
        let a4 = enter_to(&gate, a).expect("a below its share");
        assert!(enter_to(&gate, a).is_err(), "above it, b's 4 stay free");
        let _b: Vec<_> = (0..4)
            .map(|_| enter_to(&gate, b).expect("b finds its share"))
            .collect();
        drop(a4);
    }

    #[test]
    fn a_receivers_pause_holds_its_endpoint_not_its_siblings() {
        let gate = OrgGate::new(4, 16, T);
        let org = Uuid::new_v4();
        let (a, b) = (
            EndpointOf::new(org, Uuid::new_v4()),
            EndpointOf::new(org, Uuid::new_v4()),
        );
        gate.back_off(a, Duration::from_secs(30));
        assert!(matches!(enter_to(&gate, a), Err(Hold::BackingOff { .. })));
        assert!(enter_to(&gate, b).is_ok());
        gate.observe(a, Duration::from_millis(5), false);
        assert_eq!(gate.lane(a.endpoint), Lane::Background);
        assert_eq!(gate.lane(b.endpoint), Lane::Foreground);
    }
}
