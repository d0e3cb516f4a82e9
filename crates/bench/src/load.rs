//! Load generation and the figures drawn from it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Percentile (nearest rank) of sorted values.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Rounds for the report (figures are read by people; three decimals are plenty).
pub fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[derive(Debug, Clone)]
pub struct Rate {
    pub ok: u64,
    pub errors: u64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Rate {
    pub fn json(&self) -> Value {
        json!({"requests": self.ok, "errors": self.errors, "per_s": r3(self.per_s),
               "p50_ms": r3(self.p50_ms), "p99_ms": r3(self.p99_ms)})
    }
}

/// `concurrency` tasks call `op(i)` back to back for `duration`; `op` answers whether the request
/// succeeded. Requests, errors, successes per second and latency percentiles of the successes.
pub async fn closed_loop<F, Fut>(concurrency: usize, duration: Duration, op: F) -> Rate
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (op, next, errors) = (op.clone(), next.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                if op(i).await {
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap_or_default());
    }
    let elapsed = started.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    Rate {
        ok: lat.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        per_s: lat.len() as f64 / elapsed,
        p50_ms: pct(&lat, 0.5),
        p99_ms: pct(&lat, 0.99),
    }
}

/// Runs `op(i)` for i in 0..n with at most `concurrency` at once, each started no earlier than
/// `i / rate` seconds after the start when a rate is given (an open-loop pace). Returns the
/// number of failed operations (each is retried until it succeeds, so every event is caused).
pub async fn run_n<F, Fut>(n: u64, concurrency: usize, rate: Option<f64>, op: F) -> u64
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (op, next, retries) = (op.clone(), next.clone(), retries.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return;
                }
                if let Some(r) = rate {
                    let due = started + Duration::from_secs_f64(i as f64 / r);
                    tokio::time::sleep_until(due.into()).await;
                }
                while !op(i).await {
                    retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    retries.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 0.5), 51.0);
        assert_eq!(pct(&v, 0.99), 99.0);
        assert_eq!(pct(&v, 1.0), 100.0);
        assert!(pct(&[], 0.5).is_nan());
    }

    #[tokio::test]
    async fn run_n_calls_every_index_once_and_retries_failures() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        let tries = Arc::new(AtomicU64::new(0));
        let t = tries.clone();
        let retried = run_n(20, 4, None, move |i| {
            let s = s.clone();
            let t = t.clone();
            async move {
                // Index 7 fails once, then succeeds.
                if i == 7 && t.fetch_add(1, Ordering::Relaxed) == 0 {
                    return false;
                }
                s.lock().unwrap().push(i);
                true
            }
        })
        .await;
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert_eq!(retried, 1);
    }
}
