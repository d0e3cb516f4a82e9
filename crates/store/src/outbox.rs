//! The transactional outbox: events are appended in the transaction of the change that caused
//! them, so an event exists if and only if its change committed; the relay claims committed
//! rows, publishes them and marks them published (rows stay: they are the delivery log).

use diesel::sql_types::{Array, Int8};
use diesel::{ExpressionMethods, QueryDsl, Queryable, Selectable, SelectableHelper};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use qualifier_domain::{Envelope, EventType};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::outbox;
use crate::{Store, StoreError};

/// Appends one event. `conn` must be inside the transaction of the change.
pub async fn append(
    conn: &mut AsyncPgConnection,
    env: &Envelope,
) -> Result<(), diesel::result::Error> {
    insert(conn, env, false).await.map(|_| ())
}

/// Inserts an event; returns its delivery id.
pub(crate) async fn insert(
    conn: &mut AsyncPgConnection,
    env: &Envelope,
    is_test: bool,
) -> Result<Uuid, diesel::result::Error> {
    let delivery_id = Uuid::new_v4();
    diesel::insert_into(outbox::table)
        .values((
            outbox::event_id.eq(env.id),
            outbox::org_id.eq(env.org_id),
            outbox::event_type.eq(env.event_type),
            outbox::payload.eq(env.to_bytes()),
            outbox::delivery_id.eq(delivery_id),
            // The request's trace context, so the delivery attempt joins the same trace.
            outbox::traceparent.eq(qualifier_telemetry::current_traceparent()),
            outbox::is_test.eq(is_test),
        ))
        .execute(conn)
        .await?;
    Ok(delivery_id)
}

/// An outbox row the relay must publish.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbox)]
pub struct Unpublished {
    pub seq: i64,
    pub delivery_id: Uuid,
    pub event_id: Uuid,
    pub org_id: Uuid,
    pub event_type: EventType,
    pub payload: Vec<u8>,
    pub created_at: OffsetDateTime,
    pub traceparent: Option<String>,
    pub is_test: bool,
}

/// Claims up to `limit` unpublished rows (skipping rows another relay holds), lets `publish`
/// send them, and marks them published in the same transaction once it returns Ok. A crash or
/// an error before the commit leaves them unpublished, to be sent again (same delivery ids).
pub async fn relay_batch<F, Fut, E>(
    conn: &mut AsyncPgConnection,
    limit: i64,
    publish: F,
) -> Result<usize, StoreError>
where
    F: FnOnce(Vec<Unpublished>) -> Fut + Send,
    Fut: std::future::Future<Output = Result<(), E>> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    conn.transaction::<usize, StoreError, _>(async move |conn| {
        let rows: Vec<Unpublished> = outbox::table
            .filter(outbox::published_at.is_null())
            .order(outbox::seq.asc())
            .limit(limit)
            .select(Unpublished::as_select())
            .for_update()
            .skip_locked()
            .load(conn)
            .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
        publish(rows)
            .await
            .map_err(|e| StoreError::Publish(Box::new(e)))?;
        diesel::sql_query("UPDATE outbox SET published_at = clock_timestamp() WHERE seq = ANY($1)")
            .bind::<Array<Int8>, _>(&seqs)
            .execute(conn)
            .await?;
        Ok(seqs.len())
    })
    .await
}

/// The relay's backlog: unpublished events and the age of the oldest, in seconds.
#[derive(Debug, Clone, Copy, diesel::QueryableByName)]
pub struct Backlog {
    #[diesel(sql_type = Int8)]
    pub count: i64,
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_age_seconds: f64,
}

impl Store {
    /// Reads the backlog through the partial index of unpublished rows (small by design).
    pub async fn outbox_backlog(&self) -> Result<Backlog, StoreError> {
        let mut conn = self.conn().await?;
        let b = diesel::sql_query(
            "SELECT count(*) AS count,
                    COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8
                        AS oldest_age_seconds
             FROM outbox WHERE published_at IS NULL",
        )
        .get_result(&mut conn)
        .await?;
        Ok(b)
    }
}
