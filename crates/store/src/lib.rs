//! Qualifier's PostgreSQL layer, shared by `lead-api`, `webhook-delivery` and `qualifierctl`:
//! the diesel schema, the connection pool, embedded migrations, sealed secrets and every
//! transaction that changes a lead together with the outbox rows it emits.

pub mod deliveries;
pub mod error;
pub mod handoffs;
pub mod leads;
pub mod orgs;
pub mod outbox;
pub mod pool;
pub mod schema;
pub mod secrets;
pub mod tokens;
pub mod webhooks;

pub use error::StoreError;
pub use pool::{DbPool, connect, connect_relaxed, run_migrations};
pub use secrets::SecretKey;

/// What every store operation needs: the pool, the app base URL for `conversation_url` in
/// snapshots, and the key that seals webhook secrets.
#[derive(Clone)]
pub struct Store {
    pub pool: DbPool,
    /// Sessions with `synchronous_commit = off`, for the rate-limit buckets only (see
    /// [`connect_relaxed`]); the main pool when not set.
    pub limiter_pool: Option<DbPool>,
    pub app_base_url: String,
    pub secret_key: SecretKey,
}

impl Store {
    pub fn new(pool: DbPool, app_base_url: impl Into<String>, secret_key: SecretKey) -> Self {
        Store {
            pool,
            limiter_pool: None,
            app_base_url: app_base_url.into(),
            secret_key,
        }
    }

    /// Uses `pool` (see [`connect_relaxed`]) for rate-limit admission.
    pub fn with_limiter_pool(mut self, pool: DbPool) -> Self {
        self.limiter_pool = Some(pool);
        self
    }

    pub(crate) async fn conn(&self) -> Result<pool::DbConn, StoreError> {
        self.pool.get().await.map_err(StoreError::from_pool)
    }

    /// `SELECT 1` through the pool: the database half of `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        use diesel_async::RunQueryDsl;
        let mut conn = self.conn().await?;
        diesel::sql_query("SELECT 1").execute(&mut conn).await?;
        Ok(())
    }
}
