//! The store's transactions: a body run between `BEGIN` and `COMMIT`, with what failed told
//! apart. A failure of the body is its own (its statement's error, mapped as any other); a
//! failure of the `COMMIT` itself is always one a retry can cure: nothing was committed (a
//! deferred constraint or trigger refused it, the server went away, a serialization failure
//! found at commit), so the request may be sent again, and it answers 503 with `Retry-After`
//! (docs/reliability.md, "A 2xx is a commit"), however PostgreSQL worded it.

use std::future::Future;

use diesel_async::{AnsiTransactionManager, AsyncPgConnection, TransactionManager};

use crate::StoreError;

/// An async closure over the connection whose future is named, so that its `Send` can be
/// required where the store's futures are spawned (the bound diesel-async's own transactions
/// state the same way).
pub trait Body<T, R>: AsyncFnOnce(T) -> R + FnOnce(T) -> <Self as Body<T, R>>::Fut {
    type Fut: Future<Output = R>;
}

impl<F, T, Fut, R> Body<T, R> for F
where
    F: AsyncFnOnce(T) -> R + FnOnce(T) -> Fut,
    Fut: Future<Output = R>,
{
    type Fut = Fut;
}

/// Runs `body` in a transaction on `conn`: its result once committed; its own error after a
/// rollback; [`StoreError::Unavailable`] when the commit fails.
pub(crate) async fn transaction<R, F>(
    conn: &mut AsyncPgConnection,
    body: F,
) -> Result<R, StoreError>
where
    for<'r> F: AsyncFnOnce(&'r mut AsyncPgConnection) -> Result<R, StoreError>
        + Body<&'r mut AsyncPgConnection, Result<R, StoreError>, Fut: Send>
        + Send,
    R: Send,
{
    AnsiTransactionManager::begin_transaction(conn).await?;
    match body(&mut *conn).await {
        Ok(value) => match AnsiTransactionManager::commit_transaction(conn).await {
            Ok(()) => Ok(value),
            Err(e) => Err(StoreError::Unavailable(Box::new(e))),
        },
        Err(e) => {
            // A rollback that fails leaves the connection broken: the pool drops it when it
            // comes back. The body's error is the answer either way.
            let _ = AnsiTransactionManager::rollback_transaction(conn).await;
            Err(e)
        }
    }
}
