//! Logs, traces and metrics for both services.
//!
//! - Logs: `tracing` with JSON lines (or pretty) on stdout. Spans carry `request_id`, `org_id`,
//!   `lead_id`, `event_id` and `delivery_id` where they apply, and the JSON formatter prints the
//!   fields of every open span, so each line says which request or delivery it belongs to.
//! - Traces: every span also becomes an OpenTelemetry span. They are exported over OTLP/gRPC only
//!   when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, but trace ids exist either way, because the W3C
//!   `traceparent` of the API request is stored on the outbox row, carried in the AMQP headers
//!   and becomes the parent of the delivery attempt's span: one trace covers a PATCH and the
//!   webhook it caused.
//! - Metrics: a process-wide Prometheus recorder ([`metrics`]).
//!
//! Nothing here ever records a header value or a request body, which is how tokens and signing
//! secrets stay out of the logs (a test in each service's suite checks the captured output).

pub mod metrics;

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use qualifier_config::{EnvError, TelemetryArgs, value};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The W3C header (and AMQP header) name of the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// Keeps the tracer provider alive; [`Telemetry::shutdown`] flushes spans still buffered.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    pub fn shutdown(self) {
        let _ = self.provider.shutdown();
    }
}

/// The OpenTelemetry layer for a subscriber built on [`Registry`]: spans of `provider`'s tracer,
/// for the spans and events at `INFO` and above.
///
/// The level is the layer's own filter. Unfiltered, the layer asked for every span and event of
/// every crate, which enabled the `debug!` and `trace!` call sites of the libraries on the event
/// path (the AMQP client, the PostgreSQL driver, HTTP and TLS) whatever `RUST_LOG` said: each
/// was built, formatted and added to the open span as an OpenTelemetry event, then thrown away
/// with the span when no collector was set (docs/performance-log.md, "What the figures rest on").
/// The project's own spans are all `INFO`.
pub fn otel_layer<S>(provider: &SdkTracerProvider, service: &'static str) -> impl Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(service))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
}

fn provider(service: &'static str, args: &TelemetryArgs) -> Result<SdkTracerProvider, EnvError> {
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    // With no endpoint there is no exporter at all: spans still get ids (which propagate) but
    // cost no I/O, and shutdown never waits for a collector that is not there.
    // The exporter reads the endpoint from the environment itself; clap read the same variable.
    if qualifier_config::optional(&args.otel_exporter_otlp_endpoint).is_some() {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()
            .map_err(|e| {
                EnvError::new("OTEL_EXPORTER_OTLP_ENDPOINT", format!("is unusable: {e}"))
            })?;
        builder = builder.with_batch_exporter(exporter);
    }
    Ok(builder.build())
}

/// What is logged when `RUST_LOG` is unset: `info`, but for lapin's channel bookkeeping.
/// lapin logs `ERROR lapin::channels: Connection error` whenever a connection ends with a
/// channel still closing, which every clean shutdown does (a channel dropped at the end of a
/// session queues its close, and the connection's close then finds it closing). Every real
/// loss of the broker is logged by the bus itself (`qualifier_bus`: the node, the error and
/// the wait before it reconnects), so that line only ever repeats one or cries wolf.
pub const DEFAULT_LOG: &str = "info,lapin::channels=off";

/// Logging and tracing from the environment: `RUST_LOG` (default [`DEFAULT_LOG`]),
/// `QUALIFIER_LOG_FORMAT` (`json` default, or `pretty`) and `OTEL_EXPORTER_OTLP_ENDPOINT`. Call
/// inside the runtime.
pub fn init(service: &'static str, args: &TelemetryArgs) -> Result<Telemetry, EnvError> {
    let filter = EnvFilter::try_new(value(&args.rust_log, DEFAULT_LOG))
        .map_err(|e| EnvError::new("RUST_LOG", format!("is malformed: {e}")))?;
    let provider = provider(service, args)?;
    let fmt = tracing_subscriber::fmt::layer().with_target(true);
    let fmt = match value(&args.log_format, "json") {
        "json" => fmt
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
        "pretty" => fmt.boxed(),
        other => {
            return Err(EnvError::new(
                "QUALIFIER_LOG_FORMAT",
                format!("must be json or pretty, got {other:?}"),
            ));
        }
    };
    Registry::default()
        .with(fmt.with_filter(filter))
        .with(otel_layer(&provider, service))
        .try_init()
        .map_err(|e| EnvError::new("RUST_LOG", format!("logging already set up: {e}")))?;
    Ok(Telemetry { provider })
}

/// The start of every service binary: parses its arguments and environment with clap (which
/// answers `--help` from the same declarations), validates the configuration and sets up
/// telemetry; a configuration error ends the process with its one line and exit code 2.
pub fn service_start<A, C>(
    service: &'static str,
    read: impl FnOnce(&A) -> Result<C, EnvError>,
) -> (C, Telemetry)
where
    A: clap::Parser + AsRef<TelemetryArgs>,
{
    let args = A::parse();
    match read(&args).and_then(|c| init(service, args.as_ref()).map(|t| (c, t))) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}

/// The `traceparent` of the current span, if tracing is on and the span is sampled.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// Makes the remote context in `traceparent` the parent of `span` (which must not have been
/// entered yet). A missing or malformed value leaves the span as the root of a new trace.
pub fn set_remote_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(tp) = traceparent else { return };
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), tp.to_owned())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    use opentelemetry::trace::TraceContextExt as _;
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// The trace id (32 lowercase hex digits) of `span`, for log lines and tests.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::trace::InMemorySpanExporter;

    #[test]
    fn an_unset_rust_log_is_the_default_filter() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            t: TelemetryArgs,
        }
        let cli = <Cli as clap::Parser>::try_parse_from(["service"]).unwrap();
        if std::env::var_os("RUST_LOG").is_none() {
            assert_eq!(cli.t.rust_log, DEFAULT_LOG);
        }
        assert!(EnvFilter::try_new(DEFAULT_LOG).is_ok());
    }

    /// A subscriber with only the trace layer, the exporter that keeps what it finished, and
    /// the provider, which must outlive the test's spans (dropped, it shuts the exporter).
    fn traced() -> (
        InMemorySpanExporter,
        SdkTracerProvider,
        impl tracing::Subscriber,
    ) {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = Registry::default().with(otel_layer(&provider, "test"));
        (exporter, provider, subscriber)
    }

    #[test]
    fn a_remote_parent_puts_the_span_in_the_callers_trace() {
        let (exporter, _provider, subscriber) = traced();
        tracing::subscriber::with_default(subscriber, || {
            let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            let span = tracing::info_span!("child");
            set_remote_parent(&span, Some(tp));
            let inner = span.in_scope(current_traceparent).expect("a traceparent");
            assert!(
                inner.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
                "{inner}"
            );
            assert!(
                !inner.contains("00f067aa0ba902b7"),
                "a span of its own: {inner}"
            );
            drop(span);

            // Garbage is ignored: a new trace starts.
            let span = tracing::info_span!("root");
            set_remote_parent(&span, Some("00-zz-yy-01"));
            let id = trace_id(&span).expect("sampled");
            assert_ne!(id, "4bf92f3577b34da6a3ce929d0e0e4736");
        });
        let spans = exporter.get_finished_spans().unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(
            spans[0].span_context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
    }

    #[test]
    fn libraries_debug_and_trace_call_sites_stay_off_for_the_trace_layer() {
        let (exporter, _provider, subscriber) = traced();
        tracing::subscriber::with_default(subscriber, || {
            // What a library's `debug!` and `trace!` check first: off, so they cost nothing.
            assert!(!tracing::enabled!(tracing::Level::DEBUG));
            assert!(tracing::enabled!(tracing::Level::INFO));
            let span = tracing::info_span!("delivery.attempt");
            span.in_scope(|| {
                let _frame = tracing::debug_span!("frame").entered();
                tracing::trace!(bytes = 42, "frame written");
                tracing::info!("attempt sent");
            });
        });
        let spans = exporter.get_finished_spans().unwrap();
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
        assert_eq!(names, ["delivery.attempt"]);
        let events: Vec<&str> = spans[0].events.iter().map(|e| e.name.as_ref()).collect();
        assert_eq!(events, ["attempt sent"]);
    }

    #[test]
    fn without_tracing_there_is_no_traceparent() {
        assert_eq!(current_traceparent(), None);
    }
}
