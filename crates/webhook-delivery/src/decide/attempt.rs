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
    /// A destination other than `https` took the delivery (a broker's confirm, a stored
    /// object): its service's answer, in the delivery log's words.
    Accepted { answer: String },
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
        Reading::Success { code } => (code, None, None, None),
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
        response_body: match &sent.response {
            Response::Accepted { answer } => Some(answer.clone()),
            _ => sent.response_body.clone(),
        },
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
mod tests;
