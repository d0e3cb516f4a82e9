//! Properties of the fair share and of due times, over generated scenarios on a simulated
//! clock: many orgs, each with endpoints whose receivers are quick, slow, hanging, failing or
//! answering 429 with `Retry-After`, events arriving at random, workers restarting (their
//! in-flight messages and bundles put back coming again). The gate ([`OrgGate`]) and the row's
//! rule ([`DeliveryState::waits_in_row`]) are the real ones; the broker, the relay and the
//! receivers are modelled, each as the worker sees it.
//!
//! After every attempt that starts:
//! - no org is above its cap, unless the attempt borrowed an idle slot as a quick endpoint
//!   leaving a cap's worth free;
//! - within its org's cap, no endpoint holds all of its org's slots while a sibling waits;
//! - the delivery is due by its row, and neither its own receiver's `Retry-After` nor (in the
//!   same process) its endpoint's is cut short.
//!
//! And at the end every delivery has ended (succeeded or dead).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use qualifier_bus::{DeliveryMeta, PARK_TIERS_MS};
use qualifier_domain::EventType;
use qualifier_domain::delivery::DeliveryState;
use qualifier_domain::units::EndpointOf;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::decide::{Admission, MAX_ATTEMPTS};
use crate::gate::{OrgGate, Permit};

const TIMEOUT: Duration = Duration::from_secs(10);
const CAP: usize = 4;
const SLOTS: usize = 16;
/// How long a message put back by a worker's crash takes to come again (the restart).
const REDELIVERY_MS: u64 = 3_000;
/// A retry's wait when the receiver names none.
const RETRY_MS: u64 = 1_000;

#[derive(Debug, Clone, Copy)]
enum Receiver {
    /// 200 after this many ms.
    Answers(u64),
    /// No answer: the attempt times out.
    Hangs,
    /// 500 at once.
    Fails,
    /// 429 with `Retry-After: secs` on one answer in `every`, 200 on the others.
    Throttles { every: u32, secs: u64 },
}

fn receiver() -> impl Strategy<Value = Receiver> {
    prop_oneof![
        (5u64..80).prop_map(Receiver::Answers),
        (2_000u64..7_000).prop_map(Receiver::Answers),
        Just(Receiver::Hangs),
        Just(Receiver::Fails),
        (1u32..4, 1u64..40).prop_map(|(every, secs)| Receiver::Throttles { every, secs }),
    ]
}

#[derive(Debug, Clone)]
struct Scenario {
    /// Each org's endpoints.
    orgs: Vec<Vec<Receiver>>,
    /// (org, ms): an event of that org, to each of its endpoints, as one bundle.
    events: Vec<(usize, u64)>,
    /// When a worker is killed and a new one starts.
    restarts: Vec<u64>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    prop::collection::vec(prop::collection::vec(receiver(), 1..5), 1..6).prop_flat_map(|orgs| {
        let n = orgs.len();
        (
            Just(orgs),
            prop::collection::vec((0..n, 0u64..8_000), 1..40),
            prop::collection::vec(0u64..60_000, 0..3),
        )
            .prop_map(|(orgs, events, restarts)| Scenario {
                orgs,
                events,
                restarts,
            })
    })
}

struct Delivery {
    of: EndpointOf,
    receiver: Receiver,
    attempts: u32,
    answers: u32,
    ended: bool,
    state: DeliveryState,
    /// Its row's due time (ms of the simulation).
    due: Option<u64>,
    /// Its own receiver's last `Retry-After`, until (ms).
    asked_until: u64,
}

enum Ev {
    /// A message of the delivery reaches a worker (with the `not-before` it carries).
    Arrive(usize, Option<i64>),
    /// The relay publishes the delivery's row, once due.
    Publish(usize),
    /// The attempt of the worker `worker` ends after `took` ms: 2xx, or not with a `Retry-After`.
    Done {
        d: usize,
        worker: u64,
        took: u64,
        ok: bool,
        retry_after: Option<u64>,
    },
    Restart,
}

struct Sim {
    clock: Arc<Mutex<Instant>>,
    base: Instant,
    base_wall: OffsetDateTime,
    base_ms: i64,
    t: u64,
    gate: Arc<OrgGate>,
    worker: u64,
    deliveries: Vec<Delivery>,
    in_flight: HashMap<usize, Permit>,
    /// Per endpoint: parked at its share (the gate counts it waiting) until (ms).
    waiting_until: HashMap<Uuid, u64>,
    /// Per endpoint: a pause its receiver asked for in this generation, until (ms).
    paused_until: HashMap<Uuid, u64>,
    /// Each org's endpoints.
    siblings: HashMap<Uuid, Vec<Uuid>>,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    events: HashMap<u64, Ev>,
    seq: u64,
}

impl Sim {
    fn gate(clock: &Arc<Mutex<Instant>>) -> Arc<OrgGate> {
        let c = clock.clone();
        OrgGate::with_clock(CAP, SLOTS, TIMEOUT, Arc::new(move || *c.lock().unwrap()))
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq)));
        self.events.insert(self.seq, ev);
    }

    fn now_ms(&self) -> i64 {
        self.base_ms + self.t as i64
    }

    fn meta(&self, d: usize, not_before_ms: Option<i64>) -> DeliveryMeta {
        let of = self.deliveries[d].of;
        let mut meta = crate::decide::fixtures::meta(EventType::LeadCreated);
        meta.delivery_id = Uuid::from_u128(d as u128 + 1);
        meta.org_id = of.org.0;
        meta.endpoint_id = Some(of.endpoint.0);
        meta.not_before_ms = not_before_ms;
        meta
    }

    fn arrive(&mut self, d: usize, not_before_ms: Option<i64>) -> Result<(), TestCaseError> {
        let t = self.t;
        let del = &self.deliveries[d];
        if del.ended {
            return Ok(());
        }
        let now = self.base_wall + Duration::from_millis(t);
        let due_at = del.due.map(|ms| self.base_wall + Duration::from_millis(ms));
        if del.state.waits_in_row(due_at, now, false) {
            // Left in its row: the relay publishes it when due.
            return Ok(());
        }
        let of = del.of;
        match self.gate.admit(&self.meta(d, not_before_ms), self.now_ms()) {
            Admission::Start(permit) => {
                self.check_start(d)?;
                self.in_flight.insert(d, permit);
                let del = &mut self.deliveries[d];
                del.answers += 1;
                let (took, ok, retry_after) = match del.receiver {
                    Receiver::Answers(ms) => (ms, true, None),
                    Receiver::Hangs => (TIMEOUT.as_millis() as u64, false, None),
                    Receiver::Fails => (20, false, None),
                    Receiver::Throttles { every, secs } => {
                        if del.answers.is_multiple_of(every) {
                            (15, false, Some(secs * 1000))
                        } else {
                            (30, true, None)
                        }
                    }
                };
                let worker = self.worker;
                self.at(
                    t + took,
                    Ev::Done {
                        d,
                        worker,
                        took,
                        ok,
                        retry_after,
                    },
                );
            }
            Admission::WaitHere {
                otherwise: plan, ..
            }
            | Admission::Park(plan) => {
                let wait = PARK_TIERS_MS[plan.tier];
                let in_row = plan.in_row_until(self.now_ms());
                if let Some(w) = plan.org_waits {
                    // As the worker does: a park in its row is one a freed slot may call.
                    let callable = in_row.map(|_| (Uuid::from_u128(d as u128 + 1), None));
                    self.gate.waiting(of, w, callable);
                    let until = self.waiting_until.entry(of.endpoint.0).or_default();
                    *until = (*until).max(t + w.as_millis() as u64);
                }
                match in_row {
                    Some(at_ms) => {
                        let at = (at_ms - self.base_ms).max(0) as u64;
                        let del = &mut self.deliveries[d];
                        del.state = DeliveryState::Queued;
                        del.due = Some(at);
                        self.at(at, Ev::Publish(d));
                    }
                    None => self.at(t + wait, Ev::Arrive(d, plan.not_before_ms)),
                }
            }
        }
        Ok(())
    }

    /// The properties, right after delivery `d`'s attempt started.
    fn check_start(&self, d: usize) -> Result<(), TestCaseError> {
        let t = self.t;
        let del = &self.deliveries[d];
        let of = del.of;
        prop_assert!(
            del.due.is_none_or(|due| due <= t),
            "sent before its row's due time"
        );
        prop_assert!(
            del.asked_until <= t,
            "sent {} ms before its receiver's Retry-After ended",
            del.asked_until - t
        );
        let paused = self.paused_until.get(&of.endpoint.0).copied().unwrap_or(0);
        prop_assert!(paused <= t, "sent during its endpoint's pause");
        let (process, org, endpoint) = self.gate.counts(of);
        // The attempt is counted: `counts` includes it.
        let borrowed = org > CAP;
        if borrowed {
            let quick = self
                .gate
                .typical(of.endpoint)
                .is_some_and(|t| t < TIMEOUT / 2);
            prop_assert!(
                quick,
                "a slow or unknown endpoint took its org above its cap"
            );
            prop_assert!(
                process + CAP <= SLOTS,
                "borrowed the last cap's worth of the process"
            );
        } else {
            let sibling_waits = self.siblings[&of.org.0]
                .iter()
                .filter(|s| **s != of.endpoint.0)
                .any(|s| self.waiting_until.get(s).is_some_and(|u| *u > t));
            prop_assert!(
                !(sibling_waits && endpoint >= CAP),
                "an endpoint took all of its org's slots while a sibling waited"
            );
        }
        Ok(())
    }

    fn done(&mut self, d: usize, worker: u64, took: u64, ok: bool, retry_after: Option<u64>) {
        if worker != self.worker {
            // Its worker died: the message came back with the restart.
            return;
        }
        drop(self.in_flight.remove(&d));
        let t = self.t;
        let of = self.deliveries[d].of;
        // The freed slot calls the endpoint's longest-parked row forward, as the worker does;
        // the row moves only if it still waits for a later instant.
        if let Some(called) = self.gate.call_forward(of) {
            let c = called.id.as_u128() as usize - 1;
            let row = &mut self.deliveries[c];
            if !row.ended
                && row.state == DeliveryState::Queued
                && row.due.is_some_and(|due| due > t)
            {
                row.due = Some(t);
                self.at(t, Ev::Publish(c));
            }
        }
        self.gate.observe(of, Duration::from_millis(took), ok);
        let del = &mut self.deliveries[d];
        del.state = DeliveryState::Out;
        del.due = None;
        if ok {
            del.ended = true;
            del.state = DeliveryState::Succeeded;
            return;
        }
        del.attempts += 1;
        if del.attempts >= MAX_ATTEMPTS {
            del.ended = true;
            del.state = DeliveryState::Dead;
            return;
        }
        let wait = retry_after.unwrap_or(RETRY_MS);
        if let Some(ms) = retry_after {
            del.asked_until = t + ms;
            self.gate.back_off(of, Duration::from_millis(ms));
            let p = self.paused_until.entry(of.endpoint.0).or_default();
            *p = (*p).max(t + ms);
        }
        // The retry waits in its row; the relay publishes it when due.
        del.state = DeliveryState::Queued;
        del.due = Some(t + wait);
        self.at(t + wait, Ev::Publish(d));
    }

    fn restart(&mut self) {
        self.worker += 1;
        self.gate = Self::gate(&self.clock);
        self.paused_until.clear();
        self.waiting_until.clear();
        let t = self.t;
        // The in-flight messages come back; so does every bundle not yet acked, whose parts
        // that were answered meanwhile must wait for their rows.
        let back: Vec<usize> = self.in_flight.drain().map(|(d, _)| d).collect();
        for d in back {
            self.at(t + REDELIVERY_MS, Ev::Arrive(d, None));
        }
        let waiting: Vec<usize> = (0..self.deliveries.len())
            .filter(|d| !self.deliveries[*d].ended && self.deliveries[*d].due.is_some())
            .collect();
        for d in waiting {
            self.at(t + REDELIVERY_MS, Ev::Arrive(d, None));
        }
    }

    fn run(s: &Scenario) -> Result<(), TestCaseError> {
        let base = Instant::now();
        let clock = Arc::new(Mutex::new(base));
        let mut sim = Sim {
            gate: Self::gate(&clock),
            clock,
            base,
            base_wall: OffsetDateTime::now_utc(),
            base_ms: crate::decide::fixtures::NOW,
            t: 0,
            worker: 0,
            deliveries: Vec::new(),
            in_flight: HashMap::new(),
            waiting_until: HashMap::new(),
            paused_until: HashMap::new(),
            siblings: HashMap::new(),
            queue: BinaryHeap::new(),
            events: HashMap::new(),
            seq: 0,
        };
        let orgs: Vec<(Uuid, Vec<(Uuid, Receiver)>)> = s
            .orgs
            .iter()
            .map(|eps| {
                let org = Uuid::new_v4();
                // The first endpoint is the org's primary, keyed by the org's id.
                let eps = eps
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (if i == 0 { org } else { Uuid::new_v4() }, *r))
                    .collect::<Vec<_>>();
                (org, eps)
            })
            .collect();
        for (org, eps) in &orgs {
            sim.siblings
                .insert(*org, eps.iter().map(|(e, _)| *e).collect());
        }
        for (org, at) in &s.events {
            let (org_id, eps) = &orgs[*org];
            let bundle: Vec<usize> = eps
                .iter()
                .map(|(e, r)| {
                    sim.deliveries.push(Delivery {
                        of: EndpointOf::new(*org_id, *e),
                        receiver: *r,
                        attempts: 0,
                        answers: 0,
                        ended: false,
                        state: DeliveryState::Queued,
                        due: None,
                        asked_until: 0,
                    });
                    sim.deliveries.len() - 1
                })
                .collect();
            for d in bundle {
                sim.at(*at, Ev::Arrive(d, None));
            }
        }
        for r in &s.restarts {
            sim.at(*r, Ev::Restart);
        }
        let end = 4 * 3_600_000;
        while let Some(Reverse((t, seq))) = sim.queue.pop() {
            prop_assert!(t < end, "still running after four simulated hours");
            sim.t = t;
            *sim.clock.lock().unwrap() = sim.base + Duration::from_millis(t);
            match sim.events.remove(&seq).expect("scheduled") {
                Ev::Arrive(d, nb) => {
                    // A bundle's parts are known as siblings from its first message.
                    let of = sim.deliveries[d].of;
                    let known: Vec<EndpointOf> = sim.siblings[&of.org.0]
                        .iter()
                        .map(|e| EndpointOf::new(of.org.0, *e))
                        .collect();
                    sim.gate.know(known);
                    sim.arrive(d, nb)?
                }
                Ev::Publish(d) => {
                    let del = &mut sim.deliveries[d];
                    if !del.ended
                        && del.state == DeliveryState::Queued
                        && del.due.is_some_and(|due| due <= t)
                    {
                        del.state = DeliveryState::Out;
                        del.due = None;
                        sim.arrive(d, None)?;
                    }
                }
                Ev::Done {
                    d,
                    worker,
                    took,
                    ok,
                    retry_after,
                } => sim.done(d, worker, took, ok, retry_after),
                Ev::Restart => sim.restart(),
            }
        }
        let open = sim.deliveries.iter().filter(|d| !d.ended).count();
        prop_assert_eq!(open, 0, "deliveries that never ended");
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_share_holds_nothing_goes_early_and_every_delivery_ends(s in scenario()) {
        Sim::run(&s)?;
    }
}
