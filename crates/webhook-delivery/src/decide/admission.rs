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
    /// attempts usually take, or before the first one ends, how long the oldest has run (the
    /// least their duration can be; unknown while they are [`SETTLE_PARK`] young).
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
        // Before any attempt has ended (and past the settle time), its duration is guessed at
        // half the timeout, or the oldest attempt's age once that is longer (the least the
        // duration can be). A guess too short sent a burst's overflow back before any slot
        // had freed, each message to park again: the age of a first attempt is a fraction of
        // a second when a burst parks, and a backlog of a thousand came back within the
        // minute, once more each. A guess too long costs nothing: each attempt that ends
        // calls the endpoint's longest-parked delivery forward (`crate::gate`,
        // `call_forward`), and the duration is known from then on.
        let lasted = ep.typical.or_else(|| {
            ep.first_started_ago
                .filter(|_| !settling)
                .map(|age| age.max(p.attempt_timeout / 2))
        });
        Err(Hold::AtCap {
            typical_ms: lasted.map(|d| d.as_millis() as u64),
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
///   [`MIN_PARK`] and the attempt timeout; until one attempt has ended, the oldest one's age
///   (at least [`MIN_PARK`]), and [`SETTLE_PARK`] while its first attempts are younger than
///   that.
/// - At its cap behind its own parked messages: one attempt's time per turn of its slots ahead
///   of it (about when its turn comes), up to [`MAX_TURNS_WAITED`] turns. A slow org's burst
///   of a thousand otherwise hopped through the broker every second, each message, and that
///   churn took the CPU its neighbours deliver with (the noisy-neighbour benchmark,
///   docs/performance.md). A message that deep waits in its row ([`park`]), and the
///   endpoint's freed slots call it forward when its turn comes sooner (`crate::gate`,
///   `call_forward`): its wait is the latest it comes back, not its turn. A wait of half its
///   place, to look again halfway, brought every deep message back once more before its turn,
///   each a row written and a claim by the relay, inside other orgs' deliveries
///   (docs/performance.md, "Fairness whatever the unit").
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
                * (1 + turns_waited(turns_ahead))
        }
    }
}

/// The turns of its slots a parked message waits out, `turns_ahead` of them ahead of it: all
/// of them, at most [`MAX_TURNS_WAITED`].
fn turns_waited(turns_ahead: u32) -> u32 {
    turns_ahead.min(MAX_TURNS_WAITED)
}

/// Turns of its slots ahead of it from which a parked message waits in its row, where the
/// endpoint's freed slots can call it forward: up to here its turn is near, and it waits in
/// the broker.
pub(crate) const MAX_TURNS_AHEAD: u32 = 8;

/// The most turns of its slots a parked message waits out in one park: what a deep message
/// not called forward comes back after at the latest (at 5 s an attempt, under three
/// minutes), to park again with the duration as it is then.
pub(crate) const MAX_TURNS_WAITED: u32 = 32;

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
    /// How long it waits in the delivery's row (`None`: in its park queue).
    pub row_wait_ms: Option<u64>,
}

/// A park at least this long waits in the delivery's row rather than in a park queue (a
/// receiver's `Retry-After`, a long back-off): what waits that long is kept where an erasure
/// reaches it. Shorter parks (an org at its in-flight cap) stay in the broker, where they cost
/// no database write and last seconds, unless the message is deep in its endpoint's backlog
/// ([`park`]).
pub(crate) const PARK_IN_ROW_FROM_MS: u64 = 16_000;

impl ParkPlan {
    /// When the park waits in the delivery's row: the instant (Unix ms) its attempt is due.
    /// `None`: it waits in its park queue.
    pub fn in_row_until(&self, now_ms: i64) -> Option<i64> {
        self.row_wait_ms
            .map(|wait| super::due_at(self.not_before_ms, now_ms, wait))
    }
}

/// Where and how long a held message is parked (once per wait: [`park_wait`]). `spread`
/// (0-999, from the delivery's id) places a message deep in its endpoint's backlog within its
/// wait: such a backlog parks together (its messages arrive together), and a park queue
/// would send it back together, a thousand messages in a few hundred milliseconds, which the
/// workers' other orgs then wait beside. In its row, each comes due at its own instant between
/// the wait and twice it, a hundred or so a second.
fn park(hold: Hold, attempt_timeout: Duration, now_ms: i64, spread: u64) -> ParkPlan {
    let wait = park_wait(hold, attempt_timeout);
    let tier = tier_for(&PARK_TIERS_MS, wait);
    let deep = matches!(hold, Hold::AtCap { turns_ahead, .. } if turns_ahead >= MAX_TURNS_AHEAD);
    let row_wait_ms = if deep {
        Some(wait.as_millis() as u64 * (1_000 + spread % 1_000) / 1_000)
    } else {
        Some(PARK_TIERS_MS[tier]).filter(|w| *w >= PARK_IN_ROW_FROM_MS)
    };
    ParkPlan {
        reason: hold.label(),
        tier,
        not_before_ms: carried_not_before(hold, now_ms),
        org_waits: matches!(hold, Hold::AtCap { .. })
            .then(|| Duration::from_millis(row_wait_ms.unwrap_or(PARK_TIERS_MS[tier]))),
        hold,
        row_wait_ms,
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
    let spread = (meta.delivery_id.as_u128() % 1_000) as u64;
    let otherwise = park(held, process.attempt_timeout, now_ms, spread);
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
mod tests;
