//! The deliveries with an attempt under way in this process. Two copies of one delivery's
//! message can be in a process at once (a duplicate a broker's restart made, a bundle put back
//! while its part still runs); each reads the delivery's row before it sends, but a copy that
//! read it while the other's request was out would send again after the other's answer (a
//! receiver's 429 and its `Retry-After` unread). So a copy waits for the other's attempt to end,
//! then reads the row, which says whether it is due.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use uuid::Uuid;

#[derive(Default)]
pub(crate) struct Underway {
    ids: Mutex<HashMap<Uuid, Arc<Notify>>>,
}

/// One delivery's attempt under way; its end wakes a copy waiting for it. `None` inside: a
/// copy that waited its longest and goes on beside the other (which keeps the entry).
pub(crate) struct Turn<'a> {
    underway: &'a Underway,
    id: Option<Uuid>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let ended = self.underway.ids().remove(&id);
        if let Some(n) = ended {
            n.notify_waiters();
        }
    }
}

impl Underway {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Notify>>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The delivery's turn, once no other copy of it is under way here, or once `at_most` has
    /// passed: an attempt that never ends (a publish that hangs on a broker gone away) must
    /// not hold its copies, and the prefetch slots they take, for ever. Past its wait a copy
    /// goes on and reads the row like any message.
    pub(crate) async fn enter(&self, id: Uuid, at_most: Duration) -> Turn<'_> {
        let deadline = tokio::time::Instant::now() + at_most;
        loop {
            let other = {
                let mut ids = self.ids();
                match ids.get(&id) {
                    Some(n) => n.clone(),
                    None => {
                        ids.insert(id, Arc::new(Notify::new()));
                        return Turn {
                            underway: self,
                            id: Some(id),
                        };
                    }
                }
            };
            // Registered before looking again, so an end between the two still wakes it.
            let ended = other.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.ids().get(&id).is_some_and(|n| Arc::ptr_eq(n, &other)) {
                tokio::select! {
                    _ = &mut ended => {}
                    _ = tokio::time::sleep_until(deadline) => {
                        return Turn { underway: self, id: None };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_copy_waits_for_the_other_copys_attempt_and_others_do_not() {
        let u = Arc::new(Underway::default());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = u.enter(a, LONG).await;
        let _other = tokio::time::timeout(Duration::from_secs(1), u.enter(b, LONG))
            .await
            .expect("another delivery goes at once");
        let waiting = {
            let u = u.clone();
            tokio::spawn(async move {
                let _t = u.enter(a, LONG).await;
            })
        };
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "the copy waits");
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("and goes once the attempt ended")
            .unwrap();
    }

    #[tokio::test]
    async fn a_copy_goes_on_after_its_longest_wait() {
        let u = Underway::default();
        let id = Uuid::new_v4();
        let _stuck = u.enter(id, LONG).await;
        let started = std::time::Instant::now();
        let copy = u.enter(id, Duration::from_millis(50)).await;
        assert!(started.elapsed() >= Duration::from_millis(50));
        drop(copy);
        assert!(u.ids().contains_key(&id), "the other keeps its entry");
    }
}
