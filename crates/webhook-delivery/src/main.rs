//! `webhook-delivery` binary.

use webhook_delivery::config::{DeliveryArgs, DeliveryConfig};

#[tokio::main]
async fn main() {
    let (cfg, telemetry) = qualifier_telemetry::service_start::<DeliveryArgs, _>(
        "webhook-delivery",
        DeliveryConfig::from_args,
    );
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
