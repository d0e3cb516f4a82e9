//! Lead writes: each change is written together with the events it causes, in one
//! transaction, by compare-and-set on the lead's revision (a few rounds), then under the row's
//! lock; so an event exists if and only if its change committed, and events of one lead are
//! appended in the order of its revisions.

use crate::answer::ReadToEnd;
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, SelectableHelper};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use qualifier_domain::event::{ChangeEvent, lead_change_events};
use qualifier_domain::lead::Expected;
use qualifier_domain::lead::conversation_url;
use qualifier_domain::timefmt::now_millis;
use qualifier_domain::{Envelope, EventType, FieldError, Lead, Stage};
use serde_json::Map;
use uuid::Uuid;

use crate::schema::leads;
use crate::{StoreError, outbox};

use super::statement::{RowWrite, read_versioned, write_with_events};
use super::{
    InboundContact, InternalPatch, LeadRow, NewLead, PHONE_UNIQUE, PublicPatch, VersionedLead,
};

pub(crate) async fn lock_lead(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    lead_id: Uuid,
) -> Result<LeadRow, StoreError> {
    leads::table
        .filter(leads::id.eq(lead_id))
        .filter(leads::org_id.eq(org_id))
        .select(LeadRow::as_select())
        .for_update()
        .first_row(conn)
        .await
        .optional()?
        .ok_or(StoreError::NotFound("Lead not found"))
}

/// Appends one envelope per emitted event, all carrying the same snapshot.
pub(crate) async fn emit(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    lead: &Lead,
    events: &[ChangeEvent],
    compress: bool,
) -> Result<(), StoreError> {
    for e in events {
        outbox::append(
            conn,
            &Envelope::new(e.event_type, org_id, lead.updated_at, e.data(lead)),
            compress,
        )
        .await?;
    }
    Ok(())
}

/// Writes `after` over its locked row and appends the events its change from `before` emits.
async fn write_change(
    conn: &mut AsyncPgConnection,
    org_id: Uuid,
    before: &Lead,
    after: &Lead,
    compress: bool,
) -> Result<(), StoreError> {
    diesel::update(leads::table.filter(leads::id.eq(after.id)))
        .set(LeadRow::from_lead(org_id, after))
        .execute(conn)
        .await?;
    emit(
        conn,
        org_id,
        after,
        &lead_change_events(before, after),
        compress,
    )
    .await
}

/// `after` as the change writes it: its time (never before the last change's, whatever the
/// clocks of two replicas say) and the next revision. The revision is the one the database
/// holds for the row as read plus one, and the write only applies to the row as read (a row
/// version check or a row lock), so no two snapshots share a revision.
fn next_state(before: &Lead, after: &mut Lead) {
    after.updated_at = now_millis().max(before.updated_at);
    after.revision = before.revision + 1;
}

/// `change` applied to a copy of `before`, once its revision is the one `expected`: `None` when
/// it changes nothing (nothing is written, no event emitted), otherwise the new state with its
/// revision and `updated_at` moved on. The optimistic and the locked path of a change both
/// decide through it.
fn changed<F>(before: &Lead, expected: &Expected, change: &F) -> Result<Option<Lead>, StoreError>
where
    F: Fn(&mut Lead) -> Result<(), FieldError>,
{
    if !expected.admits(before.revision) {
        return Err(StoreError::Changed {
            revision: before.revision,
        });
    }
    let mut after = before.clone();
    change(&mut after).map_err(StoreError::Invalid)?;
    if after == *before {
        return Ok(None);
    }
    next_state(before, &mut after);
    Ok(Some(after))
}

/// The lead an inbound contact creates when its phone is new.
fn fresh_lead(base: &str, c: &InboundContact) -> Result<Lead, FieldError> {
    let profile = match &c.profile {
        Some(p) => qualifier_domain::validate::parse_profile(p)?,
        None => Map::new(),
    };
    let now = now_millis();
    let id = Uuid::now_v7();
    Ok(Lead {
        id,
        name: c.name.clone(),
        email: c.email.clone(),
        phone: c.phone.clone(),
        channel: c.channel.clone(),
        qualification_stage: Stage::Qualifying,
        route_target: None,
        profile,
        external_ref: None,
        ai_paused: false,
        conversation_url: conversation_url(base, id),
        created_at: now,
        updated_at: now,
        revision: 1,
    })
}

/// Compare-and-set rounds a change makes before it falls back to locking the row: each lost
/// round means another writer changed the same lead in between, so a few are plenty.
const CAS_ROUNDS: usize = 4;

impl crate::facets::Leads<'_> {
    async fn lead_id_by_phone(
        &self,
        org_id: Uuid,
        phone: &str,
    ) -> Result<Option<Uuid>, StoreError> {
        let mut conn = self.conn().await?;
        Ok(leads::table
            .filter(leads::org_id.eq(org_id))
            .filter(leads::phone.eq(phone))
            .select(leads::id)
            .first_row(&mut conn)
            .await
            .optional()?)
    }

    /// Maps a phone uniqueness violation to `LeadExists` naming the lead that holds the phone.
    async fn phone_conflict(&self, org_id: Uuid, phone: &str, e: StoreError) -> StoreError {
        match &e {
            StoreError::Db(db) if StoreError::is_unique_violation(db, PHONE_UNIQUE) => {
                match self.lead_id_by_phone(org_id, phone).await {
                    Ok(Some(id)) => StoreError::LeadExists(id),
                    Ok(None) => StoreError::Conflict("Lead already exists".into()),
                    Err(other) => other,
                }
            }
            _ => e,
        }
    }

    /// Public POST: creates the lead and emits nothing (never `lead.created`).
    pub async fn create_lead(&self, org_id: Uuid, new: NewLead) -> Result<Lead, StoreError> {
        let now = now_millis();
        let id = Uuid::now_v7();
        let lead = Lead {
            id,
            name: new.name,
            email: new.email,
            phone: new.phone,
            channel: new.channel,
            qualification_stage: Stage::Qualifying,
            route_target: new.route_target,
            profile: new.profile,
            external_ref: new.external_ref,
            ai_paused: false,
            conversation_url: conversation_url(&self.app_base_url, id),
            created_at: now,
            updated_at: now,
            revision: 1,
        };
        let mut conn = self.conn().await?;
        let res = diesel::insert_into(leads::table)
            .values(LeadRow::from_lead(org_id, &lead))
            .execute(&mut conn)
            .await;
        drop(conn);
        match res {
            Ok(_) => Ok(lead),
            Err(e) => Err(self
                .phone_conflict(org_id, lead.phone.as_str(), crate::orgs::org_missing(e))
                .await),
        }
    }

    /// Applies `change` to a copy of the lead, writes it if anything changed, and appends the
    /// events the change emits, all at once. `expected` is checked against the very row the
    /// write applies to, so a condition that held when read and not when written is refused
    /// ([`StoreError::Changed`]), never written. `first`: the lead as already read for this
    /// request ([`Leads::get_leads`], which matched its org), or `None` to read it here.
    async fn change_lead<F>(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        expected: &Expected,
        first: Option<VersionedLead>,
        change: F,
    ) -> Result<Lead, StoreError>
    where
        F: Fn(&mut Lead) -> Result<(), FieldError> + Send + Sync + 'static,
    {
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        // A read made for this lead elsewhere (`lead-api` batches the reads of concurrent
        // requests into one statement) is the first round's; each later round reads again.
        let mut first = first.filter(|v| v.lead.id == lead_id);
        // Optimistic first: read, change in memory, write row and events in one statement that
        // only applies to the row as read. Two round trips instead of five.
        for _ in 0..CAS_ROUNDS {
            let read = first.take();
            let res = async {
                let VersionedLead {
                    lead: before,
                    version,
                } = match read {
                    Some(v) => v,
                    None => read_versioned(&mut conn, org_id, lead_id, &base).await?,
                };
                let Some(after) = changed(&before, expected, &change)? else {
                    return Ok(Some(before));
                };
                let events = lead_change_events(&before, &after);
                let relay = self.connected_relay();
                let written = write_with_events(
                    &mut conn,
                    org_id,
                    &after,
                    RowWrite::Update { version },
                    &events,
                    self.compress_payloads,
                    relay.is_none(),
                )
                .await?;
                // A change that emits nothing wrote no delivery: nothing for the relay.
                crate::LocalRelay::wake_after(relay, written && !events.is_empty());
                Ok::<_, StoreError>(written.then_some(after))
            }
            .await;
            match res {
                Ok(Some(lead)) => return Ok(lead),
                Ok(None) => continue,
                Err(StoreError::Db(e)) if StoreError::is_unique_violation(&e, PHONE_UNIQUE) => {
                    return Err(StoreError::Conflict("Lead already exists".into()));
                }
                Err(e) => return Err(e),
            }
        }
        // Contended: lock the row and change it in a transaction, which always makes progress.
        let res = crate::tx::transaction(&mut conn, async move |conn| {
            let before = lock_lead(conn, org_id, lead_id).await?.to_lead(&base)?;
            let Some(after) = changed(&before, expected, &change)? else {
                return Ok(before);
            };
            write_change(conn, org_id, &before, &after, compress).await?;
            Ok(after)
        })
        .await;
        drop(conn);
        match res {
            Err(StoreError::Db(e)) if StoreError::is_unique_violation(&e, PHONE_UNIQUE) => {
                Err(StoreError::Conflict("Lead already exists".into()))
            }
            other => other,
        }
    }

    /// Public PATCH. Only closing emits (`lead.stage_changed`, when the stage actually changes).
    /// `expected` is the request's `If-Match`; `first` as in [`Store::change_lead`].
    pub async fn patch_lead_public(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        expected: &Expected,
        first: Option<VersionedLead>,
        patch: PublicPatch,
    ) -> Result<Lead, StoreError> {
        self.change_lead(org_id, lead_id, expected, first, move |lead| {
            if let Some(r) = &patch.external_ref {
                lead.external_ref = Some(r.clone());
            }
            if let Some(p) = patch.ai_paused {
                lead.ai_paused = p;
            }
            if patch.close {
                lead.qualification_stage = Stage::Closed;
            }
            Ok(())
        })
        .await
    }

    /// Internal PATCH by the agent: contact and profile changes emit `lead.updated`, stage changes
    /// `lead.stage_changed` (and `lead.qualified` into qualified).
    pub async fn patch_lead_internal(
        &self,
        org_id: Uuid,
        lead_id: Uuid,
        first: Option<VersionedLead>,
        patch: InternalPatch,
    ) -> Result<Lead, StoreError> {
        self.change_lead(org_id, lead_id, &Expected::Any, first, move |lead| {
            if let Some(n) = &patch.name {
                lead.name = n.clone();
            }
            if let Some(e) = &patch.email {
                lead.email = Some(e.clone());
            }
            if let Some(p) = &patch.phone {
                lead.phone = p.clone();
            }
            if let Some(p) = &patch.profile {
                lead.profile = qualifier_domain::validate::merge_profile(&lead.profile, p)?;
            }
            if let Some(r) = &patch.route_target {
                lead.route_target = Some(r.clone());
            }
            if let Some(s) = patch.stage {
                lead.qualification_stage = s;
            }
            Ok(())
        })
        .await
    }

    /// An inbound contact: creates the lead with `lead.created`, or updates the known contact with
    /// `lead.updated` when its contact or profile fields changed. Returns `(lead, created)`.
    pub async fn inbound_contact(
        &self,
        org_id: Uuid,
        c: InboundContact,
    ) -> Result<(Lead, bool), StoreError> {
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        // A new contact, the common case: the lead and `lead.created` in one statement. A known
        // phone writes nothing there and takes the transaction below, which updates it.
        let fresh = fresh_lead(&base, &c).map_err(StoreError::Invalid)?;
        let relay = self.connected_relay();
        let created = match write_with_events(
            &mut conn,
            org_id,
            &fresh,
            RowWrite::Insert,
            &[ChangeEvent::plain(EventType::LeadCreated)],
            self.compress_payloads,
            relay.is_none(),
        )
        .await
        {
            Ok(created) => created,
            // Another first message from the same phone committed its lead while this one's
            // statement ran: nothing of this one was written, and the phone is now known.
            Err(StoreError::Db(e)) if StoreError::is_unique_violation(&e, PHONE_UNIQUE) => false,
            Err(e) => return Err(e),
        };
        if created {
            crate::LocalRelay::wake_after(relay, true);
            return Ok((fresh, true));
        }
        // The known contact can be erased between the insert that found it and the lock that
        // reads it: the lock then finds no row, and the message is a new contact's first one
        // after all, so the insert is tried again. Once is enough unless the new lead is erased
        // in that moment too; a few rounds bound it.
        for _ in 0..3 {
            let c = c.clone();
            let base = base.clone();
            let done = crate::tx::transaction(&mut conn, async move |conn| {
                Self::inbound_known(conn, org_id, c, &base, compress).await
            })
            .await?;
            if let Some(answer) = done {
                return Ok(answer);
            }
        }
        Err(StoreError::NotFound("Lead not found"))
    }

    /// [`Leads::inbound_contact`]'s transaction for a phone the insert found taken: `None` when
    /// the lead it found is gone by the time it is locked (erased meanwhile).
    async fn inbound_known(
        conn: &mut diesel_async::AsyncPgConnection,
        org_id: Uuid,
        c: InboundContact,
        base: &str,
        compress: bool,
    ) -> Result<Option<(Lead, bool)>, StoreError> {
        let fresh = fresh_lead(base, &c).map_err(StoreError::Invalid)?;
        // ON CONFLICT DO NOTHING makes two simultaneous first messages from one phone create
        // one lead: the loser falls through to the update path below.
        let inserted = diesel::insert_into(leads::table)
            .values(LeadRow::from_lead(org_id, &fresh))
            .on_conflict((leads::org_id, leads::phone))
            .do_nothing()
            .execute(conn)
            .await
            .map_err(crate::orgs::org_missing)?;
        if inserted == 1 {
            emit(
                conn,
                org_id,
                &fresh,
                &[ChangeEvent::plain(EventType::LeadCreated)],
                compress,
            )
            .await?;
            return Ok(Some((fresh, true)));
        }
        let Some(row) = leads::table
            .filter(leads::org_id.eq(org_id))
            .filter(leads::phone.eq(c.phone.as_str()))
            .select(LeadRow::as_select())
            .for_update()
            .first_row(conn)
            .await
            .optional()?
        else {
            return Ok(None);
        };
        let before = row.to_lead(base)?;
        let mut after = before.clone();
        after.name = c.name;
        if let Some(e) = c.email {
            after.email = Some(e);
        }
        if let Some(p) = &c.profile {
            after.profile = qualifier_domain::validate::merge_profile(&after.profile, p)
                .map_err(StoreError::Invalid)?;
        }
        if after == before {
            return Ok(Some((before, false)));
        }
        next_state(&before, &mut after);
        write_change(conn, org_id, &before, &after, compress).await?;
        Ok(Some((after, false)))
    }
}
