//! The one way the store reads a statement's answer: to its end.
//!
//! A statement run outside `BEGIN … COMMIT` commits when PostgreSQL reaches the `Sync` that
//! follows it, after the statement's rows were sent. A failure at that commit (a deferred
//! constraint, a serialization failure, the backend terminated while the commit waits for its
//! flush, a database restart) reaches the client as an error *after* the rows, just before
//! `ReadyForQuery`. diesel-async's `get_result` and `first` return on the first row and drop the
//! rest of the answer, so that error is never read: the caller would take a statement that
//! PostgreSQL rolled back for one that committed, and answer 2xx for a change that does not
//! exist (docs/reliability.md, "A 2xx is a commit").
//!
//! [`ReadToEnd::one`] and [`ReadToEnd::first_row`] read the whole answer, through
//! `ReadyForQuery`, and only then hand over the row; inside a transaction they cost the same as
//! what they replace. `get_result`, `first` and `load_stream` are refused everywhere else by
//! clippy (`disallowed-methods` in the workspace's `clippy.toml`), so a new statement cannot
//! come back to the pattern without a reviewer seeing an `allow`. `execute`, `load` and
//! `get_results` already read to the end.

use diesel::QueryResult;
use diesel::query_dsl::methods::LimitDsl;
use diesel_async::methods::LoadQuery;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

/// Reading one row of a statement's answer only after the whole answer, the implicit commit's
/// outcome included, has arrived.
pub trait ReadToEnd: RunQueryDsl<AsyncPgConnection> + Sized {
    /// The statement's first row, once its answer ended without an error; `Err(NotFound)`
    /// when it returned none (so `.optional()` works as after `get_result`).
    fn one<'q, U>(
        self,
        conn: &mut AsyncPgConnection,
    ) -> impl std::future::Future<Output = QueryResult<U>> + Send
    where
        U: Send + 'q,
        Self: LoadQuery<'q, AsyncPgConnection, U> + 'q,
    {
        let rows = self.load::<U>(conn);
        async move { rows.await?.into_iter().next().ok_or(diesel::NotFound) }
    }

    /// [`ReadToEnd::one`] of the query limited to one row (what `first` did).
    fn first_row<'q, U>(
        self,
        conn: &mut AsyncPgConnection,
    ) -> impl std::future::Future<Output = QueryResult<U>> + Send
    where
        U: Send + 'q,
        Self: LimitDsl,
        diesel::dsl::Limit<Self>: LoadQuery<'q, AsyncPgConnection, U> + Send + 'q,
    {
        let rows = LimitDsl::limit(self, 1).load::<U>(conn);
        async move { rows.await?.into_iter().next().ok_or(diesel::NotFound) }
    }
}

impl<T: RunQueryDsl<AsyncPgConnection>> ReadToEnd for T {}
