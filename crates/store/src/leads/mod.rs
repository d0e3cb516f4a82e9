//! Leads: their rows and the inputs that create and change them, and the reads (one lead, a
//! batch, a page). The writes, each in the transaction that also appends its events, are in
//! `write`.

use crate::answer::ReadToEnd;
use diesel::{
    ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable, SelectableHelper,
};
use diesel_async::RunQueryDsl;
use qualifier_domain::lead::conversation_url;
use qualifier_domain::validate::{Channel, Email, Name, Phone, RouteTarget};
use qualifier_domain::{ExternalRef, Lead, Stage};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::schema::leads;

const PHONE_UNIQUE: &str = "leads_org_phone";

/// The select list of a [`VersionedLead`] read from `leads l` (the batched read and the one a
/// change makes on its own connection, `write::read_versioned`).
macro_rules! versioned_lead_select {
    () => {
        "SELECT l.id, l.org_id, l.name, l.email, l.phone, l.channel, l.qualification_stage,
                l.route_target, l.profile, l.external_system, l.external_id, l.external_url,
                l.ai_paused, l.created_at, l.updated_at, l.revision,
                l.xmin::text::int8 AS version"
    };
}

#[derive(
    Debug,
    Clone,
    Queryable,
    Selectable,
    diesel::QueryableByName,
    diesel::Insertable,
    diesel::AsChangeset,
)]
#[diesel(table_name = leads, treat_none_as_null = true)]
pub struct LeadRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub email: Option<String>,
    pub phone: String,
    pub channel: String,
    pub qualification_stage: Stage,
    pub route_target: Option<String>,
    pub profile: Value,
    pub external_system: Option<String>,
    pub external_id: Option<String>,
    pub external_url: Option<String>,
    pub ai_paused: bool,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub revision: i64,
}

use diesel::QueryableByName;

/// A lead as read, and the row version (`xmin`, which every write of the row changes) that a
/// change of it is written against: a change read this way applies only if the row is still
/// that version (`write::change_lead`).
#[derive(Debug, Clone)]
pub struct VersionedLead {
    pub lead: Lead,
    version: i64,
}

#[derive(QueryableByName)]
struct VersionedRow {
    #[diesel(embed)]
    lead: LeadRow,
    #[diesel(sql_type = diesel::sql_types::Int8)]
    version: i64,
}

impl VersionedRow {
    /// The row as the domain's lead, with its version ([`LeadRow::to_lead`]).
    fn to_versioned(&self, app_base_url: &str) -> Result<VersionedLead, StoreError> {
        Ok(VersionedLead {
            lead: self.lead.to_lead(app_base_url)?,
            version: self.version,
        })
    }
}

/// A lead of a list page, with how many rows the page read before its byte budget.
#[derive(QueryableByName)]
struct BudgetedLead {
    #[diesel(embed)]
    lead: LeadRow,
    #[diesel(sql_type = diesel::sql_types::Int8)]
    total: i64,
}

impl LeadRow {
    /// The row as the domain's lead. Every text goes back through its parser: a value that no
    /// longer parses is an error naming it, never passed on as if it were valid.
    pub fn to_lead(&self, app_base_url: &str) -> Result<Lead, StoreError> {
        let external_ref = match (&self.external_system, &self.external_id) {
            (Some(system), Some(id)) => Some(ExternalRef {
                system: system.clone(),
                id: id.clone(),
                url: self.external_url.clone(),
            }),
            _ => None,
        };
        Ok(Lead {
            id: self.id,
            name: StoreError::stored("lead name", Name::parse("name", &self.name))?,
            email: self
                .email
                .as_deref()
                .map(|e| StoreError::stored("lead email", Email::parse(e)))
                .transpose()?,
            phone: StoreError::stored("lead phone", Phone::parse(&self.phone))?,
            channel: StoreError::stored("lead channel", Channel::parse(&self.channel))?,
            qualification_stage: self.qualification_stage,
            route_target: self
                .route_target
                .as_deref()
                .map(|r| StoreError::stored("lead route_target", RouteTarget::parse(r)))
                .transpose()?,
            profile: self.profile.as_object().cloned().unwrap_or_default(),
            external_ref,
            ai_paused: self.ai_paused,
            conversation_url: conversation_url(app_base_url, self.id),
            created_at: self.created_at,
            updated_at: self.updated_at,
            revision: self.revision,
        })
    }

    fn from_lead(org_id: Uuid, l: &Lead) -> LeadRow {
        LeadRow {
            id: l.id,
            org_id,
            name: l.name.as_str().to_owned(),
            email: l.email.as_ref().map(|e| e.as_str().to_owned()),
            phone: l.phone.as_str().to_owned(),
            channel: l.channel.as_str().to_owned(),
            qualification_stage: l.qualification_stage,
            route_target: l.route_target.as_ref().map(|r| r.as_str().to_owned()),
            profile: Value::Object(l.profile.clone()),
            external_system: l.external_ref.as_ref().map(|r| r.system.clone()),
            external_id: l.external_ref.as_ref().map(|r| r.id.clone()),
            external_url: l.external_ref.as_ref().and_then(|r| r.url.clone()),
            ai_paused: l.ai_paused,
            created_at: l.created_at,
            updated_at: l.updated_at,
            revision: l.revision,
        }
    }
}

/// A lead to create (public POST).
#[derive(Debug, Clone)]
pub struct NewLead {
    pub name: Name,
    pub phone: Phone,
    pub email: Option<Email>,
    pub channel: Channel,
    pub profile: Map<String, Value>,
    pub external_ref: Option<ExternalRef>,
    pub route_target: Option<RouteTarget>,
}

/// An inbound contact (internal API): a new phone creates the lead, a known phone updates it.
#[derive(Debug, Clone)]
pub struct InboundContact {
    pub name: Name,
    pub phone: Phone,
    pub email: Option<Email>,
    pub channel: Channel,
    /// Merged key by key into a known lead's profile (null removes a key).
    pub profile: Option<Value>,
}

/// The public PATCH: only write-back fields and closing.
#[derive(Debug, Clone, Default)]
pub struct PublicPatch {
    pub external_ref: Option<ExternalRef>,
    pub ai_paused: Option<bool>,
    pub close: bool,
}

/// The internal PATCH used by the AI agent.
#[derive(Debug, Clone, Default)]
pub struct InternalPatch {
    pub name: Option<Name>,
    pub email: Option<Email>,
    pub phone: Option<Phone>,
    pub profile: Option<Value>,
    pub route_target: Option<RouteTarget>,
    pub stage: Option<Stage>,
}

mod statement;
mod write;

pub(crate) use write::lock_lead;

impl crate::facets::Leads<'_> {
    pub async fn get_lead(&self, org_id: Uuid, lead_id: Uuid) -> Result<Lead, StoreError> {
        let mut conn = self.conn().await?;
        let row = leads::table
            .filter(leads::id.eq(lead_id))
            .filter(leads::org_id.eq(org_id))
            .select(LeadRow::as_select())
            .first_row(&mut conn)
            .await
            .optional()?
            .ok_or(StoreError::NotFound("Lead not found"))?;
        row.to_lead(&self.app_base_url)
    }

    /// Reads many leads in one statement, each `(org_id, lead_id)` answered in order, with the
    /// row version a change of it is written against. A lead of another org is not found,
    /// exactly as in [`Leads::get_lead`]: the org is matched here, per request, after the
    /// shared primary-key lookup (the statement names no org, so no other index can serve it).
    pub async fn get_leads(
        &self,
        wanted: &[(Uuid, Uuid)],
    ) -> Result<Vec<Result<VersionedLead, StoreError>>, StoreError> {
        use diesel::sql_types::{Array, Uuid as SqlUuid};
        let ids: Vec<Uuid> = wanted.iter().map(|(_, id)| *id).collect();
        let mut conn = self.conn().await?;
        let rows: Vec<VersionedRow> = crate::prepared::prepared::<Array<SqlUuid>, _>(
            concat!(versioned_lead_select!(), " FROM leads l, (VALUES ("),
            ")) AS p(ids) WHERE l.id = ANY (p.ids)",
            &ids,
        )
        .load(&mut conn)
        .await?;
        drop(conn);
        Ok(wanted
            .iter()
            .map(|(org_id, id)| {
                let r = rows
                    .iter()
                    .find(|r| r.lead.id == *id && r.lead.org_id == *org_id)
                    .ok_or(StoreError::NotFound("Lead not found"))?;
                r.to_versioned(&self.app_base_url)
            })
            .collect())
    }

    /// [`Leads::get_leads`], but one bad row (a stored value this version cannot parse fails the
    /// whole statement) fails only its own request: after such a failure each lead is read
    /// alone. An unreachable database fails them all, as it would each.
    pub async fn get_leads_isolated(
        &self,
        wanted: &[(Uuid, Uuid)],
    ) -> Result<Vec<Result<VersionedLead, StoreError>>, StoreError> {
        match self.get_leads(wanted).await {
            Err(e @ StoreError::Unavailable(_)) => Err(e),
            Err(_) if wanted.len() > 1 => {
                let mut each = Vec::with_capacity(wanted.len());
                for w in wanted {
                    each.push(match self.get_leads(std::slice::from_ref(w)).await {
                        Ok(mut one) => one
                            .pop()
                            .unwrap_or(Err(StoreError::NotFound("Lead not found"))),
                        Err(e) => Err(e),
                    });
                }
                Ok(each)
            }
            other => other,
        }
    }

    /// One page of the org's leads in `(updated_at, id)` order, from `updated_since` (inclusive)
    /// or strictly after the keyset `after`, through the `leads_org_updated` index. Returns the
    /// page and, when there is more, the key to continue after.
    pub async fn list_leads(
        &self,
        org_id: Uuid,
        updated_since: Option<OffsetDateTime>,
        after: Option<(OffsetDateTime, Uuid)>,
        limit: i64,
        budget: usize,
    ) -> Result<(Vec<Lead>, Option<(OffsetDateTime, Uuid)>), StoreError> {
        use diesel::sql_types::{Int8, Nullable, Timestamptz};
        let mut conn = self.conn().await?;
        // The page's rows through `leads_org_updated` (a row comparison for the cursor, one
        // range of the index), then only those within the byte budget read out: a lead's size
        // is estimated from its profile's JSON text (the one field that grows; not its stored
        // size, which compression makes far smaller than what is sent) plus a fixed part, so
        // the rows past the budget are never fetched whole. The caller's exact cut
        // (`page::fitting`) still applies to what comes back.
        //
        // The lower bound is one row comparison on the index's columns with parameters that are
        // never NULL, so that a generic plan (the one a session keeps) starts the index scan at
        // it: a bound written `($2 IS NULL OR updated_at >= $2)` is no index condition there, and
        // the scan started at the org's oldest lead, reading its whole history up to the page.
        // From `updated_since`: `(updated_at, id) >= (since, nil)` (the nil id is the least, so
        // every lead of that instant is in); after the cursor, strictly beyond its key.
        let (statement, bound_t, bound_id) = match after {
            Some((t, id)) => (LIST_LEADS_AFTER, Some(t), id),
            None => (LIST_LEADS_FROM, updated_since, Uuid::nil()),
        };
        let rows: Vec<BudgetedLead> = diesel::sql_query(statement)
            .bind::<diesel::sql_types::Uuid, _>(org_id)
            .bind::<Nullable<Timestamptz>, _>(bound_t)
            .bind::<diesel::sql_types::Uuid, _>(bound_id)
            .bind::<Int8, _>(limit + 1)
            .bind::<Int8, _>(i64::try_from(budget).unwrap_or(i64::MAX))
            .load(&mut conn)
            .await?;
        let read = rows.as_slice().first().map_or(0, |r| r.total);
        let mut rows: Vec<LeadRow> = rows.into_iter().map(|r| r.lead).collect();
        // More follow when the index had more than a page, or the budget cut the page short.
        let more = read > limit || (rows.len() as i64) < read;
        rows.truncate(limit as usize);
        let next = if more {
            rows.last().map(|r| (r.updated_at, r.id))
        } else {
            None
        };
        let leads = rows
            .iter()
            .map(|r| r.to_lead(&self.app_base_url))
            .collect::<Result<_, _>>()?;
        Ok((leads, next))
    }
}

/// A page of leads from a lower bound on `(updated_at, id)` (`$2`, `$3`; `$2` NULL for none),
/// `$4` rows at most through `leads_org_updated`, cut at the byte budget `$5`; `$cmp` is `>=`
/// (from an instant) or `>` (after a cursor's key).
macro_rules! list_leads {
    ($cmp:literal) => {
        concat!(
            "SELECT id, org_id, name, email, phone, channel, qualification_stage, route_target,
                    profile, external_system, external_id, external_url, ai_paused, created_at,
                    updated_at, revision, total
             FROM (SELECT p.*,
                          sum(coalesce(octet_length(p.profile::text), 0) + 600)
                              OVER (ORDER BY p.updated_at, p.id) AS upto,
                          row_number() OVER (ORDER BY p.updated_at, p.id) AS n,
                          count(*) OVER () AS total
                   FROM (SELECT * FROM leads
                         WHERE org_id = $1
                           AND (updated_at, id) ",
            $cmp,
            " (coalesce($2::timestamptz, '-infinity'), $3::uuid)
                         ORDER BY updated_at, id LIMIT $4) p) w
             WHERE n = 1 OR upto <= $5
             ORDER BY updated_at, id"
        )
    };
}

const LIST_LEADS_FROM: &str = list_leads!(">=");
const LIST_LEADS_AFTER: &str = list_leads!(">");
