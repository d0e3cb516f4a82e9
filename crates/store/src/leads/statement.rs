//! The one statement a lead's change is written with: the lead's row, its events and their
//! deliveries, their places in the relay's queue, their hours' counts and the relay's wake-up,
//! committed alone as one atomic unit ([`write_with_events`]), and the read it compares with
//! ([`read_versioned`]). `super::write` decides what to write.

use crate::answer::ReadToEnd;
use diesel::OptionalExtension;
use diesel_async::AsyncPgConnection;
use qualifier_domain::event::ChangeEvent;
use qualifier_domain::{Envelope, Lead};
use uuid::Uuid;

use crate::StoreError;

use super::{LeadRow, VersionedLead, VersionedRow};

/// How [`write_with_events`] writes the lead row.
pub(super) enum RowWrite {
    /// A new lead; a lead with the same phone in the org already there means nothing is written.
    /// Checked by `NOT EXISTS` before the insert rather than by `ON CONFLICT DO NOTHING`, whose
    /// speculative insertion writes a second write-ahead log record for every new lead. The
    /// check names the phone's index by its shape: `(org_id, phone)` compared as a row, which
    /// only `leads_org_phone` serves whole. Written as two equalities, the statement's generic
    /// plan, made on a new database, walked the org's leads through `leads_org_updated` to find
    /// the phone (docs/performance-log.md, "Fewer records an event"). Two first messages from one
    /// phone at once both pass the check; the unique index lets one in and the other's
    /// statement fails whole with its violation, which [`Leads::inbound_contact`] takes as a
    /// taken phone.
    Insert,
    /// The lead as read with this row version (`xmin`); a row changed since means nothing is
    /// written.
    Update { version: i64 },
}

/// The parameters of [`write_with_events`] and [`read_versioned`], named in a `VALUES` row:
/// an org without filters ([`PLAIN_HEAD`]) sends no `filtered`.
macro_rules! write_head {
    ($($more:literal)?) => {
        concat!(
            "WITH p(id, org_id, name, email, phone, channel, qualification_stage,
         route_target, profile, external_system, external_id, external_url, ai_paused,
         created_at, updated_at, revision, traceparent, event_ids, event_types, payloads,
         deliveries, version, notify, filters_version",
            $($more,)?
            ") AS (VALUES ("
        )
    };
}
const PLAIN_HEAD: &str = write_head!();
const FILTERED_HEAD: &str = write_head!(", filtered");

/// The rows of the written lead's events in the outbox (`e`), whichever text writes them.
macro_rules! event_rows {
    () => {
        "e AS (INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id,
                                  traceparent, is_test, lead_id, deliveries_written)
               SELECT v.event_id, p.org_id, v.event_type, v.payload, v.delivery_id,
                      p.traceparent, false, l.id, true
               FROM p CROSS JOIN l
                    CROSS JOIN unnest(p.event_ids, p.event_types, p.payloads, p.deliveries)
                    AS v(event_id, event_type, payload, delivery_id)
               RETURNING *)"
    };
}

/// The events of the written row, after `l` (the written lead's id, when it was written), and
/// their deliveries (`d`): one row per endpoint, its place in the relay's queue and its
/// endpoint's hour's count, written here rather than by a trigger on the outbox's insert, whose
/// call costs about a tenth of this statement: the events say so (`deliveries_written`), and
/// the outbox's row trigger, which fans out the events of every other writer, passes them by.
/// A new event's deliveries are all `queued` with nothing sent, so each counts one
/// `in_progress` (what the row trigger sums for any state, `qualifier_event_fans_out`).
///
/// Two texts: an org without filters writes exactly what it wrote before filters existed, so
/// that filters cost it no node of the plan (each node is set up and torn down at every
/// execution of the prepared statement); an org with filters names beside each event (`f`)
/// the endpoints its filters left out, makes no delivery for them (the primary's is
/// `skipped`) and counts them in the hour's `filtered`.
macro_rules! events_cte {
    (plain) => {
        concat!(
            event_rows!(),
            ",
     d AS (",
            crate::deliveries::state::within::made_for_events!(),
            "),
     u AS (INSERT INTO deliveries_unsent (seq, endpoint_id)
           SELECT seq, endpoint_id FROM d WHERE state = 'queued' AND due_at IS NULL),
     h AS (INSERT INTO delivery_hour_changes (org_id, endpoint_id, hour, succeeded, dead,
                                              skipped, in_progress, failed_attempts, failed,
                                              erased_skipped)
           SELECT org_id, endpoint_id, date_trunc('hour', created_at, 'UTC'), 0, 0, 0,
                  count(*), 0, 0, 0
           FROM d GROUP BY 1, 2, 3)"
        )
    };
    (filtered) => {
        concat!(
            "f AS (SELECT v.event_id, string_to_array(v.filtered, ',')::uuid[] AS filtered
           FROM p CROSS JOIN unnest(p.event_ids, p.filtered) AS v(event_id, filtered)),
     ",
            event_rows!(),
            ",
     ",
            crate::filters::filtered_deliveries!()
        )
    };
}

/// The relays' wake-up at commit when the statement wrote deliveries and `notify` says so
/// (what the outbox's row trigger does for the events it fans out), as a column of the
/// answer: a `SELECT` list is evaluated, an unreferenced plain CTE is not. A notifying commit
/// holds PostgreSQL's one lock on the notification queue from before its WAL flush until it
/// ends, so the writes that notify commit one at a time, each waiting for its own flush; while
/// this process's relay is connected the write wakes it in-process instead
/// ([`crate::LocalRelay`]).
macro_rules! wake_relay {
    () => {
        "(SELECT count(pg_notify('qualifier_outbox', ''))
          FROM (SELECT FROM d LIMIT 1) w, p WHERE p.notify) AS relay_woken"
    };
}

/// Whether the filters the writer matched its events against (`p.filters_version`) are still
/// the org's: else the statement writes nothing and is sent again with them read afresh
/// (`crate::filters`). An org without a row reads as version 0 (its write then fails on the
/// org).
macro_rules! filters_current {
    () => {
        "coalesce((SELECT x.filters_version FROM orgs x, p WHERE x.id = p.org_id), 0)
         = (SELECT filters_version FROM p)"
    };
}

/// A new lead's statement after its parameters, with the events' text `$events` (`plain` or
/// `filtered`, [`events_cte`]).
macro_rules! insert_tail {
    ($events:tt) => {
        concat!(
            ")),
     o AS (SELECT x.id IS NOT NULL AS found,
                  coalesce(x.filters_version, 0) = p.filters_version AS current
           FROM p LEFT JOIN orgs x ON x.id = p.org_id),
     l AS (INSERT INTO leads (id, org_id, name, email, phone, channel, qualification_stage,
                              route_target, profile, external_system, external_id, external_url,
                              ai_paused, created_at, updated_at, revision)
           SELECT id, org_id, name, email, phone, channel, qualification_stage, route_target,
                  profile, external_system, external_id, external_url, ai_paused, created_at,
                  updated_at, revision
           FROM p, o WHERE o.found AND o.current
             AND NOT EXISTS (SELECT FROM leads x
                             WHERE (x.org_id, x.phone) >= (p.org_id, p.phone)
                               AND (x.org_id, x.phone) <= (p.org_id, p.phone))
           RETURNING id),
     ",
            events_cte!($events),
            "
     SELECT count(*) AS written, (SELECT found FROM o) AS org_found,
            (SELECT current FROM o) AS filters_current, ",
            wake_relay!(),
            " FROM l"
        )
    };
}

/// A changed lead's statement after its parameters, with the events' text `$events`.
macro_rules! update_tail {
    ($events:tt) => {
        concat!(
            ")),
     o AS (SELECT ",
            filters_current!(),
            " AS current),
     l AS (UPDATE leads SET name = p.name, email = p.email, phone = p.phone,
                  channel = p.channel, qualification_stage = p.qualification_stage,
                  route_target = p.route_target, profile = p.profile,
                  external_system = p.external_system, external_id = p.external_id,
                  external_url = p.external_url, ai_paused = p.ai_paused,
                  updated_at = p.updated_at, revision = p.revision
           FROM p
           WHERE leads.id = p.id AND (leads.org_id = p.org_id) IS TRUE
             AND leads.xmin::text::int8 = p.version AND (SELECT current FROM o)
           RETURNING leads.id),
     ",
            events_cte!($events),
            "
     SELECT count(*) AS written, true AS org_found,
            (SELECT current FROM o) AS filters_current, ",
            wake_relay!(),
            " FROM l"
        )
    };
}

const PLAIN_INSERT: &str = insert_tail!(plain);
const PLAIN_UPDATE: &str = update_tail!(plain);
const FILTERED_INSERT: &str = insert_tail!(filtered);
const FILTERED_UPDATE: &str = update_tail!(filtered);

/// The lead row and the events its change emits in one statement and one round trip: the
/// statement commits alone (no BEGIN, lock, COMMIT), and its two writes are one atomic unit, so
/// an event exists if and only if its change committed, as with the transaction it replaces.
/// Returns false when the row was not written (and no event was): the phone is taken
/// ([`RowWrite::Insert`]) or the row changed since it was read ([`RowWrite::Update`]). A new
/// lead's org is read (not locked: `leads` has no foreign key), and `Org not
/// found` when there is none. The text is fixed, so each connection prepares it once
/// ([`crate::prepared`]).
pub(super) async fn write_with_events(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    lead: &Lead,
    write: RowWrite,
    events: &[ChangeEvent],
    compress: bool,
    notify: bool,
) -> Result<bool, StoreError> {
    let envelopes: Vec<Envelope> = events
        .iter()
        .map(|e| Envelope::new(e.event_type, org_id, lead.updated_at, e.data(lead)))
        .collect();
    let mut filters = crate::filters::held(org_id);
    for _ in 0..crate::filters::ATTEMPTS {
        let w = write_once(
            conn, org_id, lead, &write, &envelopes, &filters, compress, notify,
        )
        .await?;
        if !w.org_found {
            return Err(StoreError::NotFound("Org not found"));
        }
        if w.filters_current {
            return Ok(w.written == 1);
        }
        // The org's filters changed since they were read: nothing was written; again with
        // them as they are now.
        filters = crate::filters::reload(conn, org_id).await?;
    }
    Err(StoreError::Conflict(
        "The organisation's filters kept changing during this write; try again".into(),
    ))
}

#[derive(diesel::QueryableByName)]
struct Written {
    #[diesel(sql_type = diesel::sql_types::Int8)]
    written: i64,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    org_found: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    filters_current: bool,
}

/// One try of [`write_with_events`] with the org's filters as `filters` holds them.
#[allow(clippy::too_many_arguments)]
async fn write_once(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    lead: &Lead,
    write: &RowWrite,
    envelopes: &[Envelope],
    filters: &crate::filters::OrgFilters,
    compress: bool,
    notify: bool,
) -> Result<Written, StoreError> {
    use diesel::sql_types::{
        Array, Bool, Bytea, Int8, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
    };
    let row = LeadRow::from_lead(org_id, lead);
    let mut event_ids = Vec::with_capacity(envelopes.len());
    let mut types = Vec::with_capacity(envelopes.len());
    let mut payloads = Vec::with_capacity(envelopes.len());
    let mut deliveries = Vec::with_capacity(envelopes.len());
    let mut filtered = Vec::with_capacity(envelopes.len());
    for env in envelopes {
        event_ids.push(env.id);
        types.push(env.event_type.as_str().to_owned());
        payloads.push(crate::payload::pack(env.to_bytes(), compress));
        deliveries.push(Uuid::new_v4());
        filtered.push(crate::filters::as_text(filters.filtered(env)));
    }
    let version = match write {
        RowWrite::Insert => None,
        RowWrite::Update { version } => Some(*version),
    };
    let (head, tail) = match (filters.endpoints.is_empty(), version.is_none()) {
        (true, true) => (PLAIN_HEAD, PLAIN_INSERT),
        (true, false) => (PLAIN_HEAD, PLAIN_UPDATE),
        (false, true) => (FILTERED_HEAD, FILTERED_INSERT),
        (false, false) => (FILTERED_HEAD, FILTERED_UPDATE),
    };
    let statement = crate::prepared::prepared::<SqlUuid, _>(head, tail, row.id)
        .bind::<SqlUuid, _>(row.org_id)
        .bind::<Text, _>(row.name)
        .bind::<Nullable<Text>, _>(row.email)
        .bind::<Text, _>(row.phone)
        .bind::<Text, _>(row.channel)
        .bind::<Text, _>(row.qualification_stage)
        .bind::<Nullable<Text>, _>(row.route_target)
        .bind::<Jsonb, _>(row.profile)
        .bind::<Nullable<Text>, _>(row.external_system)
        .bind::<Nullable<Text>, _>(row.external_id)
        .bind::<Nullable<Text>, _>(row.external_url)
        .bind::<Bool, _>(row.ai_paused)
        .bind::<Timestamptz, _>(row.created_at)
        .bind::<Timestamptz, _>(row.updated_at)
        .bind::<Int8, _>(row.revision)
        .bind::<Nullable<Text>, _>(qualifier_telemetry::current_traceparent())
        .bind::<Array<SqlUuid>, _>(event_ids)
        .bind::<Array<Text>, _>(types)
        .bind::<Array<Bytea>, _>(payloads)
        .bind::<Array<SqlUuid>, _>(deliveries)
        .bind::<Nullable<Int8>, _>(version)
        .bind::<Bool, _>(notify)
        .bind::<Int8, _>(filters.version);
    let w: Written = if filters.endpoints.is_empty() {
        statement.one(conn).await?
    } else {
        statement
            .bind::<Array<Nullable<Text>>, _>(filtered)
            .one(conn)
            .await?
    };
    Ok(w)
}

/// The lead as it is now and its row version (`xmin`, which every write of the row changes),
/// without a lock (see [`write_with_events`]).
///
/// The org's condition here and in the update's tail is written `(org_id = …) IS TRUE`, which no
/// index can take, so the primary key is the only index that finds the row. Written as a plain
/// `=`, the statement could also be served by `leads_org_updated` (`org_id`, `updated_at`,
/// `id`), reading every entry of the org to find one id; a session that planned it while
/// `leads` had no statistics yet (a new database, before its first `ANALYZE`) chose that index
/// and kept it, and each change of a lead then cost a walk of the org's leads
/// (`crates/lead-api/tests/api/plans.rs`; docs/performance-log.md, "What the figures rest on").
pub(super) async fn read_versioned(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    lead_id: Uuid,
    base: &str,
) -> Result<VersionedLead, StoreError> {
    use diesel::sql_types::Uuid as SqlUuid;
    let v: Option<VersionedRow> = crate::prepared::prepared::<SqlUuid, _>(
        concat!(versioned_lead_select!(), " FROM leads l, (VALUES ("),
        ")) AS p(lead_id, lead_org) WHERE l.id = p.lead_id AND (l.org_id = p.lead_org) IS TRUE",
        lead_id,
    )
    .bind::<SqlUuid, _>(org_id)
    .one(conn)
    .await
    .optional()?;
    v.ok_or(StoreError::NotFound("Lead not found"))?
        .to_versioned(base)
}
