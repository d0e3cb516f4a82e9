//! One value read back from the database: what a test, a bench phase or a chaos check counts or
//! looks up, written as one call instead of a statement, its wait and its first column.

use tokio_postgres::Client;
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
