//! Erasing a contact (docs/api.md, "Erasing a lead"): one transaction that forgets the lead
//! everywhere the database keeps it and emits `lead.erased`.

use diesel::QueryableByName;
use diesel::sql_types::{Array, Bytea, Int8, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use qualifier_domain::event::{ErasedData, LeadRef, ReducedData, ReducedEnvelope};
use qualifier_domain::timefmt::now_millis;
use qualifier_domain::{Envelope, EventType};
use uuid::Uuid;

use crate::leads::lock_lead;
use crate::{Store, StoreError, outbox};

/// What an erasure changed, for the log (no personal data in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Erased {
    /// Stored events about the lead, now reduced envelopes.
    pub events: usize,
    /// Kept Idempotency-Key answers that held the lead, now removed.
    pub idempotency_answers: usize,
}

#[derive(QueryableByName)]
struct EventOfLead {
    #[diesel(sql_type = Int8)]
    seq: i64,
    #[diesel(sql_type = SqlUuid)]
    event_id: Uuid,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    payload: Vec<u8>,
}

/// The one field of a stored envelope that its reduced envelope keeps as it was.
#[derive(serde::Deserialize)]
struct Occurred {
    occurred_at: String,
}

impl crate::facets::Leads<'_> {
    /// Erases the lead `lead_id` of `org_id`, in one transaction: its row and handoffs are
    /// deleted; every stored event about it becomes its reduced envelope, and its delivery, unless
    /// it succeeded, ends skipped (the `outbox_stays_erased` trigger keeps it so
    /// whoever writes the row later); its attempt logs lose the receiver's answers and the request
    /// headers; kept Idempotency-Key answers that hold it are removed; and `lead.erased` is
    /// emitted. Every statement reaches the lead's rows through an index (`leads` by key,
    /// `outbox_org_lead`, `idempotency_keys_lead`), so it costs what the lead has, not
    /// what the database holds. `NotFound` for another org's lead or one already erased.
    pub async fn erase_lead(&self, org_id: Uuid, lead_id: Uuid) -> Result<Erased, StoreError> {
        let compress = self.compress_payloads;
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            // Before any row lock: the workers' outcome batches skip the lead's rows from here
            // on instead of waiting for them (`Deliveries::record_attempts`).
            diesel::sql_query(ERASING)
                .bind::<SqlUuid, _>(lead_id)
                .execute(conn)
                .await?;
            // The row lock orders the erasure with a change of the same lead: a change that
            // committed first is erased with the rest; one that comes after finds no lead.
            lock_lead(conn, org_id, lead_id).await?;
            // A chunk at a time, in `seq` order through `outbox_org_lead`: a lead with ten
            // thousand events is never held in memory whole, and each chunk's rows stay locked
            // to the commit like the rest.
            let now = now_millis();
            let mut events = 0;
            let mut after = i64::MIN;
            loop {
                // The chunk's delivery rows first (every endpoint's), then its events' rows:
                // every move of a delivery locks its row first, and a move that goes on to the
                // event's row (a relay's claim, which locks both) would otherwise wait for an
                // erasure that waits for it.
                diesel::sql_query(
                    "SELECT d.seq
                     FROM (SELECT o.seq FROM outbox o
                           WHERE o.org_id = $1 AND o.lead_id = $2 AND o.erased_at IS NULL
                             AND o.seq > $3
                           ORDER BY o.seq
                           LIMIT $4) o
                     JOIN deliveries d ON d.seq = o.seq
                     ORDER BY d.seq, d.endpoint_id
                     FOR UPDATE OF d",
                )
                .bind::<SqlUuid, _>(org_id)
                .bind::<SqlUuid, _>(lead_id)
                .bind::<Int8, _>(after)
                .bind::<Int8, _>(ERASE_CHUNK)
                .execute(conn)
                .await?;
                let chunk: Vec<EventOfLead> = diesel::sql_query(
                    "SELECT seq, event_id, event_type, payload
                     FROM outbox
                     WHERE org_id = $1 AND lead_id = $2 AND erased_at IS NULL AND seq > $3
                     ORDER BY seq
                     LIMIT $4
                     FOR UPDATE",
                )
                .bind::<SqlUuid, _>(org_id)
                .bind::<SqlUuid, _>(lead_id)
                .bind::<Int8, _>(after)
                .bind::<Int8, _>(ERASE_CHUNK)
                .load(conn)
                .await?;
                let Some(last) = chunk.last() else { break };
                after = last.seq;
                events += chunk.len();
                reduce_events(conn, org_id, lead_id, &chunk, compress, now).await?;
                if (chunk.len() as i64) < ERASE_CHUNK {
                    break;
                }
            }
            // The kept answers about the lead, through their index; with the lead locked, an
            // answer being kept meanwhile waits for this commit and then finds no lead
            // (`Store::idempotency_keep`).
            let idempotency_answers =
                Store::forget_idempotency_answers(conn, org_id, lead_id).await?;
            // Its handoffs go with it (ON DELETE CASCADE).
            diesel::sql_query("DELETE FROM leads WHERE org_id = $1 AND id = $2")
                .bind::<SqlUuid, _>(org_id)
                .bind::<SqlUuid, _>(lead_id)
                .execute(conn)
                .await?;
            outbox::append(
                conn,
                &Envelope::new(
                    EventType::LeadErased,
                    org_id,
                    now,
                    ErasedData {
                        lead: LeadRef { id: lead_id },
                        erased_at: now,
                    },
                ),
                compress,
            )
            .await?;
            Ok(Erased {
                events,
                idempotency_answers,
            })
        })
        .await
    }
}

/// The lead's erasure lock, held by its erasure to the commit: the workers' outcome batches
/// take it shared, and skip the lead while an erasure holds it (its key's seed, 20, sets it
/// apart from the lead's order lock, seed 17).
pub const ERASING: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1::text, 20))";

/// How many of a lead's events an erasure reduces per statement.
const ERASE_CHUNK: i64 = 500;

/// Replaces `chunk`'s envelopes by their reduced envelopes, strips their attempt logs of what
/// the receiver said, and ends their deliveries unless they succeeded.
async fn reduce_events(
    conn: &mut diesel_async::AsyncPgConnection,
    org_id: Uuid,
    lead_id: Uuid,
    chunk: &[EventOfLead],
    compress: bool,
    now: time::OffsetDateTime,
) -> Result<(), StoreError> {
    let seqs: Vec<i64> = chunk.iter().map(|e| e.seq).collect();
    // The stored envelopes may be compressed (`crate::payload`): each is read here, not
    // in SQL, for the one field its reduced envelope keeps.
    let payloads = chunk
        .iter()
        .map(|e| {
            let env = crate::payload::unpack(&e.payload)?;
            let Occurred { occurred_at } = serde_json::from_slice(&env).map_err(|err| {
                crate::payload::PayloadError::new(format!("no occurred_at: {err}"))
            })?;
            let reduced = ReducedEnvelope {
                id: e.event_id,
                event_type: &e.event_type,
                version: "1",
                occurred_at: &occurred_at,
                org_id,
                data: ReducedData {
                    lead: LeadRef { id: lead_id },
                },
                erased: true,
            };
            Ok(crate::payload::pack(reduced.to_bytes(), compress))
        })
        .collect::<Result<Vec<Vec<u8>>, StoreError>>()?;
    // What the relay has not published yet leaves its queue first: the relay locks only the
    // queue's row of a new delivery (`crate::outbox`, `CLAIM_UNSENT`), so the erasure waits
    // here for a relay publishing one of these (whose envelope is then the whole one, sent
    // before the erasure, as if it had come a moment earlier), and a relay that comes after
    // finds the row gone and publishes nothing from before the erasure. Before the rows below,
    // so that whether the event has a feed position is read after that relay committed.
    diesel::sql_query("DELETE FROM deliveries_unsent WHERE seq = ANY($1)")
        .bind::<Array<Int8>, _>(&seqs)
        .execute(conn)
        .await?;
    // The deliveries' rows, as every writer of a delivery's state (they are locked
    // already): each open delivery ended `skipped` for `erased`, its answers stripped, its
    // row marked `erased`. Due for the relay only if its event never had a feed position (in
    // its row or in `event_feed`) and is no test event: the relay then publishes the reduced
    // event for the feed, and the worker finds the delivery ended. The event's row below keeps
    // the reduced envelope, the erasure's time and its attempt log (kept there for the events
    // sent before deliveries had rows of their own) stripped of the receivers' answers.
    diesel::sql_query(crate::deliveries::state::within::ERASED)
        .bind::<Array<Int8>, _>(&seqs)
        .bind::<Int8, _>(seqs.iter().copied().min().unwrap_or(0) >> 32)
        .bind::<Int8, _>(seqs.iter().copied().max().unwrap_or(0) >> 32)
        .execute(conn)
        .await?;
    diesel::sql_query(
        "UPDATE outbox o SET
                 payload = v.payload,
                 erased_at = $3,
                 attempt_log = coalesce(
                     (SELECT jsonb_agg(e - 'response_body' - 'request_headers' - 'signatures' - 'b' - 'g'
                               ORDER BY i)
                      FROM jsonb_array_elements(o.attempt_log) WITH ORDINALITY AS t(e, i)),
                     '[]'::jsonb)
             FROM unnest($1::int8[], $2::bytea[]) AS v(seq, payload)
             WHERE o.seq = v.seq",
    )
        .bind::<Array<Int8>, _>(&seqs)
        .bind::<Array<Bytea>, _>(&payloads)
        .bind::<diesel::sql_types::Timestamptz, _>(now)
        .execute(conn)
        .await?;
    Ok(())
}
