//! Endpoint health's background work in every `webhook-delivery` replica (docs/delivery.md,
//! "Endpoint health"): probing failing endpoints (one probe at a time per endpoint across
//! replicas: each probe is claimed with a lease in the endpoint's health row), sending the
//! operational events that changes of state queue, and the `qualifier_webhook_endpoints{state}`
//! gauge.
//!
//! It carries out plans and decides nothing: whether an endpoint can be probed and when an
//! operator notice is tried again are the worker's readings (`decide/health.rs`), and what a
//! probe's answer does to the state is the rules' one home, `qualifier_domain::health`.

use std::sync::Arc;
use std::time::Duration;

use qualifier_bus::DeliveryMeta;
use qualifier_domain::EventType;
use qualifier_domain::timefmt::now_millis;
use qualifier_store::Store;
use qualifier_store::webhooks::{EndpointKey, EndpointRef};
use qualifier_telemetry::metrics::{self as m, metrics};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::decide::{self, HealthRules, ProbeTarget};
use crate::sender::{DeliveryJob, Operator, Sender};

pub struct HealthWork {
    pub store: Store,
    pub sender: Sender,
    pub rules: HealthRules,
    pub operator: Option<Operator>,
    /// How long a claimed probe is this replica's: longer than one attempt can take.
    pub probe_lease: Duration,
}

/// How often the gauge and the stray-hold safety net run.
const SAMPLE: Duration = Duration::from_secs(5);

impl HealthWork {
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        // Operator notices have a loop of their own: a slow or hanging operator service must
        // not delay a probe (and so a recovery) by as much as one send.
        let notices = self
            .operator
            .clone()
            .map(|op| tokio::spawn(self.clone().notices(op, shutdown.clone())));
        let mut tick = tokio::time::interval(decide::probe_tick(&self.rules));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_sample = tokio::time::Instant::now() - SAMPLE;
        loop {
            tokio::select! { _ = tick.tick() => {}, _ = shutdown.cancelled() => break }
            self.probe_due().await;
            if last_sample.elapsed() >= SAMPLE {
                last_sample = tokio::time::Instant::now();
                self.sample().await;
                self.warn_expiring_certificates().await;
            }
        }
        if let Some(n) = notices {
            let _ = n.await;
        }
    }

    async fn notices(self: Arc<Self>, op: Operator, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(decide::probe_tick(&self.rules));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! { _ = tick.tick() => {}, _ = shutdown.cancelled() => return }
            self.send_ops_events(&op).await;
        }
    }

    /// Client certificates close to expiring get their one `endpoint.certificate_expiring`
    /// (docs/operations.md, "Client certificates"); the statement marks each as warned, so
    /// replicas never send one twice.
    async fn warn_expiring_certificates(&self) {
        match self
            .store
            .endpoints()
            .warn_expiring_certificates(self.operator.is_some())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                certificates = n,
                "client certificates expire within 14 days"
            ),
            Err(e) => {
                tracing::debug!(error = %qualifier_store::cause_chain(&e), "certificate expiry check skipped")
            }
        }
    }

    async fn probe_due(&self) {
        let lease = self.probe_lease.as_millis() as i64;
        let due = match self.store.endpoints().claim_probes(lease, 16).await {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(error = %qualifier_store::cause_chain(&e), "probe claim skipped");
                return;
            }
        };
        // Each claimed endpoint is probed at once, in parallel: a hanging one must not delay
        // the others.
        let probes = due.into_iter().map(|at| self.probe(at));
        futures_util::future::join_all(probes).await;
    }

    /// One probe: a signed test event with `X-Qualifier-Probe: true`, in no delivery log.
    async fn probe(&self, at: EndpointKey) {
        let rules = self.rules;
        let org_id = at.org_id;
        let Ok(webhook) = self
            .store
            .endpoints()
            .webhook_for_delivery(EndpointRef::id(org_id, at.endpoint_id))
            .await
        else {
            return;
        };
        let hook = match decide::probe_target(webhook.as_ref(), now_millis(), &rules) {
            ProbeTarget::Send(hook) => hook,
            ProbeTarget::NotNow(step) => {
                let _ = self
                    .store
                    .endpoints()
                    .change_health(at, false, move |h| step.apply(h))
                    .await;
                return;
            }
        };
        let env = qualifier_domain::event::example(
            EventType::LeadCreated,
            org_id,
            now_millis(),
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
                seq: None,
                endpoint_id: Some(at.endpoint_id),
            },
            body: env.to_bytes(),
            probe: true,
        };
        // A probe is a request like any other to a throttled endpoint: it takes a turn.
        if let Some(rate) = hook.webhook.max_per_second {
            match self.store.deliveries().take_probe_turn(at, rate).await {
                // Bounded by the probe's lease: the endpoint fails, so few turns are taken.
                Ok(wait) => tokio::time::sleep(wait.min(Duration::from_secs(5))).await,
                Err(e) => {
                    tracing::debug!(%org_id, error = %qualifier_store::cause_chain(&e), "probe turn not taken; probing later");
                    return;
                }
            }
        }
        let sent = self.sender.send(&job, hook).await;
        let plan = decide::after_probe(&sent, now_millis(), &rules);
        let result = plan.result;
        metrics::counter!(m::PROBES, "result" => result).increment(1);
        let notify = self.operator.is_some();
        let step = plan.health;
        match self
            .store
            .endpoints()
            .change_health(at, notify, move |h| step.apply(h))
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

    /// Sends due operational events, signed with Standard Webhooks headers, all at once: each
    /// is claimed for longer than a send can take ([`decide::notice_lease`]), so a slow answer
    /// never lets another replica send it again. A failure is tried again when the delivery
    /// rules say ([`decide::after_notice`]).
    async fn send_ops_events(&self, op: &Operator) {
        let lease = decide::notice_lease(op.timeout).as_millis() as i64;
        let Ok(events) = self
            .store
            .endpoints()
            .claim_ops_events(lease, decide::NOTICES_PER_ROUND)
            .await
        else {
            return;
        };
        let sends = events.into_iter().map(|e| self.send_notice(op, e));
        futures_util::future::join_all(sends).await;
    }

    async fn send_notice(&self, op: &Operator, e: qualifier_store::health::OpsEvent) {
        let response = crate::sender::send_notice(op, &e).await;
        let outcome = decide::after_notice(&response, e.attempts);
        let label = if outcome.delivered {
            "delivered"
        } else {
            "failed"
        };
        metrics::counter!(m::OPS_EVENTS, "result" => label).increment(1);
        if let Some(err) = &outcome.error {
            tracing::warn!(event_id = %e.id, event_type = %e.event_type, error = %err, "operator webhook failed; retrying later");
        }
        if let Err(err) = self
            .store
            .endpoints()
            .ops_event_attempted(
                e.id,
                outcome.delivered,
                outcome.error.as_deref(),
                outcome.retry_after,
            )
            .await
        {
            tracing::warn!(error = %qualifier_store::cause_chain(&err), "operator event outcome not recorded; it may be sent again");
        }
    }

    async fn sample(&self) {
        if let Ok(counts) = self.store.endpoints().endpoint_counts().await {
            for (state, n) in counts {
                metrics::gauge!(m::WEBHOOK_ENDPOINTS, "state" => state.as_str()).set(n as f64);
            }
        }
        match self
            .store
            .deliveries()
            .release_stray_held(decide::STRAY_HOLD_AFTER)
            .await
        {
            Ok(0) | Err(_) => {}
            Ok(n) => tracing::warn!(
                released = n,
                "held deliveries of a healthy endpoint released"
            ),
        }
        match self
            .store
            .deliveries()
            .release_stray_order_waits(decide::STRAY_HOLD_AFTER)
            .await
        {
            Ok(0) | Err(_) => {}
            Ok(n) => tracing::warn!(
                released = n,
                "deliveries waiting for an earlier delivery that is over released"
            ),
        }
    }
}
