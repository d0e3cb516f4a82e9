//! Test events (`POST …/webhook/test`): an example event to one endpoint through the normal
//! pipeline, marked as a test, at most [`TEST_EVENTS_PER_MINUTE`] a minute per org.

use crate::answer::ReadToEnd;
use diesel_async::RunQueryDsl;
use qualifier_domain::EventType;
use qualifier_domain::timefmt::now_millis;
use uuid::Uuid;

use crate::StoreError;
use crate::endpoints::EndpointRef;

use crate::webhooks::{TEST_EVENTS_PER_MINUTE, locked_row};

impl crate::facets::Endpoints<'_> {
    /// A test event (`POST …/webhook/test`), at most [`TEST_EVENTS_PER_MINUTE`] a minute per org: an example event of `event_type` (default: the
    /// first type the webhook is subscribed to) through the normal pipeline, marked as a test.
    /// Returns the delivery's id.
    pub async fn send_test_event(
        &self,
        at: impl Into<EndpointRef>,
        event_type: Option<EventType>,
    ) -> Result<Uuid, StoreError> {
        let at = at.into();
        let org_id = at.org_id;
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            let row = locked_row(conn, at).await?.ok_or(at.missing())?;
            // The quota is the org's, across all of its endpoints: the org's own lock (held to
            // the commit) makes its count and its insert one step, whichever endpoint asks. The
            // endpoint's row lock above serialises only the tests of one endpoint.
            diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2::text))")
                .bind::<diesel::sql_types::Integer, _>(TEST_EVENTS_LOCK)
                .bind::<diesel::sql_types::Uuid, _>(org_id)
                .execute(conn)
                .await?;
            let (enabled, subscribed) = (row.enabled, row.event_types.clone());
            if !enabled {
                return Err(StoreError::Conflict("Webhook is disabled".into()));
            }
            // At most TEST_EVENTS_PER_MINUTE per org (docs/reliability.md, "Strangers, quotas and pages"): each is a real
            // delivery through the relay and work queue every org shares. Retry-After: until
            // the oldest of the minute's test events leaves the window.
            #[derive(diesel::QueryableByName)]
            struct Window {
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                n: i64,
                #[diesel(sql_type = diesel::sql_types::Double)]
                wait_s: f64,
            }
            let w: Window = diesel::sql_query(
                "SELECT count(*) AS n,
                        COALESCE(EXTRACT(EPOCH FROM min(created_at) + interval '1 minute'
                                                    - clock_timestamp()), 0)::float8 AS wait_s
                 FROM (SELECT created_at FROM outbox
                       WHERE org_id = $1 AND is_test
                         AND created_at > clock_timestamp() - interval '1 minute'
                       ORDER BY created_at DESC LIMIT $2) recent",
            )
            .bind::<diesel::sql_types::Uuid, _>(org_id)
            .bind::<diesel::sql_types::BigInt, _>(TEST_EVENTS_PER_MINUTE)
            .one(conn)
            .await?;
            if w.n >= TEST_EVENTS_PER_MINUTE {
                return Err(StoreError::RateLimited {
                    retry_after_secs: (w.wait_s.ceil() as u64).max(1),
                });
            }
            let event_type = event_type
                .or_else(|| <[EventType]>::first(&subscribed).copied())
                .unwrap_or(EventType::LeadCreated);
            let env = qualifier_domain::event::example(event_type, org_id, now_millis(), &base);
            let delivery_id = crate::outbox::insert(conn, &env, true, compress).await?;
            // The event's insert gave a test event one delivery, to the primary endpoint
            // (`qualifier_endpoints_of`), found by its key as every delivery by id
            // is (`qualifier_delivery_seq`): it goes to the endpoint asked for, and
            // so does its place in the relay's queue.
            diesel::sql_query(crate::deliveries::state::within::TO_ENDPOINT)
                .bind::<diesel::sql_types::Uuid, _>(row.id)
                .bind::<diesel::sql_types::Uuid, _>(delivery_id)
                .execute(conn)
                .await?;
            Ok(delivery_id)
        })
        .await
    }
}

/// The class of advisory lock an org's test events take (with a hash of the org's id), so their
/// quota counts per org under concurrency.
const TEST_EVENTS_LOCK: i32 = 0x7e57_0001;
