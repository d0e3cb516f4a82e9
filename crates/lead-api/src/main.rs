//! `lead-api` binary: configuration from the environment, two listeners, graceful shutdown.

use lead_api::config::{ApiArgs, ApiConfig};

#[tokio::main]
async fn main() {
    let (cfg, telemetry) =
        qualifier_telemetry::service_start::<ApiArgs, _>("lead-api", ApiConfig::from_args);
    let api = qualifier_config::started_or_exit("lead-api", lead_api::start(cfg).await);
    qualifier_config::shutdown_signal().await;
    tracing::info!("shutting down: finishing in-flight requests");
    api.stop(true).await;
    telemetry.shutdown();
}
