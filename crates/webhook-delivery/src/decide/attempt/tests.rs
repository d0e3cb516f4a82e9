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
