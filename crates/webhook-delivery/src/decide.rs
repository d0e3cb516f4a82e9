//! The delivery rules, in one place: what happens to a delivery message before an attempt and
//! after one (contract section 4, and the fairness rules of `docs/decisions.md`).
//!
//! Pure functions over what the worker knows: no IO and no clock reads (the caller passes
//! `now`), so every rule is a unit test below. The worker carries out the [`Before`] and
//! [`After`] steps; the HTTP sender only sends and reports what it saw ([`Sent`]). A new rule
//! (say, "410 Gone ends the delivery at once") is a change here and a test here.

use std::time::Duration;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::DeliveryStatus;
use qualifier_domain::delivery::{AttemptEntry, FailureKind, NoAnswer};
use qualifier_domain::health::{EndpointHealth, EndpointState, HealthChange};
use qualifier_store::deliveries::DeliveryContext;
use qualifier_store::webhooks::WebhookForDelivery;
use time::OffsetDateTime;

/// Attempts in one cycle (seed: 5, then the dead-letter queue). A replay starts a new cycle.
pub const MAX_ATTEMPTS: u32 = 5;

/// The longest pause a receiver can ask for; a larger `Retry-After` is clamped, so a
/// misconfigured receiver cannot stall its deliveries past the retry budget.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The shortest a parked message waits before it is looked at again.
pub const MIN_PARK: Duration = Duration::from_secs(1);

/// How long an org's first attempts may run before its overflow stops being given the short
/// park. Until one attempt has ended nobody knows whether its endpoint is quick (and may borrow
/// idle slots) or hanging (and must keep to its cap); a quick one answers within this, so its
/// overflow, back after [`SETTLE_PARK`], finds the duration known and borrows. A hanging one's
/// overflow makes one short hop, then parks for [`MIN_PARK`] and longer, as before.
pub const SETTLE_PARK: Duration = Duration::from_millis(100);

/// The longest a message held only by the newcomers' reserve waits inside the process for a
/// slot before it is parked after all ([`wait_here`]).
pub const WAIT_HERE_MAX: Duration = Duration::from_secs(5);

/// The shortest such wait: as long as the park it replaces ([`MIN_PARK`]). Under load a slot
/// can take longer than a few attempts to come round (a commit stall holds every attempt's
/// outcome), and a message parked then goes to the tail of the work queue as well.
pub const WAIT_HERE_MIN: Duration = MIN_PARK;

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

/// Why a delivery ends without a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    NotConfigured,
    Disabled,
    NotSubscribed,
}

impl SkipReason {
    /// The delivery log's `last_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotConfigured => "webhook not configured",
            SkipReason::Disabled => "webhook disabled",
            SkipReason::NotSubscribed => "event type not subscribed",
        }
    }
}

/// What happens to a message before any attempt.
#[derive(Debug, PartialEq)]
pub enum Before<'a> {
    /// A redelivery of a delivery that already ended (a crash between the outcome and the ack):
    /// acknowledge it and send nothing.
    Drop,
    /// The message names a delivery that has no row: acknowledge it, send nothing, log it
    /// loudly. The relay publishes only committed rows and retention removes only finished
    /// ones, so this is a message from elsewhere (a restored database, a hand-published
    /// message); no read will ever find its row, and requeueing it would spin forever.
    Orphan,
    /// End the delivery as `skipped`, with no request made.
    Skip(SkipReason),
    /// The attempt fails without a request (the error goes to the delivery log), then
    /// [`after_attempt`] decides as for any failure.
    FailWithoutRequest(NoAnswer),
    /// Its endpoint is failing (contract section 9): the delivery waits in its row, keeping
    /// its attempt number, until a probe finds the endpoint back. No attempt is spent.
    Hold,
    /// Send to this webhook, as it is now.
    Send(&'a WebhookForDelivery),
}

/// The admission of a message, in one place: its own pause first (so no slot is taken only to
/// be given back), then the org gate's answer (`enter`, asked only when the message may start).
pub fn admission<P>(
    meta: &DeliveryMeta,
    now_ms: i64,
    enter: impl FnOnce() -> Result<P, Hold>,
) -> Result<P, Hold> {
    match hold(meta, now_ms, None) {
        Some(why) => Err(why),
        None => enter(),
    }
}

/// Whether the message may start an attempt now, or must wait: `gate` is the org gate's answer
/// (`None` when it granted a slot). The message's own `not-before` (a `Retry-After` learned by
/// any replica) comes first.
pub fn hold(meta: &DeliveryMeta, now_ms: i64, gate: Option<Hold>) -> Option<Hold> {
    match meta.not_before_ms {
        Some(t) if t > now_ms => Some(Hold::BackingOff {
            for_ms: (t - now_ms) as u64,
        }),
        _ => gate,
    }
}

/// The process's attempt slots, as the gate sees them when a message asks for one.
#[derive(Debug, Clone, Copy)]
pub struct Slots {
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

/// One org's share, as the gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct OrgSlots {
    pub in_flight: usize,
    /// What is left of a receiver's `Retry-After` pause.
    pub paused_for: Option<Duration>,
    /// Its attempts' moving-average duration, once one has ended.
    pub typical: Option<Duration>,
    /// Before one has ended: how long ago its first attempt started.
    pub first_started_ago: Option<Duration>,
    /// Its messages parked at its cap and not yet due back.
    pub parked_ahead: usize,
    /// Messages of this org wait in the process for a slot and this one is not one of them:
    /// it queues behind them, so its org's messages start in the order they came.
    pub queued_ahead: bool,
}

/// Whether an org may start an attempt now (the per-org cap, work-conserving):
/// - never while its receiver's pause lasts;
/// - always within its cap, when a slot is free;
/// - beyond its cap, it may borrow an idle slot when all of these hold: a cap's worth of slots
///   stays free after it (a newcomer finds one at once), and besides that as many as the orgs
///   waiting below their caps lack (their message finds its slot when it is back), and its
///   attempts are known to end quickly (under half the timeout). A
///   hanging or failing endpoint would hold a borrowed slot for the whole timeout, so it keeps
///   to its cap; a fast one gives a borrowed slot back within its typical duration.
/// - a message that arrives while others wait in the process ([`wait_here`]) queues behind
///   them: behind its own org's for any slot, behind anyone's for a borrowed one. A newcomer's
///   message within its cap still starts at once.
pub fn admit(org: &OrgSlots, p: &Slots) -> Result<(), Hold> {
    if let Some(left) = org.paused_for {
        return Err(Hold::BackingOff {
            for_ms: left.as_millis() as u64,
        });
    }
    let free = p.slots.saturating_sub(p.in_flight);
    let within_cap = org.in_flight < p.cap && free > 0 && !org.queued_ahead;
    let quick = org.typical.is_some_and(|t| t < p.attempt_timeout / 2);
    let queued = p.queued_ahead || org.queued_ahead;
    let may_borrow = free > p.cap + p.others_short && quick && !queued;
    if within_cap || may_borrow {
        Ok(())
    } else {
        let settling =
            org.typical.is_none() && org.first_started_ago.is_some_and(|a| a < SETTLE_PARK);
        Err(Hold::AtCap {
            typical_ms: org.typical.map(|d| d.as_millis() as u64),
            settling,
            may_wait: quick || settling,
            turns_ahead: (org.parked_ahead / p.cap.max(1)) as u32,
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
pub fn wait_here(hold: Hold) -> Option<Duration> {
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
///   took the CPU its neighbours deliver with (noisy-neighbour run, issue 26).
pub fn park_wait(hold: Hold, attempt_timeout: Duration) -> Duration {
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
pub const MAX_TURNS_AHEAD: u32 = 8;

/// The pause a parked message carries in its `not-before` header, so that whichever replica
/// takes it next honours the receiver's `Retry-After` too (its own gate may not know of it).
pub fn carried_not_before(hold: Hold, now_ms: i64) -> Option<i64> {
    match hold {
        Hold::BackingOff { for_ms } => Some(now_ms + for_ms as i64),
        Hold::AtCap { .. } => None,
    }
}

/// The park queue for `wait`: the longest tier that does not overshoot it (a longer wait is a
/// few hops through shorter tiers, each queue keeping one TTL so its messages expire in order),
/// or the shortest tier.
pub fn park_tier(tiers_ms: &[u64], wait: Duration) -> usize {
    let wait_ms = wait.as_millis() as u64;
    tiers_ms
        .iter()
        .enumerate()
        .filter(|(_, t)| **t <= wait_ms)
        .max_by_key(|(_, t)| **t)
        .map_or(0, |(i, _)| i)
}

/// What to do with a message that may start, given the delivery's row and its org's webhook as
/// they are now (configuration is read at delivery time: seed section 6, rule 5).
/// `ctx` is `None` when the delivery has no row.
pub fn before_attempt<'a>(
    meta: &DeliveryMeta,
    ctx: impl Into<Option<&'a DeliveryContext>>,
) -> Before<'a> {
    let Some(ctx) = ctx.into() else {
        return Before::Orphan;
    };
    if ctx.status.is_final() {
        return Before::Drop;
    }
    let hook = match &ctx.webhook {
        None => return Before::Skip(SkipReason::NotConfigured),
        // The secret cannot be opened (QUALIFIER_SECRET_KEY changed): an ordinary failure, so
        // the delivery ends dead and can be replayed after a rotation, instead of looping.
        Some(Err(_)) => {
            return Before::FailWithoutRequest(NoAnswer::new(
                FailureKind::SecretUnreadable,
                "signing secret unreadable (QUALIFIER_SECRET_KEY changed?); rotate the secret",
            ));
        }
        Some(Ok(hook)) => hook,
    };
    if !hook.webhook.enabled {
        return Before::Skip(SkipReason::Disabled);
    }
    // A test event was asked for by name: it goes whatever the subscription.
    if !meta.test && !hook.webhook.event_types.contains(&meta.event_type) {
        return Before::Skip(SkipReason::NotSubscribed);
    }
    // A test event asked for while the endpoint fails is sent at once, as a probe would be.
    if ctx.health.state == EndpointState::Failing && !meta.test {
        return Before::Hold;
    }
    Before::Send(hook)
}

/// What the sender saw: the receiver's status and `Retry-After`, or no answer at all.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Status {
        code: u16,
        retry_after: Option<String>,
    },
    /// Timeout, connection or TLS error, or a refused address.
    NoAnswer(NoAnswer),
}

/// One attempt as the sender reports it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub started_at: OffsetDateTime,
    pub duration_ms: u64,
    pub response: Response,
    /// The headers the request carried (empty when none was sent).
    pub request_headers: Vec<(String, String)>,
    /// What the attempt keeps of the receiver's answer (`response_excerpt`).
    pub response_body: Option<String>,
}

impl Sent {
    /// A failure that never reached the network.
    pub fn without_request(started_at: OffsetDateTime, why: NoAnswer) -> Sent {
        Sent {
            started_at,
            duration_ms: 0,
            response: Response::NoAnswer(why),
            request_headers: Vec::new(),
            response_body: None,
        }
    }
}

/// What happens after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    /// Record `succeeded` and acknowledge.
    Succeeded,
    /// Record `failed` and schedule attempt `attempt + 1` on retry queue `queue`. With
    /// `org_back_off`, this process also holds the whole org for that long; with `not_before_ms`,
    /// the message carries the pause to whichever replica takes it next.
    Retry {
        queue: usize,
        not_before_ms: Option<i64>,
        org_back_off: Option<Duration>,
    },
    /// Record `dead` and route the message to the dead-letter exchange.
    Dead,
    /// Record `failed` and hold the delivery in its row while the endpoint fails; it resumes
    /// at `resume_attempt` when the endpoint is back ([`during_outage`]).
    Hold { resume_attempt: u32 },
}

impl After {
    /// The status the delivery log records for this step.
    pub fn status(&self) -> DeliveryStatus {
        match self {
            After::Succeeded => DeliveryStatus::Succeeded,
            After::Retry { .. } | After::Hold { .. } => DeliveryStatus::Failed,
            After::Dead => DeliveryStatus::Dead,
        }
    }
}

/// Classifies attempt number `attempt` and picks the next step; returns its log entry beside it.
///
/// - Success is a 2xx; every other status (3xx included: redirects are never followed), and no
///   answer at all, fails the attempt.
/// - Attempts 1..4 that fail are retried after `delays_ms[attempt - 1]`; the 5th goes dead.
/// - A 429 or 503 with `Retry-After: <seconds>` pauses the org for that long (clamped to
///   [`MAX_RETRY_AFTER`]); when it is longer than the scheduled delay, the message waits for it.
pub fn after_attempt(
    sent: &Sent,
    attempt: u32,
    delays_ms: &[u64],
    now_ms: i64,
) -> (AttemptEntry, After) {
    let mut error_kind = None;
    let (status_code, error, retry_after) = match &sent.response {
        Response::Status { code, .. } if (200..300).contains(code) => (Some(*code), None, None),
        Response::Status { code, retry_after } => {
            let error = if (300..400).contains(code) {
                format!("HTTP {code} (redirects are not followed)")
            } else {
                format!("HTTP {code}")
            };
            let honoured = matches!(code, 429 | 503)
                .then(|| retry_after.as_deref().and_then(parse_retry_after))
                .flatten();
            (Some(*code), Some(error), honoured)
        }
        Response::NoAnswer(why) => {
            error_kind = Some(why.kind);
            (None, Some(why.message.clone()), None)
        }
    };
    let failed = error.is_some();
    let record = AttemptEntry {
        attempt,
        started_at: sent.started_at,
        duration_ms: sent.duration_ms,
        status_code,
        error,
        error_kind,
        response_body: sent.response_body.clone(),
        request_headers: sent.request_headers.clone(),
    };
    let step = if !failed {
        After::Succeeded
    } else if attempt >= MAX_ATTEMPTS {
        After::Dead
    } else {
        let scheduled = (attempt as usize)
            .saturating_sub(1)
            .min(delays_ms.len() - 1);
        match retry_after {
            Some(wait) if Duration::from_millis(delays_ms[scheduled]) < wait => After::Retry {
                queue: retry_queue_for(delays_ms, wait),
                not_before_ms: Some(now_ms + wait.as_millis() as i64),
                org_back_off: Some(wait),
            },
            Some(wait) => After::Retry {
                queue: scheduled,
                not_before_ms: None,
                org_back_off: Some(wait),
            },
            None => After::Retry {
                queue: scheduled,
                not_before_ms: None,
                org_back_off: None,
            },
        }
    };
    (record, step)
}

/// `Retry-After` as delta-seconds (the form rate limiters send). An HTTP-date is not honoured:
/// it depends on the receiver's clock, and the normal retry schedule applies instead.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: u64 = v.trim().parse().ok()?;
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

// --- Endpoint health (contract section 9) ------------------------------------------------------

/// The endpoint-health settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthRules {
    /// `QUALIFIER_ENDPOINT_FAILING_AFTER`: failures in a row that make an endpoint failing...
    pub failing_after: u32,
    /// `QUALIFIER_ENDPOINT_FAILING_SPAN_MS`: ...the first and the last at least this far apart.
    pub failing_span: Duration,
    /// `QUALIFIER_ENDPOINT_PROBE_MIN_MS`: the first probe's wait; each failed probe doubles it...
    pub probe_min: Duration,
    /// `QUALIFIER_ENDPOINT_PROBE_MAX_MS`: ...up to this.
    pub probe_max: Duration,
    /// `QUALIFIER_ENDPOINT_DISABLE_AFTER_S`: failing this long disables the endpoint.
    pub disable_after: Duration,
}

impl Default for HealthRules {
    fn default() -> Self {
        HealthRules {
            failing_after: 3,
            failing_span: Duration::from_millis(60_000),
            probe_min: Duration::from_millis(5_000),
            probe_max: Duration::from_millis(900_000),
            disable_after: Duration::from_secs(432_000),
        }
    }
}

/// What one attempt (or probe) says about the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A 2xx.
    Up,
    /// A 429 or 503 with a `Retry-After` we honour: a back-off, not a failure.
    Paused,
    /// Anything else, in the delivery log's words; `gone` for a 410.
    Down { error: String, gone: bool },
}

/// Reads an attempt's answer as health sees it.
pub fn observed(sent: &Sent) -> Observed {
    match &sent.response {
        Response::Status { code, .. } if (200..300).contains(code) => Observed::Up,
        Response::Status { code, retry_after }
            if matches!(code, 429 | 503)
                && retry_after.as_deref().and_then(parse_retry_after).is_some() =>
        {
            Observed::Paused
        }
        Response::Status { code, .. } => Observed::Down {
            error: if (300..400).contains(code) {
                format!("HTTP {code} (redirects are not followed)")
            } else {
                format!("HTTP {code}")
            },
            gone: *code == 410,
        },
        Response::NoAnswer(why) => Observed::Down {
            error: why.message.clone(),
            gone: false,
        },
    }
}

/// Where an observation came from: a delivery's attempt, or a probe (a test event sent while
/// the endpoint fails counts as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Attempt,
    Probe,
}

/// Whether an attempt's observation can change the endpoint's health, seen from the health the
/// attempt started with: a clean endpoint's success changes nothing (and writes nothing), nor
/// does a back-off.
pub fn touches_health(o: &Observed, state: EndpointState, consecutive_failures: u32) -> bool {
    match o {
        Observed::Paused => false,
        Observed::Up => state != EndpointState::Healthy || consecutive_failures > 0,
        Observed::Down { .. } => true,
    }
}

/// The endpoint's health after an observation, and the change of state it makes, if any;
/// `None` when nothing changes (nothing is written).
/// - A success resets the failures; a failing endpoint becomes healthy (`Recovered`).
/// - A back-off changes nothing. A disabled endpoint stays disabled until it is re-enabled.
/// - A `410 Gone` disables at once.
/// - A failure counts; the `failing_after`-th in a row, `failing_span` or more after the first,
///   makes a healthy endpoint failing, its first probe `probe_min` away.
/// - A failed probe doubles the wait before the next (up to `probe_max`); failing for
///   `disable_after` disables.
pub fn health_after(
    h: &EndpointHealth,
    o: &Observed,
    source: Source,
    now: OffsetDateTime,
    rules: &HealthRules,
) -> Option<(EndpointHealth, Option<HealthChange>)> {
    if h.state == EndpointState::Disabled {
        return None;
    }
    let mut n = h.clone();
    match o {
        Observed::Paused => None,
        Observed::Up => {
            if h.is_clean() {
                return None;
            }
            n.consecutive_failures = 0;
            n.streak_started_at = None;
            n.last_success_at = Some(now);
            if h.state == EndpointState::Healthy {
                return Some((n, None));
            }
            n.state = EndpointState::Healthy;
            n.failing_since = None;
            n.next_probe_at = None;
            n.probe_interval_ms = None;
            Some((n, Some(HealthChange::Recovered)))
        }
        Observed::Down { error, gone } => {
            n.consecutive_failures = h.consecutive_failures.saturating_add(1);
            n.streak_started_at = Some(h.streak_started_at.unwrap_or(now));
            n.last_failure_at = Some(now);
            n.last_error = Some(error.clone());
            if *gone {
                return Some((
                    disable(n, format!("endpoint answered 410 Gone at {}", fmt(now))),
                    Some(HealthChange::Disabled),
                ));
            }
            match (h.state, source) {
                (EndpointState::Failing, Source::Probe) => {
                    let since = h.failing_since.unwrap_or(now);
                    if now - since >= rules.disable_after {
                        let reason = format!(
                            "failing since {} for longer than {} s",
                            fmt(since),
                            rules.disable_after.as_secs()
                        );
                        return Some((disable(n, reason), Some(HealthChange::Disabled)));
                    }
                    let last = h
                        .probe_interval_ms
                        .map_or(rules.probe_min, Duration::from_millis);
                    let next = (last * 2).clamp(rules.probe_min, rules.probe_max);
                    n.probe_interval_ms = Some(next.as_millis() as u64);
                    n.next_probe_at = Some(now + next);
                    Some((n, None))
                }
                // An attempt that started before the endpoint was found failing.
                (EndpointState::Failing, Source::Attempt) => Some((n, None)),
                _ => {
                    let streak = now - n.streak_started_at.unwrap_or(now);
                    if n.consecutive_failures >= rules.failing_after && streak >= rules.failing_span
                    {
                        n.state = EndpointState::Failing;
                        n.failing_since = Some(now);
                        n.probe_interval_ms = Some(rules.probe_min.as_millis() as u64);
                        n.next_probe_at = Some(now + rules.probe_min);
                        Some((n, Some(HealthChange::Failing)))
                    } else {
                        Some((n, None))
                    }
                }
            }
        }
    }
}

fn fmt(t: OffsetDateTime) -> String {
    qualifier_domain::timefmt::format(t)
}

fn disable(mut h: EndpointHealth, reason: String) -> EndpointHealth {
    h.state = EndpointState::Disabled;
    h.disabled_reason = Some(reason);
    h.next_probe_at = None;
    h.probe_interval_ms = None;
    h
}

/// While the endpoint fails, a failed delivery is held instead of retried or dead-lettered:
/// an outage spends no attempt and makes nothing dead. It resumes at its next attempt, and one
/// whose last attempt failed gets that last attempt again once the endpoint is back.
pub fn during_outage(step: After, attempt: u32, state: EndpointState) -> After {
    match step {
        After::Retry { .. } | After::Dead if state == EndpointState::Failing => After::Hold {
            resume_attempt: (attempt + 1).min(MAX_ATTEMPTS),
        },
        other => other,
    }
}

/// When the next probe of an endpoint that could not be probed is due (its webhook is gone or
/// disabled by hand): the longest probe wait, so it is looked at again without spinning.
pub fn probe_skipped(
    h: &EndpointHealth,
    now: OffsetDateTime,
    rules: &HealthRules,
) -> Option<(EndpointHealth, Option<HealthChange>)> {
    if h.state != EndpointState::Failing {
        return None;
    }
    let mut n = h.clone();
    n.next_probe_at = Some(now + rules.probe_max);
    Some((n, None))
}

/// The retry queue for a wait of at least `wait`: the longest configured delay that does not
/// exceed it (the rest is spent parked), or the first when all are longer.
pub fn retry_queue_for(delays_ms: &[u64], wait: Duration) -> usize {
    let wait_ms = wait.as_millis() as u64;
    delays_ms
        .iter()
        .enumerate()
        .filter(|(_, d)| **d <= wait_ms)
        .max_by_key(|(_, d)| **d)
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualifier_domain::EventType;
    use qualifier_domain::timefmt::now_millis;
    use qualifier_store::secrets::OpenError;
    use qualifier_store::webhooks::Webhook;
    use uuid::Uuid;

    const DELAYS: [u64; 4] = [30_000, 120_000, 480_000, 1_920_000];
    const NOW: i64 = 1_800_000_000_000;

    fn meta(event_type: EventType) -> DeliveryMeta {
        DeliveryMeta {
            delivery_id: Uuid::new_v4(),
            event_id: Uuid::new_v4(),
            org_id: Uuid::new_v4(),
            event_type,
            attempt: 1,
            occurred_at_ms: None,
            traceparent: None,
            not_before_ms: None,
            test: false,
        }
    }

    fn hook(enabled: bool, types: &[EventType]) -> WebhookForDelivery {
        WebhookForDelivery {
            webhook: Webhook {
                url: "https://hooks.example.com/q".into(),
                event_types: types.to_vec(),
                enabled,
                created_at: now_millis(),
                updated_at: now_millis(),
            },
            signing_secret: "qlf_whsec_test".into(),
            previous_secret: None,
        }
    }

    fn ctx(
        status: DeliveryStatus,
        webhook: Option<Result<WebhookForDelivery, OpenError>>,
    ) -> DeliveryContext {
        DeliveryContext {
            status,
            webhook,
            health: Default::default(),
        }
    }

    fn sent(response: Response) -> Sent {
        Sent {
            started_at: now_millis(),
            duration_ms: 12,
            response,
            request_headers: vec![("webhook-id".into(), "msg".into())],
            response_body: Some("{\"error\": \"nope\"}".into()),
        }
    }

    fn status(code: u16) -> Sent {
        sent(Response::Status {
            code,
            retry_after: None,
        })
    }

    fn status_retry_after(code: u16, v: &str) -> Sent {
        sent(Response::Status {
            code,
            retry_after: Some(v.into()),
        })
    }

    // --- before an attempt ---

    #[test]
    fn a_finished_delivery_redelivered_after_a_crash_is_dropped() {
        let m = meta(EventType::LeadCreated);
        for s in [
            DeliveryStatus::Succeeded,
            DeliveryStatus::Dead,
            DeliveryStatus::Skipped,
        ] {
            let c = ctx(s, Some(Ok(hook(true, &[EventType::LeadCreated]))));
            assert_eq!(before_attempt(&m, &c), Before::Drop, "{s}");
        }
    }

    #[test]
    fn pending_and_failed_deliveries_are_sent_to_the_subscribed_webhook() {
        let m = meta(EventType::LeadCreated);
        for s in [DeliveryStatus::Pending, DeliveryStatus::Failed] {
            let c = ctx(s, Some(Ok(hook(true, &[EventType::LeadCreated]))));
            assert!(matches!(before_attempt(&m, &c), Before::Send(_)), "{s}");
        }
    }

    #[test]
    fn missing_disabled_or_unsubscribed_webhooks_skip_without_a_request() {
        let m = meta(EventType::LeadQualified);
        let pending = DeliveryStatus::Pending;
        assert_eq!(
            before_attempt(&m, &ctx(pending, None)),
            Before::Skip(SkipReason::NotConfigured)
        );
        let off = ctx(pending, Some(Ok(hook(false, &[EventType::LeadQualified]))));
        assert_eq!(before_attempt(&m, &off), Before::Skip(SkipReason::Disabled));
        let other = ctx(pending, Some(Ok(hook(true, &[EventType::LeadCreated]))));
        assert_eq!(
            before_attempt(&m, &other),
            Before::Skip(SkipReason::NotSubscribed)
        );
    }

    #[test]
    fn a_test_event_goes_to_an_unsubscribed_type_but_not_to_a_disabled_webhook() {
        let mut m = meta(EventType::HandoffAccepted);
        m.test = true;
        let on = ctx(
            DeliveryStatus::Pending,
            Some(Ok(hook(true, &[EventType::LeadCreated]))),
        );
        assert!(matches!(before_attempt(&m, &on), Before::Send(_)));
        let off = ctx(
            DeliveryStatus::Pending,
            Some(Ok(hook(false, &[EventType::HandoffAccepted]))),
        );
        assert_eq!(before_attempt(&m, &off), Before::Skip(SkipReason::Disabled));
    }

    #[test]
    fn an_unreadable_secret_fails_the_attempt_instead_of_looping() {
        let m = meta(EventType::LeadCreated);
        let c = ctx(DeliveryStatus::Pending, Some(Err(OpenError::WrongKey)));
        assert!(matches!(
            before_attempt(&m, &c),
            Before::FailWithoutRequest(e) if e.message.contains("rotate the secret")
        ));
    }

    const RULES: HealthRules = HealthRules {
        failing_after: 3,
        failing_span: Duration::from_secs(60),
        probe_min: Duration::from_secs(5),
        probe_max: Duration::from_secs(900),
        disable_after: Duration::from_secs(432_000),
    };

    fn down(e: &str) -> Observed {
        Observed::Down {
            error: e.into(),
            gone: false,
        }
    }

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap()
    }

    /// Applies observations in order; returns the health and every change of state.
    fn run(
        start: EndpointHealth,
        steps: &[(i64, Observed, Source)],
    ) -> (EndpointHealth, Vec<HealthChange>) {
        let mut h = start;
        let mut changes = vec![];
        for (t, o, src) in steps {
            if let Some((n, c)) = health_after(&h, o, *src, at(*t), &RULES) {
                h = n;
                changes.extend(c);
            }
        }
        (h, changes)
    }

    #[test]
    fn three_failures_spanning_a_minute_make_an_endpoint_failing() {
        use Source::Attempt as A;
        // Three quick failures are not an outage yet: the span is too short.
        let (h, c) = run(
            EndpointHealth::default(),
            &[
                (0, down("HTTP 500"), A),
                (1, down("HTTP 500"), A),
                (2, down("HTTP 500"), A),
            ],
        );
        assert_eq!(
            (h.state, h.consecutive_failures, c.len()),
            (EndpointState::Healthy, 3, 0)
        );
        // The next one, a minute after the first, is.
        let (h, c) = run(h, &[(60, down("timed out after 10000 ms"), A)]);
        assert_eq!(c, [HealthChange::Failing]);
        assert_eq!(h.state, EndpointState::Failing);
        assert_eq!(h.failing_since, Some(at(60)));
        assert_eq!(h.next_probe_at, Some(at(65)), "first probe after probe_min");
        assert_eq!(h.last_error.as_deref(), Some("timed out after 10000 ms"));
    }

    #[test]
    fn a_success_resets_the_count_and_a_back_off_is_not_a_failure() {
        use Source::Attempt as A;
        let (h, c) = run(
            EndpointHealth::default(),
            &[
                (0, down("HTTP 500"), A),
                (30, down("HTTP 500"), A),
                (40, Observed::Up, A),
                (61, down("HTTP 500"), A),
                (70, Observed::Paused, A),
                (200, down("HTTP 500"), A),
            ],
        );
        assert_eq!(
            (h.state, h.consecutive_failures),
            (EndpointState::Healthy, 2)
        );
        assert!(c.is_empty());
        assert_eq!(h.last_success_at, Some(at(40)));
        assert!(
            !touches_health(&Observed::Up, EndpointState::Healthy, 0),
            "clean success writes nothing"
        );
        assert!(touches_health(&Observed::Up, EndpointState::Healthy, 2));
        assert!(!touches_health(
            &Observed::Paused,
            EndpointState::Failing,
            9
        ));
    }

    #[test]
    fn failed_probes_back_off_doubling_to_the_cap_and_a_good_probe_recovers() {
        use Source::{Attempt as A, Probe as P};
        let (h, _) = run(
            EndpointHealth::default(),
            &[(0, down("x"), A), (30, down("x"), A), (60, down("x"), A)],
        );
        let mut t = 65;
        let mut waits = vec![];
        let mut h = h;
        for _ in 0..12 {
            let (n, c) = run(h, &[(t, down("connection failed"), P)]);
            assert!(c.is_empty());
            let wait = (n.next_probe_at.unwrap() - at(t)).whole_seconds();
            waits.push(wait);
            t += wait;
            h = n;
        }
        assert_eq!(&waits[..8], [10, 20, 40, 80, 160, 320, 640, 900]);
        assert!(waits[8..].iter().all(|w| *w == 900), "capped at probe_max");
        // An attempt that was in flight when it turned failing does not move the probes.
        let (n, c) = run(h.clone(), &[(t, down("x"), A)]);
        assert!(c.is_empty() && n.next_probe_at == h.next_probe_at);
        let (h, c) = run(h, &[(t, Observed::Up, P)]);
        assert_eq!(c, [HealthChange::Recovered]);
        assert_eq!(h.state, EndpointState::Healthy);
        assert_eq!(
            (h.consecutive_failures, h.failing_since, h.next_probe_at),
            (0, None, None)
        );
    }

    #[test]
    fn failing_past_the_disable_timer_or_a_410_disables() {
        use Source::{Attempt as A, Probe as P};
        let (h, _) = run(
            EndpointHealth::default(),
            &[(0, down("x"), A), (30, down("x"), A), (60, down("x"), A)],
        );
        let five_days = 432_000;
        let (still, c) = run(h.clone(), &[(60 + five_days - 1, down("x"), P)]);
        assert!(c.is_empty() && still.state == EndpointState::Failing);
        let (off, c) = run(h, &[(60 + five_days, down("x"), P)]);
        assert_eq!(c, [HealthChange::Disabled]);
        assert_eq!(off.state, EndpointState::Disabled);
        assert!(off.disabled_reason.unwrap().starts_with("failing since"));
        // A 410 disables at once, healthy or not; a disabled endpoint then ignores everything.
        let gone = Observed::Down {
            error: "HTTP 410".into(),
            gone: true,
        };
        let (off, c) = run(
            EndpointHealth::default(),
            &[(5, gone, A), (6, Observed::Up, P)],
        );
        assert_eq!(c, [HealthChange::Disabled]);
        assert_eq!(off.state, EndpointState::Disabled);
        assert!(off.disabled_reason.unwrap().contains("410 Gone"));
    }

    #[test]
    fn an_attempts_answer_is_read_as_health_sees_it() {
        assert_eq!(observed(&status(204)), Observed::Up);
        assert_eq!(observed(&status_retry_after(429, "30")), Observed::Paused);
        assert_eq!(observed(&status_retry_after(503, "5")), Observed::Paused);
        assert_eq!(
            observed(&status(503)),
            Observed::Down {
                error: "HTTP 503".into(),
                gone: false
            }
        );
        assert_eq!(
            observed(&status(410)),
            Observed::Down {
                error: "HTTP 410".into(),
                gone: true
            }
        );
    }

    #[test]
    fn while_failing_nothing_is_attempted_or_made_dead() {
        let m = meta(EventType::LeadCreated);
        let mut c = ctx(
            DeliveryStatus::Pending,
            Some(Ok(hook(true, &[EventType::LeadCreated]))),
        );
        c.health.state = EndpointState::Failing;
        assert_eq!(before_attempt(&m, &c), Before::Hold);
        let mut t = m.clone();
        t.test = true;
        assert!(
            matches!(before_attempt(&t, &c), Before::Send(_)),
            "a test event goes at once"
        );
        let retry = After::Retry {
            queue: 0,
            not_before_ms: None,
            org_back_off: None,
        };
        let failing = EndpointState::Failing;
        assert_eq!(
            during_outage(retry.clone(), 2, failing),
            After::Hold { resume_attempt: 3 }
        );
        assert_eq!(
            during_outage(After::Dead, 5, failing),
            After::Hold { resume_attempt: 5 }
        );
        assert_eq!(
            during_outage(After::Dead, 5, EndpointState::Healthy),
            After::Dead
        );
        assert_eq!(
            during_outage(After::Succeeded, 1, failing),
            After::Succeeded
        );
    }

    #[test]
    fn a_message_without_a_row_is_acknowledged_not_requeued() {
        let m = meta(EventType::LeadCreated);
        assert_eq!(before_attempt(&m, None), Before::Orphan);
    }

    #[test]
    fn admission_asks_the_gate_only_when_the_message_may_start() {
        let mut m = meta(EventType::LeadCreated);
        m.not_before_ms = Some(NOW + 2000);
        let mut asked = false;
        let r: Result<(), Hold> = admission(&m, NOW, || {
            asked = true;
            Ok(())
        });
        assert_eq!(r, Err(Hold::BackingOff { for_ms: 2000 }));
        assert!(
            !asked,
            "no slot is taken while the message's own pause holds"
        );
        m.not_before_ms = None;
        let at_cap = Hold::AtCap {
            typical_ms: Some(5),
            settling: false,
            may_wait: false,
            turns_ahead: 0,
        };
        assert_eq!(admission(&m, NOW, || Err::<(), _>(at_cap)), Err(at_cap));
        assert_eq!(admission(&m, NOW, || Ok::<_, Hold>(7)), Ok(7));
    }

    #[test]
    fn a_failure_without_an_answer_is_logged_with_its_kind() {
        let why = NoAnswer::new(FailureKind::Connect, "connection failed: refused");
        let (entry, step) = after_attempt(&sent(Response::NoAnswer(why)), 2, &DELAYS, NOW);
        assert_eq!(entry.attempt, 2);
        assert_eq!(entry.error_kind, Some(FailureKind::Connect));
        assert_eq!(entry.error.as_deref(), Some("connection failed: refused"));
        assert_eq!(entry.status_code, None);
        assert!(matches!(step, After::Retry { queue: 1, .. }));
        let (entry, _) = after_attempt(&status(500), 1, &DELAYS, NOW);
        assert_eq!(entry.error_kind, None, "an answer is not a failure kind");
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

    fn org(in_flight: usize, typical_ms: Option<u64>) -> OrgSlots {
        OrgSlots {
            in_flight,
            paused_for: None,
            typical: typical_ms.map(Duration::from_millis),
            first_started_ago: None,
            parked_ahead: 0,
            queued_ahead: false,
        }
    }

    #[test]
    fn an_org_whose_first_attempts_are_young_parks_briefly_then_as_before() {
        let young = OrgSlots {
            first_started_ago: Some(Duration::from_millis(20)),
            ..org(16, None)
        };
        let hold = admit(&young, &slots(16, false)).unwrap_err();
        let timeout = Duration::from_secs(10);
        assert_eq!(park_wait(hold, timeout), SETTLE_PARK);
        assert_eq!(park_tier(&[100, 1_000, 4_000], SETTLE_PARK), 0);
        // Its first attempt has run past the settle time without ending: maybe a hanging
        // endpoint, so its overflow waits as long as before.
        let old = OrgSlots {
            first_started_ago: Some(SETTLE_PARK * 3),
            ..org(16, None)
        };
        let hold = admit(&old, &slots(16, false)).unwrap_err();
        assert_eq!(park_wait(hold, timeout), MIN_PARK);
        // Once an attempt has ended its typical duration decides, young or not.
        let known = OrgSlots {
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
        let held = |o: OrgSlots, s: Slots| wait_here(admit(&o, &s).unwrap_err());
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
        let own = OrgSlots {
            queued_ahead: true,
            ..org(3, Some(20))
        };
        assert_eq!(held(own, slots(20, false)), Some(WAIT_HERE_MIN));
        // Slow, hanging or not yet known: parks (a waiter would hold its message that long).
        assert_eq!(held(org(16, Some(5_000)), slots(16, false)), None);
        assert_eq!(held(org(16, None), slots(16, false)), None);
        // Its first attempts are young: it waits here until the first one ends, at most the
        // settle time.
        let young = OrgSlots {
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

    // --- after an attempt ---

    #[test]
    fn any_2xx_succeeds() {
        for code in [200, 201, 204, 299] {
            let (rec, step) = after_attempt(&status(code), 1, &DELAYS, NOW);
            assert_eq!(step, After::Succeeded);
            assert_eq!((rec.status_code, rec.error), (Some(code), None));
        }
    }

    #[test]
    fn other_statuses_and_no_answer_fail_and_retry_on_the_schedule() {
        for (attempt, queue) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
            let (rec, step) = after_attempt(&status(500), attempt, &DELAYS, NOW);
            assert_eq!(rec.error.as_deref(), Some("HTTP 500"));
            assert_eq!(
                step,
                After::Retry {
                    queue,
                    not_before_ms: None,
                    org_back_off: None
                }
            );
        }
        let (rec, step) = after_attempt(
            &sent(Response::NoAnswer(NoAnswer::new(
                FailureKind::Timeout,
                "timed out after 10000 ms",
            ))),
            1,
            &DELAYS,
            NOW,
        );
        assert_eq!(rec.status_code, None);
        assert_eq!(rec.error.as_deref(), Some("timed out after 10000 ms"));
        assert!(matches!(step, After::Retry { queue: 0, .. }));
    }

    #[test]
    fn redirects_fail_and_say_they_are_not_followed() {
        let (rec, step) = after_attempt(&status(302), 1, &DELAYS, NOW);
        assert_eq!(
            rec.error.as_deref(),
            Some("HTTP 302 (redirects are not followed)")
        );
        assert_eq!(step.status(), DeliveryStatus::Failed);
    }

    #[test]
    fn the_fifth_failure_is_dead() {
        let (_, step) = after_attempt(&status(500), MAX_ATTEMPTS, &DELAYS, NOW);
        assert_eq!(step, After::Dead);
        assert_eq!(step.status(), DeliveryStatus::Dead);
        let (_, step) = after_attempt(&status(200), MAX_ATTEMPTS, &DELAYS, NOW);
        assert_eq!(step, After::Succeeded, "a 5th attempt can still succeed");
    }

    #[test]
    fn a_short_retry_after_backs_the_org_off_but_keeps_the_schedule() {
        let (_, step) = after_attempt(&status_retry_after(429, "7"), 1, &DELAYS, NOW);
        assert_eq!(
            step,
            After::Retry {
                queue: 0,
                not_before_ms: None,
                org_back_off: Some(Duration::from_secs(7))
            }
        );
    }

    #[test]
    fn a_long_retry_after_is_carried_by_the_message() {
        let (_, step) = after_attempt(&status_retry_after(503, "200"), 1, &DELAYS, NOW);
        assert_eq!(
            step,
            After::Retry {
                queue: 1,
                not_before_ms: Some(NOW + 200_000),
                org_back_off: Some(Duration::from_secs(200))
            }
        );
    }

    #[test]
    fn retry_after_counts_only_on_429_and_503_and_only_as_seconds() {
        let plain = After::Retry {
            queue: 0,
            not_before_ms: None,
            org_back_off: None,
        };
        assert_eq!(
            after_attempt(&status_retry_after(500, "60"), 1, &DELAYS, NOW).1,
            plain
        );
        let date = status_retry_after(429, "Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(after_attempt(&date, 1, &DELAYS, NOW).1, plain);
    }

    #[test]
    fn retry_after_is_delta_seconds_clamped() {
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("999999"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn the_retry_queue_never_waits_longer_than_asked_beyond_the_schedule() {
        assert_eq!(retry_queue_for(&DELAYS, Duration::from_secs(1)), 0);
        assert_eq!(retry_queue_for(&DELAYS, Duration::from_secs(60)), 0);
        assert_eq!(retry_queue_for(&DELAYS, Duration::from_secs(120)), 1);
        assert_eq!(retry_queue_for(&DELAYS, Duration::from_secs(3600)), 3);
    }
}
