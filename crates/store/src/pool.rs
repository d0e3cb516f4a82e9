//! The connection pool and embedded migrations.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::pgconn::Database;

pub type DbPool = Pool<AsyncPgConnection>;
pub type DbConn = Object<AsyncPgConnection>;

/// Why migrations did not run.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    #[error("cannot connect to DATABASE_URL")]
    Connect(#[source] diesel::ConnectionError),
    #[error("cannot take the migration lock")]
    Lock(#[source] diesel::result::Error),
    #[error("migration failed")]
    Failed(#[source] crate::error::BoxError),
    #[error("migration task failed")]
    Task(#[source] tokio::task::JoinError),
}

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// A digest of the migration files [`MIGRATIONS`] was built from (build.rs): what a database
/// migrated by this build is named after where one is kept for reuse (the tests' template).
pub const MIGRATIONS_DIGEST: &str = env!("STORE_MIGRATIONS_DIGEST");

/// A pool whose waits are bounded, so a request meets a prompt 503 when PostgreSQL is down instead
/// of hanging until the client gives up.
pub fn connect(database: &Database, max_size: usize) -> Result<DbPool, PoolError> {
    build(database, max_size, Vec::new())
}

/// [`connect`] (or, with `relaxed`, [`connect_relaxed`]) whose every statement is cancelled
/// after `timeout` (`statement_timeout`): `lead-api`'s pools, so a request of the public
/// listener never waits on the database longer than that (a cancelled statement is a
/// [`crate::StoreError::Unavailable`], answered 503 with `Retry-After`).
pub fn connect_with_timeout(
    database: &Database,
    max_size: usize,
    timeout: Duration,
    relaxed: bool,
) -> Result<DbPool, PoolError> {
    let database = database.with_setting("statement_timeout", &timeout.as_millis().to_string());
    let session = if relaxed {
        vec!["SET synchronous_commit = off".to_owned()]
    } else {
        Vec::new()
    };
    build(&database, max_size, session)
}

/// [`connect`] whose sessions always use a prepared statement's generic plan
/// (`plan_cache_mode = force_generic_plan`). For the delivery worker, whose statements are all
/// key lookups: its batched context read (`delivery_id = ANY($1)`) was otherwise planned anew on
/// almost every call, because a custom plan for a one-element array looks cheaper to PostgreSQL
/// than the generic one; that planning was the largest planning cost per event measured
/// (docs/performance.md).
///
/// The same sessions also plan without sequential scans, hash joins or merge joins
/// ([`KEY_LOOKUP_PLANS`]): a generic plan is made once, when a statement is first run in the
/// session, and kept. The outcome statement joins the batch's arrays to the outbox; planned while
/// the day's partition held a few pages, its cheapest plan was a hash join over a sequential scan
/// of that partition, and the session kept it while the partition grew to millions of rows
/// (56 ms and 1,575 pages per batch instead of 2 pages). Every statement of the worker reads or
/// writes a few rows by key, so an index probe is the right plan at any size.
pub fn connect_generic_plans(database: &Database, max_size: usize) -> Result<DbPool, PoolError> {
    let mut session = vec!["SET plan_cache_mode = force_generic_plan".to_owned()];
    session.extend(KEY_LOOKUP_PLANS.iter().map(|s| format!("SET {s}")));
    build(database, max_size, session)
}

/// Planner settings for statements that only ever touch a few rows by key, whatever the size of
/// the tables: with these a plan made while a table (or a new partition) was small stays an
/// index probe when it is large. [`connect_generic_plans`] sets them for the session; the
/// outbox relay sets them `LOCAL` to its transaction (`crate::outbox::relay_batch`).
pub const KEY_LOOKUP_PLANS: [&str; 3] = [
    "enable_seqscan = off",
    "enable_hashjoin = off",
    "enable_mergejoin = off",
];

/// Settings every pooled session starts with (in its startup packet: no statement, no round
/// trip).
///
/// `jit = off`: PostgreSQL compiles a statement to machine code when its estimated cost passes
/// `jit_above_cost`, which says nothing of what it will read. Every statement of these
/// services answers a request or moves a few deliveries, and reads at most a page or an
/// hour's rows through an index, but an estimate can be far off: a scan costed as disabled
/// (a one-row table such as `feed_head` under [`KEY_LOOKUP_PLANS`]), a sort kept where the
/// planner can see no other way, a range whose ends are read while the statement runs (a
/// count's time bound through `outbox_seq_marks`). Each was compiled on every execution,
/// 45-100 ms for a statement that then ran in about a millisecond, until it was turned off
/// where it was found; off for the whole session, the next such estimate costs nothing.
const SESSION_SETTINGS: [(&str, &str); 1] = [("jit", "off")];

/// Why a pool could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("building the database pool")]
    Build(#[from] deadpool::managed::BuildError),
}

/// A pool whose sessions commit without waiting for the WAL flush (`synchronous_commit = off`).
/// Only for state that may lose its last few hundred milliseconds in a database crash without
/// breaking a promise: the rate-limit buckets (a crash can only forget spending, so at worst a
/// client gets a few extra requests). Never for leads, the outbox or delivery outcomes.
pub fn connect_relaxed(database: &Database, max_size: usize) -> Result<DbPool, PoolError> {
    build(
        database,
        max_size,
        vec!["SET synchronous_commit = off".to_owned()],
    )
}

/// How long a pooled connection is kept (see the `pre_recycle` hook in [`build`]).
pub const MAX_CONNECTION_AGE: Duration = Duration::from_secs(60);

/// A pool whose every new session first runs `session` (settings of the session).
fn build(database: &Database, max_size: usize, session: Vec<String>) -> Result<DbPool, PoolError> {
    use diesel_async::pooled_connection::{ManagerConfig, RecyclingMethod};
    use futures_util::FutureExt;
    let mut cfg = ManagerConfig::<AsyncPgConnection>::default();
    let database = SESSION_SETTINGS
        .iter()
        .fold(database.clone(), |db, (name, value)| {
            db.with_setting(name, value)
        });
    // No `SELECT 1` on every checkout (it was one statement in three on the delivery path): a
    // connection the server closed is already seen as broken and replaced, and one that breaks
    // in use fails that one operation, which every caller already retries or answers with 503.
    cfg.recycling_method = RecyclingMethod::Fast;
    // Every connection is opened by `Database` (TLS, several hosts), never from the URL string
    // the manager is given (which it passes on unused).
    let db = database;
    cfg.custom_setup = Box::new(move |_url| {
        let (db, session) = (db.clone(), session.clone());
        async move {
            let mut conn = db.connect_diesel().await?;
            for set in session {
                diesel_async::RunQueryDsl::execute(diesel::sql_query(set), &mut conn)
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            }
            Ok(conn)
        }
        .boxed()
    });
    let mgr = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config("", cfg);
    Ok(Pool::builder(mgr)
        // A connection older than this is replaced when it is next taken. Its prepared
        // statements keep the plans made when they were first run, which is when the tables
        // were smallest (a new deployment, an empty outbox): a plan that read the whole small
        // table then reads the whole large one later, until something invalidates it (an
        // ANALYZE, when autovacuum gets to it, if it runs at all). A fresh connection plans
        // against the tables as they are now. It also spreads connections again after a
        // failover.
        .pre_recycle(deadpool::managed::Hook::sync_fn(|_, metrics| {
            if metrics.age() > MAX_CONNECTION_AGE {
                Err(deadpool::managed::HookError::message(
                    "connection past its age",
                ))
            } else {
                Ok(())
            }
        }))
        .max_size(max_size)
        // The connection used last is taken first: a client's requests land on the same few
        // sessions, whose prepared statements, plans and catalogue caches are warm. Taken in
        // turn (the default), every session of the pool served one call in sixteen, and a
        // statement's first run in a session planned it anew (about 1 ms with the outbox's
        // partitions, 9 ms in a session whose caches were cold).
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()?)
}

/// Runs pending migrations. Diesel's migration harness is synchronous, so it runs on a blocking
/// thread through the async connection wrapper (no libpq needed); the connection is opened
/// first, by `Database`, because the wrapper's own `establish` cannot do TLS.
pub async fn run_migrations(database: &Database) -> Result<Vec<String>, MigrationError> {
    use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
    let mut conn = database
        .connect_diesel()
        .await
        .map_err(MigrationError::Connect)?;
    // Replicas starting together (a rolling upgrade, a scale-up) would otherwise run the same
    // migration twice at once. A session lock: held until this connection closes, whatever
    // happens to the migration; the others wait, then find nothing pending.
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query("SELECT pg_advisory_lock(8317464215)"),
        &mut conn,
    )
    .await
    .map_err(MigrationError::Lock)?;
    tokio::task::spawn_blocking(move || {
        let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::from(conn);
        // What this run applied, read from the table diesel keeps: a try that gave way part of
        // the way through applied the migrations before it, and returns only its error.
        let before: std::collections::HashSet<String> = applied(&mut conn)?;
        let mut tries = 1;
        loop {
            match conn.run_pending_migrations(MIGRATIONS) {
                Ok(_) => {
                    if before.is_empty() {
                        // Every migration applied here, from the first: no version before the
                        // compact form has used this database, so `auto` may store it compact
                        // (migrations/2026-11-27-000031_storage_format/up.sql). Not done after
                        // a start that stopped part of the way: `plain` is the safe side.
                        diesel::RunQueryDsl::execute(
                            diesel::sql_query(
                                "UPDATE storage_format SET compact_by_default = true",
                            ),
                            &mut conn,
                        )
                        .map_err(|e| MigrationError::Failed(Box::new(e)))?;
                    }
                    let mut now: Vec<String> = applied(&mut conn)?;
                    now.retain(|v| !before.contains(v));
                    now.sort();
                    return Ok(now);
                }
                Err(e) if tries < LOCK_TRIES && gave_way(&*e) => {
                    // Each migration runs in its own transaction: the one that gave way was
                    // rolled back whole, those before it are recorded, and the next try starts
                    // from it.
                    let wait = Duration::from_secs(tries.min(5));
                    tracing::warn!(
                        error = %e,
                        try_number = tries,
                        wait_s = wait.as_secs(),
                        "a migration gave way to the running services' locks; trying it again"
                    );
                    std::thread::sleep(wait);
                    tries += 1;
                }
                Err(e) => return Err(MigrationError::Failed(e)),
            }
        }
    })
    .await
    .map_err(MigrationError::Task)?
}

/// The versions of the migrations the database has recorded as applied.
fn applied<C: FromIterator<String>>(
    conn: &mut impl MigrationHarness<diesel::pg::Pg>,
) -> Result<C, MigrationError> {
    Ok(conn
        .applied_migrations()
        .map_err(MigrationError::Failed)?
        .iter()
        .map(|v| v.to_string())
        .collect())
}

/// Tries of a migration that gave way to the services' locks before `migrate` fails: about two
/// minutes of waits in all.
const LOCK_TRIES: u64 = 30;

/// Whether a migration failed only because it gave way to the running services: its
/// `lock_timeout` ran out (a migration that changes the outbox sets a short one, so that
/// requests queued behind its lock wait at most that long), or PostgreSQL broke a deadlock by
/// ending it. The second happens right after the outbox became partitioned: a
/// session of the version before still holds plans that name the old table, now the
/// `outbox_legacy` partition, and so locks the partition before the new parent, where a
/// migration locks the parent first. Either way nothing of the migration was kept, and trying
/// again once those sessions have planned anew succeeds (docs/operations.md, "Upgrading").
/// Recognised by PostgreSQL's message, the only part of the error diesel keeps, in any language
/// the server speaks (`crate::pg_messages`).
pub(crate) fn gave_way(e: &(dyn std::error::Error + 'static)) -> bool {
    use crate::pg_messages::{DEADLOCK, LOCK_TIMEOUT};
    let text = e.to_string();
    DEADLOCK
        .iter()
        .chain(LOCK_TIMEOUT)
        .any(|m| text.contains(m))
}
