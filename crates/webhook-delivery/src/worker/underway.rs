//! The deliveries with an attempt under way in this process. Two copies of one delivery's
//! message can be in a process at once (a duplicate a broker's restart made, a bundle put back
//! while its part still runs); each reads the delivery's row before it sends, but a copy that
//! read it while the other's request was out would send again after the other's answer (a
//! receiver's 429 and its `Retry-After` unread). So a copy waits for the other's attempt to end,
//! then reads the row, which says whether it is due.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use uuid::Uuid;

#[derive(Default)]
pub(crate) struct Underway {
    ids: Mutex<HashMap<Uuid, Arc<Notify>>>,
}

/// One delivery's attempt under way; its end wakes a copy waiting for it.
pub(crate) struct Turn<'a> {
    underway: &'a Underway,
    id: Uuid,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let ended = self.underway.ids().remove(&self.id);
        if let Some(n) = ended {
            n.notify_waiters();
        }
    }
}

impl Underway {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Notify>>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The delivery's turn, once no other copy of it is under way here.
    pub(crate) async fn enter(&self, id: Uuid) -> Turn<'_> {
        loop {
            let other = {
                let mut ids = self.ids();
                match ids.get(&id) {
                    Some(n) => n.clone(),
                    None => {
                        ids.insert(id, Arc::new(Notify::new()));
                        return Turn { underway: self, id };
                    }
                }
            };
            // Registered before looking again, so an end between the two still wakes it.
            let ended = other.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.ids().get(&id).is_some_and(|n| Arc::ptr_eq(n, &other)) {
                ended.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_copy_waits_for_the_other_copys_attempt_and_others_do_not() {
        let u = Arc::new(Underway::default());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = u.enter(a).await;
        let _other = tokio::time::timeout(Duration::from_secs(1), u.enter(b))
            .await
            .expect("another delivery goes at once");
        let waiting = {
            let u = u.clone();
            tokio::spawn(async move {
                let _t = u.enter(a).await;
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
}
