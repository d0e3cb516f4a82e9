//! One value read back from the database: what a test, a bench phase or a chaos check counts or
//! looks up, written as one call instead of a statement, its wait and its first column.

pub use tokio_postgres::Client;
use tokio_postgres::types::{FromSqlOwned, ToSql};

/// The first column of the one row `sql` returns; panics when it fails, as a test should.
pub async fn one<T: FromSqlOwned>(c: &Client, sql: &str, params: &[&(dyn ToSql + Sync)]) -> T {
    match try_one(c, sql, params).await {
        Ok(v) => v,
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// The first column of the one row `sql` returns, or the error, for a caller that reports it.
pub async fn try_one<T: FromSqlOwned>(
    c: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<T, tokio_postgres::Error> {
    c.query_one(sql, params).await?.try_get(0)
}

/// The first column of every row `sql` returns, in its order, gathered as the caller wants it
/// (a `Vec`, a set); panics when it fails, as a test should.
pub async fn column<T: FromSqlOwned, C: FromIterator<T>>(
    c: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> C {
    match try_column(c, sql, params).await {
        Ok(v) => v,
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// The first column of every row `sql` returns, or the error, for a caller that reports it.
pub async fn try_column<T: FromSqlOwned, C: FromIterator<T>>(
    c: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<C, tokio_postgres::Error> {
    c.query(sql, params)
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect()
}

/// Runs `ddl` (statements that make or change objects on the outbox's partitions, as one
/// transaction), tried again whole when it meets the service's housekeeping: a partition
/// dropped while the list of partitions was read (retention, at its first round), or the same
/// partitions locked in another order (a deadlock, which PostgreSQL ends by failing one side).
/// A `ddl` that names tables it found in the catalog finds them in the same transaction (a `DO`
/// block), so that a try again names what is there then: a list read once before the tries
/// names a partition retention dropped on every try after its drop.
/// Panics on any other error, or after 50 tries (five seconds, more than a housekeeping round
/// holds its locks on a machine running the test suite beside it).
pub async fn ddl_beside_housekeeping(c: &Client, ddl: &str) {
    use tokio_postgres::error::SqlState;
    let again = [
        SqlState::UNDEFINED_TABLE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::LOCK_NOT_AVAILABLE,
    ];
    let mut tries = 0;
    loop {
        match c.batch_execute(&format!("BEGIN; {ddl}; COMMIT;")).await {
            Ok(()) => return,
            Err(e) if tries < 50 && e.code().is_some_and(|code| again.contains(code)) => {
                // The failed transaction is aborted; end it before the next try.
                let _ = c.batch_execute("ROLLBACK").await;
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{ddl}: {e:?}"),
        }
    }
}

/// The database as one of an earlier version: each migration of `undone` (its version, as
/// diesel records it, and its `down.sql`), newest first, undone and forgotten, in one
/// transaction, so that the next `run_migrations` applies them again.
pub async fn undo_migrations(c: &Client, undone: &[(&str, &str)]) {
    let downs: String = undone.iter().map(|(_, down)| *down).collect();
    let versions: Vec<String> = undone.iter().map(|(v, _)| format!("'{v}'")).collect();
    c.batch_execute(&format!(
        "BEGIN; {downs}
         DELETE FROM __diesel_schema_migrations WHERE version IN ({}); COMMIT;",
        versions.join(", ")
    ))
    .await
    .expect("the migrations undone");
}
