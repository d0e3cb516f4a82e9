//! A bundle: several new deliveries of one org in one message (`qualifier_bus::bundle`). Each
//! part is an attempt of its own, exactly as a message of one delivery is ([`Worker::attempt`]);
//! the bundle is acked once every part's outcome is durable, and goes back to the queue
//! otherwise. Sent again, its parts that ended are dropped by their first read (their rows say
//! so), and the others are tried again under the same delivery ids.

use std::sync::Arc;

use qualifier_bus::Publisher;
use qualifier_bus::lapin::message::Delivery;
use qualifier_bus::lapin::options::BasicAckOptions;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{NotDurable, Worker, acknowledge};
use crate::sender::DeliveryJob;

/// What a bundle's parts share while they run.
pub(super) struct Parts {
    /// Parts under way at once, across every bundle of the process: the worker's concurrency,
    /// as the prefetch bounds messages of one delivery (a bundle is one message to the
    /// broker's prefetch, however many parts it holds).
    pub slots: Arc<Semaphore>,
    pub tracker: TaskTracker,
}

impl Worker {
    /// Runs a bundle's parts, each as it gets a slot, then acks it or sends it back.
    pub(super) async fn handle_bundle(
        self: Arc<Self>,
        publisher: Publisher,
        d: Delivery,
        parts: Arc<Parts>,
        shutdown: CancellationToken,
    ) {
        let jobs = match qualifier_bus::bundle::decode(&d.data) {
            Ok(p) => p,
            Err(e) => {
                // It will never become readable: drop it loudly, as an unreadable message.
                tracing::error!(error = %e, "unreadable bundle dropped");
                let _ = d.acker.ack(BasicAckOptions::default()).await;
                return;
            }
        };
        // Its parts' endpoints are siblings in one org: known as such before the first part
        // asks for a slot, so the org's last slot stays for one of them with none in flight.
        self.gate.know(jobs.iter().map(|p| p.meta.units()));
        let label = format!("bundle of {}", jobs.len());
        let mut running = Vec::with_capacity(jobs.len());
        let mut interrupted = false;
        for part in jobs {
            let slot = tokio::select! {
                s = parts.slots.clone().acquire_owned() => s.ok(),
                _ = shutdown.cancelled() => None,
            };
            let Some(slot) = slot else {
                // Stopping: the parts not started go back with the bundle.
                interrupted = true;
                break;
            };
            let job = DeliveryJob {
                meta: part.meta,
                body: part.body,
                probe: false,
            };
            let (w, p) = (self.clone(), publisher.clone());
            let redelivered = d.redelivered;
            running.push(parts.tracker.spawn(async move {
                let r = w.attempt(&p, &job, redelivered).await;
                drop(slot);
                r
            }));
        }
        let mut result = Ok(());
        for r in running {
            match r.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(e),
                Err(_) => result = Err(NotDurable::Interrupted),
            }
        }
        if interrupted && result.is_ok() {
            result = Err(NotDurable::Interrupted);
        }
        acknowledge(&d.acker, &label, result).await;
    }
}
