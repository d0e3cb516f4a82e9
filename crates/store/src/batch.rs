//! Micro-batching of database round trips (group commit without a timer).
//!
//! The delivery worker reads each attempt's context and records its outcome; the API admits
//! each request against its token's rate-limit bucket and reads leads. One statement per call
//! made PostgreSQL's per-statement work (parse, plan, commit) the bottleneck
//! (docs/performance.md). Here, calls that arrive while a round trip is in flight queue up and
//! go together in the next one: no timer, so an idle system pays no latency, and a busy one gets
//! bigger batches. A caller gets its answer only after its batch's statement returned, so "ack
//! only after the outcome is durable" still holds per message.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc, oneshot};

type Reply<R> = oneshot::Sender<Result<R, BatchError>>;

/// Why a batched call has no answer. Cloneable: one failed round trip fails every call in it,
/// and each caller gets the same cause.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BatchError {
    #[error("batched round trip failed")]
    RoundTrip(#[source] Arc<dyn std::error::Error + Send + Sync + 'static>),
    #[error("batch answered {got} results for {asked} items")]
    WrongCount { asked: usize, got: usize },
    #[error("batcher stopped")]
    Stopped,
}

pub struct Batcher<T, R> {
    tx: mpsc::UnboundedSender<(T, Reply<R>)>,
}

impl<T: Send + 'static, R: Send + 'static> Batcher<T, R> {
    /// `flushers` tasks each take up to `max` queued items and pass them to `flush`, which must
    /// answer one result per item, in order. Must be called inside a Tokio runtime; the tasks
    /// end when the batcher is dropped.
    pub fn spawn<F, Fut, E>(max: usize, flushers: usize, flush: F) -> Self
    where
        F: Fn(Vec<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<R>, E>> + Send,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::spawn_lingering(max, flushers, Duration::ZERO, flush)
    }

    /// [`Batcher::spawn`], with each batch gathered for `linger` after its first item: for
    /// writes that come one at a time and whose callers can wait that long, so that what came
    /// meanwhile goes in one round trip (a failing endpoint's health steps, which arrive with
    /// each of its failed attempts, never together).
    pub fn spawn_lingering<F, Fut, E>(
        max: usize,
        flushers: usize,
        linger: Duration,
        flush: F,
    ) -> Self
    where
        F: Fn(Vec<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<R>, E>> + Send,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel::<(T, Reply<R>)>();
        let rx = Arc::new(Mutex::new(rx));
        let flush = Arc::new(flush);
        for _ in 0..flushers.max(1) {
            let (rx, flush) = (rx.clone(), flush.clone());
            tokio::spawn(async move {
                loop {
                    let mut batch = Vec::new();
                    {
                        let mut rx = rx.lock().await;
                        match rx.recv().await {
                            Some(item) => batch.push(item),
                            None => return,
                        }
                        if !linger.is_zero() {
                            tokio::time::sleep(linger).await;
                        }
                        while batch.len() < max {
                            match rx.try_recv() {
                                Ok(item) => batch.push(item),
                                Err(_) => break,
                            }
                        }
                    }
                    let (items, replies): (Vec<T>, Vec<Reply<R>>) = batch.into_iter().unzip();
                    let n = items.len();
                    match flush(items).await {
                        Ok(results) if results.len() == n => {
                            for (r, reply) in results.into_iter().zip(replies) {
                                let _ = reply.send(Ok(r));
                            }
                        }
                        Ok(results) => {
                            let e = BatchError::WrongCount {
                                asked: n,
                                got: results.len(),
                            };
                            for reply in replies {
                                let _ = reply.send(Err(e.clone()));
                            }
                        }
                        Err(e) => {
                            let e = BatchError::RoundTrip(Arc::new(e));
                            for reply in replies {
                                let _ = reply.send(Err(e.clone()));
                            }
                        }
                    }
                }
            });
        }
        Batcher { tx }
    }

    /// Queues `item` and waits for its batch's answer.
    pub async fn call(&self, item: T) -> Result<R, BatchError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send((item, tx)).map_err(|_| BatchError::Stopped)?;
        rx.await.map_err(|_| BatchError::Stopped)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn concurrent_calls_share_round_trips_and_each_gets_its_own_answer() {
        let flushes = Arc::new(AtomicUsize::new(0));
        let f = flushes.clone();
        let b = Arc::new(Batcher::spawn(64, 1, move |items: Vec<u32>| {
            let f = f.clone();
            async move {
                f.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                Ok::<_, std::io::Error>(items.into_iter().map(|i| i * 10).collect())
            }
        }));
        let calls: Vec<_> = (0..200u32)
            .map(|i| {
                let b = b.clone();
                tokio::spawn(async move { (i, b.call(i).await) })
            })
            .collect();
        for c in calls {
            let (i, r) = c.await.unwrap();
            assert_eq!(r.unwrap(), i * 10);
        }
        let n = flushes.load(Ordering::Relaxed);
        assert!(n < 50, "200 concurrent calls took {n} round trips");
    }

    #[tokio::test]
    async fn a_lingering_batch_takes_the_calls_that_come_one_at_a_time_while_it_gathers() {
        let flushes = Arc::new(AtomicUsize::new(0));
        let f = flushes.clone();
        let b = Arc::new(Batcher::spawn_lingering(
            64,
            1,
            std::time::Duration::from_millis(200),
            move |items: Vec<u32>| {
                let f = f.clone();
                async move {
                    f.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, std::io::Error>(items)
                }
            },
        ));
        // Ten calls 5 ms apart, each alone: a batcher without a linger flushes each by itself.
        let mut calls = Vec::new();
        for i in 0..10u32 {
            let b = b.clone();
            calls.push(tokio::spawn(async move { b.call(i).await }));
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        for (i, c) in calls.into_iter().enumerate() {
            assert_eq!(c.await.unwrap().unwrap(), i as u32);
        }
        assert_eq!(
            flushes.load(Ordering::Relaxed),
            1,
            "one round trip for the ten"
        );
    }

    #[tokio::test]
    async fn a_failed_round_trip_fails_every_call_in_it() {
        let b: Batcher<u32, u32> = Batcher::spawn(8, 1, |_items| async {
            Err(std::io::Error::other("db down"))
        });
        let err = b.call(1).await.unwrap_err();
        let cause = std::error::Error::source(&err).map(|c| c.to_string());
        assert_eq!(cause.as_deref(), Some("db down"));
    }
}
