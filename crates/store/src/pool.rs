//! The connection pool and embedded migrations.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub type DbPool = Pool<AsyncPgConnection>;
pub type DbConn = Object<AsyncPgConnection>;

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// A pool whose waits are bounded, so a request meets a prompt 503 when PostgreSQL is down instead
/// of hanging until the client gives up.
pub fn connect(database_url: &str, max_size: usize) -> Result<DbPool, String> {
    let mgr = AsyncDieselConnectionManager::<AsyncPgConnection>::new(database_url);
    Pool::builder(mgr)
        .max_size(max_size)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()
        .map_err(|e| e.to_string())
}

/// Runs pending migrations. Diesel's migration harness is synchronous, so it runs on a blocking
/// thread through the async connection wrapper (no libpq needed).
pub async fn run_migrations(database_url: &str) -> Result<Vec<String>, String> {
    use diesel::Connection;
    use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
    let url = database_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&url)
            .map_err(|e| format!("cannot connect to DATABASE_URL: {e}"))?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map_err(|e| format!("migration failed: {e}"))?;
        Ok(applied.iter().map(|v| v.to_string()).collect())
    })
    .await
    .map_err(|e| format!("migration task failed: {e}"))?
}
