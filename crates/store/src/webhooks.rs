//! An org's endpoints (up to [`crate::Store::max_endpoints`]): each one's url, event selection,
//! sealed signing secret, client certificate and pace; the one home of the endpoints' table
//! (`webhooks`, migrations/2026-12-05-000050_several_endpoints/up.sql). The org's *primary*
//! endpoint, its oldest, is what the `webhook` routes of the API and the console's first
//! settings act on ([`EndpointRef::primary`]).

use crate::answer::ReadToEnd;
use diesel::{
    ExpressionMethods, OptionalExtension, QueryDsl, Queryable, Selectable, SelectableHelper,
};
use diesel_async::RunQueryDsl;
use qualifier_domain::EventType;
use qualifier_domain::timefmt::now_millis;
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::endpoints::resolve;
pub use crate::endpoints::{EndpointKey, EndpointRef};
use crate::schema::{secret_format, webhooks};
use crate::secrets::new_webhook_secret;
use qualifier_domain::client_cert::ClientCertInfo;
use qualifier_domain::pace::{DeliveryOrdering, MaxPerSecond, Pace};

pub use crate::receivers::{HeaderShown, ReceiverSettings};
pub use for_delivery::{ClientIdentity, WebhookForDelivery};

mod for_delivery;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhooks)]
pub(crate) struct WebhookRow {
    pub(crate) id: Uuid,
    pub(crate) org_id: Uuid,
    description: String,
    url: String,
    pub(crate) event_types: Vec<EventType>,
    pub(crate) enabled: bool,
    secret_sealed: Vec<u8>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    previous_secret_sealed: Option<Vec<u8>>,
    previous_expires_at: Option<OffsetDateTime>,
    client_cert_pem: Option<String>,
    client_key_sealed: Option<Vec<u8>>,
    client_cert_subject: Option<String>,
    client_cert_issuer: Option<String>,
    client_cert_not_after: Option<OffsetDateTime>,
    max_per_second: Option<i64>,
    ordering: Option<DeliveryOrdering>,
    headers: serde_json::Value,
    auth: Option<serde_json::Value>,
    receiver_secrets_sealed: Option<Vec<u8>>,
    filter: Option<serde_json::Value>,
    destination: Option<serde_json::Value>,
    /// Whether the deployment may still hold secrets in the unbound format (`secret_format`),
    /// read with the row so that no process can act on a stale answer. A subselect diesel
    /// builds (not SQL text), so the statements that read webhooks stay prepared and cached.
    #[diesel(select_expression = secret_format::table.select(secret_format::unbound_allowed).single_value())]
    #[diesel(select_expression_type = diesel::dsl::SingleValue<diesel::dsl::Select<secret_format::table, secret_format::unbound_allowed>>)]
    unbound_allowed: Option<bool>,
}

pub(crate) const UNBOUND_ALLOWED: &str =
    "COALESCE((SELECT unbound_allowed FROM secret_format WHERE id), false)";

/// The settings as the settings screen sees them: never the secret.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Webhook {
    pub id: Uuid,
    pub description: String,
    /// Where an `https` endpoint's requests go; empty (shown `null`) for an endpoint with
    /// another destination.
    #[serde(serialize_with = "empty_as_null")]
    pub url: String,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub created_at: OffsetDateTime,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub updated_at: OffsetDateTime,
    /// The client certificate presented to the endpoint (mutual TLS), without its key; `null`
    /// when none is configured.
    pub client_certificate: Option<ClientCertInfo>,
    /// The most requests per second the endpoint receives, across every replica; `null`: no
    /// throttle.
    pub max_per_second: Option<MaxPerSecond>,
    /// `none`, or `per_lead`: a lead's deliveries one at a time, in event order.
    pub ordering: DeliveryOrdering,
    /// The receiver's own headers, sent with every request; secret values shown masked.
    pub headers: Vec<HeaderShown>,
    /// How requests authenticate to the receiver (`null`: they do not); its secret masked.
    pub auth: Option<serde_json::Value>,
    /// The events the endpoint wants among those it subscribes to (`null`: all of them).
    pub filter: Option<serde_json::Value>,
    /// Where the endpoint sends: `{"type": "https"}` (to `url`) or another destination, its
    /// secret masked (docs/destinations.md).
    pub destination: serde_json::Value,
}

fn empty_as_null<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    if url.is_empty() {
        s.serialize_none()
    } else {
        s.serialize_str(url)
    }
}

impl Webhook {
    /// Where the endpoint sends, in one line for a page: its url, or its destination's type,
    /// address (password masked) and exchange.
    pub fn target(&self) -> std::borrow::Cow<'_, str> {
        if !self.url.is_empty() {
            return self.url.as_str().into();
        }
        let d = &self.destination;
        let text = |k: &str| d.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
        format!(
            "{}: {} exchange {:?} key {:?}",
            text("type"),
            text("url"),
            text("exchange"),
            text("routing_key")
        )
        .into()
    }

    /// The throttle and the ordering.
    pub fn pace(&self) -> Pace {
        Pace {
            max_per_second: self.max_per_second,
            ordering: self.ordering,
        }
    }
}

/// Test events one org may send per minute, API and console together (docs/reliability.md, "Strangers, quotas and pages").
pub const TEST_EVENTS_PER_MINUTE: i64 = 10;

/// The webhook as the internal API shows it: the settings and the endpoint's health.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookStatus {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub health: qualifier_domain::health::EndpointHealth,
    /// How many events its filter left out in the last 24 hours (by the hour).
    pub filtered_last_24h: i64,
}

/// What an endpoint is saved with (`PUT /webhook`, `POST`/`PUT …/endpoints`).
#[derive(Debug, Clone)]
pub struct EndpointSettings {
    pub url: String,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    pub pace: Pace,
    /// `None` keeps the saved one (empty for a new endpoint).
    pub description: Option<String>,
    /// The receiver's headers and credentials; each part absent keeps the saved one.
    pub receiver: ReceiverSettings,
}

/// The row of `at`, locked for the caller's transaction.
pub(crate) async fn locked_row(
    conn: &mut diesel_async::AsyncPgConnection,
    at: EndpointRef,
) -> Result<Option<WebhookRow>, diesel::result::Error> {
    let Some(id) = resolve(conn, at).await? else {
        return Ok(None);
    };
    webhooks::table
        .filter(webhooks::id.eq(id))
        .select(WebhookRow::as_select())
        .for_update()
        .first_row(conn)
        .await
        .optional()
}

/// The url an endpoint is saved with: none (empty) when it has another destination, and one it
/// must have when it has not (the API's parsing refuses the other cases first; this holds the
/// store to it whatever the caller).
fn url_for(receiver: &crate::receivers::Receiver, url: String) -> Result<String, StoreError> {
    match (receiver.has_destination(), url.is_empty()) {
        (true, _) => Ok(String::new()),
        (false, false) => Ok(url),
        (false, true) => Err(StoreError::Invalid(qualifier_domain::FieldError::new(
            "url must be an absolute https URL",
        ))),
    }
}

impl WebhookRow {
    /// The columns the receiver's settings are read from.
    pub(crate) fn receiver_columns(&self) -> crate::receivers::Stored<'_> {
        crate::receivers::Stored {
            headers: &self.headers,
            auth: self.auth.as_ref(),
            destination: self.destination.as_ref(),
            sealed: self.receiver_secrets_sealed.as_deref(),
        }
    }

    pub(crate) fn key(&self) -> EndpointKey {
        EndpointKey {
            org_id: self.org_id,
            endpoint_id: self.id,
        }
    }

    fn public(&self) -> Webhook {
        Webhook {
            id: self.id,
            description: self.description.clone(),
            url: self.url.clone(),
            event_types: self.event_types.clone(),
            enabled: self.enabled,
            created_at: self.created_at,
            updated_at: self.updated_at,
            client_certificate: match (
                &self.client_cert_subject,
                &self.client_cert_issuer,
                self.client_cert_not_after,
            ) {
                (Some(subject), Some(issuer), Some(not_after)) => Some(ClientCertInfo {
                    subject: subject.clone(),
                    issuer: issuer.clone(),
                    not_after,
                }),
                _ => None,
            },
            max_per_second: qualifier_domain::pace::stored_rate(self.max_per_second),
            ordering: self.ordering.unwrap_or_default(),
            headers: crate::receivers::shown_headers(&self.headers),
            auth: crate::receivers::shown_auth(self.auth.as_ref()),
            filter: self.filter.clone(),
            destination: crate::receivers::shown_destination(self.destination.as_ref()),
        }
    }
}

impl crate::facets::Endpoints<'_> {
    /// Creates or replaces the org's primary endpoint (the `webhook` routes). The secret is
    /// generated on creation only and returned then (`Some`); an update keeps the existing
    /// secret and description.
    pub async fn put_webhook(
        &self,
        org_id: Uuid,
        settings: EndpointSettings,
    ) -> Result<(Webhook, Option<String>), StoreError> {
        self.save_endpoint(EndpointRef::primary(org_id), settings, true)
            .await
    }

    /// Creates one more endpoint for the org (`POST …/endpoints`), beyond which the org would
    /// have more than [`Store::max_endpoints`]: 422 `Endpoint limit reached`. Returns it with
    /// its signing secret, shown this once.
    pub async fn create_endpoint(
        &self,
        org_id: Uuid,
        settings: EndpointSettings,
    ) -> Result<(Webhook, String), StoreError> {
        let (hook, secret) = self
            .save_endpoint(EndpointRef::primary(org_id), settings, false)
            .await?;
        // A create always makes a new row, and a new row always has a secret.
        Ok((hook, secret.unwrap_or_default()))
    }

    /// Replaces an endpoint's settings (`PUT …/endpoints/{id}`); its secret stays.
    pub async fn update_endpoint(
        &self,
        at: EndpointRef,
        settings: EndpointSettings,
    ) -> Result<Webhook, StoreError> {
        if at.id.is_none() {
            return Err(at.missing());
        }
        Ok(self.save_endpoint(at, settings, false).await?.0)
    }

    /// The write behind the three above: `at.id` set updates that endpoint; the primary
    /// (`at.id` `None`) with `upsert` updates it, or creates it when the org has none; without
    /// `upsert`, always a new endpoint. The org's row is locked first, so that the count
    /// against the limit, and which endpoint is the primary, hold until the commit.
    async fn save_endpoint(
        &self,
        at: EndpointRef,
        settings: EndpointSettings,
        upsert: bool,
    ) -> Result<(Webhook, Option<String>), StoreError> {
        let key = self.secret_key.clone();
        let limit = self.max_endpoints;
        let org_id = at.org_id;
        let mut conn = self.conn().await?;
        let rate_now = settings.pace.max_per_second;
        let (webhook, secret, rate_changed) =
            crate::tx::transaction(&mut conn, async move |conn| {
                let now = now_millis();
                crate::orgs::lock_org(conn, org_id).await?;
                let existing = if at.id.is_some() || upsert {
                    Some(locked_row(conn, at).await?)
                } else {
                    None
                };
                let EndpointSettings {
                    url,
                    event_types,
                    enabled,
                    pace,
                    description,
                    receiver,
                } = settings;
                let rate = pace.max_per_second.map(|r| i64::from(r.get()));
                match existing {
                    Some(Some(mut row)) => {
                        // What saving does to a failing or disabled endpoint (docs/delivery.md,
                        // "Endpoint health"): the rule is `qualifier_domain::health::on_save`.
                        crate::health::on_save(conn, row.key(), enabled).await?;
                        let before = row.public().pace();
                        let description = description.unwrap_or(row.description.clone());
                        let saved = crate::receivers::Receiver::read(row.receiver_columns(), |b| {
                            key.open_bound(b, row.id)
                        })
                        .map_err(|_| StoreError::Corrupt {
                            what: "receiver secrets",
                            source: qualifier_domain::FieldError::new("they do not open"),
                        })?;
                        let merged = saved.merged(&receiver)?;
                        let url = url_for(&merged, url)?;
                        let cols = merged.columns(|plain| key.seal(plain, row.id));
                        let filter = match &receiver.filter {
                            Some(f) => f.clone(),
                            None => row.filter.clone(),
                        };
                        if filter != row.filter {
                            crate::filters::changed(conn, org_id).await?;
                        }
                        diesel::update(webhooks::table.filter(webhooks::id.eq(row.id)))
                            .set((
                                webhooks::url.eq(&url),
                                webhooks::event_types.eq(&event_types),
                                webhooks::enabled.eq(enabled),
                                webhooks::max_per_second.eq(rate),
                                webhooks::ordering.eq(pace.ordering),
                                webhooks::description.eq(&description),
                                webhooks::headers.eq(&cols.headers),
                                webhooks::auth.eq(&cols.auth),
                                webhooks::receiver_secrets_sealed.eq(&cols.sealed),
                                webhooks::filter.eq(&filter),
                                webhooks::destination.eq(&cols.destination),
                                webhooks::updated_at.eq(now),
                            ))
                            .execute(conn)
                            .await?;
                        let rate_changed = before.max_per_second != pace.max_per_second;
                        row.url = url;
                        row.event_types = event_types;
                        row.enabled = enabled;
                        row.max_per_second = rate;
                        row.ordering = Some(pace.ordering);
                        row.description = description;
                        row.headers = cols.headers;
                        row.auth = cols.auth;
                        row.receiver_secrets_sealed = cols.sealed;
                        row.destination = cols.destination;
                        row.filter = filter;
                        row.updated_at = now;
                        return Ok((row.public(), None, rate_changed));
                    }
                    Some(None) if at.id.is_some() => return Err(at.missing()),
                    _ => {}
                }
                let held: Vec<Uuid> = webhooks::table
                    .filter(webhooks::org_id.eq(org_id))
                    .select(webhooks::id)
                    .load(conn)
                    .await?;
                if held.len() >= limit {
                    return Err(StoreError::LimitReached("Endpoint limit reached"));
                }
                // An org's id names its first endpoint (the deliveries recorded while the org
                // had none are keyed by it, as its webhook was when an org had one), and no
                // other once that one is deleted: an endpoint's id is never reused, so a new
                // endpoint never inherits a deleted one's deliveries or history.
                let id = if held.contains(&org_id)
                    || crate::orgs::first_endpoint_gone(conn, org_id).await?
                {
                    Uuid::new_v4()
                } else {
                    org_id
                };
                let secret = new_webhook_secret();
                let merged = crate::receivers::Receiver::default().merged(&receiver)?;
                let url = url_for(&merged, url)?;
                let cols = merged.columns(|plain| key.seal(plain, id));
                let filter = receiver.filter.clone().flatten();
                if filter.is_some() {
                    crate::filters::changed(conn, org_id).await?;
                }
                let row = WebhookRow {
                    id,
                    org_id,
                    description: description.unwrap_or_default(),
                    url,
                    event_types,
                    enabled,
                    // Sealed to the endpoint: a blob copied to another endpoint never opens.
                    secret_sealed: key.seal(&secret, id),
                    created_at: now,
                    updated_at: now,
                    previous_secret_sealed: None,
                    previous_expires_at: None,
                    client_cert_pem: None,
                    client_key_sealed: None,
                    client_cert_subject: None,
                    client_cert_issuer: None,
                    client_cert_not_after: None,
                    max_per_second: rate,
                    ordering: Some(pace.ordering),
                    headers: cols.headers,
                    auth: cols.auth,
                    receiver_secrets_sealed: cols.sealed,
                    filter,
                    destination: cols.destination,
                    unbound_allowed: Some(false),
                };
                diesel::insert_into(webhooks::table)
                    .values((
                        webhooks::id.eq(row.id),
                        webhooks::org_id.eq(row.org_id),
                        webhooks::description.eq(&row.description),
                        webhooks::url.eq(&row.url),
                        webhooks::event_types.eq(&row.event_types),
                        webhooks::enabled.eq(row.enabled),
                        webhooks::secret_sealed.eq(&row.secret_sealed),
                        webhooks::created_at.eq(row.created_at),
                        webhooks::updated_at.eq(row.updated_at),
                        webhooks::max_per_second.eq(row.max_per_second),
                        webhooks::ordering.eq(row.ordering),
                        webhooks::headers.eq(&row.headers),
                        webhooks::auth.eq(&row.auth),
                        webhooks::receiver_secrets_sealed.eq(&row.receiver_secrets_sealed),
                        webhooks::filter.eq(&row.filter),
                        webhooks::destination.eq(&row.destination),
                    ))
                    .execute(conn)
                    .await
                    .map_err(crate::orgs::org_missing)?;
                Ok((row.public(), Some(secret), false))
            })
            .await?;
        drop(conn);
        // What already waits for the throttle follows the new rate once the save has
        // committed, a step at a time, outside this request (`Deliveries::retime_later`): the answer
        // does not wait for the backlog, and the work takes one of the pool's connections per
        // step, never one per save. The save stands if it fails: what waits keeps its turns,
        // each still throttled.
        if rate_changed {
            self.deliveries().retime_later(
                EndpointKey {
                    org_id,
                    endpoint_id: webhook.id,
                },
                rate_now,
            );
        }
        Ok((webhook, secret))
    }

    /// Deletes an endpoint (`DELETE …/endpoints/{id}`): its deliveries not yet over end
    /// `skipped` (`Endpoint deleted`) with no request made, its health and throttle go with it;
    /// the deliveries' history stays until retention. The next oldest endpoint, if any,
    /// becomes the org's primary.
    pub async fn delete_endpoint(&self, at: EndpointRef) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        crate::tx::transaction(&mut conn, async move |conn| {
            crate::orgs::lock_org(conn, at.org_id).await?;
            let row: WebhookRow = locked_row(conn, at).await?.ok_or(at.missing())?;
            let key = row.key();
            crate::deliveries::state::skip_endpoint(conn, key, "Endpoint deleted").await?;
            diesel::sql_query("DELETE FROM endpoint_health WHERE endpoint_id = $1")
                .bind::<diesel::sql_types::Uuid, _>(key.endpoint_id)
                .execute(conn)
                .await?;
            diesel::sql_query("DELETE FROM endpoint_pacing WHERE endpoint_id = $1")
                .bind::<diesel::sql_types::Uuid, _>(key.endpoint_id)
                .execute(conn)
                .await?;
            diesel::delete(webhooks::table.filter(webhooks::id.eq(key.endpoint_id)))
                .execute(conn)
                .await?;
            if key.endpoint_id == key.org_id {
                crate::orgs::first_endpoint_deleted(conn, key.org_id).await?;
            }
            Ok(())
        })
        .await
    }

    /// The org's endpoints, oldest first (the primary is the first), with their health.
    pub async fn list_endpoints(&self, org_id: Uuid) -> Result<Vec<WebhookStatus>, StoreError> {
        let mut conn = self.conn().await?;
        let rows: Vec<WebhookRow> = webhooks::table
            .filter(webhooks::org_id.eq(org_id))
            .order((webhooks::created_at, webhooks::id))
            .select(WebhookRow::as_select())
            .load(&mut conn)
            .await?;
        drop(conn);
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let health = self.endpoint_health(r.key()).await?;
            let filtered_last_24h = self.filtered_last_24h(r.key()).await?;
            out.push(WebhookStatus {
                webhook: r.public(),
                health,
                filtered_last_24h,
            });
        }
        Ok(out)
    }

    pub(crate) async fn webhook_row(
        &self,
        at: EndpointRef,
    ) -> Result<Option<WebhookRow>, StoreError> {
        let mut conn = self.conn().await?;
        let Some(id) = resolve(&mut conn, at).await? else {
            return Ok(None);
        };
        Ok(webhooks::table
            .filter(webhooks::id.eq(id))
            .select(WebhookRow::as_select())
            .first_row(&mut conn)
            .await
            .optional()?)
    }

    /// The endpoint's key: its org and its own id (`None`: no such endpoint).
    pub async fn endpoint_key(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<Option<EndpointKey>, StoreError> {
        Ok(self.webhook_row(at.into()).await?.map(|r| r.key()))
    }

    pub async fn get_webhook(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<Option<Webhook>, StoreError> {
        Ok(self.webhook_row(at.into()).await?.map(|r| r.public()))
    }

    /// The endpoint with its health.
    pub async fn webhook_status(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<Option<WebhookStatus>, StoreError> {
        let Some(row) = self.webhook_row(at.into()).await? else {
            return Ok(None);
        };
        let health = self.endpoint_health(row.key()).await?;
        let filtered_last_24h = self.filtered_last_24h(row.key()).await?;
        Ok(Some(WebhookStatus {
            webhook: row.public(),
            health,
            filtered_last_24h,
        }))
    }

    /// A saved endpoint with its health and what its filter left out (what the API answers
    /// a save with).
    pub async fn with_status(
        &self,
        org_id: Uuid,
        webhook: Webhook,
    ) -> Result<WebhookStatus, StoreError> {
        let key = EndpointKey {
            org_id,
            endpoint_id: webhook.id,
        };
        Ok(WebhookStatus {
            health: self.endpoint_health(key).await?,
            filtered_last_24h: self.filtered_last_24h(key).await?,
            webhook,
        })
    }
}
