//! Building and running the two listeners: the public API and the internal API (which also
//! serves `/metrics`). Both share one state and one pool.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServerHandle, Service, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{App, HttpMessage, HttpResponse, HttpServer, web};
use anyhow::Context;
use qualifier_egress::EgressPolicy;
use qualifier_store::Store;
use qualifier_telemetry::metrics::{self as m, metrics};
use tracing::Instrument;
use uuid::Uuid;

use crate::config::ApiConfig;
use crate::error::{ApiError, not_found};
use crate::state::{AppState, RateHeaders};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const RL_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const RL_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");

/// A client's own request id is echoed when it is a sane header value; otherwise we make one.
fn request_id(req: &actix_web::dev::ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| Uuid::new_v4().to_string())
}

/// Adds `X-Request-Id` and the rate-limit headers, and logs the hidden cause of 5xx responses.
fn finish_response<B: MessageBody>(rid: &str, res: &mut ServiceResponse<B>) {
    let status = res.status();
    if status.is_server_error() {
        let cause = res
            .response()
            .error()
            .and_then(|e| e.as_error::<ApiError>())
            .and_then(ApiError::cause)
            .unwrap_or_else(|| "unknown".to_owned());
        // 503 is a dependency outage the caller is told to retry (warn); anything else is a bug.
        if status == actix_web::http::StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(
                status = 503,
                cause = %cause,
                "request refused: a dependency is unavailable"
            );
        } else {
            tracing::error!(status = status.as_u16(), cause = %cause, "request failed");
        }
    }
    let rate = res.request().extensions().get::<RateHeaders>().copied();
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(rid) {
        headers.insert(REQUEST_ID, v);
    }
    if let Some(r) = rate {
        headers.insert(RL_LIMIT, HeaderValue::from(r.limit));
        headers.insert(RL_REMAINING, HeaderValue::from(r.remaining));
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// The public listener's `/readyz`: the state the readiness loop last saw, no database work
/// per request (docs/reliability.md, "Strangers, quotas and pages": strangers do not spend the database).
async fn readyz_cached(st: web::Data<AppState>) -> HttpResponse {
    if st.ready.load(std::sync::atomic::Ordering::Relaxed) {
        HttpResponse::Ok().json(serde_json::json!({ "status": "ready" }))
    } else {
        actix_web::ResponseError::error_response(&ApiError::Unavailable(
            "not ready at the last check".into(),
        ))
    }
}

/// Checks readiness once a second for [`readyz_cached`].
async fn watch_readiness(st: web::Data<AppState>, stop: tokio_util::sync::CancellationToken) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tokio::select! { _ = tick.tick() => {}, _ = stop.cancelled() => return }
        // Inside the strangers' lane: what answers them must not add a connection to it.
        let db = match crate::token_filter::enter(&st.strangers).await {
            Ok(_lane) => st.store.ping().await.is_ok(),
            Err(()) => st.ready.load(std::sync::atomic::Ordering::Relaxed),
        };
        let ready = db
            && !st.stopping.load(std::sync::atomic::Ordering::Relaxed)
            && st
                .relay
                .broker_ready
                .load(std::sync::atomic::Ordering::Relaxed);
        st.ready.store(ready, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The internal listener's `/readyz` (and the orchestrator's probe): a live check.
async fn readyz(st: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if st.stopping.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(ApiError::Unavailable("stopping".into()));
    }
    st.store.ping().await?;
    if !st
        .relay
        .broker_ready
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(ApiError::Unavailable("RabbitMQ not connected".into()));
    }
    Ok(HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })))
}

macro_rules! app {
    ($state:expr, $routes:expr, $readyz:expr) => {
        App::new()
            .app_data($state.clone())
            .configure($routes)
            .route("/healthz", web::get().to(healthz))
            .route("/readyz", web::get().to($readyz))
            .default_service(web::to(not_found))
            .wrap_fn(|req, srv| {
                req.extensions_mut()
                    .insert(crate::body::HeadReceived(tokio::time::Instant::now()));
                let rid = request_id(&req);
                let span = tracing::info_span!(
                    "http",
                    request_id = %rid,
                    method = %req.method(),
                    path = %req.path(),
                    trace_id = tracing::field::Empty,
                    org_id = tracing::field::Empty,
                    lead_id = tracing::field::Empty,
                    delivery_id = tracing::field::Empty,
                );
                // A caller's W3C trace context makes this request (and the webhooks it causes)
                // part of the caller's trace.
                qualifier_telemetry::set_remote_parent(
                    &span,
                    req.headers()
                        .get(qualifier_telemetry::TRACEPARENT)
                        .and_then(|v| v.to_str().ok()),
                );
                if let Some(t) = qualifier_telemetry::trace_id(&span) {
                    span.record("trace_id", t);
                }
                let started = std::time::Instant::now();
                let fut = srv.call(req);
                async move {
                    let mut res = fut.await?;
                    finish_response(&rid, &mut res);
                    record_request(&res, started.elapsed());
                    tracing::debug!(status = res.status().as_u16(), "request done");
                    Ok(res)
                }
                .instrument(span)
            })
    };
}

/// The method as a metrics label: one of the standard methods, or `other`. actix accepts any
/// method token, and a label taken from the client would let anyone add series (memory) without
/// a token.
fn method_label(m: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method as M;
    match *m {
        M::GET => "GET",
        M::HEAD => "HEAD",
        M::POST => "POST",
        M::PUT => "PUT",
        M::PATCH => "PATCH",
        M::DELETE => "DELETE",
        M::OPTIONS => "OPTIONS",
        M::CONNECT => "CONNECT",
        M::TRACE => "TRACE",
        _ => "other",
    }
}

/// Request count and latency by matched route pattern (never the raw path, whose ids would make
/// one time series per lead).
fn record_request<B>(res: &ServiceResponse<B>, took: std::time::Duration) {
    let route = res
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let labels = [
        ("route", route),
        ("method", method_label(res.request().method()).to_owned()),
        ("status", res.status().as_u16().to_string()),
    ];
    metrics::counter!(m::HTTP_REQUESTS, &labels).increment(1);
    metrics::histogram!(m::HTTP_DURATION, &labels).record(took.as_secs_f64());
}

async fn metrics_page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(m::CONTENT_TYPE)
        .body(m::render())
}

/// A running `lead-api`: its bound addresses and the handles to stop it.
pub struct RunningApi {
    pub public_addr: SocketAddr,
    pub internal_addr: SocketAddr,
    public: ServerHandle,
    internal: ServerHandle,
    tasks: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
    relay: tokio::task::JoinHandle<()>,
    listener: tokio::task::JoinHandle<()>,
    shutdown: tokio_util::sync::CancellationToken,
    stopping: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl RunningApi {
    /// Stops accepting, lets in-flight requests finish (graceful) and waits for both servers.
    pub async fn stop(self, graceful: bool) {
        // Not ready first: both /readyz answer 503 from here on, while the requests in flight
        // finish (within QUALIFIER_SHUTDOWN_GRACE_MS).
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.ready
            .store(false, std::sync::atomic::Ordering::Relaxed);
        tokio::join!(self.public.stop(graceful), self.internal.stop(graceful));
        for t in self.tasks {
            let _ = t.await;
        }
        // The relay stops after the servers, so events of the last requests still leave.
        self.shutdown.cancel();
        let _ = self.relay.await;
        self.listener.abort();
    }
}

/// Connects to the database, binds both listeners (port 0 picks a free port) and starts serving.
/// Transport settings that work but should not go unnoticed: one line each at start.
fn warn_about_transport(cfg: &ApiConfig) {
    if let Some(w) = cfg.brokers.transport_warning() {
        tracing::warn!("{w}");
    }
    // A database on this machine (`make run`'s) is reached over no network: not warned about.
    if !cfg.database.on_this_machine()
        && matches!(
            cfg.database.ssl_mode(),
            qualifier_store::SslMode::Disable
                | qualifier_store::SslMode::Prefer
                | qualifier_store::SslMode::Require
        )
    {
        tracing::warn!(sslmode = ?cfg.database.ssl_mode(), "DATABASE_URL does not check the server's certificate; production wants sslmode=verify-full with sslrootcert");
    }
}

/// The store, over its two pools: the main one, and a small one whose commits do not wait for
/// the WAL flush, for the rate limiter's buckets.
fn open_store(cfg: &ApiConfig) -> anyhow::Result<Store> {
    let database = match cfg.plan_cache_mode {
        Some(mode) => cfg.database.with_setting("plan_cache_mode", mode),
        None => cfg.database.clone(),
    };
    // Every statement under the timeout: no request waits on a slow database longer than it.
    let pool = qualifier_store::connect_with_timeout(
        &database,
        cfg.db_pool_size,
        cfg.statement_timeout,
        false,
    )
    .context("building the database pool")?;
    // Admission is one short statement per request: half the pool's size is plenty.
    let limiter = qualifier_store::connect_with_timeout(
        &database,
        (cfg.db_pool_size / 2).max(2),
        cfg.statement_timeout,
        true,
    )
    .context("building the rate-limit pool")?;
    Ok(Store::new(pool, cfg.secret_key.clone())
        .with_app_base_url(cfg.app_base_url.clone())
        .with_limiter_pool(limiter)
        .with_max_endpoints(cfg.max_endpoints_per_org)
        .with_event_retention(std::time::Duration::from_secs(
            u64::from(cfg.event_retention_days) * 86_400,
        )))
}

/// What runs beside the listeners: housekeeping, the LISTEN connection and the outbox relay.
struct Background {
    relay: tokio::task::JoinHandle<()>,
    listener: tokio::task::JoinHandle<()>,
    /// Wakes the relay: the `NOTIFY` listener and this process's lead writes.
    wake_relay: Arc<tokio::sync::Notify>,
    relay_status: Arc<crate::relay::RelayStatus>,
    tokens: Arc<crate::token_filter::TokenFilter>,
    strangers: Arc<tokio::sync::Semaphore>,
}

fn spawn_background(
    cfg: &ApiConfig,
    store: &Store,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Background {
    tokio::spawn(crate::housekeeping::reseal_legacy_secrets(store.clone()));
    let retention = std::time::Duration::from_secs(u64::from(cfg.event_retention_days) * 86_400);
    tokio::spawn(crate::housekeeping::run(
        store.clone(),
        retention,
        shutdown.clone(),
    ));
    tokio::spawn(crate::housekeeping::fold_chart(
        store.clone(),
        shutdown.clone(),
    ));
    tokio::spawn(crate::housekeeping::fill_deliveries(
        store.clone(),
        shutdown.clone(),
    ));
    let relay_status = Arc::new(crate::relay::RelayStatus::default());
    let strangers = crate::token_filter::stranger_lane();
    let tokens = Arc::new(crate::token_filter::TokenFilter::with_lane(
        strangers.clone(),
    ));
    let wake_relay = Arc::new(tokio::sync::Notify::new());
    let listener = tokio::spawn(crate::notifications::listen(
        cfg.database.clone(),
        store.clone(),
        tokens.clone(),
        wake_relay.clone(),
        shutdown.clone(),
    ));
    let relay = tokio::spawn(
        crate::relay::Relay {
            store: store.clone(),
            wake: wake_relay.clone(),
            brokers: cfg.brokers.clone(),
            topology: qualifier_bus::Topology::new(
                cfg.topology_prefix.clone(),
                cfg.retry_delays_ms.clone(),
            ),
            status: relay_status.clone(),
            bundle_max: cfg.relay_bundle_max,
        }
        .run(shutdown.clone()),
    );
    Background {
        relay,
        listener,
        wake_relay,
        relay_status,
        tokens,
        strangers,
    }
}

fn app_state(cfg: &ApiConfig, store: Store, bg: &Background) -> web::Data<AppState> {
    // The requests' lead writes wake this process's relay directly while it is connected.
    let status = bg.relay_status.clone();
    let store = store.with_local_relay(qualifier_store::LocalRelay {
        wake: bg.wake_relay.clone(),
        connected: Arc::new(move || {
            status
                .broker_ready
                .load(std::sync::atomic::Ordering::Acquire)
        }),
    });
    web::Data::from(Arc::new(AppState {
        admitter: AppState::admitter(&store, cfg.rate_limit_per_minute),
        lead_reader: AppState::lead_reader(&store),
        relay: bg.relay_status.clone(),
        store,
        rate_limit_per_minute: cfg.rate_limit_per_minute,
        replay_rate_per_second: cfg.replay_rate_per_second,
        internal_token_digest: AppState::new_internal_digest(&cfg.internal_token),
        egress: EgressPolicy::new(cfg.allow_cidrs.clone()),
        tokens: bg.tokens.clone(),
        console_base_url: std::sync::OnceLock::new(),
        cursors: crate::cursor::Cursors::new(&cfg.secret_key),
        credentials: crate::console::credentials::Credentials::new(&cfg.secret_key),
        max_page_bytes: cfg.max_page_bytes,
        strangers: bg.strangers.clone(),
        ready: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        stopping: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    }))
}

pub async fn start(cfg: ApiConfig) -> anyhow::Result<RunningApi> {
    m::install();
    m::zero_counter(m::RATE_LIMITED, &[]);
    m::zero_counter(m::OUTBOX_PUBLISHED, &[]);
    // TLS that cannot work (an untrusted certificate, no TLS under `require`) stops the start
    // with one line; a server that is down is waited for.
    cfg.database.check_at_start().await?;
    cfg.brokers.check_at_start("lead-api start check").await?;
    warn_about_transport(&cfg);
    let store = open_store(&cfg)?
        .with_payload_storage(cfg.compress_payloads)
        .await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let bg = spawn_background(&cfg, &store, &shutdown);
    let state = app_state(&cfg, store, &bg);
    let workers = cfg.http_workers;
    // actix takes whole seconds: a grace under one second is one second.
    let grace_secs = cfg.shutdown_grace.as_millis().div_ceil(1000).max(1) as u64;
    tokio::spawn(watch_readiness(state.clone(), shutdown.clone()));

    let st = state.clone();
    let frame_ancestors = cfg.console_frame_ancestors.clone();
    let public = HttpServer::new(move || {
        let frame_ancestors = frame_ancestors.clone();
        app!(
            st,
            move |cfg: &mut web::ServiceConfig| {
                crate::public::routes(cfg);
                crate::console::routes(cfg, &frame_ancestors);
            },
            readyz_cached
        )
    })
    .workers(workers)
    .disable_signals()
    .shutdown_timeout(grace_secs)
    .bind(cfg.http_addr)?;
    let public_addr = public.addrs()[0];
    let _ = state.console_base_url.set(console_base_url(
        cfg.console_base_url.as_deref(),
        public_addr,
    ));
    let public = public.run();

    let st = state.clone();
    let internal = HttpServer::new(move || {
        app!(
            st,
            |cfg: &mut web::ServiceConfig| {
                crate::internal::routes(cfg);
                cfg.route("/metrics", web::get().to(metrics_page));
            },
            readyz
        )
    })
    .workers(workers.min(2))
    .disable_signals()
    .shutdown_timeout(grace_secs)
    .bind(cfg.internal_addr)?;
    let internal_addr = internal.addrs()[0];
    let internal = internal.run();

    let (ph, ih) = (public.handle(), internal.handle());
    let tasks = vec![tokio::spawn(public), tokio::spawn(internal)];
    tracing::info!(%public_addr, %internal_addr, "lead-api listening");
    Ok(RunningApi {
        public_addr,
        internal_addr,
        public: ph,
        internal: ih,
        tasks,
        relay: bg.relay,
        listener: bg.listener,
        shutdown,
        stopping: state.stopping.clone(),
        ready: state.ready.clone(),
    })
}

/// `QUALIFIER_CONSOLE_BASE_URL`, or `http://` + the public listener's address, with `127.0.0.1`
/// in place of an all-addresses host (docs/console.md).
pub fn console_base_url(configured: Option<&str>, public: std::net::SocketAddr) -> String {
    if let Some(u) = configured {
        return u.trim_end_matches('/').to_owned();
    }
    let host = match public.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    format!("http://{host}:{}", public.port())
}

#[cfg(test)]
mod console_url_tests {
    use super::console_base_url;

    #[test]
    fn an_all_addresses_listener_becomes_loopback() {
        let a = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(console_base_url(None, a), "http://127.0.0.1:8080");
        let a = "10.1.2.3:9000".parse().unwrap();
        assert_eq!(console_base_url(None, a), "http://10.1.2.3:9000");
        assert_eq!(
            console_base_url(Some("https://app.example.com/"), a),
            "https://app.example.com"
        );
    }
}
