//! The connection pool and embedded migrations.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub type DbPool = Pool<AsyncPgConnection>;
pub type DbConn = Object<AsyncPgConnection>;

/// Why migrations did not run.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("cannot connect to DATABASE_URL")]
    Connect(#[source] diesel::ConnectionError),
    #[error("migration failed")]
    Failed(#[source] crate::error::BoxError),
    #[error("migration task failed")]
    Task(#[source] tokio::task::JoinError),
}

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// A pool whose waits are bounded, so a request meets a prompt 503 when PostgreSQL is down instead
/// of hanging until the client gives up.
pub fn connect(
    database_url: &str,
    max_size: usize,
) -> Result<DbPool, deadpool::managed::BuildError> {
    build(database_url, max_size, false)
}

/// A pool whose sessions commit without waiting for the WAL flush (`synchronous_commit = off`).
/// Only for state that may lose its last few hundred milliseconds in a database crash without
/// breaking a promise: the rate-limit buckets (a crash can only forget spending, so at worst a
/// client gets a few extra requests). Never for leads, the outbox or delivery outcomes.
pub fn connect_relaxed(
    database_url: &str,
    max_size: usize,
) -> Result<DbPool, deadpool::managed::BuildError> {
    build(database_url, max_size, true)
}

fn build(
    database_url: &str,
    max_size: usize,
    relaxed_commit: bool,
) -> Result<DbPool, deadpool::managed::BuildError> {
    use diesel_async::AsyncConnection;
    use diesel_async::pooled_connection::{ManagerConfig, RecyclingMethod};
    use futures_util::FutureExt;
    let mut cfg = ManagerConfig::<AsyncPgConnection>::default();
    // No `SELECT 1` on every checkout (it was one statement in three on the delivery path): a
    // connection the server closed is already seen as broken and replaced, and one that breaks
    // in use fails that one operation, which every caller already retries or answers with 503.
    cfg.recycling_method = RecyclingMethod::Fast;
    if relaxed_commit {
        cfg.custom_setup = Box::new(|url| {
            async move {
                let mut conn = AsyncPgConnection::establish(url).await?;
                diesel_async::RunQueryDsl::execute(
                    diesel::sql_query("SET synchronous_commit = off"),
                    &mut conn,
                )
                .await
                .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                Ok(conn)
            }
            .boxed()
        });
    }
    let mgr = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(database_url, cfg);
    Pool::builder(mgr)
        .max_size(max_size)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()
}

/// Runs pending migrations. Diesel's migration harness is synchronous, so it runs on a blocking
/// thread through the async connection wrapper (no libpq needed).
pub async fn run_migrations(database_url: &str) -> Result<Vec<String>, MigrationError> {
    use diesel::Connection;
    use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
    let url = database_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&url)
            .map_err(MigrationError::Connect)?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map_err(MigrationError::Failed)?;
        Ok(applied.iter().map(|v| v.to_string()).collect())
    })
    .await
    .map_err(MigrationError::Task)?
}
