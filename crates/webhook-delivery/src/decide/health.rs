//! Endpoint health: when an endpoint becomes failing, how it is probed, when it recovers or is
//! disabled, and what each change does to the deliveries held meanwhile (docs/delivery.md,
//! "Endpoint health"); and the retry schedule of operator notices.
//!
//! Each function returns the new health as data ([`HealthPlan`]); `qualifier_store`'s
//! `change_health` applies it under the endpoint's row lock, so replicas share one truth.

use std::time::Duration;

use qualifier_domain::health::{
    EndpointHealth, EndpointState, HealthChange, HealthPlan, HeldDeliveries,
};
use qualifier_store::webhooks::WebhookForDelivery;
use time::OffsetDateTime;

use super::{Reading, Response, Sent, read};

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
    match read(&sent.response) {
        Reading::Success { .. } => Observed::Up,
        Reading::Failure {
            back_off: Some(_), ..
        } => Observed::Paused,
        Reading::Failure { error, gone, .. } => Observed::Down { error, gone },
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
/// How long a delivery may stay held while its endpoint is no longer failing before the
/// safety net releases it (a recovery releases its held deliveries itself; this covers a hold
/// that raced with the recovery and committed after it).
pub const STRAY_HOLD_AFTER: Duration = Duration::from_secs(5);

/// What a change of state does to the deliveries held while the endpoint failed, and to the
/// webhook: a recovery releases them (oldest first); a disabling ends them `skipped` and turns
/// the webhook off; becoming failing keeps them.
pub fn plan_for(health: EndpointHealth, change: Option<HealthChange>) -> HealthPlan {
    let (held, disable_webhook) = match change {
        Some(HealthChange::Recovered) => (HeldDeliveries::Release, false),
        Some(HealthChange::Disabled) => (HeldDeliveries::Skip, true),
        Some(HealthChange::Failing) | None => (HeldDeliveries::Keep, false),
    };
    HealthPlan {
        health,
        change,
        held,
        disable_webhook,
    }
}

/// One observation of an endpoint, to be applied to its health as it is under the row lock.
#[derive(Debug, Clone)]
pub struct HealthInput {
    pub seen: Observed,
    pub source: Source,
    pub now: OffsetDateTime,
    pub rules: HealthRules,
}

/// What the input does to a health as it is now: [`health_after`], as a plan.
#[derive(Debug, Clone)]
pub enum HealthStep {
    Observe(HealthInput),
    /// The endpoint could not be probed (its webhook is gone, disabled by hand or unreadable).
    Unprobed {
        now: OffsetDateTime,
        rules: HealthRules,
    },
}

impl HealthStep {
    /// The plan for `h` (`None`: nothing changes, nothing is written).
    pub fn apply(&self, h: &EndpointHealth) -> Option<HealthPlan> {
        let (health, change) = match self {
            HealthStep::Observe(i) => health_after(h, &i.seen, i.source, i.now, &i.rules)?,
            HealthStep::Unprobed { now, rules } => probe_skipped(h, *now, rules)?,
        };
        Some(plan_for(health, change))
    }
}

impl HealthInput {
    pub fn step(self) -> HealthStep {
        HealthStep::Observe(self)
    }
}

/// How often each replica looks for due probes and operator notices: often enough for the
/// shortest probe wait, never more than once a second (one indexed query on a partial index,
/// usually empty).
pub fn probe_tick(rules: &HealthRules) -> Duration {
    (rules.probe_min / 2).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// Where a due probe goes.
#[derive(Debug)]
pub enum ProbeTarget<'a> {
    /// Send the probe to this webhook.
    Send(&'a WebhookForDelivery),
    /// Nothing to probe; apply this (the next probe is looked at later, without spinning).
    NotNow(HealthStep),
}

/// Whether a failing endpoint can be probed: only an enabled webhook whose secret opens.
pub fn probe_target<'a, E>(
    webhook: Option<&'a Result<WebhookForDelivery, E>>,
    now: OffsetDateTime,
    rules: &HealthRules,
) -> ProbeTarget<'a> {
    match webhook {
        Some(Ok(h)) if h.webhook.enabled => ProbeTarget::Send(h),
        _ => ProbeTarget::NotNow(HealthStep::Unprobed { now, rules: *rules }),
    }
}

/// What a probe's answer does: its metric label, and the health step to apply.
#[derive(Debug, Clone)]
pub struct ProbePlan {
    pub result: &'static str,
    pub health: HealthStep,
}

pub fn after_probe(sent: &Sent, now: OffsetDateTime, rules: &HealthRules) -> ProbePlan {
    let seen = observed(sent);
    let result = match &seen {
        Observed::Up => "up",
        Observed::Paused => "paused",
        Observed::Down { .. } => "down",
    };
    ProbePlan {
        result,
        health: HealthStep::Observe(HealthInput {
            seen,
            source: Source::Probe,
            now,
            rules: *rules,
        }),
    }
}

/// Attempts at one operator notice before it is given up (about two days at the hourly cap).
pub const OPERATOR_MAX_ATTEMPTS: i32 = 60;

/// The longest wait between two attempts at an operator notice.
pub const OPERATOR_MAX_WAIT: Duration = Duration::from_secs(3600);

/// One attempt at an operator notice, as the store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeOutcome {
    pub delivered: bool,
    pub error: Option<String>,
    /// When to try again (`None`: delivered, or given up).
    pub retry_after: Option<Duration>,
}

/// An operator notice's answer: a 2xx delivers it; anything else is tried again after a wait
/// that doubles from a second up to [`OPERATOR_MAX_WAIT`], while fewer than
/// [`OPERATOR_MAX_ATTEMPTS`] attempts were made before this one (`attempts`).
pub fn after_notice(response: &Response, attempts: i32) -> NoticeOutcome {
    match read(response) {
        Reading::Success { .. } => NoticeOutcome {
            delivered: true,
            error: None,
            retry_after: None,
        },
        Reading::Failure { error, .. } => NoticeOutcome {
            delivered: false,
            error: Some(error),
            retry_after: (attempts < OPERATOR_MAX_ATTEMPTS).then(|| {
                (Duration::from_secs(1) * (1u32 << attempts.clamp(0, 12))).min(OPERATOR_MAX_WAIT)
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

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
    fn a_change_of_state_says_what_happens_to_held_deliveries() {
        let h = EndpointHealth::default();
        let p = plan_for(h.clone(), Some(HealthChange::Recovered));
        assert_eq!(
            (p.held, p.disable_webhook),
            (HeldDeliveries::Release, false)
        );
        let p = plan_for(h.clone(), Some(HealthChange::Disabled));
        assert_eq!((p.held, p.disable_webhook), (HeldDeliveries::Skip, true));
        let p = plan_for(h.clone(), Some(HealthChange::Failing));
        assert_eq!((p.held, p.disable_webhook), (HeldDeliveries::Keep, false));
        assert_eq!(plan_for(h, None).held, HeldDeliveries::Keep);
    }

    #[test]
    fn a_probe_goes_only_to_an_enabled_webhook_whose_secret_opens() {
        let now = at(0);
        let on: Result<_, ()> = Ok(hook(true, &[]));
        assert!(matches!(
            probe_target(Some(&on), now, &RULES),
            ProbeTarget::Send(_)
        ));
        let off: Result<_, ()> = Ok(hook(false, &[]));
        let unread: Result<WebhookForDelivery, ()> = Err(());
        for w in [Some(&off), Some(&unread), None] {
            let ProbeTarget::NotNow(step) = probe_target(w, now, &RULES) else {
                panic!("not probed")
            };
            let failing = EndpointHealth {
                state: EndpointState::Failing,
                ..EndpointHealth::default()
            };
            let plan = step.apply(&failing).expect("looked at again later");
            assert_eq!(plan.health.next_probe_at, Some(now + RULES.probe_max));
        }
    }

    #[test]
    fn a_probes_answer_is_labelled_and_applied_as_a_probe() {
        let p = after_probe(&status(204), at(0), &RULES);
        assert_eq!(p.result, "up");
        let failing = EndpointHealth {
            state: EndpointState::Failing,
            failing_since: Some(at(-10)),
            ..EndpointHealth::default()
        };
        let plan = p.health.apply(&failing).unwrap();
        assert_eq!(plan.change, Some(HealthChange::Recovered));
        assert_eq!(plan.held, HeldDeliveries::Release);
        assert_eq!(
            after_probe(&status_retry_after(429, "2"), at(0), &RULES).result,
            "paused"
        );
        assert_eq!(after_probe(&status(500), at(0), &RULES).result, "down");
    }

    #[test]
    fn due_probes_are_looked_for_at_most_once_a_second() {
        assert_eq!(probe_tick(&RULES), Duration::from_secs(1));
        let quick = HealthRules {
            probe_min: Duration::from_millis(60),
            ..RULES
        };
        assert_eq!(probe_tick(&quick), Duration::from_millis(50));
    }

    #[test]
    fn operator_notices_retry_doubling_to_an_hour_then_give_up() {
        let ok = after_notice(
            &Response::Status {
                code: 202,
                retry_after: None,
            },
            0,
        );
        assert_eq!(
            ok,
            NoticeOutcome {
                delivered: true,
                error: None,
                retry_after: None
            }
        );
        let fail = |attempts| {
            after_notice(
                &Response::Status {
                    code: 502,
                    retry_after: None,
                },
                attempts,
            )
        };
        assert_eq!(fail(0).error.as_deref(), Some("HTTP 502"));
        assert_eq!(fail(0).retry_after, Some(Duration::from_secs(1)));
        assert_eq!(fail(3).retry_after, Some(Duration::from_secs(8)));
        assert_eq!(fail(20).retry_after, Some(OPERATOR_MAX_WAIT));
        assert!(fail(OPERATOR_MAX_ATTEMPTS - 1).retry_after.is_some());
        assert_eq!(fail(OPERATOR_MAX_ATTEMPTS).retry_after, None, "given up");
    }
}
