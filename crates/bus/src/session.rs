//! The one connection loop every broker client runs: the relay's publisher (`lead-api`) and the
//! delivery worker's consumer (`webhook-delivery`) alike.
//!
//! Connect to the next node of the round, set up what the client needs on it within the setup
//! timeout (a node that takes the connection and then stalls must not hold the process), run
//! until the client wants a new connection or the process stops, close, wait with a jittered
//! back-off after a failure, again. While a session runs, `ready` is true (the broker half of
//! `/readyz`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lapin::Connection;
use tokio_util::sync::CancellationToken;

use crate::{Brokers, BusError, Rotation, reconnect_backoff, within_setup_timeout};

/// A client of the broker: what it sets up on a new connection and what it does on it.
pub trait Session: Sync {
    /// What the set-up hands to the session (channels, a consumer).
    type Ready: Send;

    /// Declares the topology and opens what the session needs. Bounded by the setup timeout.
    fn set_up(
        &self,
        conn: &Connection,
    ) -> impl Future<Output = Result<Self::Ready, BusError>> + Send;

    /// Works on the connection until it is lost, the client wants a new one, or `shutdown`
    /// (then it finishes what it must before the connection closes).
    fn run(
        &self,
        conn: &Connection,
        ready: Self::Ready,
        shutdown: &CancellationToken,
    ) -> impl Future<Output = ()> + Send;
}

/// Keeps `session` connected through `brokers` until `shutdown`. `name` names the connection
/// in the broker's management view and in the logs.
pub async fn keep_connected<S: Session>(
    brokers: &Brokers,
    name: &str,
    session: &S,
    ready: &AtomicBool,
    shutdown: &CancellationToken,
) {
    let mut backoff = reconnect_backoff();
    let mut rotation = Rotation::default();
    while !shutdown.is_cancelled() {
        let connected = async {
            let conn = brokers.connect(name, &mut rotation).await?;
            let set_up = within_setup_timeout("setting up", session.set_up(&conn)).await?;
            Ok::<_, BusError>((conn, set_up))
        }
        .await;
        let (conn, set_up) = match connected {
            Ok(c) => c,
            Err(e) => {
                let wait = backoff.next().unwrap_or(Duration::from_secs(10));
                tracing::warn!(connection = name, error = %e, wait_ms = wait.as_millis() as u64, "cannot reach RabbitMQ; retrying");
                ready.store(false, Ordering::Relaxed);
                tokio::select! { _ = tokio::time::sleep(wait) => {}, _ = shutdown.cancelled() => {} }
                continue;
            }
        };
        backoff = reconnect_backoff();
        ready.store(true, Ordering::Relaxed);
        session.run(&conn, set_up, shutdown).await;
        ready.store(false, Ordering::Relaxed);
        let _ = conn.close(200, "bye".into()).await;
    }
}
