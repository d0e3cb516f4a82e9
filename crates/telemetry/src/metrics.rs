//! The process-wide Prometheus recorder and the name of every metric (one place, so the docs,
//! the dashboards and the code agree). `docs/operations.md` says what each one means and which
//! alerts to set on it.

use std::sync::OnceLock;
use std::time::Duration;

pub use ::metrics;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// HTTP requests by `route` (the matched pattern), `method` and `status`.
pub const HTTP_REQUESTS: &str = "qualifier_http_requests_total";
/// HTTP request latency, same labels.
pub const HTTP_DURATION: &str = "qualifier_http_request_duration_seconds";
/// Requests refused with 429 by the per-token rate limit.
pub const RATE_LIMITED: &str = "qualifier_rate_limited_total";
/// Events committed but not yet published to RabbitMQ, and the age of the oldest one.
pub const OUTBOX_BACKLOG: &str = "qualifier_outbox_backlog";
pub const OUTBOX_OLDEST_AGE: &str = "qualifier_outbox_oldest_age_seconds";
/// Events the relay published (confirmed by the broker).
pub const OUTBOX_PUBLISHED: &str = "qualifier_outbox_published_total";
/// Finished attempts by `outcome`: delivered, retrying, dead, skipped.
pub const DELIVERIES: &str = "qualifier_deliveries_total";
/// One HTTP attempt's duration by `result` (success, failure).
pub const ATTEMPT_DURATION: &str = "qualifier_delivery_attempt_duration_seconds";
/// From the event's commit to its receiver's 2xx.
pub const EVENT_TO_DELIVERY: &str = "qualifier_event_to_delivery_seconds";
/// Messages in the work queue, all retry queues together, and the dead-letter queue (`queue`).
pub const QUEUE_DEPTH: &str = "qualifier_queue_depth";
/// Messages parked without an attempt, by `reason`: at_cap (the org's in-flight cap) or
/// backing_off (the receiver's `Retry-After`).
pub const PARKED: &str = "qualifier_delivery_parked_total";
/// Deliveries parked in their rows at their endpoint's share and called forward by a slot of
/// that endpoint freed in this process (`webhook-delivery`'s gate, `call_forward`).
pub const CALLED_FORWARD: &str = "qualifier_delivery_called_forward_total";
/// Attempts in flight in this process.
pub const IN_FLIGHT: &str = "qualifier_delivery_in_flight";
/// Gauge: messages of quick orgs waiting in this process for a slot instead of parking.
pub const WAITING_FOR_SLOT: &str = "qualifier_delivery_waiting_for_slot";
/// Gauge: org endpoints by health `state` (`healthy`, `failing`, `disabled`), sampled from the
/// database by each webhook-delivery replica (docs/delivery.md, "Endpoint health").
pub const WEBHOOK_ENDPOINTS: &str = "qualifier_webhook_endpoints";
/// Counter: requests to endpoints (deliveries, probes, test events) and to the operator's
/// webhook that the egress proxy could not carry (unreachable, or it refused the tunnel).
pub const EGRESS_PROXY_ERRORS: &str = "qualifier_egress_proxy_errors_total";
/// Counter: probes of failing endpoints by `result` (`up`, `down`, `paused`, and `unsent` when
/// the egress proxy stopped it).
pub const PROBES: &str = "qualifier_endpoint_probes_total";
/// Counter: operational events sent to the operator's webhook, by `result`.
pub const OPS_EVENTS: &str = "qualifier_operator_events_total";
/// Gauge, always 1: the running build's `version` (the workspace's, as `--version` prints it),
/// so a rolling upgrade shows on a dashboard as one label giving way to the next.
pub const BUILD_INFO: &str = "qualifier_build_info";

/// The product's version: every crate takes the workspace's (`Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Event-to-delivery spans retries, so it reaches past the last retry wait (32 minutes).
const E2E_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0,
];

fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram};
    enum Kind {
        Gauge,
        Counter,
        Histogram,
    }
    use Kind::{Counter, Gauge, Histogram};
    ::metrics::gauge!(BUILD_INFO, "version" => VERSION).set(1.0);
    for (kind, name, help) in [
        (
            Gauge,
            BUILD_INFO,
            "1, labelled with the running build's version",
        ),
        (
            Gauge,
            OUTBOX_BACKLOG,
            "committed events not yet published to RabbitMQ",
        ),
        (
            Gauge,
            OUTBOX_OLDEST_AGE,
            "age in seconds of the oldest unpublished event",
        ),
        (
            Gauge,
            QUEUE_DEPTH,
            "messages ready in the work, retry and dead queues",
        ),
        (
            Gauge,
            IN_FLIGHT,
            "webhook attempts in flight in this process",
        ),
        (
            Gauge,
            WAITING_FOR_SLOT,
            "messages waiting in this process for an attempt slot",
        ),
        (
            Counter,
            HTTP_REQUESTS,
            "HTTP requests by route, method and status",
        ),
        (
            Counter,
            RATE_LIMITED,
            "requests refused by the per-token rate limit",
        ),
        (
            Counter,
            OUTBOX_PUBLISHED,
            "events published by the outbox relay",
        ),
        (Counter, DELIVERIES, "finished delivery attempts by outcome"),
        (
            Counter,
            PARKED,
            "messages parked without using an attempt, by reason",
        ),
        (Histogram, HTTP_DURATION, "HTTP request latency in seconds"),
        (
            Histogram,
            ATTEMPT_DURATION,
            "duration of one webhook HTTP attempt in seconds",
        ),
        (
            Histogram,
            EVENT_TO_DELIVERY,
            "seconds from an event's commit to its 2xx",
        ),
    ] {
        match kind {
            Gauge => describe_gauge!(name, help),
            Counter => describe_counter!(name, help),
            Histogram => describe_histogram!(name, help),
        }
    }
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The recorder, installed on first use (both services call this at start).
pub fn prometheus() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(EVENT_TO_DELIVERY.into()), E2E_BUCKETS)
            .and_then(|b| b.set_buckets(LATENCY_BUCKETS))
            .expect("static buckets are valid");
        let handle = match builder.install_recorder() {
            Ok(h) => h,
            // Another recorder got there first (an embedding program): keep serving an empty
            // page rather than failing the service.
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder already installed elsewhere");
                PrometheusBuilder::new().build_recorder().handle()
            }
        };
        describe();
        handle
    })
}

/// Installs the recorder and keeps its histograms compact (the exporter's upkeep) until the
/// runtime ends.
pub fn install() -> &'static PrometheusHandle {
    let h = prometheus();
    static UPKEEP: OnceLock<()> = OnceLock::new();
    UPKEEP.get_or_init(|| {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async {
                let mut tick = tokio::time::interval(Duration::from_secs(5));
                loop {
                    tick.tick().await;
                    prometheus().run_upkeep();
                }
            });
        }
    });
    h
}

/// Makes a counter appear (at 0) before its first event, so dashboards and `rate()` see it from
/// the start instead of after the first refusal or failure.
pub fn zero_counter(name: &'static str, labels: &[(&'static str, &'static str)]) {
    ::metrics::counter!(name, labels).increment(0);
}

/// The Prometheus text page.
pub fn render() -> String {
    prometheus().render()
}

/// The content type of [`render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
