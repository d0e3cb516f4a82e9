//! Qualifier's PostgreSQL layer, shared by `lead-api`, `webhook-delivery` and `qualifierctl`:
//! the diesel schema, the connection pool, embedded migrations, sealed secrets and every
//! transaction that changes a lead together with the outbox rows it emits.

pub mod answer;
pub mod batch;
pub mod console;
pub mod deliveries;
pub mod endpoint_secrets;
pub mod endpoints;
pub mod erasure;
pub mod error;
pub mod facets;
pub mod feed;
pub mod filters;
pub mod handoffs;
pub mod health;
pub mod idempotency;
pub mod leads;
pub mod orgs;
pub mod outbox;
pub mod pacing;
pub mod partitions;
pub mod payload;
mod pg_messages;
pub mod pgconn;
pub mod planner;
pub mod pool;
pub mod prepared;
pub mod receivers;
pub mod schema;
pub mod secrets;
pub mod test_events;
pub mod tokens;
pub mod tx;
pub mod webhooks;

pub use error::{BoxError, StoreError, cause_chain};
pub use facets::{Console, Deliveries, Endpoints, Leads, Upkeep};
pub use pgconn::{Database, SslMode, StartError, UrlError};
pub use pool::{
    DbPool, MIGRATIONS_DIGEST, MigrationError, PoolError, connect, connect_generic_plans,
    connect_relaxed, connect_with_timeout, run_migrations,
};
pub use secrets::SecretKey;

use crate::answer::ReadToEnd;

/// Per id of `ids`, in their order, whether it is among `yes` (a batch statement's answer, which
/// returns rows in no set order and only for the ids it found).
pub(crate) fn answers_in_order(
    ids: &[uuid::Uuid],
    yes: impl IntoIterator<Item = uuid::Uuid>,
) -> Vec<bool> {
    let yes: std::collections::HashSet<uuid::Uuid> = yes.into_iter().collect();
    ids.iter().map(|id| yes.contains(id)).collect()
}

/// `QUALIFIER_APP_BASE_URL`'s default (docs/operations.md, "Configuration").
pub const DEFAULT_APP_BASE_URL: &str = "https://app.qualifier.local";

/// What every store operation needs: the pool and the key that seals webhook secrets; lead
/// snapshots also need the app base URL for `conversation_url`.
#[derive(Clone)]
pub struct Store {
    pub pool: DbPool,
    /// Sessions with `synchronous_commit = off`, for the rate-limit buckets only (see
    /// [`connect_relaxed`]); the main pool when not set.
    pub limiter_pool: Option<DbPool>,
    /// Only the processes that build lead snapshots (`lead-api`, `qualifierctl`) set it;
    /// `webhook-delivery` sends stored bytes and never needs it.
    pub app_base_url: String,
    pub secret_key: SecretKey,
    /// Whether new outbox rows are stored compact (`QUALIFIER_PAYLOAD_STORAGE=compressed`):
    /// envelopes compressed ([`payload`]) and attempt entries with short keys
    /// (`AttemptEntry::stored`). Every reader accepts both forms whatever it says.
    pub compress_payloads: bool,
    /// How long events are kept (`QUALIFIER_EVENT_RETENTION_DAYS`, lead-api): a delivery whose
    /// event is older cannot be replayed. `None`: no such limit (tools and tests).
    pub event_retention: Option<std::time::Duration>,
    /// The most endpoints one org may have (`QUALIFIER_MAX_ENDPOINTS_PER_ORG`, lead-api).
    pub max_endpoints: usize,
    /// The outbox relay of this process (lead-api), which a lead's write wakes directly.
    pub local_relay: Option<LocalRelay>,
    /// The throttle changes whose waiting deliveries are being re-timed in this process
    /// ([`pacing::Retimer`]).
    pub retimer: std::sync::Arc<pacing::Retimer>,
}

/// The outbox relay running in this process. While it is connected to the broker, a lead's
/// write wakes it after the commit instead of sending `NOTIFY` in it: a notifying commit holds
/// PostgreSQL's lock on the notification queue through its WAL flush, so notifying writes
/// commit one at a time (under the bench's load, the lead's writes spent most of their time
/// waiting for that lock; docs/performance-log.md, "The relay woken in-process"). The relay this
/// wakes publishes the write's events; the other replicas' relays, which the `NOTIFY` also
/// woke, find nothing of it to do, and still poll every second. A process whose relay is not
/// connected notifies, so that another replica's relay publishes at once.
#[derive(Clone)]
pub struct LocalRelay {
    pub wake: std::sync::Arc<tokio::sync::Notify>,
    /// Whether the relay is connected to the broker now.
    pub connected: std::sync::Arc<dyn Fn() -> bool + Send + Sync>,
}

impl LocalRelay {
    /// Wakes `relay` (the one [`Store::connected_relay`] gave) once a write committed.
    pub(crate) fn wake_after(relay: Option<&LocalRelay>, written: bool) {
        if let Some(r) = relay.filter(|_| written) {
            r.wake.notify_one();
        }
    }
}

/// [`Store::max_endpoints`] unless set (docs/api.md, "Endpoints").
pub const DEFAULT_MAX_ENDPOINTS_PER_ORG: usize = 10;

impl Store {
    /// This store's writes wake `relay`, this process's outbox relay ([`LocalRelay`]).
    pub fn with_local_relay(mut self, relay: LocalRelay) -> Self {
        self.local_relay = Some(relay);
        self
    }

    /// This process's relay when it is connected: a write then wakes it rather than notify.
    pub(crate) fn connected_relay(&self) -> Option<&LocalRelay> {
        self.local_relay.as_ref().filter(|r| (r.connected)())
    }

    pub fn new(pool: DbPool, secret_key: SecretKey) -> Self {
        Store {
            pool,
            limiter_pool: None,
            app_base_url: DEFAULT_APP_BASE_URL.to_owned(),
            secret_key,
            compress_payloads: false,
            local_relay: None,
            event_retention: None,
            max_endpoints: DEFAULT_MAX_ENDPOINTS_PER_ORG,
            retimer: Default::default(),
        }
    }

    /// At most `n` endpoints per org (at least one: the `webhook` routes' own).
    pub fn with_max_endpoints(mut self, n: usize) -> Self {
        self.max_endpoints = n.max(1);
        self
    }

    /// Refuses replays of deliveries whose event is older than `keep` (409 `Event expired`):
    /// retention removes such events whatever their state, so a replay could not keep them.
    pub fn with_event_retention(mut self, keep: std::time::Duration) -> Self {
        self.event_retention = Some(keep);
        self
    }

    /// Stores new envelopes compressed ([`payload`]) and new attempt entries with short keys.
    pub fn with_payload_compression(mut self, on: bool) -> Self {
        self.compress_payloads = on;
        self
    }

    /// `QUALIFIER_PAYLOAD_STORAGE`: `Some` as set, `None` (`auto`) as this database says
    /// ([`Self::compact_by_default`]). A database that cannot answer now gets plain storage,
    /// which every version reads; the form is chosen once, at the start.
    pub async fn with_payload_storage(self, setting: Option<bool>) -> Self {
        let on = match setting {
            Some(on) => on,
            None => self.compact_by_default().await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read this database's storage form; storing new outbox rows plain");
                false
            }),
        };
        tracing::info!(
            compact = on,
            auto = setting.is_none(),
            "new outbox rows are stored {}",
            if on { "compact" } else { "plain" }
        );
        self.with_payload_compression(on)
    }

    /// The base of `conversation_url` in lead snapshots (`QUALIFIER_APP_BASE_URL`).
    pub fn with_app_base_url(mut self, url: impl Into<String>) -> Self {
        self.app_base_url = url.into();
        self
    }

    /// Uses `pool` (see [`connect_relaxed`]) for rate-limit admission.
    pub fn with_limiter_pool(mut self, pool: DbPool) -> Self {
        self.limiter_pool = Some(pool);
        self
    }

    pub(crate) async fn conn(&self) -> Result<pool::DbConn, StoreError> {
        self.pool.get().await.map_err(StoreError::from_pool)
    }

    /// Whether `QUALIFIER_PAYLOAD_STORAGE=auto` means compact storage on this database: only
    /// if `run_migrations` created it (migrations/2026-11-27-000031_storage_format/up.sql).
    /// A database whose migrations are not applied yet (a service started before
    /// `qualifierctl migrate`) has no answer, which is `false`: plain storage is read by every
    /// version.
    pub async fn compact_by_default(&self) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        // The table is named only once it is known to exist: a statement naming a missing
        // table fails at parse, whatever its `COALESCE`.
        let known: bool = diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(
            "to_regclass('storage_format') IS NOT NULL",
        ))
        .one(&mut conn)
        .await?;
        if !known {
            return Ok(false);
        }
        Ok(diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(
            "COALESCE((SELECT compact_by_default FROM storage_format WHERE id), false)",
        ))
        .one(&mut conn)
        .await?)
    }

    /// `SELECT 1` through the pool: the database half of `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        use diesel_async::RunQueryDsl;
        let mut conn = self.conn().await?;
        diesel::sql_query("SELECT 1").execute(&mut conn).await?;
        Ok(())
    }
}
