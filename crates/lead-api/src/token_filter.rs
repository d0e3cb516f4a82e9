//! Refusing unknown tokens without a database round trip.
//!
//! Every well-formed token used to cost one admission statement, on the small pool that serves
//! admission, so a flood of random tokens from anyone could starve real clients. Each `lead-api`
//! now keeps the fingerprints (first 8 bytes of the SHA-256) of every token that exists:
//! loaded when its LISTEN connection comes up, and kept current by the `qualifier_tokens`
//! notification that a new token sends at commit. A token whose fingerprint is
//! known goes to the database as before (revocation and the bucket live there). One that is not
//! known takes a narrow lane: at most [`MISS_LANE`] such lookups run at once, so a flood holds at
//! most that many connections, and a token created on another replica a moment ago, before its
//! notification arrived, still works. While the set is not known to be current (before the first
//! load, or with the LISTEN connection down), every token takes the normal path.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

/// Concurrent database lookups for everything unauthenticated: tokens the set does not know,
/// console cookies and sign-in tickets not yet looked up (docs/reliability.md, "Strangers, quotas and pages": together at most
/// 2 connections, whatever their number).
pub const MISS_LANE: usize = 2;

/// How long an unknown token waits for the lane before it is refused: longer than any
/// notification takes to arrive, so a real new token is never refused for being new.
const MISS_WAIT: Duration = Duration::from_secs(5);

/// The narrow lane itself: one per process, shared by the token filter and the console.
pub type StrangerLane = Arc<Semaphore>;

pub fn stranger_lane() -> StrangerLane {
    Arc::new(Semaphore::new(MISS_LANE))
}

/// A place in the lane, waiting at most [`MISS_WAIT`]; `Err` when it stayed full.
pub async fn enter(lane: &Semaphore) -> Result<SemaphorePermit<'_>, ()> {
    tokio::time::timeout(MISS_WAIT, lane.acquire())
        .await
        .map_err(|_| ())
        .and_then(|p| p.map_err(|_| ()))
}

pub struct TokenFilter {
    known: RwLock<HashSet<[u8; 8]>>,
    current: AtomicBool,
    misses: StrangerLane,
}

impl Default for TokenFilter {
    fn default() -> Self {
        TokenFilter::with_lane(stranger_lane())
    }
}

impl TokenFilter {
    /// A filter whose unknown tokens take `lane` (shared with the console's lookups).
    pub fn with_lane(lane: StrangerLane) -> Self {
        TokenFilter {
            known: RwLock::new(HashSet::new()),
            current: AtomicBool::new(false),
            misses: lane,
        }
    }
}

impl TokenFilter {
    /// The whole set, freshly read; from now on it is current.
    pub fn replace(&self, all: impl IntoIterator<Item = [u8; 8]>) {
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        *known = all.into_iter().collect();
        self.current.store(true, Ordering::SeqCst);
    }

    /// Notifications may have been missed (the LISTEN connection is down).
    pub fn mark_stale(&self) {
        self.current.store(false, Ordering::SeqCst);
    }

    pub fn add(&self, fingerprint: [u8; 8]) {
        self.known
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(fingerprint);
    }

    /// Adds the fingerprint a `qualifier_tokens` notification carries (16 hex digits).
    pub fn add_hex(&self, payload: &str) {
        let mut fp = [0u8; 8];
        if hex::decode_to_slice(payload.trim(), &mut fp).is_ok() {
            self.add(fp);
        }
    }

    /// `None`: the token may exist, go ahead. `Some(lane)`: unknown here; look it up holding
    /// the lane's permit, or refuse when `Err` (the lane stayed full).
    pub async fn check(&self, fingerprint: &[u8; 8]) -> Option<Result<SemaphorePermit<'_>, ()>> {
        if !self.current.load(Ordering::SeqCst)
            || self
                .known
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .contains(fingerprint)
        {
            return None;
        }
        Some(enter(&self.misses).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn until_loaded_everything_may_exist_then_only_known_fingerprints_do() {
        let f = TokenFilter::default();
        assert!(f.check(&[1; 8]).await.is_none(), "not loaded: normal path");
        f.replace([[1; 8]]);
        assert!(f.check(&[1; 8]).await.is_none());
        assert!(
            matches!(f.check(&[2; 8]).await, Some(Ok(_))),
            "unknown: the lane"
        );
        f.add_hex("0202020202020202");
        assert!(
            f.check(&[2; 8]).await.is_none(),
            "announced by a notification"
        );
        f.mark_stale();
        assert!(f.check(&[3; 8]).await.is_none(), "stale: normal path");
    }

    #[tokio::test]
    async fn the_lane_admits_a_bounded_number_at_once() {
        let f = TokenFilter::default();
        f.replace([]);
        let held: Vec<_> =
            futures_util::future::join_all((0..MISS_LANE).map(|_| f.check(&[9; 8]))).await;
        assert!(held.iter().all(|p| matches!(p, Some(Ok(_)))));
        assert_eq!(f.misses.available_permits(), 0);
    }
}
