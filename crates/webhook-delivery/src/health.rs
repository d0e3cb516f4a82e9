//! Endpoint health's background work in every `webhook-delivery` replica (contract section 9):
//! probing failing endpoints (one probe at a time per endpoint across replicas: each probe is
//! claimed with a lease in the endpoint's health row), sending the operational events that
//! changes of state queue, and the `qualifier_webhook_endpoints{state}` gauge.
//!
//! What a probe's answer does to the endpoint is [`crate::decide::health_after`]'s to say.

use std::sync::Arc;
use std::time::Duration;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::EventType;
use qualifier_domain::timefmt::now_millis;
use qualifier_store::Store;
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::decide::{self, HealthRules, Observed, Source};
use crate::sender::{DeliveryJob, Sender};

/// Where operational events go: the operator's own service, and the key of its secret.
#[derive(Clone)]
pub struct Operator {
    pub url: url::Url,
    pub key: Vec<u8>,
    pub client: reqwest::Client,
}

pub struct HealthWork {
    pub store: Store,
    pub sender: Sender,
    pub rules: HealthRules,
    pub operator: Option<Operator>,
    /// How long a claimed probe is this replica's: longer than one attempt can take.
    pub probe_lease: Duration,
}

/// How often each replica looks for due probes and events: often enough for the shortest probe
/// wait, never more than once a second (one indexed query on a partial index, usually empty).
pub fn tick(rules: &HealthRules) -> Duration {
    (rules.probe_min / 2).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// How often the gauge and the stray-hold safety net run.
const SAMPLE: Duration = Duration::from_secs(5);

impl HealthWork {
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(tick(&self.rules));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_sample = tokio::time::Instant::now() - SAMPLE;
        loop {
            tokio::select! { _ = tick.tick() => {}, _ = shutdown.cancelled() => return }
            self.probe_due().await;
            if let Some(op) = &self.operator {
                self.send_ops_events(op).await;
            }
            if last_sample.elapsed() >= SAMPLE {
                last_sample = tokio::time::Instant::now();
                self.sample().await;
            }
        }
    }

    async fn probe_due(&self) {
        let lease = self.probe_lease.as_millis() as i64;
        let due = match self.store.claim_probes(lease, 16).await {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(error = %qualifier_store::cause_chain(&e), "probe claim skipped");
                return;
            }
        };
        // Each claimed endpoint is probed at once, in parallel: a hanging one must not delay
        // the others.
        let probes = due.into_iter().map(|org| self.probe(org));
        futures_util::future::join_all(probes).await;
    }

    /// One probe: a signed test event with `X-Qualifier-Probe: true`, in no delivery log.
    async fn probe(&self, org_id: Uuid) {
        let now = now_millis();
        let rules = self.rules;
        let hook = match self.store.webhook_for_delivery(org_id).await {
            Ok(Some(Ok(h))) if h.webhook.enabled => h,
            Ok(_) => {
                // Gone, disabled by hand or unreadable: nothing to probe; look again later.
                let _ = self
                    .store
                    .change_health(org_id, false, move |h| {
                        decide::probe_skipped(h, now, &rules)
                    })
                    .await;
                return;
            }
            Err(_) => return,
        };
        let env = qualifier_domain::event::example(
            EventType::LeadCreated,
            org_id,
            now,
            &self.store.app_base_url,
        );
        let job = DeliveryJob {
            meta: DeliveryMeta {
                delivery_id: Uuid::new_v4(),
                event_id: env.id,
                org_id,
                event_type: EventType::LeadCreated,
                attempt: 1,
                occurred_at_ms: None,
                traceparent: None,
                not_before_ms: None,
                test: true,
            },
            body: env.to_bytes(),
            probe: true,
        };
        let sent = self.sender.send(&job, &hook).await;
        let seen = decide::observed(&sent);
        let result = match &seen {
            Observed::Up => "up",
            Observed::Paused => "paused",
            Observed::Down { .. } => "down",
        };
        metrics::counter!(m::PROBES, "result" => result).increment(1);
        let at = now_millis();
        let notify = self.operator.is_some();
        match self
            .store
            .change_health(org_id, notify, move |h| {
                decide::health_after(h, &seen, Source::Probe, at, &rules)
            })
            .await
        {
            Ok((h, Some(c))) => {
                tracing::warn!(%org_id, change = c.event_type(), error = ?h.last_error, "endpoint health changed by a probe")
            }
            Ok((h, None)) => {
                tracing::info!(%org_id, result, next_probe_at = ?h.next_probe_at, "endpoint probed")
            }
            Err(e) => {
                tracing::warn!(%org_id, error = %qualifier_store::cause_chain(&e), "probe outcome not recorded")
            }
        }
    }

    /// Sends due operational events, signed with Standard Webhooks headers; a failure is
    /// retried later, doubling up to an hour, for about two days.
    async fn send_ops_events(&self, op: &Operator) {
        let Ok(events) = self.store.claim_ops_events(30_000, 10).await else {
            return;
        };
        for e in events {
            let id = e.id.to_string();
            let unix = time::OffsetDateTime::now_utc().unix_timestamp();
            let signature =
                qualifier_signing::standard::sign_with_key(&op.key, &id, unix, &e.payload);
            let sent = op
                .client
                .post(op.url.clone())
                .header("Content-Type", "application/json")
                .header("webhook-id", &id)
                .header("webhook-timestamp", unix.to_string())
                .header("webhook-signature", signature)
                .header("X-Qualifier-Event", &e.event_type)
                .body(e.payload.clone())
                .send()
                .await;
            let error = match sent {
                Ok(r) if r.status().is_success() => None,
                Ok(r) => Some(format!("HTTP {}", r.status().as_u16())),
                Err(err) if err.is_timeout() => Some("timed out".to_owned()),
                Err(_) => Some("connection failed".to_owned()),
            };
            let delivered = error.is_none();
            metrics::counter!(m::OPS_EVENTS, "result" => if delivered { "delivered" } else { "failed" })
                .increment(1);
            let retry_ms = (!delivered && e.attempts < 60)
                .then(|| (1_000i64 << e.attempts.clamp(0, 12)).min(3_600_000));
            if let Some(err) = &error {
                tracing::warn!(event_id = %e.id, event_type = %e.event_type, error = %err, "operator webhook failed; retrying later");
            }
            if let Err(err) = self
                .store
                .ops_event_attempted(e.id, delivered, error.as_deref(), retry_ms)
                .await
            {
                tracing::warn!(error = %qualifier_store::cause_chain(&err), "operator event outcome not recorded; it may be sent again");
            }
        }
    }

    async fn sample(&self) {
        if let Ok(counts) = self.store.endpoint_counts().await {
            for (state, n) in counts {
                metrics::gauge!(m::WEBHOOK_ENDPOINTS, "state" => state.as_str()).set(n as f64);
            }
        }
        match self.store.release_stray_held().await {
            Ok(0) | Err(_) => {}
            Ok(n) => tracing::warn!(
                released = n,
                "held deliveries of a healthy endpoint released"
            ),
        }
    }
}
