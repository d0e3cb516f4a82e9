//! Hand-written SQL that diesel prepares once per connection and reuses.
//!
//! `diesel::sql_query` marks every statement unsafe to cache, so PostgreSQL parses and plans it
//! on every call; for a statement on every request that parsing and planning is most of its cost
//! (docs/performance.md). A [`Prepared`] statement is fixed text: its parameters come
//! first, as the one row of a `VALUES` list the rest of the statement reads by column name, so
//! the text never depends on the values and diesel caches it by that text.

use std::marker::PhantomData;

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{HasSqlType, Untyped};

/// One parameter of SQL type `ST`.
pub struct Bind<ST, U> {
    value: U,
    _st: PhantomData<ST>,
}

impl<ST, U> QueryFragment<Pg> for Bind<ST, U>
where
    Pg: HasSqlType<ST>,
    U: ToSql<ST, Pg>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_bind_param::<ST, U>(&self.value)
    }
}

/// The parameters so far, then one more, comma-separated.
pub struct Then<A, B>(A, B);

impl<A: QueryFragment<Pg>, B: QueryFragment<Pg>> QueryFragment<Pg> for Then<A, B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(", ");
        self.1.walk_ast(out.reborrow())
    }
}

/// `head`, the parameters, then `tail`: e.g. head `WITH p(a, b) AS (VALUES (`, tail
/// `)) SELECT … FROM p`. Loaded like `sql_query` (rows by name).
pub struct Prepared<B> {
    head: &'static str,
    binds: B,
    tail: &'static str,
}

/// The statement's text around its first parameter (see [`Prepared`]).
pub fn prepared<ST, U>(head: &'static str, tail: &'static str, first: U) -> Prepared<Bind<ST, U>> {
    Prepared {
        head,
        binds: Bind {
            value: first,
            _st: PhantomData,
        },
        tail,
    }
}

impl<B> Prepared<B> {
    /// The next parameter.
    pub fn bind<ST, U>(self, value: U) -> Prepared<Then<B, Bind<ST, U>>> {
        Prepared {
            head: self.head,
            binds: Then(
                self.binds,
                Bind {
                    value,
                    _st: PhantomData,
                },
            ),
            tail: self.tail,
        }
    }
}

impl<B: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<B> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        // Nothing here calls `unsafe_to_cache_prepared`: the text is the same for every call.
        out.push_sql(self.head);
        self.binds.walk_ast(out.reborrow())?;
        out.push_sql(self.tail);
        Ok(())
    }
}

// No static query id: diesel then keys its statement cache by the SQL text and bind types.
impl<B> QueryId for Prepared<B> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<B> Query for Prepared<B> {
    type SqlType = Untyped;
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::sql_types::{Int4, Text};

    #[test]
    fn the_text_is_fixed_and_the_parameters_numbered_in_order() {
        let q = prepared::<Int4, _>("WITH p(a, b) AS (VALUES (", ")) SELECT a, b FROM p", 7)
            .bind::<Text, _>("x".to_owned());
        let sql = diesel::debug_query::<Pg, _>(&q).to_string();
        assert!(
            sql.starts_with("WITH p(a, b) AS (VALUES ($1, $2)) SELECT a, b FROM p"),
            "{sql}"
        );
        let mut safe = false;
        let _ = q.is_safe_to_cache_prepared(&Pg).map(|s| safe = s);
        assert!(safe, "diesel may cache it");
    }
}
