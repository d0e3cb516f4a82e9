//! `lead-api` binary: configuration from the environment, two listeners, graceful shutdown.

use lead_api::ApiConfig;

const HELP: &str = "lead-api: Qualifier's public and internal HTTP API.

Environment:
  DATABASE_URL                     PostgreSQL URL (required)
  AMQP_URL                         RabbitMQ URL (required)
  QUALIFIER_HTTP_ADDR              public listener (default 0.0.0.0:8080)
  QUALIFIER_INTERNAL_ADDR          internal listener (default 127.0.0.1:8081)
  QUALIFIER_INTERNAL_TOKEN         bearer token of the internal API (required)
  QUALIFIER_SECRET_KEY             32 bytes base64, seals signing secrets (required)
  QUALIFIER_APP_BASE_URL           base of conversation_url (default https://app.qualifier.local)
  QUALIFIER_RATE_LIMIT_PER_MINUTE  per token (default 120)
  QUALIFIER_WEBHOOK_ALLOW_CIDRS    CIDRs exempt from the private-address ban (dev/tests only)
  QUALIFIER_HTTP_WORKERS           HTTP worker threads (default: number of CPUs)
  QUALIFIER_DB_POOL_SIZE           PostgreSQL connections (default 16)
  RUST_LOG, QUALIFIER_LOG_FORMAT   logging (info, json|pretty)
  OTEL_EXPORTER_OTLP_ENDPOINT      export traces over OTLP/gRPC when set
";

#[tokio::main]
async fn main() {
    let Some((cfg, telemetry)) =
        qualifier_telemetry::service_start(HELP, "lead-api", ApiConfig::from_env)
    else {
        return;
    };
    let api = match lead_api::start(cfg).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lead-api failed to start: {e}");
            std::process::exit(1);
        }
    };
    qualifier_config::shutdown_signal().await;
    tracing::info!("shutting down: finishing in-flight requests");
    api.stop(true).await;
    telemetry.shutdown();
}
