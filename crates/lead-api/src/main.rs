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
";

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return;
    }
    let cfg = match ApiConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = qualifier_config::init_logging() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    let api = match lead_api::start(cfg).await {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "lead-api failed to start");
            eprintln!("lead-api failed to start: {e}");
            std::process::exit(1);
        }
    };
    wait_for_shutdown_signal().await;
    tracing::info!("shutting down: finishing in-flight requests");
    api.stop(true).await;
}

async fn wait_for_shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
