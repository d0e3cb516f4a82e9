//! The transactional outbox: events are appended in the transaction of the change that caused
//! them, so an event exists if and only if its change committed.

use diesel::ExpressionMethods;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::Envelope;

use crate::schema::outbox;

/// Appends one event. `conn` must be inside the transaction of the change.
pub async fn append(
    conn: &mut AsyncPgConnection,
    env: &Envelope,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(outbox::table)
        .values((
            outbox::event_id.eq(env.id),
            outbox::org_id.eq(env.org_id),
            outbox::event_type.eq(env.event_type.as_str()),
            outbox::payload.eq(env.to_bytes()),
            outbox::delivery_id.eq(uuid::Uuid::new_v4()),
            // The request's trace context, so the delivery attempt joins the same trace.
            outbox::traceparent.eq(qualifier_telemetry::current_traceparent()),
        ))
        .execute(conn)
        .await?;
    Ok(())
}
