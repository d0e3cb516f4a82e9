//! `webhook-delivery` binary.

use webhook_delivery::DeliveryConfig;

const HELP: &str = "webhook-delivery: consumes Qualifier events and delivers signed webhooks.

Environment:
  DATABASE_URL, AMQP_URL, QUALIFIER_SECRET_KEY     required
  QUALIFIER_TOPOLOGY_PREFIX        exchange/queue prefix (default qualifier)
  QUALIFIER_DELIVERY_ADDR          /healthz, /readyz, /metrics (default 127.0.0.1:8082)
  QUALIFIER_DELIVERY_CONCURRENCY   in-flight deliveries per process (default 64)
  QUALIFIER_DELIVERY_ORG_CONCURRENCY  the most of them one org may hold (default a quarter)
  QUALIFIER_DELIVERY_TIMEOUT_MS    whole-request timeout of one attempt (default 10000)
  QUALIFIER_RETRY_DELAYS_MS        4 waits before attempts 2..5 (default 30000,120000,480000,1920000)
  QUALIFIER_WEBHOOK_ALLOW_CIDRS    CIDRs exempt from the private-address ban (dev/tests only)
  QUALIFIER_WEBHOOK_CA_FILE        extra PEM roots for endpoints (dev/tests only)
  RUST_LOG, QUALIFIER_LOG_FORMAT   logging (info, json|pretty)
  OTEL_EXPORTER_OTLP_ENDPOINT      export traces over OTLP/gRPC when set
";

#[tokio::main]
async fn main() {
    let Some((cfg, telemetry)) =
        qualifier_telemetry::service_start(HELP, "webhook-delivery", DeliveryConfig::from_env)
    else {
        return;
    };
    let running = match webhook_delivery::start(cfg).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("webhook-delivery failed to start: {e}");
            std::process::exit(1);
        }
    };
    qualifier_config::shutdown_signal().await;
    tracing::info!("shutting down: draining in-flight deliveries");
    running.stop().await;
    telemetry.shutdown();
}
