//! The delivery rules, in one place (docs/delivery.md states them in prose).
//!
//! Pure functions over what the worker knows: no IO and no clock reads (the caller passes
//! `now`), so every rule is a unit test beside it. Each concern has its file:
//!
//! - [`admission`]: whether a message may start an attempt now, waits in the process for a slot,
//!   or is parked (the per-org cap, borrowing, a receiver's `Retry-After`);
//! - [`attempt`]: what happens before an attempt (send, hold, skip, drop) and after it (the
//!   attempt record, retry, dead-letter, hold while the endpoint fails);
//! - [`pace`]: the endpoint's throttle (whether a delivery holds its turn, takes one, waits for
//!   it here or in its row);
//! - [`health`]: endpoint health (failing, probes, recovery, disabling) and what each change does
//!   to the deliveries held meanwhile, and the operator notices' retry schedule.
//!
//! The callers carry plans out: a delivery asks [`plan_admission`] once before it starts (and
//! [`park`] if a wait in the process ends without a slot), [`before_attempt`] once with the
//! delivery's row, and [`after_attempt`] once with what the sender saw. Each answer is data
//! (an enum or a plan struct) whose variants the caller matches; no caller holds a rule of its
//! own. A new rule (say, "410 Gone ends the delivery at once") is a change in this folder and a
//! test beside it.

use std::time::Duration;

mod admission;
mod attempt;
mod health;
mod pace;

// Named one by one, not `*`: a reader (and `farm-studio walk`) follows each name from its
// caller to the one file that defines it.
pub(crate) use admission::MIN_PARK;
pub use admission::{
    Admission, BACKGROUND_WAIT_MAX, EndpointSlots, Hold, InOrg, Lane, Neighbour, ParkPlan, Process,
    SETTLE_PARK, lane, plan_admission,
};
pub(crate) use attempt::parse_retry_after;
pub use attempt::{
    After, AfterPlan, Before, HealthUpdate, REQUEUE_PAUSE, Response, Sent, SkipReason,
    before_attempt, plan_after_attempt,
};
pub(crate) use health::observed;
pub use health::{
    HealthInput, HealthRules, HealthStep, NOTICES_PER_ROUND, NoticeOutcome, Observed, ProbePlan,
    ProbeTarget, STRAY_HOLD_AFTER, Source, after_notice, after_probe, fold_steps, health_after,
    notice_lease, on_save, plan_for, probe_skipped, probe_target, probe_tick, touches_health,
};
pub use pace::{Pacing, pacing, turn_wait_here, woke_in_time};

use qualifier_domain::delivery::FailureKind;

/// Attempts in one cycle (5, then the dead-letter queue). A replay starts a new cycle.
pub const MAX_ATTEMPTS: u32 = 5;

/// The queue of a ladder of fixed-delay queues (the park tiers) for a wait of `wait`:
/// the longest delay that does not overshoot it (the rest is spent in a later hop), or the
/// shortest when all are longer. Each queue keeps one TTL, so its messages expire in order.
pub(crate) fn tier_for(tiers_ms: &[u64], wait: Duration) -> usize {
    let wait_ms = wait.as_millis() as u64;
    tiers_ms
        .iter()
        .enumerate()
        .filter(|(_, t)| **t <= wait_ms)
        .max_by_key(|(_, t)| **t)
        .map_or(0, |(i, _)| i)
}

/// When a delivery that waits `wait_ms` from `now_ms` is due (Unix ms): not before a pause
/// the receiver asked for (`not_before_ms`), whichever is later. A retry's delay and a long
/// park both wait this way in the delivery's row.
pub fn due_at(not_before_ms: Option<i64>, now_ms: i64, wait_ms: u64) -> i64 {
    let wait = i64::try_from(wait_ms).unwrap_or(i64::MAX);
    not_before_ms.unwrap_or(0).max(now_ms.saturating_add(wait))
}

/// How an answer reads, for an attempt, a probe and an operator notice alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    /// A 2xx (`code`), or a destination's acceptance (no status).
    Success { code: Option<u16> },
    /// Anything else: the error in the delivery log's words; `back_off` when the answer was a
    /// 429 or 503 with a `Retry-After` we honour (a pause, not a sign of an outage); `gone` for
    /// a 410.
    Failure {
        code: Option<u16>,
        error: String,
        kind: Option<FailureKind>,
        back_off: Option<Duration>,
        gone: bool,
    },
}

/// The one reader of a receiver's status: success is a 2xx; every other status (3xx included:
/// redirects are never followed) and no answer at all is a failure.
pub(crate) fn read(response: &Response) -> Reading {
    match response {
        Response::Status { code, .. } if (200..300).contains(code) => {
            Reading::Success { code: Some(*code) }
        }
        Response::Accepted { .. } => Reading::Success { code: None },
        Response::Status { code, retry_after } => Reading::Failure {
            code: Some(*code),
            error: if (300..400).contains(code) {
                format!("HTTP {code} (redirects are not followed)")
            } else {
                format!("HTTP {code}")
            },
            kind: None,
            back_off: matches!(code, 429 | 503)
                .then(|| retry_after.as_deref().and_then(parse_retry_after))
                .flatten(),
            gone: *code == 410,
        },
        Response::NoAnswer(why) => Reading::Failure {
            code: None,
            error: why.message.clone(),
            kind: Some(why.kind),
            back_off: None,
            gone: false,
        },
    }
}

/// What the unit tests of every concern build their facts from.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Response, Sent};
    pub use qualifier_bus::DeliveryMeta;
    pub use qualifier_domain::DeliveryStatus;
    pub use qualifier_domain::EventType;
    pub use qualifier_domain::timefmt::now_millis;
    pub use qualifier_store::deliveries::DeliveryContext;
    pub use qualifier_store::secrets::OpenError;
    pub use qualifier_store::webhooks::{Webhook, WebhookForDelivery};
    pub use uuid::Uuid;

    pub const DELAYS: [u64; 4] = [30_000, 120_000, 480_000, 1_920_000];
    pub const NOW: i64 = 1_800_000_000_000;

    pub fn meta(event_type: EventType) -> DeliveryMeta {
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
            seq: None,
            endpoint_id: None,
        }
    }

    pub fn hook(enabled: bool, types: &[EventType]) -> WebhookForDelivery {
        WebhookForDelivery {
            webhook: Webhook {
                id: Uuid::nil(),
                description: String::new(),
                url: "https://hooks.example.com/q".into(),
                event_types: types.to_vec(),
                enabled,
                created_at: now_millis(),
                updated_at: now_millis(),
                client_certificate: None,
                max_per_second: None,
                ordering: Default::default(),
                headers: Vec::new(),
                auth: None,
                filter: None,
                destination: serde_json::json!({"type": "https"}),
            },
            signing_secret: "qlf_whsec_test".into(),
            previous_secret: None,
            client_identity: None,
            receiver_headers: Vec::new(),
            receiver_auth: None,
            destination: None,
        }
    }

    pub fn ctx(
        status: DeliveryStatus,
        webhook: Option<Result<WebhookForDelivery, OpenError>>,
    ) -> DeliveryContext {
        DeliveryContext {
            status,
            state: match status {
                DeliveryStatus::Succeeded => qualifier_domain::delivery::DeliveryState::Succeeded,
                DeliveryStatus::Dead => qualifier_domain::delivery::DeliveryState::Dead,
                DeliveryStatus::Skipped => qualifier_domain::delivery::DeliveryState::Skipped,
                _ => qualifier_domain::delivery::DeliveryState::Out,
            },
            due_at: None,
            read_at: time::OffsetDateTime::now_utc(),
            endpoint: qualifier_store::webhooks::EndpointKey {
                org_id: Uuid::nil(),
                endpoint_id: Uuid::nil(),
            },
            webhook,
            health: Default::default(),
            paced_at: None,
            order: None,
        }
    }

    pub fn sent(response: Response) -> Sent {
        Sent {
            started_at: now_millis(),
            duration_ms: 12,
            response,
            request_headers: vec![("webhook-id".into(), "msg".into())],
            response_body: Some("{\"error\": \"nope\"}".into()),
        }
    }

    pub fn status(code: u16) -> Sent {
        sent(Response::Status {
            code,
            retry_after: None,
        })
    }

    pub fn status_retry_after(code: u16, v: &str) -> Sent {
        sent(Response::Status {
            code,
            retry_after: Some(v.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualifier_domain::delivery::NoAnswer;

    #[test]
    fn a_wait_is_due_after_its_delay_or_the_receivers_pause_whichever_is_later() {
        assert_eq!(due_at(None, 1_000, 30_000), 31_000);
        assert_eq!(due_at(Some(90_000), 1_000, 30_000), 90_000);
        assert_eq!(due_at(Some(5_000), 1_000, 30_000), 31_000);
        assert_eq!(due_at(None, i64::MAX - 1, u64::MAX), i64::MAX);
    }

    #[test]
    fn one_reader_for_every_answer() {
        let status = |code, ra: Option<&str>| Response::Status {
            code,
            retry_after: ra.map(str::to_owned),
        };
        assert_eq!(
            read(&status(204, None)),
            Reading::Success { code: Some(204) }
        );
        let Reading::Failure { back_off, gone, .. } = read(&status(429, Some("3"))) else {
            panic!("a 429 fails")
        };
        assert_eq!((back_off, gone), (Some(Duration::from_secs(3)), false));
        let Reading::Failure { back_off, .. } = read(&status(500, Some("3"))) else {
            panic!("a 500 fails")
        };
        assert_eq!(back_off, None, "Retry-After counts on 429 and 503 only");
        let Reading::Failure { gone, error, .. } = read(&status(410, None)) else {
            panic!("a 410 fails")
        };
        assert!(gone);
        assert_eq!(error, "HTTP 410");
        let Reading::Failure { kind, code, .. } = read(&Response::NoAnswer(NoAnswer::new(
            FailureKind::Tls,
            "connection failed: bad certificate",
        ))) else {
            panic!("no answer fails")
        };
        assert_eq!((kind, code), (Some(FailureKind::Tls), None));
    }

    #[test]
    fn a_tier_never_overshoots_the_wait() {
        let tiers = [1_000, 4_000, 16_000];
        assert_eq!(tier_for(&tiers, Duration::from_millis(999)), 0);
        assert_eq!(tier_for(&tiers, Duration::from_secs(5)), 1);
        assert_eq!(tier_for(&tiers, Duration::from_secs(3600)), 2);
    }
}
