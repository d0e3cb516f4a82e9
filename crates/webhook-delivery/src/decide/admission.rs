//! Admission: whether a delivery message may start an attempt now, waits inside the process
//! for a slot, or is parked in a TTL queue without using an attempt (docs/delivery.md,
//! "Fairness between orgs").
//!
//! [`plan_admission`] is the one decision a message asks for before it starts, and
//! [`Admission`] its one answer: the gate (`crate::gate`) counts under its lock, asks once, and
//! carries the answer out (a slot taken, a wait in the process, or a park plan).

use std::time::Duration;

use qualifier_bus::{DeliveryMeta, PARK_TIERS_MS};

use super::tier_for;

/// The shortest a parked message waits before it is looked at again.
pub(crate) const MIN_PARK: Duration = Duration::from_secs(1);

/// How long an org's first attempts may run before its overflow stops being given the short
/// park. Until one attempt has ended nobody knows whether its endpoint is quick (and may borrow
/// idle slots) or hanging (and must keep to its cap); a quick one answers within this, so its
/// overflow, back after [`SETTLE_PARK`], finds the duration known and borrows. A hanging one's
/// overflow makes one short hop, then parks for [`MIN_PARK`] and longer, as before.
pub const SETTLE_PARK: Duration = Duration::from_millis(100);

/// The longest a message held only by the newcomers' reserve waits inside the process for a
/// slot before it is parked after all ([`wait_here`]).
pub(crate) const WAIT_HERE_MAX: Duration = Duration::from_secs(5);

/// The shortest such wait: as long as the park it replaces ([`MIN_PARK`]). Under load a slot
/// can take longer than a few attempts to come round (a commit stall holds every attempt's
/// outcome), and a message parked then goes to the tail of the work queue as well.
pub(crate) const WAIT_HERE_MIN: Duration = MIN_PARK;

/// Why a message waits without using an attempt, with what decides how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The org holds its share of this process's attempt slots; `typical_ms` is how long its
    /// attempts usually take (unknown before the first one ends).
    /// `settling`: no attempt has ended yet and the first started under [`SETTLE_PARK`] ago.
    /// `may_wait`: its endpoint is quick, or not known yet (`settling`), so a slot it may take
    /// comes round soon (one of its own attempts ending, or one beyond the newcomers' reserve):
    /// the message waits for it in the process ([`wait_here`]).
    AtCap {
        typical_ms: Option<u64>,
        settling: bool,
        may_wait: bool,
        /// Cap's-worths of this org's messages already parked and not yet due back: the
        /// turns of its slots ahead of this one.
        turns_ahead: u32,
    },
    /// The receiver asked for a pause (`Retry-After`) that has this long left.
    BackingOff { for_ms: u64 },
}

impl Hold {
    pub fn label(self) -> &'static str {
        match self {
            Hold::AtCap { .. } => "at_cap",
            Hold::BackingOff { .. } => "backing_off",
        }
    }
}

/// Whether the message must wait whatever the slots: `gate` is the slots' answer (`None` when
/// one is free). The message's own `not-before` (a `Retry-After` learned by any replica)
/// comes first.
fn hold(meta: &DeliveryMeta, now_ms: i64, gate: Option<Hold>) -> Option<Hold> {
    match meta.not_before_ms {
        Some(t) if t > now_ms => Some(Hold::BackingOff {
            for_ms: (t - now_ms) as u64,
        }),
        _ => gate,
    }
}

/// The process's attempt slots, as the gate counts them when a message asks for one.
#[derive(Debug, Clone, Copy)]
pub struct Process {
    pub slots: usize,
    pub in_flight: usize,
    /// What one org may always hold (`QUALIFIER_DELIVERY_ORG_CONCURRENCY`).
    pub cap: usize,
    /// Messages wait in the process for a slot beyond the reserve ([`wait_here`]) and this one
    /// is not one of them: it queues behind them rather than borrowing ahead.
    pub queued_ahead: bool,
    pub attempt_timeout: Duration,
}

/// The process's slots as the rule weighs them: the counts, and what other orgs lack.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slots {
    pub slots: usize,
    pub in_flight: usize,
    /// What one org may always hold (`QUALIFIER_DELIVERY_ORG_CONCURRENCY`).
    pub cap: usize,
    /// How many slots other orgs waiting for one (parked or here) lack to reach their caps:
    /// those idle slots are theirs, so nobody borrows them.
    pub others_short: usize,
    /// Messages wait in the process for a slot beyond the reserve ([`wait_here`]) and this one
    /// is not one of them: it queues behind them rather than borrowing ahead.
    pub queued_ahead: bool,
    pub attempt_timeout: Duration,
}

/// One endpoint's slots, as the gate sees them: its own attempts and the receiver's pause,
/// and its place in its org's cap ([`InOrg`]).
#[derive(Debug, Clone, Copy)]
pub struct EndpointSlots {
    /// This endpoint's attempts in flight here.
    pub in_flight: usize,
    /// What is left of a receiver's `Retry-After` pause.
    pub paused_for: Option<Duration>,
    /// Its attempts' moving-average duration, once one has ended.
    pub typical: Option<Duration>,
    /// Before one has ended: how long ago its first attempt started.
    pub first_started_ago: Option<Duration>,
    /// Its messages parked at its share and not yet due back.
    pub parked_ahead: usize,
    /// Messages of this endpoint wait in the process for a slot and this one is not one of
    /// them: it queues behind them, so its messages start in the order they came.
    pub queued_ahead: bool,
    /// The org's other endpoints, as the share inside the org weighs them.
    pub org: InOrg,
}

/// An endpoint's siblings (the other endpoints of its org) as the share inside the org weighs
/// them. The default is an org's only endpoint: its cap is the endpoint's alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InOrg {
    /// The siblings' attempts in flight here: with the endpoint's own, what the org's cap counts.
    pub siblings_in_flight: usize,
    /// A sibling known here has nothing in flight: the last slot of the org's cap stays for
    /// such an endpoint, so that sibling's next message never finds the cap full.
    pub sibling_idle: bool,
    /// Siblings with an attempt in flight or a message waiting: with this endpoint, the
    /// number of shares the cap is split in while they all want slots.
    pub active_siblings: usize,
    /// Slots the siblings waiting below their share lack: an endpoint above its share leaves
    /// them free.
    pub siblings_short: usize,
}

impl EndpointSlots {
    /// The org's attempts in flight here, across its endpoints: what its cap counts.
    pub fn org_in_flight(&self) -> usize {
        self.in_flight + self.org.siblings_in_flight
    }

    /// The endpoint's share of its org's cap while its active siblings want slots too.
    pub fn share(&self, cap: usize) -> usize {
        cap.div_ceil(1 + self.org.active_siblings).max(1)
    }

    /// Whether this endpoint may take one more of its org's slots, given its siblings: below
    /// its share always (a free org slot permitting); above it, only a slot no waiting sibling
    /// lacks. While a sibling has nothing in flight, the org's last slot is kept for an
    /// endpoint with nothing in flight that is not known to be slow: that sibling's next
    /// message then starts at once however many of the org's receivers hang.
    fn fits_in_org(&self, p: &Slots) -> bool {
        let slow = self.typical.is_some_and(|t| t >= p.attempt_timeout / 2);
        let reserve = usize::from(self.org.sibling_idle && (self.in_flight > 0 || slow));
        let short = if self.in_flight >= self.share(p.cap) {
            self.org.siblings_short
        } else {
            0
        };
        self.org_in_flight() + reserve + short < p.cap
    }
}

/// Whether an endpoint's message may start an attempt now (the org's cap, shared by its
/// endpoints, work-conserving at both levels):
/// - never while its receiver's pause lasts;
/// - within its org's cap, when a slot is free and the endpoint's place in the org allows it
///   ([`EndpointSlots::fits_in_org`]): an org's endpoints together hold at most its cap, none
///   takes the slots a waiting sibling below its share lacks, and while a sibling has nothing
///   in flight the org's last slot is only for an endpoint with nothing in flight not known
///   to be slow;
/// - beyond its org's cap, it may borrow an idle slot when all of these hold: a cap's worth of
///   slots stays free after it (a newcomer finds one at once), and besides that as many as the
///   orgs waiting below their caps lack (their message finds its slot when it is back), and its
///   attempts are known to end quickly (under half the timeout), and no sibling waits below
///   its share. A
///   hanging or failing endpoint would hold a borrowed slot for the whole timeout, so it keeps
///   to its org's cap; a fast one gives a borrowed slot back within its typical duration.
/// - a message that arrives while others wait in the process ([`wait_here`]) queues behind
///   them: behind its own endpoint's for any slot, behind anyone's for a borrowed one. A
///   newcomer's message within its cap still starts at once.
pub(super) fn admit(ep: &EndpointSlots, p: &Slots) -> Result<(), Hold> {
    if let Some(left) = ep.paused_for {
        return Err(Hold::BackingOff {
            for_ms: left.as_millis() as u64,
        });
    }
    let free = p.slots.saturating_sub(p.in_flight);
    let within_cap = free > 0 && !ep.queued_ahead && ep.fits_in_org(p);
    let quick = ep.typical.is_some_and(|t| t < p.attempt_timeout / 2);
    let queued = p.queued_ahead || ep.queued_ahead;
    // A sibling waiting below its share gets the org's slots first: a borrowed slot counts
    // on the org's cap like any, and would be the one the sibling waits for.
    let may_borrow =
        free > p.cap + p.others_short && quick && !queued && ep.org.siblings_short == 0;
    if within_cap || may_borrow {
        Ok(())
    } else {
        let settling =
            ep.typical.is_none() && ep.first_started_ago.is_some_and(|a| a < SETTLE_PARK);
        Err(Hold::AtCap {
            typical_ms: ep.typical.map(|d| d.as_millis() as u64),
            settling,
            may_wait: quick || settling,
            turns_ahead: (ep.parked_ahead / ep.share(p.cap)) as u32,
        })
    }
}

/// Whether a held message waits inside the process for a slot (and how long at most) instead
/// of being parked at once. A quick org's message does: one of its own attempts ends within
/// about its typical duration, or a slot beyond the newcomers' reserve frees, and the message
/// takes it, in arrival order. A park would send it through a TTL queue for at least
/// [`MIN_PARK`] and then to the tail of the work queue, so an org alone on the system waited
/// seconds at p99 that it did not wait with the cap lifted.
///
/// The wait changes no share: a waiter is admitted by [`admit`] like any message, so it never
/// takes the reserve nor a slot another org waits for. It holds one unacked message
/// (prefetch) meanwhile; a newcomer's message is let in by the next ack, one of the quick
/// org's attempts away.
///
/// An org whose first attempts are still young (`settling`) waits here up to [`SETTLE_PARK`]
/// for the first of them to end, which tells whether it is quick. Everything else parks as
/// before: a receiver's pause, a slow or hanging endpoint (a waiter would hold its message for
/// the whole timeout).
pub(super) fn wait_here(hold: Hold) -> Option<Duration> {
    match hold {
        Hold::AtCap {
            may_wait: true,
            settling: true,
            ..
        } => Some(SETTLE_PARK),
        Hold::AtCap {
            may_wait: true,
            typical_ms: Some(t),
            ..
        } => Some((Duration::from_millis(t) * 4).clamp(WAIT_HERE_MIN, WAIT_HERE_MAX)),
        _ => None,
    }
}

/// How long a held message waits before it is looked at again: once per wait, so holding an
/// org back costs the shared queue one hop per message, not one per second.
/// - Backing off: the rest of the pause the receiver asked for.
/// - At its cap: about one of its attempts' time (a slot has freed by then), between
///   [`MIN_PARK`] and the attempt timeout; [`MIN_PARK`] until one attempt has ended, and
///   [`SETTLE_PARK`] while its first attempts are younger than that.
/// - At its cap behind its own parked messages: one attempt's time per cap's worth ahead of
///   it (about when its turn comes), up to [`MAX_TURNS_AHEAD`] more. A slow org's burst of a
///   thousand otherwise hopped through the broker every second, each message, and that churn
///   took the CPU its neighbours deliver with (the noisy-neighbour benchmark, docs/performance.md).
pub(crate) fn park_wait(hold: Hold, attempt_timeout: Duration) -> Duration {
    match hold {
        Hold::BackingOff { for_ms } => Duration::from_millis(for_ms),
        Hold::AtCap { settling: true, .. } => SETTLE_PARK,
        Hold::AtCap {
            typical_ms,
            turns_ahead,
            ..
        } => {
            typical_ms
                .map_or(MIN_PARK, Duration::from_millis)
                .min(attempt_timeout)
                .max(MIN_PARK)
                * (1 + turns_ahead.min(MAX_TURNS_AHEAD))
        }
    }
}

/// The most turns of its slots a parked message waits out in one park: a slow endpoint that
/// speeds up is noticed within this many of its old attempt durations.
pub(crate) const MAX_TURNS_AHEAD: u32 = 8;

/// The pause a parked message carries in its `not-before` header, so that whichever replica
/// takes it next honours the receiver's `Retry-After` too (its own gate may not know of it).
fn carried_not_before(hold: Hold, now_ms: i64) -> Option<i64> {
    match hold {
        Hold::BackingOff { for_ms } => Some(now_ms + for_ms as i64),
        Hold::AtCap { .. } => None,
    }
}

/// Another org, as the fairness rule sees it when a message asks for a slot.
#[derive(Debug, Clone, Copy)]
pub struct Neighbour {
    pub in_flight: usize,
    /// A message of it waits for a slot (parked at its cap, or waiting in the process).
    pub waiting: bool,
}

/// How many idle slots belong to other orgs that wait below their caps: that many are theirs,
/// not the asking org's to borrow. Only that many: counting any waiting org as "all slots
/// taken" throttled a quick org to its cap whenever a hanging org's slot fell free while its
/// message was parked, which left the slots idle and halved the quick org's rate (the
/// noisy-neighbour benchmark, docs/performance.md).
fn others_short(cap: usize, others: impl Iterator<Item = Neighbour>) -> usize {
    others
        .filter(|o| o.waiting)
        .map(|o| cap.saturating_sub(o.in_flight))
        .sum()
}

/// How a message waits without using an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkPlan {
    /// The metric label of why (`at_cap`, `backing_off`).
    pub reason: &'static str,
    /// The park queue: an index into `qualifier_bus::PARK_TIERS_MS`.
    pub tier: usize,
    /// The `not-before` the parked message carries (a receiver's pause, for every replica).
    pub not_before_ms: Option<i64>,
    /// The org counts as waiting this long, so other orgs leave it the slots it lacks.
    pub org_waits: Option<Duration>,
    /// Why the message is held, as the plan was made from it.
    pub hold: Hold,
}

/// A park at least this long waits in the delivery's row rather than in a park queue (a
/// receiver's `Retry-After`, a long back-off): what waits that long is kept where an erasure
/// reaches it. Shorter parks (an org at its in-flight cap) stay in the broker, where they cost
/// no database write and last seconds.
pub(crate) const PARK_IN_ROW_FROM_MS: u64 = 16_000;

impl ParkPlan {
    /// When the park waits in the delivery's row: the instant (Unix ms) its attempt is due.
    /// `None`: it waits in its park queue.
    pub fn in_row_until(&self, now_ms: i64) -> Option<i64> {
        let wait = PARK_TIERS_MS[self.tier];
        (wait >= PARK_IN_ROW_FROM_MS).then(|| super::due_at(self.not_before_ms, now_ms, wait))
    }
}

/// Where and how long a held message is parked (once per wait: [`park_wait`]).
fn park(hold: Hold, attempt_timeout: Duration, now_ms: i64) -> ParkPlan {
    let tier = tier_for(&PARK_TIERS_MS, park_wait(hold, attempt_timeout));
    ParkPlan {
        reason: hold.label(),
        tier,
        not_before_ms: carried_not_before(hold, now_ms),
        org_waits: matches!(hold, Hold::AtCap { .. })
            .then(|| Duration::from_millis(PARK_TIERS_MS[tier])),
        hold,
    }
}

/// The answer to a message asking to start: the one type every admission answer takes.
#[derive(Debug)]
pub enum Admission<P> {
    /// A slot is taken: start the attempt.
    Start(P),
    /// No slot it may take now, but one comes round soon: wait in the process at most `limit`
    /// (the gate's `wait_for_slot`, which asks again as slots free), then park as `otherwise`.
    WaitHere {
        limit: Duration,
        otherwise: ParkPlan,
    },
    /// Park the message, as planned.
    Park(ParkPlan),
}

/// The one admission decision of a message: its own pause first (a receiver's `Retry-After`
/// carried in `meta`), then its endpoint's place in its org's cap and the process's slots as
/// the gate counted them, with the orgs beside it (`neighbours`: those waiting below their caps
/// keep the slots they lack). A message held is told whether to wait in the process and how it
/// would be parked.
pub fn plan_admission(
    meta: &DeliveryMeta,
    now_ms: i64,
    endpoint: &EndpointSlots,
    process: &Process,
    neighbours: impl Iterator<Item = Neighbour>,
) -> Admission<()> {
    let held = match hold(meta, now_ms, None) {
        Some(paused) => paused,
        None => {
            let p = Slots {
                slots: process.slots,
                in_flight: process.in_flight,
                cap: process.cap,
                others_short: others_short(process.cap, neighbours),
                queued_ahead: process.queued_ahead,
                attempt_timeout: process.attempt_timeout,
            };
            match admit(endpoint, &p) {
                Ok(()) => return Admission::Start(()),
                Err(h) => h,
            }
        }
    };
    let otherwise = park(held, process.attempt_timeout, now_ms);
    match wait_here(held) {
        Some(limit) => Admission::WaitHere { limit, otherwise },
        None => Admission::Park(otherwise),
    }
}

/// Which messages go first in a process: those of endpoints that answer, then those of an
/// endpoint whose last attempts here failed. A failing endpoint's attempts are as many as a
/// healthy one's until it is found failing (a minute when deployed), and they arrive with the
/// others' (each event's deliveries come together): sent at the same moments, they took the
/// same cores, connections and batches, and the others' commit-to-receipt latency grew with
/// them. In the background lane a message waits until no foreground message is being handled,
/// at most [`BACKGROUND_WAIT_MAX`]: its delivery loses at most that much, which an endpoint
/// that fails does not notice, and the others do not wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Foreground,
    Background,
}

/// The longest a background message waits for the foreground ([`Lane`]).
pub const BACKGROUND_WAIT_MAX: Duration = Duration::from_millis(100);

/// The lane of an endpoint's messages, by how many of its last attempts in this process in a
/// row were not answered 2xx: one is enough (a success puts it back at once).
pub fn lane(failed_in_a_row: u32) -> Lane {
    if failed_in_a_row == 0 {
        Lane::Foreground
    } else {
        Lane::Background
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::tier_for as park_tier;
    use super::*;
    use qualifier_domain::EventType;

    /// The process as the gate counts it: 64 slots, a cap of 16, `in_flight` taken.
    fn process(in_flight: usize) -> Process {
        Process {
            slots: 64,
            in_flight,
            cap: 16,
            queued_ahead: false,
            attempt_timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_paused_message_parks_whatever_the_slots() {
        let mut m = meta(EventType::LeadCreated);
        m.not_before_ms = Some(NOW + 2000);
        let Admission::Park(p) =
            plan_admission(&m, NOW, &org(0, None), &process(0), std::iter::empty())
        else {
            panic!("a paused message must not start, even with every slot free")
        };
        assert_eq!(p.hold, Hold::BackingOff { for_ms: 2000 });
        m.not_before_ms = None;
        assert!(matches!(
            plan_admission(&m, NOW, &org(0, None), &process(0), std::iter::empty()),
            Admission::Start(())
        ));
    }

    #[test]
    fn a_message_waits_for_its_not_before_then_for_the_org_gate() {
        let mut m = meta(EventType::LeadCreated);
        let at_cap = Hold::AtCap {
            typical_ms: None,
            settling: false,
            may_wait: false,
            turns_ahead: 0,
        };
        assert_eq!(hold(&m, NOW, None), None);
        assert_eq!(hold(&m, NOW, Some(at_cap)), Some(at_cap));
        m.not_before_ms = Some(NOW + 1500);
        let backing_off = Some(Hold::BackingOff { for_ms: 1500 });
        assert_eq!(hold(&m, NOW, None), backing_off);
        assert_eq!(hold(&m, NOW, Some(at_cap)), backing_off);
        m.not_before_ms = Some(NOW);
        assert_eq!(
            hold(&m, NOW, None),
            None,
            "the pause is over at its instant"
        );
    }

    /// `others_waiting`: another org waits with none of its 16 in flight.
    fn slots(in_flight: usize, others_waiting: bool) -> Slots {
        Slots {
            slots: 64,
            in_flight,
            cap: 16,
            others_short: if others_waiting { 16 } else { 0 },
            queued_ahead: false,
            attempt_timeout: Duration::from_secs(10),
        }
    }

    fn org(in_flight: usize, typical_ms: Option<u64>) -> EndpointSlots {
        EndpointSlots {
            in_flight,
            paused_for: None,
            typical: typical_ms.map(Duration::from_millis),
            first_started_ago: None,
            parked_ahead: 0,
            queued_ahead: false,
            org: InOrg::default(),
        }
    }

    #[test]
    fn an_org_whose_first_attempts_are_young_parks_briefly_then_as_before() {
        let young = EndpointSlots {
            first_started_ago: Some(Duration::from_millis(20)),
            ..org(16, None)
        };
        let hold = admit(&young, &slots(16, false)).unwrap_err();
        let timeout = Duration::from_secs(10);
        assert_eq!(park_wait(hold, timeout), SETTLE_PARK);
        assert_eq!(park_tier(&[100, 1_000, 4_000], SETTLE_PARK), 0);
        // Its first attempt has run past the settle time without ending: maybe a hanging
        // endpoint, so its overflow waits as long as before.
        let old = EndpointSlots {
            first_started_ago: Some(SETTLE_PARK * 3),
            ..org(16, None)
        };
        let hold = admit(&old, &slots(16, false)).unwrap_err();
        assert_eq!(park_wait(hold, timeout), MIN_PARK);
        // Once an attempt has ended its typical duration decides, young or not.
        let known = EndpointSlots {
            first_started_ago: Some(Duration::from_millis(20)),
            ..org(16, Some(6_000))
        };
        let hold = admit(&known, &slots(16, false)).unwrap_err();
        assert_eq!(park_wait(hold, timeout), Duration::from_secs(6));
    }

    #[test]
    fn within_its_cap_an_org_starts_whenever_a_slot_is_free() {
        assert_eq!(admit(&org(15, None), &slots(63, true)), Ok(()));
        assert!(matches!(
            admit(&org(3, None), &slots(64, false)),
            Err(Hold::AtCap { .. })
        ));
    }

    #[test]
    fn a_paused_org_waits_out_its_pause_even_with_free_slots() {
        let mut o = org(0, Some(5));
        o.paused_for = Some(Duration::from_secs(30));
        assert_eq!(
            admit(&o, &slots(0, false)),
            Err(Hold::BackingOff { for_ms: 30_000 })
        );
    }

    #[test]
    fn a_quick_org_borrows_idle_slots_but_leaves_a_cap_free() {
        let fast = Some(20);
        assert_eq!(admit(&org(16, fast), &slots(16, false)), Ok(()));
        assert_eq!(admit(&org(47, fast), &slots(47, false)), Ok(()));
        assert_eq!(
            admit(&org(48, fast), &slots(48, false)),
            Err(Hold::AtCap {
                typical_ms: Some(20),
                settling: false,
                may_wait: true,
                turns_ahead: 0,
            }),
            "the last 16 slots stay free for a newcomer"
        );
    }

    #[test]
    fn a_quick_org_waits_in_the_process_for_a_slot_it_may_take() {
        let held = |o: EndpointSlots, s: Slots| wait_here(admit(&o, &s).unwrap_err());
        // Quick and alone, beyond its cap with only the reserve left: four attempts, at least
        // as long as a park.
        assert_eq!(
            held(org(48, Some(20)), slots(48, false)),
            Some(WAIT_HERE_MIN)
        );
        assert_eq!(
            held(org(48, Some(400)), slots(48, false)),
            Some(Duration::from_millis(1_600))
        );
        assert_eq!(
            held(org(48, Some(4_000)), slots(48, false)),
            Some(WAIT_HERE_MAX)
        );
        // Messages already wait here for a slot beyond the reserve: a new one queues behind
        // them instead of taking a released slot first.
        let behind = Slots {
            queued_ahead: true,
            ..slots(20, false)
        };
        assert_eq!(held(org(20, Some(20)), behind), Some(WAIT_HERE_MIN));
        // Another org waits below its cap: the idle slots are its, so this one waits for one
        // of its own attempts to end.
        assert_eq!(
            held(org(16, Some(20)), slots(40, true)),
            Some(WAIT_HERE_MIN)
        );
        // Its own messages already wait here: a new one queues behind them, even within its
        // cap, so they start in the order they came.
        let own = EndpointSlots {
            queued_ahead: true,
            ..org(3, Some(20))
        };
        assert_eq!(held(own, slots(20, false)), Some(WAIT_HERE_MIN));
        // Slow, hanging or not yet known: parks (a waiter would hold its message that long).
        assert_eq!(held(org(16, Some(5_000)), slots(16, false)), None);
        assert_eq!(held(org(16, None), slots(16, false)), None);
        // Its first attempts are young: it waits here until the first one ends, at most the
        // settle time.
        let young = EndpointSlots {
            first_started_ago: Some(Duration::from_millis(20)),
            ..org(16, None)
        };
        assert_eq!(held(young, slots(16, false)), Some(SETTLE_PARK));
        // A receiver's pause is never waited out in the process.
        let mut paused = org(0, Some(20));
        paused.paused_for = Some(Duration::from_secs(3));
        assert_eq!(held(paused, slots(0, false)), None);
    }

    #[test]
    fn nobody_borrows_the_slots_an_org_waiting_below_its_cap_lacks() {
        // Another org waits with none in flight: its 16 and the reserve's 16 stay free.
        assert_eq!(admit(&org(16, Some(20)), &slots(31, true)), Ok(()));
        assert!(admit(&org(16, Some(20)), &slots(32, true)).is_err());
        // It waits with 13 of its 16 in flight: 3 more stay free besides the reserve.
        let short3 = Slots {
            others_short: 3,
            ..slots(44, false)
        };
        assert_eq!(admit(&org(28, Some(20)), &short3), Ok(()));
        let short3 = Slots {
            in_flight: 45,
            ..short3
        };
        assert!(admit(&org(29, Some(20)), &short3).is_err());
    }

    #[test]
    fn a_slow_or_unknown_endpoint_keeps_to_its_cap() {
        // A hanging endpoint would hold a borrowed slot for the whole timeout.
        assert!(admit(&org(16, Some(9_000)), &slots(16, false)).is_err());
        assert!(admit(&org(16, Some(5_000)), &slots(16, false)).is_err());
        assert_eq!(admit(&org(16, Some(4_999)), &slots(16, false)), Ok(()));
        assert!(
            admit(&org(16, None), &slots(16, false)).is_err(),
            "not known yet"
        );
    }

    #[test]
    fn a_held_message_waits_once_per_wait() {
        let timeout = Duration::from_secs(10);
        // The rest of a receiver's pause, whatever it is.
        assert_eq!(
            park_wait(Hold::BackingOff { for_ms: 60_000 }, timeout),
            Duration::from_secs(60)
        );
        // At the cap: about one attempt's time, at least a second, at most the timeout.
        let at_cap = |typical_ms| {
            park_wait(
                Hold::AtCap {
                    typical_ms,
                    settling: false,
                    may_wait: false,
                    turns_ahead: 0,
                },
                timeout,
            )
        };
        assert_eq!(at_cap(None), MIN_PARK);
        assert_eq!(at_cap(Some(20)), MIN_PARK);
        assert_eq!(at_cap(Some(4_000)), Duration::from_secs(4));
        assert_eq!(
            at_cap(Some(10_000)),
            timeout,
            "a hanging endpoint: one timeout"
        );
        assert_eq!(at_cap(Some(60_000)), timeout);
        // Behind three cap's worths of its own parked messages: its turn, four attempts away,
        // and never more than nine.
        let behind = |typical_ms, turns_ahead| {
            park_wait(
                Hold::AtCap {
                    typical_ms,
                    settling: false,
                    may_wait: false,
                    turns_ahead,
                },
                timeout,
            )
        };
        assert_eq!(behind(Some(2_000), 3), Duration::from_secs(8));
        assert_eq!(behind(None, 3), MIN_PARK * 4);
        assert_eq!(behind(Some(10_000), 500), timeout * 9);
        let short = Duration::from_millis(500);
        assert_eq!(
            park_wait(
                Hold::AtCap {
                    typical_ms: Some(900),
                    settling: false,
                    may_wait: false,
                    turns_ahead: 0,
                },
                short
            ),
            MIN_PARK
        );
    }

    #[test]
    fn a_message_parked_for_a_pause_carries_it_to_every_replica() {
        assert_eq!(
            carried_not_before(Hold::BackingOff { for_ms: 30_000 }, NOW),
            Some(NOW + 30_000)
        );
        assert_eq!(
            carried_not_before(
                Hold::AtCap {
                    typical_ms: None,
                    settling: false,
                    may_wait: false,
                    turns_ahead: 0,
                },
                NOW
            ),
            None
        );
    }

    #[test]
    fn a_long_park_waits_in_the_row_and_a_short_one_in_the_broker() {
        let short = park(
            Hold::BackingOff { for_ms: 2_000 },
            Duration::from_secs(10),
            NOW,
        );
        assert_eq!(short.in_row_until(NOW), None, "{short:?}");
        let long = park(
            Hold::BackingOff { for_ms: 120_000 },
            Duration::from_secs(10),
            NOW,
        );
        assert!(PARK_TIERS_MS[long.tier] >= PARK_IN_ROW_FROM_MS, "{long:?}");
        // Due when the receiver's pause ends, not after the park queue's shorter delay.
        assert_eq!(long.in_row_until(NOW), Some(NOW + 120_000));
    }

    #[test]
    fn the_park_tier_never_overshoots_the_wait() {
        let tiers = [1_000, 4_000, 16_000, 64_000, 256_000, 1_024_000];
        let tier = |secs| park_tier(&tiers, Duration::from_secs(secs));
        assert_eq!(tier(0), 0);
        assert_eq!(tier(1), 0);
        assert_eq!(tier(3), 0);
        assert_eq!(tier(10), 1);
        assert_eq!(tier(60), 2, "60 s: 16 s now, and the rest after");
        assert_eq!(tier(3600), 5);
        // A 60 s pause is covered in a handful of hops, not sixty.
        let (mut left, mut hops) = (60_000u64, 0);
        while left >= 1_000 {
            left -= tiers[park_tier(&tiers, Duration::from_millis(left))];
            hops += 1;
        }
        assert!(hops <= 6, "{hops} hops");
    }

    #[test]
    fn one_admission_plan_per_message() {
        let m = meta(EventType::LeadCreated);
        let none = std::iter::empty;
        // Within its cap: start.
        assert!(matches!(
            plan_admission(&m, NOW, &org(3, Some(2_000)), &process(3), none()),
            Admission::Start(())
        ));
        // A quick org at its cap with another org waiting below its own: it waits here for
        // one of its attempts to end, and would park at its cap if none did.
        let waiting = [Neighbour {
            in_flight: 0,
            waiting: true,
        }];
        let Admission::WaitHere { limit, otherwise } = plan_admission(
            &m,
            NOW,
            &org(16, Some(20)),
            &process(40),
            waiting.into_iter(),
        ) else {
            panic!("a quick org waits in the process")
        };
        assert_eq!(limit, WAIT_HERE_MIN);
        assert_eq!(otherwise.reason, "at_cap");
        // The same org with nobody waiting borrows an idle slot.
        assert!(matches!(
            plan_admission(&m, NOW, &org(16, Some(20)), &process(40), none()),
            Admission::Start(())
        ));
        // A slow org at its cap parks: a 2 s endpoint (slow beside a 3 s timeout) waits in
        // the 1 s tier, then again.
        let slow = Process {
            attempt_timeout: Duration::from_secs(3),
            ..process(16)
        };
        let Admission::Park(p) = plan_admission(&m, NOW, &org(16, Some(2_000)), &slow, none())
        else {
            panic!("parked")
        };
        assert_eq!(p.reason, "at_cap");
        assert_eq!(
            PARK_TIERS_MS[p.tier], 1_000,
            "2 s: the 1 s tier, then again"
        );
        assert_eq!(p.org_waits, Some(Duration::from_millis(1_000)));
        assert_eq!(p.not_before_ms, None);
        // A receiver's pause carried by the message parks it whatever the slots, and the
        // parked message carries the pause on.
        let mut paused = m.clone();
        paused.not_before_ms = Some(NOW + 60_000);
        let Admission::Park(p) = plan_admission(&paused, NOW, &org(0, None), &process(0), none())
        else {
            panic!("parked")
        };
        assert_eq!(
            (p.reason, p.not_before_ms),
            ("backing_off", Some(NOW + 60_000))
        );
        assert_eq!(p.org_waits, None);
    }

    #[test]
    fn only_waiting_neighbours_keep_slots_free() {
        let n = |in_flight, waiting| Neighbour { in_flight, waiting };
        assert_eq!(others_short(16, [n(3, true), n(0, false)].into_iter()), 13);
        assert_eq!(others_short(16, [n(20, true), n(0, true)].into_iter()), 16);
        assert_eq!(others_short(16, std::iter::empty()), 0);
    }

    #[test]
    fn an_endpoint_goes_to_the_background_at_its_first_failure_and_back_at_its_first_success() {
        assert_eq!(lane(0), Lane::Foreground);
        assert_eq!(lane(1), Lane::Background);
        assert_eq!(lane(u32::MAX), Lane::Background);
        assert!(BACKGROUND_WAIT_MAX <= MIN_PARK / 10, "a wait, not a park");
    }
}
