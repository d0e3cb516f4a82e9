#![doc = include_str!("../README.md")]

pub use qualifier_store::batch;
pub mod config;
pub mod decide;
pub mod gate;
#[cfg(test)]
mod gate_properties;
pub mod health;
pub mod sender;
mod tunnel;
pub mod worker;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::Context;
use qualifier_bus::Topology;
use qualifier_egress::EgressPolicy;
use qualifier_store::Store;
use tokio_util::sync::CancellationToken;

pub use config::DeliveryConfig;
use worker::{Worker, WorkerStatus};

struct Health {
    store: Store,
    status: Arc<WorkerStatus>,
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(h: web::Data<Health>) -> HttpResponse {
    let db = h.store.ping().await.is_ok();
    let broker = h.status.broker_ready.load(Ordering::Relaxed);
    if db && broker {
        HttpResponse::Ok().json(serde_json::json!({ "status": "ready" }))
    } else {
        HttpResponse::ServiceUnavailable()
            .insert_header(("Retry-After", "5"))
            .json(serde_json::json!({ "error": "Service unavailable" }))
    }
}

async fn metrics_page() -> HttpResponse {
    use qualifier_telemetry::metrics as m;
    HttpResponse::Ok()
        .content_type(m::CONTENT_TYPE)
        .body(m::render())
}

/// A running `webhook-delivery`.
pub struct RunningDelivery {
    pub addr: SocketAddr,
    server: actix_web::dev::ServerHandle,
    server_task: tokio::task::JoinHandle<std::io::Result<()>>,
    worker: tokio::task::JoinHandle<()>,
    health: tokio::task::JoinHandle<()>,
    shutdown: CancellationToken,
}

impl RunningDelivery {
    /// Stops consuming, waits for in-flight deliveries, then stops the health server.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.worker.await;
        let _ = self.health.await;
        self.server.stop(true).await;
        let _ = self.server_task.await;
    }
}

pub async fn start(cfg: DeliveryConfig) -> anyhow::Result<RunningDelivery> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    {
        use qualifier_telemetry::metrics as m;
        m::install();
        for outcome in ["delivered", "retrying", "dead", "skipped", "held"] {
            m::zero_counter(m::DELIVERIES, &[("outcome", outcome)]);
        }
    }
    // TLS that cannot work stops the start with one line; a server that is down is waited for.
    cfg.database.check_at_start().await?;
    cfg.brokers
        .check_at_start("webhook-delivery start check")
        .await?;
    if let Some(w) = cfg.brokers.transport_warning() {
        tracing::warn!("{w}");
    }
    if let Some((url, _)) = &cfg.operator_webhook
        && url.scheme() == "http"
    {
        tracing::warn!(
            "QUALIFIER_OPERATOR_WEBHOOK_URL uses http:// (no TLS): endpoint health notices cross the network in plaintext; use https://"
        );
    }
    let pool = qualifier_store::connect_generic_plans(&cfg.database, cfg.db_pool_size)
        .context("building the database pool")?;
    let store = Store::new(pool, cfg.secret_key.clone())
        .with_payload_storage(cfg.compact_storage)
        .await;
    let roots = match &cfg.ca_file {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let timeout = Duration::from_millis(cfg.timeout_ms);
    let sender = sender::Sender::new(
        EgressPolicy::new(cfg.allow_cidrs.clone()),
        timeout,
        roots.as_deref(),
        cfg.egress_proxy.clone(),
    )?;
    let status = Arc::new(WorkerStatus::default());
    let notify_operator = cfg.operator_webhook.is_some();
    let worker::Batchers {
        contexts,
        outcomes,
        health_writes,
        schedules,
        calls,
    } = Worker::batchers(&store, notify_operator);
    let worker = Arc::new(Worker {
        contexts,
        outcomes,
        health_writes,
        schedules,
        calls,
        store: store.clone(),
        sender,
        topology: Topology::new(cfg.topology_prefix.clone(), cfg.retry_delays_ms.clone()),
        brokers: cfg.brokers.clone(),
        concurrency: cfg.concurrency,
        gate: gate::OrgGate::new(cfg.org_concurrency, cfg.concurrency, timeout),
        status: status.clone(),
        drain_timeout: cfg.shutdown_grace,
        attempt_timeout: timeout,
        health: cfg.health,
        notify_operator,
        underway: Default::default(),
    });
    let shutdown = CancellationToken::new();
    let operator = match &cfg.operator_webhook {
        Some((url, key)) => Some(sender::Operator {
            url: url.clone(),
            key: key.clone(),
            client: sender::operator_client(timeout, roots.as_deref(), cfg.egress_proxy.as_ref())?,
            timeout,
        }),
        None => None,
    };
    let health_work = Arc::new(health::HealthWork {
        store: store.clone(),
        sender: worker.sender.clone(),
        rules: cfg.health,
        operator,
        probe_lease: timeout + Duration::from_secs(5),
    });
    let health_task = tokio::spawn(health_work.run(shutdown.clone()));
    let worker = tokio::spawn(worker.run(shutdown.clone()));

    let health = web::Data::new(Health { store, status });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(health.clone())
            .route("/healthz", web::get().to(healthz))
            .route("/readyz", web::get().to(readyz))
            .route("/metrics", web::get().to(metrics_page))
    })
    .workers(1)
    .disable_signals()
    .bind(cfg.addr)?;
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    let server_task = tokio::spawn(server);
    tracing::info!(%addr, "webhook-delivery started");
    Ok(RunningDelivery {
        addr,
        server: handle,
        server_task,
        worker,
        health: health_task,
        shutdown,
    })
}
