//! `webhook-delivery` binary.

use webhook_delivery::config::{DeliveryArgs, DeliveryConfig};

#[tokio::main]
async fn main() {
    let (cfg, telemetry) = qualifier_telemetry::service_start::<DeliveryArgs, _>(
        "webhook-delivery",
        DeliveryConfig::from_args,
    );
    let running =
        qualifier_config::started_or_exit("webhook-delivery", webhook_delivery::start(cfg).await);
    qualifier_config::shutdown_signal().await;
    tracing::info!("shutting down: draining in-flight deliveries");
    running.stop().await;
    telemetry.shutdown();
}
