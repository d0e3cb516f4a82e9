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
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::units::{EndpointId, EndpointOf, OrgId};
use uuid::Uuid;

use crate::decide::{self, Admission, EndpointSlots, InOrg, Lane, Neighbour, ParkPlan, Process};

/// How much one attempt moves an endpoint's typical duration (exponential moving average).
const EWMA_WEIGHT: f64 = 0.2;

/// Endpoints idle this long are forgotten (their typical duration too), and orgs left without
/// one, so the maps stay small.
const FORGET_AFTER: Duration = Duration::from_secs(600);

/// The forgetting is looked at once the maps hold more endpoints than this.
const FORGET_ABOVE: usize = 1024;

/// The most messages parked in their rows one endpoint keeps to call forward: beyond that the
/// oldest are let go, and come back at their own due times.
const CALLABLE_MAX: usize = 4096;

/// A delivery parked in its row, kept to call forward: its id, its event's sequence number
/// (as its message carried it) and when it is due back on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InRow {
    pub id: Uuid,
    pub seq: Option<i64>,
    due: Instant,
}

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
    /// Those parked in their rows, oldest first ([`OrgGate::call_forward`]).
    in_rows: VecDeque<InRow>,
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
            in_rows: VecDeque::new(),
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
    /// its org meanwhile, and its siblings the slots below its share. `in_row`: the delivery
    /// it carries (id and event's sequence number) when it waits in its row, which the
    /// endpoint's next freed slot may call forward.
    pub fn waiting(&self, of: EndpointOf, wait: Duration, in_row: Option<(Uuid, Option<i64>)>) {
        let now = (self.clock)();
        let mut st = self.lock();
        let e = st.endpoint(of, now);
        let until = now + wait;
        e.waiting_until = Some(e.waiting_until.map_or(until, |t| t.max(until)));
        e.parked.push(Reverse(until));
        if let Some((id, seq)) = in_row {
            if e.in_rows.len() >= CALLABLE_MAX {
                e.in_rows.pop_front();
            }
            let due = until;
            e.in_rows.push_back(InRow { id, seq, due });
        }
    }

    /// After an attempt of `of` ended here (its slot freed): the endpoint's delivery parked in
    /// its row the longest, to be made due now, unless a message of it waits in the process or
    /// one parked comes back within [`decide::MIN_PARK`] to take the slot. Its wait leaves the
    /// parked ones, so later parks count their turns without it. A backlog so comes back one
    /// delivery per freed slot, however wrong the wait it parked for (a guess, before any
    /// attempt has ended), where coming back at that wait it found its slots taken and parked
    /// again, each message once more (docs/delivery.md, "Fairness between orgs"). Per process:
    /// what a replica that stopped parked comes back at its own due time.
    pub fn call_forward(&self, of: EndpointOf) -> Option<InRow> {
        let now = (self.clock)();
        let mut st = self.lock();
        let e = st.endpoints.get_mut(&of.endpoint)?;
        if e.waiting_here > 0 {
            return None;
        }
        // What came back on its own is no longer waiting (nor is what is due now).
        while e.in_rows.front().is_some_and(|r| r.due <= now) {
            e.in_rows.pop_front();
        }
        if e.in_rows.is_empty() {
            return None;
        }
        let soon = now + decide::MIN_PARK;
        if e.parked
            .iter()
            .any(|Reverse(due)| *due > now && *due <= soon)
        {
            return None;
        }
        let called = e.in_rows.pop_front()?;
        let mut parked = std::mem::take(&mut e.parked).into_vec();
        if let Some(i) = parked.iter().position(|Reverse(d)| *d == called.due) {
            parked.swap_remove(i);
        }
        e.parked = parked.into();
        Some(called)
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
mod tests;
