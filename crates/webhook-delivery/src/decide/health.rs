//! Endpoint health as the delivery side meets it (docs/delivery.md, "Endpoint health"): what an
//! attempt's or a probe's answer says about the endpoint ([`observed`]), whether a due probe can
//! be sent, how often probes are looked for, when a stray hold is released, and the retry
//! schedule of operator notices: the worker's readings, not the rules.
//!
//! The rules themselves (failing, probes' waits, recovery, disabling, saving the webhook) have
//! one home, `qualifier_domain::health` (`crates/domain/src/health.rs`), beside the state,
//! because `lead-api` applies them too; its items are re-exported here. Each rule answers with a [`HealthPlan`], which `qualifier_store`'s
//! `change_health` applies under the endpoint's row lock, so replicas share one truth.

use std::time::Duration;

use qualifier_domain::health::{EndpointHealth, HealthPlan};
pub use qualifier_domain::health::{
    HealthRules, Observed, Source, health_after, on_save, plan_for, probe_skipped, touches_health,
};
use qualifier_store::webhooks::WebhookForDelivery;
use time::OffsetDateTime;

use super::{Reading, Response, Sent, read};

/// Reads an attempt's answer as health sees it.
pub(crate) fn observed(sent: &Sent) -> Observed {
    match read(&sent.response) {
        Reading::Success { .. } => Observed::Up,
        Reading::Failure {
            back_off: Some(wait),
            ..
        } => Observed::Paused { wait },
        Reading::Failure { error, gone, .. } => Observed::Down { error, gone },
    }
}

/// How long a delivery may stay held while its endpoint is no longer failing before the
/// safety net releases it (a recovery releases its held deliveries itself; this covers a hold
/// that raced with the recovery and committed after it).
pub const STRAY_HOLD_AFTER: Duration = Duration::from_secs(5);

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
    /// The probe never got past our own egress proxy: the health stays as it is and the next
    /// probe comes at the shortest wait, since the endpoint may be up all along.
    Unsent {
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
            HealthStep::Unsent { now, rules } => {
                if h.state != qualifier_domain::health::EndpointState::Failing {
                    return None;
                }
                let mut n = h.clone();
                n.next_probe_at = Some(*now + rules.probe_min);
                (n, None)
            }
        };
        Some(plan_for(health, change))
    }
}

impl HealthInput {
    pub fn step(self) -> HealthStep {
        HealthStep::Observe(self)
    }
}

/// Several steps of one endpoint, in the order its attempts ended, as one plan to write under
/// its row lock: each applied to the health the one before it left, exactly as one write each
/// would, stopping after the first that changes the endpoint's state (a write carries at most
/// one change, with its operational event and what it does to held deliveries). How many steps
/// the plan took; the rest go in the next write. `None` when they change nothing.
///
/// Why: an endpoint that fails takes one write of its health per failed attempt, and while it
/// is not yet found failing its attempts fail as fast as they start. One row lock taken per
/// failure queued every such write behind the others, each holding a connection meanwhile, and
/// the other endpoints' reads and outcomes waited for connections (docs/performance-log.md,
/// "Several endpoints").
pub fn fold_steps(h: &EndpointHealth, steps: &[HealthStep]) -> (Option<HealthPlan>, usize) {
    let mut plan: Option<HealthPlan> = None;
    for (i, step) in steps.iter().enumerate() {
        let now = plan.as_ref().map_or(h, |p| &p.health);
        if let Some(next) = step.apply(now) {
            let changes = next.change.is_some();
            plan = Some(next);
            if changes {
                return (plan, i + 1);
            }
        }
    }
    (plan, steps.len())
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
    // A probe that never got past our own egress proxy says nothing about the endpoint: the
    // next one is looked at later, the health as it was.
    if let Response::NoAnswer(why) = &sent.response
        && !why.kind.blames_endpoint()
    {
        return ProbePlan {
            result: "unsent",
            health: HealthStep::Unsent { now, rules: *rules },
        };
    }
    let seen = observed(sent);
    let result = match &seen {
        Observed::Up => "up",
        Observed::Paused { .. } => "paused",
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

/// Operator notices claimed (and sent, at once) per round of one replica.
pub const NOTICES_PER_ROUND: i64 = 10;

/// How long a claimed operator notice is this replica's: longer than its send can take (the
/// client's whole-request timeout), so a slow send is never taken for a lost one and sent again
/// by another replica. After a crash another replica sends it once the lease has passed.
pub fn notice_lease(send_timeout: Duration) -> Duration {
    send_timeout + Duration::from_secs(5)
}

/// Attempts at one operator notice before it is given up (about two days at the hourly cap).
pub(crate) const OPERATOR_MAX_ATTEMPTS: i32 = 60;

/// The longest wait between two attempts at an operator notice.
pub(crate) const OPERATOR_MAX_WAIT: Duration = Duration::from_secs(3600);

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
    use qualifier_domain::health::{EndpointState, HealthChange, HeldDeliveries};
    use time::OffsetDateTime;

    const RULES: HealthRules = HealthRules::DEPLOYED;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).unwrap()
    }

    fn seen(o: Observed, secs: i64) -> HealthStep {
        HealthInput {
            seen: o,
            source: Source::Attempt,
            now: at(secs),
            rules: RULES,
        }
        .step()
    }

    fn down(secs: i64) -> HealthStep {
        seen(
            Observed::Down {
                error: "HTTP 500".into(),
                gone: false,
            },
            secs,
        )
    }

    /// One write per step, as the worker wrote them before it folded them.
    fn one_by_one(h: &EndpointHealth, steps: &[HealthStep]) -> (EndpointHealth, Vec<HealthChange>) {
        let mut h = h.clone();
        let mut changes = Vec::new();
        for s in steps {
            if let Some(p) = s.apply(&h) {
                changes.extend(p.change);
                h = p.health;
            }
        }
        (h, changes)
    }

    #[test]
    fn folded_steps_leave_what_one_write_each_leaves_one_change_a_write() {
        let clean = EndpointHealth::default();
        // Failures over more than the span: the fourth finds it failing (the third is 60 s
        // after the first), the rest fold into the next write.
        let steps = [down(0), down(30), down(61), down(62), down(63)];
        let (plan, used) = fold_steps(&clean, &steps);
        let plan = plan.unwrap();
        assert_eq!(used, 3, "the write stops at the change");
        assert_eq!(plan.change, Some(HealthChange::Failing));
        assert_eq!(plan.health.state, EndpointState::Failing);
        let (rest, used_rest) = fold_steps(&plan.health, &steps[used..]);
        assert_eq!(used_rest, 2);
        let folded = rest.map_or(plan.health.clone(), |p| p.health);
        let (expected, changes) = one_by_one(&clean, &steps);
        assert_eq!(folded, expected);
        assert_eq!(
            changes,
            [HealthChange::Failing],
            "one change, as one by one"
        );

        // Failures within the span fold into one write that only counts them.
        let (plan, used) = fold_steps(&clean, &[down(0), down(1), down(2)]);
        let plan = plan.unwrap();
        assert_eq!((used, plan.change), (3, None));
        assert_eq!(plan.health.consecutive_failures, 3);
        assert_eq!(plan.health.state, EndpointState::Healthy);
        assert_eq!(plan.held, HeldDeliveries::Keep);

        // A clean endpoint's successes change nothing and write nothing.
        assert_eq!(
            fold_steps(&clean, &[seen(Observed::Up, 0), seen(Observed::Up, 1)]).0,
            None
        );
        // A success after failures resets the count within the same write.
        let (plan, _) = fold_steps(&clean, &[down(0), down(1), seen(Observed::Up, 2)]);
        assert_eq!(plan.unwrap().health.consecutive_failures, 0);
    }

    #[test]
    fn an_attempts_answer_is_read_as_health_sees_it() {
        assert_eq!(observed(&status(204)), Observed::Up);
        assert_eq!(
            observed(&status_retry_after(429, "30")),
            Observed::Paused {
                wait: Duration::from_secs(30)
            }
        );
        assert_eq!(
            observed(&status_retry_after(503, "5")),
            Observed::Paused {
                wait: Duration::from_secs(5)
            }
        );
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
    fn a_probe_stopped_at_our_proxy_changes_nothing_but_its_next_time() {
        use qualifier_domain::delivery::{FailureKind, NoAnswer};
        let why = NoAnswer::new(FailureKind::Proxy, "egress proxy unreachable");
        let p = after_probe(&Sent::without_request(at(0), why), at(0), &RULES);
        assert_eq!(p.result, "unsent");
        let failing = EndpointHealth {
            state: EndpointState::Failing,
            consecutive_failures: 4,
            ..EndpointHealth::default()
        };
        let plan = p.health.apply(&failing).expect("probed again soon");
        assert_eq!(plan.change, None);
        assert_eq!(plan.health.consecutive_failures, 4, "not counted");
        assert_eq!(plan.health.next_probe_at, Some(at(0) + RULES.probe_min));
        let healthy = EndpointHealth::default();
        assert!(
            p.health.apply(&healthy).is_none(),
            "a healthy one is left alone"
        );
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
