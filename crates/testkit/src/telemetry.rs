//! What the services log and trace during a test, kept in memory so tests can assert on it:
//! every log line (as JSON, at debug level, whatever `RUST_LOG` says for the console) and every
//! finished OpenTelemetry span. One subscriber per test binary; tests filter by the ids they own.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static SPANS: OnceLock<InMemorySpanExporter> = OnceLock::new();

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Console logs at `RUST_LOG` (default `warn`), the in-memory capture, and the span exporter;
/// once per test binary.
pub fn init() {
    SPANS.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let console = tracing_subscriber::fmt::layer()
            .with_test_writer()
            .with_filter(EnvFilter::new(
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            ));
        // Debug for everything except the wire-level chatter of the broker and TLS clients,
        // which would only make the buffer large: headers and bodies never reach those levels.
        let capture = tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(|| Capture)
            .with_filter(EnvFilter::new(
                "debug,lapin=info,amq_protocol=info,pinky_swear=info,rustls=info,h2=info",
            ));
        let _ = Registry::default()
            .with(console)
            .with(capture)
            .with(qualifier_telemetry::otel_layer(&provider, "qualifier-test"))
            .try_init();
        // The provider must outlive every test; it is never shut down.
        std::mem::forget(provider);
        exporter
    });
}

/// Everything logged so far in this test binary.
pub fn captured_logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

/// Finished spans named `name` in trace `trace_id`, waiting up to `within` for at least one.
pub async fn wait_for_spans(name: &str, trace_id: &str, within: Duration) -> Vec<SpanData> {
    let deadline = Instant::now() + within;
    loop {
        let found: Vec<SpanData> = SPANS
            .get()
            .and_then(|e| e.get_finished_spans().ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.name == name && s.span_context.trace_id().to_string() == trace_id)
            .collect();
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The sum of every sample of `name` in a Prometheus text page whose labels include all of
/// `labels` (0 when there is none).
pub fn metric(page: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            (metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\""))))
            .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn metric_sums_matching_series() {
        let page =
            "# TYPE a counter\na{outcome=\"x\",b=\"1\"} 2\na{outcome=\"y\"} 5\na_sum 9\nab 1\n";
        assert_eq!(super::metric(page, "a", &[("outcome", "x")]), 2.0);
        assert_eq!(super::metric(page, "a", &[]), 7.0);
        assert_eq!(super::metric(page, "a_sum", &[]), 9.0);
        assert_eq!(super::metric(page, "missing", &[]), 0.0);
    }
}
