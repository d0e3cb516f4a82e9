//! An org endpoint's health (docs/delivery.md, "Endpoint health"): whether its deliveries are
//! attempted (`healthy`), held while probes find out when it is back (`failing`), or not sent at
//! all (`disabled`), and the rules that move it. The rules are pure (the caller passes `now`)
//! and answer with a [`HealthPlan`], which the store carries out under the endpoint's row lock.
//! They live here, beside the state, because both services apply them: `webhook-delivery` after
//! attempts and probes (`crates/webhook-delivery/src/decide/health.rs` reads their answers into
//! an [`Observed`]), and `lead-api` when the webhook is saved ([`on_save`]).

use std::time::Duration;

use time::OffsetDateTime;

named_enum! {
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum EndpointState {
        Healthy,
        /// Failures in a row: deliveries wait (no attempt spent), probes run.
        Failing,
        /// Failing too long, or it answered 410 Gone: `enabled` is false until someone re-enables.
        Disabled,
    }
}

/// The health object of `GET …/webhook` (the fields without `serde(skip)`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EndpointHealth {
    pub state: EndpointState,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub failing_since: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub last_success_at: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub last_failure_at: Option<OffsetDateTime>,
    /// In the delivery log's wording (never an address).
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    /// The first failure of the current run (what the failing span is measured from).
    #[serde(skip)]
    pub streak_started_at: Option<OffsetDateTime>,
    #[serde(with = "crate::timefmt::millis_opt")]
    pub next_probe_at: Option<OffsetDateTime>,
    /// The wait before the next probe; doubles after each failed one.
    #[serde(skip)]
    pub probe_interval_ms: Option<u64>,
    pub disabled_reason: Option<String>,
}

impl Default for EndpointHealth {
    fn default() -> Self {
        EndpointHealth {
            state: EndpointState::Healthy,
            failing_since: None,
            last_success_at: None,
            last_failure_at: None,
            last_error: None,
            consecutive_failures: 0,
            streak_started_at: None,
            next_probe_at: None,
            probe_interval_ms: None,
            disabled_reason: None,
        }
    }
}

impl EndpointHealth {
    /// Healthy with no failure to remember: a success changes nothing, so it writes nothing.
    pub fn is_clean(&self) -> bool {
        self.state == EndpointState::Healthy && self.consecutive_failures == 0
    }
}

/// A change of state that someone is told about (an operational event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthChange {
    Failing,
    Recovered,
    Disabled,
}

impl HealthChange {
    /// The operational event's `type`.
    pub fn event_type(self) -> &'static str {
        match self {
            HealthChange::Failing => "endpoint.failing",
            HealthChange::Recovered => "endpoint.recovered",
            HealthChange::Disabled => "endpoint.disabled",
        }
    }
}

/// What happens to the deliveries held while an endpoint failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldDeliveries {
    /// They stay held.
    Keep,
    /// They go back to the relay, oldest first, with the attempts they had left.
    Release,
    /// They end `skipped`.
    Skip,
}

/// A new health and everything it brings, as data: the delivery rules decide it, the store
/// carries it out in one transaction under the endpoint's row lock.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthPlan {
    pub health: EndpointHealth,
    /// The change of state, if any (each queues its operational event).
    pub change: Option<HealthChange>,
    pub held: HeldDeliveries,
    /// The webhook's `enabled` becomes false.
    pub disable_webhook: bool,
}

impl HealthPlan {
    /// Whether the plan, against the health `before` it, changes only the streak's counts and
    /// times: the same state, no change to tell, the held deliveries kept, the webhook as it is.
    pub fn only_counts(&self, before: &EndpointHealth) -> bool {
        self.change.is_none()
            && self.held == HeldDeliveries::Keep
            && !self.disable_webhook
            && self.health.state == before.state
            && self.health.failing_since == before.failing_since
            && self.health.next_probe_at == before.next_probe_at
            && self.health.disabled_reason == before.disabled_reason
    }
}

// --- The rules ---------------------------------------------------------------------------------

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

impl HealthRules {
    /// The deployed defaults (docs/delivery.md, "Endpoint health").
    pub const DEPLOYED: HealthRules = HealthRules {
        failing_after: 3,
        failing_span: Duration::from_millis(60_000),
        probe_min: Duration::from_millis(5_000),
        probe_max: Duration::from_millis(900_000),
        disable_after: Duration::from_secs(432_000),
    };
}

impl Default for HealthRules {
    fn default() -> Self {
        HealthRules::DEPLOYED
    }
}

/// What one attempt (or probe) says about the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A 2xx.
    Up,
    /// A 429 or 503 with a `Retry-After` we honour: a back-off for `wait`, not a failure.
    Paused { wait: Duration },
    /// Anything else, in the delivery log's words; `gone` for a 410.
    Down { error: String, gone: bool },
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
        Observed::Paused { .. } => false,
        Observed::Up => state != EndpointState::Healthy || consecutive_failures > 0,
        Observed::Down { .. } => true,
    }
}

/// The endpoint's health after an observation, and the change of state it makes, if any;
/// `None` when nothing changes (nothing is written).
/// - A success resets the failures; a failing endpoint becomes healthy (`Recovered`).
/// - A back-off changes nothing, except for a probe of a failing endpoint: the next probe waits
///   as the receiver asked, and the disable timer runs on. A disabled endpoint stays disabled
///   until it is re-enabled.
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
        // A probe answered with `Retry-After`: the endpoint is still failing and the disable
        // timer keeps running; the next probe waits as long as the receiver asked (at most
        // `probe_max`, at least a second).
        Observed::Paused { wait }
            if source == Source::Probe && h.state == EndpointState::Failing =>
        {
            let since = h.failing_since.unwrap_or(now);
            if now - since >= rules.disable_after {
                return Some((
                    disable(n, disable_reason(since, rules)),
                    Some(HealthChange::Disabled),
                ));
            }
            n.next_probe_at = Some(now + (*wait).min(rules.probe_max).max(Duration::from_secs(1)));
            Some((n, None))
        }
        Observed::Paused { .. } => None,
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
                        return Some((
                            disable(n, disable_reason(since, rules)),
                            Some(HealthChange::Disabled),
                        ));
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

fn disable_reason(since: OffsetDateTime, rules: &HealthRules) -> String {
    format!(
        "failing since {} for longer than {} s",
        fmt(since),
        rules.disable_after.as_secs()
    )
}

fn fmt(t: OffsetDateTime) -> String {
    crate::timefmt::format(t)
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

/// What saving the webhook (`PUT …/webhook`, the console's `Save`) does to its endpoint's
/// health; `None` when nothing changes.
/// - Enabled while `failing`: it stays failing, its deliveries stay held and no attempt is
///   spent; a probe is due at once (to the url as saved). Only a probe answered 2xx releases
///   them.
/// - Enabled while `disabled`, or healthy with failures counted: healthy again, with no
///   `disabled_reason` and no count; whatever was held goes back to the relay.
/// - Disabled (`enabled: false`) while `failing`: `disabled`, its held deliveries end
///   `skipped`, and `endpoint.disabled` is sent.
pub fn on_save(h: &EndpointHealth, enabled: bool, now: OffsetDateTime) -> Option<HealthPlan> {
    let mut n = h.clone();
    match (enabled, h.state) {
        (true, EndpointState::Failing) => {
            n.next_probe_at = Some(now);
            Some(plan_for(n, None))
        }
        (true, _) if h.is_clean() => None,
        (true, _) => {
            n.state = EndpointState::Healthy;
            n.failing_since = None;
            n.consecutive_failures = 0;
            n.streak_started_at = None;
            n.next_probe_at = None;
            n.probe_interval_ms = None;
            n.disabled_reason = None;
            Some(HealthPlan {
                health: n,
                change: None,
                held: HeldDeliveries::Release,
                disable_webhook: false,
            })
        }
        (false, EndpointState::Failing) => {
            let reason = format!("disabled by hand while failing, at {}", fmt(now));
            Some(plan_for(disable(n, reason), Some(HealthChange::Disabled)))
        }
        (false, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap()
    }

    const RULES: HealthRules = HealthRules::DEPLOYED;

    fn down(e: &str) -> Observed {
        Observed::Down {
            error: e.into(),
            gone: false,
        }
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
    fn only_a_failure_that_changes_no_state_is_a_count() {
        use Source::Attempt as A;
        let plan_of = |before: &EndpointHealth, t: i64, o: Observed, src: Source| {
            let (h, c) = health_after(before, &o, src, at(t), &RULES).expect("a change");
            plan_for(h, c)
        };
        // The first failures of a streak only count.
        let (one, _) = run(EndpointHealth::default(), &[(0, down("HTTP 500"), A)]);
        assert!(plan_of(&one, 1, down("HTTP 500"), A).only_counts(&one));
        // The failure that makes it failing changes its state, and is told.
        let (three, _) = run(one, &[(1, down("HTTP 500"), A), (2, down("HTTP 500"), A)]);
        let failing = plan_of(&three, 60, down("HTTP 500"), A);
        assert!(!failing.only_counts(&three));
        // A failed probe moves the next probe: not a count either.
        let h = failing.health;
        assert!(!plan_of(&h, 66, down("HTTP 500"), Source::Probe).only_counts(&h));
        // The success that ends the outage releases what waited.
        assert!(!plan_of(&h, 66, Observed::Up, Source::Probe).only_counts(&h));
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
                (
                    70,
                    Observed::Paused {
                        wait: Duration::from_secs(5),
                    },
                    A,
                ),
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
            &Observed::Paused {
                wait: Duration::from_secs(5)
            },
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

    fn failing_since(secs: i64) -> EndpointHealth {
        EndpointHealth {
            state: EndpointState::Failing,
            failing_since: Some(at(secs)),
            consecutive_failures: 4,
            next_probe_at: Some(at(secs + 900)),
            probe_interval_ms: Some(900_000),
            ..EndpointHealth::default()
        }
    }

    #[test]
    fn a_probe_answered_with_retry_after_waits_that_long_and_the_disable_timer_runs_on() {
        let h = failing_since(0);
        let paused = |secs| Observed::Paused {
            wait: Duration::from_secs(secs),
        };
        let (n, c) = health_after(&h, &paused(2), Source::Probe, at(100), &RULES).unwrap();
        assert_eq!(c, None);
        assert_eq!(n.state, EndpointState::Failing, "still failing");
        assert_eq!(n.next_probe_at, Some(at(102)), "as long as it asked");
        let (n, _) = health_after(&h, &paused(86_400), Source::Probe, at(100), &RULES).unwrap();
        assert_eq!(n.next_probe_at, Some(at(1_000)), "at most probe_max");
        let (n, c) = health_after(&h, &paused(2), Source::Probe, at(432_000), &RULES).unwrap();
        assert_eq!(c, Some(HealthChange::Disabled), "the disable timer ran out");
        assert_eq!(n.state, EndpointState::Disabled);
        // An attempt's back-off still changes nothing, nor a healthy endpoint's.
        assert!(health_after(&h, &paused(2), Source::Attempt, at(100), &RULES).is_none());
        let healthy = EndpointHealth::default();
        assert!(health_after(&healthy, &paused(2), Source::Probe, at(100), &RULES).is_none());
    }

    #[test]
    fn saving_a_failing_endpoint_probes_at_once_and_releases_nothing() {
        let h = failing_since(0);
        let p = on_save(&h, true, at(50)).unwrap();
        assert_eq!(p.health.state, EndpointState::Failing);
        assert_eq!(p.health.next_probe_at, Some(at(50)), "a probe at once");
        assert_eq!(
            (p.change, p.held, p.disable_webhook),
            (None, HeldDeliveries::Keep, false)
        );
        assert_eq!(
            p.health.failing_since, h.failing_since,
            "the disable timer runs on"
        );
    }

    #[test]
    fn saving_a_disabled_endpoint_enabled_makes_it_healthy() {
        let h = EndpointHealth {
            state: EndpointState::Disabled,
            disabled_reason: Some("endpoint answered 410 Gone".into()),
            consecutive_failures: 1,
            ..EndpointHealth::default()
        };
        let p = on_save(&h, true, at(0)).unwrap();
        assert_eq!(p.health.state, EndpointState::Healthy);
        assert_eq!(
            (p.health.disabled_reason, p.health.consecutive_failures),
            (None, 0)
        );
        assert_eq!(p.held, HeldDeliveries::Release);
        assert!(
            on_save(&EndpointHealth::default(), true, at(0)).is_none(),
            "clean: no write"
        );
    }

    #[test]
    fn disabling_a_failing_endpoint_skips_what_was_held_and_says_so() {
        let p = on_save(&failing_since(0), false, at(60)).unwrap();
        assert_eq!(p.health.state, EndpointState::Disabled);
        assert_eq!(p.change, Some(HealthChange::Disabled));
        assert_eq!(p.held, HeldDeliveries::Skip);
        assert!(
            p.health
                .disabled_reason
                .unwrap()
                .contains("disabled by hand")
        );
        assert!(on_save(&EndpointHealth::default(), false, at(0)).is_none());
    }
}
