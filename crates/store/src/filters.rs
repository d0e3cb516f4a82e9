//! Endpoint filters where an event becomes deliveries (docs/decisions.md, "Filters where an
//! event becomes deliveries"). Whoever writes an event matches it against its org's filters
//! here, in the writing process, and sends beside the event the endpoints it did not match;
//! the same statement makes the event's deliveries without them
//! ([`filtered_deliveries`], `qualifier_deliveries_made` of
//! migrations/2026-12-06-000063_endpoint_filters). The writer holds each org's compiled
//! filters with the org's `filters_version`; its statement writes nothing unless that version
//! is still the org's, and is sent again with the filters read afresh. An org that never had
//! a filter (version 0) costs its writers no read and no match, and while an org holds no
//! filter its lead writes send the statement without them (`crate::leads::statement`, the
//! `plain` text).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::answer::ReadToEnd;
use diesel::sql_types::{Int8, Jsonb, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::filter::Filter;
use qualifier_domain::{Envelope, EventType};
use serde_json::Value;
use uuid::Uuid;

/// One org's filters as of `version`: each filtered endpoint's id and its compiled filter.
#[derive(Debug, Default)]
pub struct OrgFilters {
    pub version: i64,
    pub endpoints: Vec<(Uuid, Filter)>,
}

impl OrgFilters {
    /// The endpoints whose filters the event does not match, as the event's row keeps them
    /// (`None`: none). An erasure's notice (`lead.erased`) is never filtered: every endpoint
    /// that may hold the contact is told.
    pub fn filtered(&self, env: &Envelope) -> Option<Vec<Uuid>> {
        if self.endpoints.is_empty() || env.event_type == EventType::LeadErased {
            return None;
        }
        let event = serde_json::to_value(env).unwrap_or(Value::Null);
        let out: Vec<Uuid> = self
            .endpoints
            .iter()
            .filter(|(_, f)| !f.matches(&event))
            .map(|(id, _)| *id)
            .collect();
        (!out.is_empty()).then_some(out)
    }
}

/// The filters this process holds, by org. Only orgs that have (or had) filters are here: an
/// org missing is taken as version 0 with none, which its writes confirm.
static HELD: LazyLock<Mutex<HashMap<Uuid, Arc<OrgFilters>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// At most this many orgs' filters are held; past it the map starts again (each org's next
/// write reads its filters back).
const MAX_HELD: usize = 10_000;

/// The filters held for `org` (version 0 and none when not held).
pub fn held(org: Uuid) -> Arc<OrgFilters> {
    HELD.lock().unwrap().get(&org).cloned().unwrap_or_default()
}

/// Reads `org`'s filters and version afresh, holds them and returns them.
pub(crate) async fn reload(
    conn: &mut AsyncPgConnection,
    org: Uuid,
) -> Result<Arc<OrgFilters>, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Int8)]
        version: i64,
        #[diesel(sql_type = diesel::sql_types::Nullable<SqlUuid>)]
        id: Option<Uuid>,
        #[diesel(sql_type = diesel::sql_types::Nullable<Jsonb>)]
        filter: Option<Value>,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT o.filters_version AS version, w.id, w.filter
         FROM orgs o LEFT JOIN webhooks w ON w.org_id = o.id AND w.filter IS NOT NULL
         WHERE o.id = $1",
    )
    .bind::<SqlUuid, _>(org)
    .load(conn)
    .await?;
    let version = <[Row]>::first(&rows).map_or(0, |r| r.version);
    // A stored filter passed the same parser when it was saved; one that no longer parses
    // (a hand edit) leaves nothing out rather than everything.
    let endpoints = rows
        .into_iter()
        .filter_map(|r| Some((r.id?, Filter::parse(&r.filter?).ok()?)))
        .collect();
    let f = Arc::new(OrgFilters { version, endpoints });
    let mut all = HELD.lock().unwrap();
    if all.len() >= MAX_HELD {
        all.clear();
    }
    all.insert(org, f.clone());
    Ok(f)
}

/// How many times a write is sent again with fresh filters before it gives up (each time the
/// org's filters changed between the read and the write).
pub(crate) const ATTEMPTS: usize = 4;

/// The deliveries of the events `e` just inserted, for an org with filters (`f`: each event's
/// id and the endpoints its filters left out, NULL for none), with what a new event's
/// deliveries write beside them: `d` (none for those endpoints; the primary's row `skipped`),
/// their places in the relay's queue (`u`) and the hour's counts (`h`), one change row per
/// endpoint and hour for what was made and one for what the filters left out (the `filtered`
/// column, added up by the fold like every other count). What a lead's write for an org with
/// filters (`crate::leads::statement`) and an event appended on its own (`crate::outbox`)
/// write after their events.
macro_rules! filtered_deliveries {
    () => {
        concat!(
            "d AS (",
            crate::deliveries::state::within::made_for_filtered_events!(),
            "),
     u AS (INSERT INTO deliveries_unsent (seq, endpoint_id)
           SELECT seq, endpoint_id FROM d WHERE state = 'queued' AND due_at IS NULL),
     h AS (INSERT INTO delivery_hour_changes (org_id, endpoint_id, hour, succeeded, dead,
                                              skipped, in_progress, failed_attempts, failed,
                                              erased_skipped, filtered)
           SELECT org_id, endpoint_id, date_trunc('hour', created_at, 'UTC'), 0, 0,
                  count(*) FILTER (WHERE state = 'skipped'),
                  count(*) FILTER (WHERE state <> 'skipped'), 0, 0, 0, 0
           FROM d GROUP BY 1, 2, 3
           UNION ALL
           SELECT e.org_id, x.endpoint_id, date_trunc('hour', e.created_at, 'UTC'),
                  0, 0, 0, 0, 0, 0, 0, count(*)
           FROM e JOIN f USING (event_id)
                CROSS JOIN LATERAL
                qualifier_filtered_of(e.org_id, e.event_type, e.is_test, f.filtered) x
           WHERE f.filtered IS NOT NULL
           GROUP BY 1, 2, 3)"
        )
    };
}
pub(crate) use filtered_deliveries;

/// `filtered` as the statement's text parameter: the ids joined by commas (`None`: none).
pub(crate) fn as_text(filtered: Option<Vec<Uuid>>) -> Option<String> {
    filtered.map(|ids| {
        ids.iter()
            .map(Uuid::to_string)
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// A save changed one of `org`'s filters: every writer's held filters are no longer the
/// org's from this commit on.
pub(crate) async fn changed(
    conn: &mut AsyncPgConnection,
    org: Uuid,
) -> Result<(), crate::StoreError> {
    diesel::sql_query("UPDATE orgs SET filters_version = filters_version + 1 WHERE id = $1")
        .bind::<SqlUuid, _>(org)
        .execute(conn)
        .await?;
    Ok(())
}

impl crate::facets::Endpoints<'_> {
    /// How many events `at`'s filter left out in the last 24 hours, by the hour (the current
    /// hour and the 23 before it): the folded totals and the changes not folded yet.
    pub(crate) async fn filtered_last_24h(
        &self,
        at: crate::endpoints::EndpointKey,
    ) -> Result<i64, crate::StoreError> {
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = Int8)]
            n: i64,
        }
        let mut conn = self.conn().await?;
        let n: N = diesel::sql_query(
            "SELECT coalesce(sum(filtered), 0)::int8 AS n
             FROM (SELECT filtered FROM delivery_hours
                   WHERE org_id = $1 AND endpoint_id = $2
                     AND hour >= date_trunc('hour', now(), 'UTC') - interval '23 hours'
                   UNION ALL
                   SELECT filtered FROM delivery_hour_changes
                   WHERE org_id = $1 AND endpoint_id = $2
                     AND hour >= date_trunc('hour', now(), 'UTC') - interval '23 hours') t",
        )
        .bind::<SqlUuid, _>(at.org_id)
        .bind::<SqlUuid, _>(at.endpoint_id)
        .one(&mut conn)
        .await?;
        Ok(n.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_is_left_out_by_the_filters_it_does_not_match_but_never_an_erasure() {
        let (web, sms) = (Uuid::new_v4(), Uuid::new_v4());
        let f = OrgFilters {
            version: 3,
            endpoints: vec![
                (
                    web,
                    Filter::parse(&json!({"type": "lead.created"})).unwrap(),
                ),
                (
                    sms,
                    Filter::parse(&json!({"type": {"$startsWith": "handoff."}})).unwrap(),
                ),
            ],
        };
        let org = Uuid::new_v4();
        let env = |t: EventType| {
            Envelope::new(
                t,
                org,
                qualifier_domain::timefmt::now_millis(),
                qualifier_domain::event::EventBody::Erased(qualifier_domain::event::ErasedData {
                    lead: qualifier_domain::event::LeadRef { id: Uuid::new_v4() },
                    erased_at: qualifier_domain::timefmt::now_millis(),
                }),
            )
        };
        assert_eq!(f.filtered(&env(EventType::LeadCreated)), Some(vec![sms]));
        assert_eq!(f.filtered(&env(EventType::HandoffCreated)), Some(vec![web]));
        assert_eq!(f.filtered(&env(EventType::LeadErased)), None);
        assert_eq!(
            OrgFilters::default().filtered(&env(EventType::LeadCreated)),
            None
        );
        assert_eq!(as_text(Some(vec![web, sms])), Some(format!("{web},{sms}")));
    }
}
