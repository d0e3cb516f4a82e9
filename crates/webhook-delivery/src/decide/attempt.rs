//! One attempt: what happens to a delivery before it (send, hold, skip, drop) and after it
//! (the attempt record, retry, dead-letter, or hold while its endpoint fails), as
//! docs/delivery.md states the rules.

use std::time::Duration;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::DeliveryStatus;
use qualifier_domain::delivery::{AttemptEntry, FailureKind, NoAnswer};
use qualifier_domain::health::EndpointState;
use qualifier_store::deliveries::{DeliveryContext, EndpointGlance, LeadOrder};
use qualifier_store::webhooks::WebhookForDelivery;
use time::OffsetDateTime;

use super::{
    HealthInput, HealthRules, MAX_ATTEMPTS, Reading, Source, observed, read, touches_health,
};

/// The longest pause a receiver can ask for; a larger `Retry-After` is clamped, so a
/// misconfigured receiver cannot stall its deliveries past the retry budget.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// How long a message whose outcome could not be made durable waits before it goes back to the
/// queue: a database or broker outage must not spin it in a hot loop.
pub const REQUEUE_PAUSE: Duration = Duration::from_millis(500);

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
    /// Its endpoint is failing (docs/delivery.md, "Endpoint health"): the delivery waits in its row, keeping
    /// its attempt number, until a probe finds the endpoint back. No attempt is spent.
    Hold,
    /// The webhook orders per lead and an earlier delivery of the same lead is pending or
    /// retrying: the delivery waits in its row, keeping its attempt number, until that one is
    /// over (docs/delivery.md, "Throttle and order"). No attempt is spent. Its place in the
    /// lead's order.
    WaitForEarlier(LeadOrder),
    /// Its row says it is not due (a retry's or a receiver's wait, a throttle turn, an
    /// outage's hold or a wait for an earlier delivery of its lead, which whatever message
    /// carries it must not cut short): it stays in its row, which the relay or the wait's end
    /// moves on; the message is done with and nothing is sent.
    NotDue,
    /// Send to this webhook, as it is now.
    Send(&'a WebhookForDelivery),
}

/// What to do with a message that may start, given the delivery's row and its org's webhook as
/// they are now (configuration is read at delivery time: docs/delivery.md).
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
    if ctx.state.waits_in_row(ctx.due_at, ctx.read_at, meta.test) {
        return Before::NotDue;
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
    // Test events and replays are outside the order (the read leaves their `order` empty).
    if let Some(order) = ctx.order.filter(|o| o.earlier_pending && !meta.test) {
        return Before::WaitForEarlier(order);
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
    /// Whether the attempt succeeded (its answer a 2xx), as [`after_attempt`] reads it.
    pub fn delivered(&self) -> bool {
        matches!(read(&self.response), Reading::Success { .. })
    }

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
    /// Record `failed` and schedule attempt `attempt + 1` for `due_ms` (Unix ms, [`retry_due`]):
    /// it waits in the delivery's row until then. With `org_back_off` (a receiver's
    /// `Retry-After`), this process also holds the endpoint back for that long.
    Retry {
        due_ms: i64,
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
pub(crate) fn after_attempt(
    sent: &Sent,
    attempt: u32,
    delays_ms: &[u64],
    now_ms: i64,
) -> (AttemptEntry, After) {
    let (status_code, error, error_kind, retry_after) = match read(&sent.response) {
        Reading::Success { code } => (Some(code), None, None, None),
        Reading::Failure {
            code,
            error,
            kind,
            back_off,
            ..
        } => (code, Some(error), kind, back_off),
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
        // Only what differs per attempt: every other header follows from the delivery
        // (`AttemptEntry::for_display` rebuilds them).
        request_headers: Vec::new(),
        signatures: AttemptEntry::stored_signatures(&sent.request_headers),
    };
    let step = if !failed {
        After::Succeeded
    } else if attempt >= MAX_ATTEMPTS {
        After::Dead
    } else {
        After::Retry {
            due_ms: retry_due(attempt, delays_ms, retry_after, now_ms),
            org_back_off: retry_after,
        }
    };
    (record, step)
}

/// When the retry after failed attempt `attempt` is due (Unix ms): its place in the schedule
/// (`delays_ms[attempt - 1]`, the last delay for any later one), or the receiver's
/// `Retry-After` when that is longer. One function of the two, so that the wait a receiver asks
/// for is exactly what it gets.
pub(crate) fn retry_due(
    attempt: u32,
    delays_ms: &[u64],
    retry_after: Option<Duration>,
    now_ms: i64,
) -> i64 {
    let scheduled = delays_ms
        .get((attempt as usize).saturating_sub(1))
        .or(delays_ms.last())
        .copied()
        .unwrap_or(0);
    let asked = retry_after.map_or(0, |w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX));
    now_ms.saturating_add(i64::try_from(scheduled.max(asked)).unwrap_or(i64::MAX))
}

/// `Retry-After` as delta-seconds (the form rate limiters send). An HTTP-date is not honoured:
/// it depends on the receiver's clock, and the normal retry schedule applies instead.
pub(crate) fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: u64 = v.trim().parse().ok()?;
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

/// While the endpoint fails, a failed delivery is held instead of retried or dead-lettered:
/// an outage spends no attempt and makes nothing dead. It resumes at its next attempt, and one
/// whose last attempt failed gets that last attempt again once the endpoint is back.
pub(crate) fn during_outage(step: After, attempt: u32, state: EndpointState) -> After {
    match step {
        After::Retry { .. } | After::Dead if state == EndpointState::Failing => After::Hold {
            resume_attempt: (attempt + 1).min(MAX_ATTEMPTS),
        },
        other => other,
    }
}

/// What an attempt means for its endpoint's health.
#[derive(Debug, Clone)]
pub enum HealthUpdate {
    /// Nothing is known of the endpoint (the delivery has no row), or the attempt says nothing
    /// about it (its secret could not be opened: no request was made): the step stands.
    Unknown,
    /// The attempt changes nothing (a clean endpoint's success, a back-off): it is `state`.
    Unchanged(EndpointState),
    /// Apply this under the endpoint's row lock (one truth across replicas); the step follows
    /// the state it leaves.
    Apply(HealthInput),
}

/// Everything that follows from one attempt, as data.
#[derive(Debug, Clone)]
pub struct AfterPlan {
    /// The delivery log's entry.
    pub record: AttemptEntry,
    /// What the attempt does to its endpoint's health (and, through it, to held deliveries).
    pub health: HealthUpdate,
    step: After,
    attempt: u32,
}

impl AfterPlan {
    /// The delivery's next step once the endpoint's state after this attempt is known (`None`:
    /// it could not be read or written; health is bookkeeping, so the step stands as decided).
    pub fn next(&self, state: Option<EndpointState>) -> After {
        match state {
            Some(s) => during_outage(self.step.clone(), self.attempt, s),
            None => self.step.clone(),
        }
    }
}

/// The one call after an attempt: its record, its next step, and what it does to the
/// endpoint's health. `health` is the endpoint's health as the delivery's context read it
/// (`None` when the delivery has no row).
pub fn plan_after_attempt(
    sent: &Sent,
    meta: &DeliveryMeta,
    health: Option<&EndpointGlance>,
    delays_ms: &[u64],
    rules: &HealthRules,
    now_ms: i64,
    now: OffsetDateTime,
) -> AfterPlan {
    let (record, step) = after_attempt(sent, meta.attempt, delays_ms, now_ms);
    let health = match health {
        None => HealthUpdate::Unknown,
        Some(_) if record.error_kind.is_some_and(|k| !k.blames_endpoint()) => HealthUpdate::Unknown,
        Some(glance) => {
            let seen = observed(sent);
            if touches_health(&seen, glance.state, glance.consecutive_failures) {
                // A test event sent while the endpoint fails counts as a probe.
                let source = if meta.test && glance.state == EndpointState::Failing {
                    Source::Probe
                } else {
                    Source::Attempt
                };
                HealthUpdate::Apply(HealthInput {
                    seen,
                    source,
                    now,
                    rules: *rules,
                })
            } else {
                HealthUpdate::Unchanged(glance.state)
            }
        }
    };
    AfterPlan {
        record,
        health,
        step,
        attempt: meta.attempt,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use qualifier_domain::EventType;
    use qualifier_store::secrets::OpenError;

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
    fn a_delivery_behind_a_pending_one_of_its_lead_waits_and_a_test_event_does_not() {
        let mut m = meta(EventType::LeadStageChanged);
        let mut c = ctx(
            DeliveryStatus::Pending,
            Some(Ok(hook(true, &[EventType::LeadStageChanged]))),
        );
        let order = |earlier_pending| qualifier_store::deliveries::LeadOrder {
            org_id: m.org_id,
            endpoint_id: m.endpoint_id(),
            lead_id: uuid::Uuid::new_v4(),
            seq: 7,
            earlier_pending,
        };
        let waiting = order(true);
        c.order = Some(waiting);
        assert_eq!(before_attempt(&m, &c), Before::WaitForEarlier(waiting));
        c.order = Some(order(false));
        assert!(matches!(before_attempt(&m, &c), Before::Send(_)));
        // A failing endpoint holds it first: it resumes in its turn after the outage.
        c.order = Some(order(true));
        c.health.state = EndpointState::Failing;
        assert_eq!(before_attempt(&m, &c), Before::Hold);
        c.health.state = EndpointState::Healthy;
        m.test = true;
        assert!(matches!(before_attempt(&m, &c), Before::Send(_)));
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
            due_ms: NOW + 30_000,
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
    fn a_failure_without_an_answer_is_logged_with_its_kind() {
        let why = NoAnswer::new(FailureKind::Connect, "connection failed: refused");
        let (entry, step) = after_attempt(&sent(Response::NoAnswer(why)), 2, &DELAYS, NOW);
        assert_eq!(entry.attempt, 2);
        assert_eq!(entry.error_kind, Some(FailureKind::Connect));
        assert_eq!(entry.error.as_deref(), Some("connection failed: refused"));
        assert_eq!(entry.status_code, None);
        assert!(matches!(step, After::Retry { due_ms, .. } if due_ms == NOW + DELAYS[1] as i64));
        let (entry, _) = after_attempt(&status(500), 1, &DELAYS, NOW);
        assert_eq!(entry.error_kind, None, "an answer is not a failure kind");
    }

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
        for (attempt, delay) in [(1, 30_000), (2, 120_000), (3, 480_000), (4, 1_920_000)] {
            let (rec, step) = after_attempt(&status(500), attempt, &DELAYS, NOW);
            assert_eq!(rec.error.as_deref(), Some("HTTP 500"));
            assert_eq!(
                step,
                After::Retry {
                    due_ms: NOW + delay,
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
        assert!(matches!(step, After::Retry { due_ms, .. } if due_ms == NOW + 30_000));
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
                due_ms: NOW + 30_000,
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
                due_ms: NOW + 200_000,
                org_back_off: Some(Duration::from_secs(200))
            }
        );
    }

    #[test]
    fn retry_after_counts_only_on_429_and_503_and_only_as_seconds() {
        let plain = After::Retry {
            due_ms: NOW + 30_000,
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
    fn a_retry_waits_for_its_schedule_or_the_receivers_longer_pause() {
        let secs = |n| Some(Duration::from_secs(n));
        assert_eq!(retry_due(1, &DELAYS, None, NOW), NOW + 30_000);
        assert_eq!(retry_due(1, &DELAYS, secs(7), NOW), NOW + 30_000);
        assert_eq!(retry_due(1, &DELAYS, secs(45), NOW), NOW + 45_000);
        assert_eq!(retry_due(4, &DELAYS, secs(45), NOW), NOW + 1_920_000);
        // Past the schedule's end, its last delay.
        assert_eq!(retry_due(9, &DELAYS, None, NOW), NOW + 1_920_000);
        assert_eq!(retry_due(1, &[], None, NOW), NOW);
    }

    #[test]
    fn one_plan_after_each_attempt() {
        let mut m = meta(EventType::LeadCreated);
        m.attempt = 2;
        let rules = HealthRules::default();
        let now = now_millis();
        let clean = EndpointGlance::default();
        // A clean endpoint's success writes nothing.
        let p = plan_after_attempt(&status(200), &m, Some(&clean), &DELAYS, &rules, NOW, now);
        assert!(matches!(
            p.health,
            HealthUpdate::Unchanged(EndpointState::Healthy)
        ));
        assert_eq!(p.next(Some(EndpointState::Healthy)), After::Succeeded);
        // A failure counts; once the endpoint is failing the delivery is held, not retried.
        let p = plan_after_attempt(&status(500), &m, Some(&clean), &DELAYS, &rules, NOW, now);
        let HealthUpdate::Apply(input) = &p.health else {
            panic!("a failure is counted")
        };
        assert_eq!(input.source, Source::Attempt);
        assert!(matches!(
            p.next(Some(EndpointState::Healthy)),
            After::Retry { due_ms, .. } if due_ms == NOW + 120_000
        ));
        assert_eq!(
            p.next(Some(EndpointState::Failing)),
            After::Hold { resume_attempt: 3 }
        );
        assert!(
            matches!(p.next(None), After::Retry { .. }),
            "unknown: as decided"
        );
        // A test event answered while the endpoint fails counts as a probe.
        let failing = EndpointGlance {
            state: EndpointState::Failing,
            consecutive_failures: 3,
        };
        let mut t = m.clone();
        t.test = true;
        let p = plan_after_attempt(&status(200), &t, Some(&failing), &DELAYS, &rules, NOW, now);
        let HealthUpdate::Apply(input) = &p.health else {
            panic!("a probe's answer is applied")
        };
        assert_eq!(input.source, Source::Probe);
        // An unreadable secret never reached the endpoint: its health is not touched.
        let why = NoAnswer::new(FailureKind::SecretUnreadable, "signing secret unreadable");
        let unread = Sent::without_request(now, why);
        let p = plan_after_attempt(&unread, &m, Some(&clean), &DELAYS, &rules, NOW, now);
        assert!(matches!(p.health, HealthUpdate::Unknown));
        // Nor does a proxy that refused the tunnel; the delivery is retried all the same.
        let why = NoAnswer::new(FailureKind::Proxy, "egress proxy unreachable");
        let blocked = Sent::without_request(now, why);
        let p = plan_after_attempt(&blocked, &m, Some(&clean), &DELAYS, &rules, NOW, now);
        assert!(matches!(p.health, HealthUpdate::Unknown));
        assert!(matches!(
            p.next(Some(EndpointState::Healthy)),
            After::Retry { .. }
        ));
        let p = plan_after_attempt(&status(500), &m, None, &DELAYS, &rules, NOW, now);
        assert!(matches!(p.health, HealthUpdate::Unknown), "no row");
    }
}
