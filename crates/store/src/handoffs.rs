//! Handoffs: requested -> accepted -> released, each step emitting its event with the handoff
//! and the lead snapshot, in the step's transaction.

use crate::answer::ReadToEnd;
use diesel::{
    ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable, SelectableHelper,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::timefmt::now_millis;
use qualifier_domain::{Envelope, EventData, EventType, Handoff, HandoffState, Lead};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::leads::lock_lead;
use crate::schema::handoffs;
use crate::{StoreError, outbox};

const ONE_OPEN: &str = "handoffs_one_open_per_lead";

#[derive(Debug, Clone, Queryable, Selectable, diesel::Insertable)]
#[diesel(table_name = handoffs)]
struct HandoffRow {
    id: Uuid,
    org_id: Uuid,
    lead_id: Uuid,
    state: HandoffState,
    reason: Option<String>,
    operator: Option<String>,
    requested_at: OffsetDateTime,
    accepted_at: Option<OffsetDateTime>,
    released_at: Option<OffsetDateTime>,
}

impl HandoffRow {
    fn to_handoff(&self) -> Handoff {
        Handoff {
            id: self.id,
            lead_id: self.lead_id,
            state: self.state,
            reason: self.reason.clone(),
            operator: self.operator.clone(),
            requested_at: self.requested_at,
            accepted_at: self.accepted_at,
            released_at: self.released_at,
        }
    }
}

async fn emit_handoff(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    event_type: EventType,
    lead: Lead,
    handoff: &Handoff,
    at: OffsetDateTime,
    compress: bool,
) -> Result<(), StoreError> {
    let data = EventData {
        previous_stage: None,
        previous: None,
        lead,
        handoff: Some(handoff.clone()),
    };
    outbox::append(conn, &Envelope::new(event_type, org_id, at, data), compress).await?;
    Ok(())
}

impl crate::facets::Leads<'_> {
    /// Opens a handoff; 409 `Handoff already open` while another is requested or accepted.
    pub async fn create_handoff(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        reason: Option<String>,
    ) -> Result<Handoff, StoreError> {
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        let res = crate::tx::transaction(&mut conn, async move |conn| {
            let lead = lock_lead(conn, org_id, lead_id).await?.to_lead(&base)?;
            let now = now_millis();
            let row = HandoffRow {
                id: Uuid::now_v7(),
                org_id,
                lead_id,
                state: HandoffState::Requested,
                reason,
                operator: None,
                requested_at: now,
                accepted_at: None,
                released_at: None,
            };
            diesel::insert_into(handoffs::table)
                .values(&row)
                .execute(conn)
                .await?;
            let handoff = row.to_handoff();
            emit_handoff(
                conn,
                org_id,
                EventType::HandoffCreated,
                lead,
                &handoff,
                now,
                compress,
            )
            .await?;
            Ok(handoff)
        })
        .await;
        match res {
            Err(StoreError::Db(e)) if StoreError::is_unique_violation(&e, ONE_OPEN) => {
                Err(StoreError::Conflict("Handoff already open".into()))
            }
            other => other,
        }
    }

    pub async fn accept_handoff(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        handoff_id: Uuid,
        operator: String,
    ) -> Result<Handoff, StoreError> {
        self.move_handoff(
            org_id,
            lead_id,
            handoff_id,
            HandoffState::Accepted,
            Some(operator),
        )
        .await
    }

    pub async fn release_handoff(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        handoff_id: Uuid,
    ) -> Result<Handoff, StoreError> {
        self.move_handoff(org_id, lead_id, handoff_id, HandoffState::Released, None)
            .await
    }

    async fn move_handoff(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        handoff_id: Uuid,
        next: HandoffState,
        operator: Option<String>,
    ) -> Result<Handoff, StoreError> {
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            // The lead first, as every writer that snapshots it does (`create_handoff`, the
            // lead's changes, the erasure): an erasure that holds the lead is waited for and
            // then leaves nothing to accept (404); one that comes after waits for this event to
            // commit and erases it with the rest. Reading the lead without its lock let an
            // erasure that had already collected the lead's events miss this one, which kept
            // the whole lead in the outbox and went out to the receiver.
            let lead = lock_lead(conn, org_id, lead_id).await?.to_lead(&base)?;
            let mut row = handoffs::table
                .filter(handoffs::id.eq(handoff_id))
                .filter(handoffs::lead_id.eq(lead_id))
                .filter(handoffs::org_id.eq(org_id))
                .select(HandoffRow::as_select())
                .for_update()
                .first_row(conn)
                .await
                .optional()?
                .ok_or(StoreError::NotFound("Handoff not found"))?;
            let current = row.to_handoff().state;
            if !current.can_move_to(next) {
                let verb = if next == HandoffState::Accepted {
                    "accepted"
                } else {
                    "released"
                };
                return Err(StoreError::Conflict(format!(
                    "Handoff cannot be {verb} from state {}",
                    current.as_str()
                )));
            }
            let now = now_millis();
            row.state = next;
            let event_type = match next {
                HandoffState::Accepted => {
                    row.accepted_at = Some(now);
                    row.operator = operator;
                    EventType::HandoffAccepted
                }
                _ => {
                    row.released_at = Some(now);
                    EventType::HandoffReleased
                }
            };
            diesel::update(handoffs::table.filter(handoffs::id.eq(handoff_id)))
                .set((
                    handoffs::state.eq(row.state),
                    handoffs::operator.eq(&row.operator),
                    handoffs::accepted_at.eq(row.accepted_at),
                    handoffs::released_at.eq(row.released_at),
                ))
                .execute(conn)
                .await?;
            let handoff = row.to_handoff();
            emit_handoff(conn, org_id, event_type, lead, &handoff, now, compress).await?;
            Ok(handoff)
        })
        .await
    }
}
