//! Webhook settings: one endpoint per org, its event selection, and its sealed signing secret.

use diesel::{
    ExpressionMethods, NullableExpressionMethods, OptionalExtension, QueryDsl, Queryable,
    Selectable, SelectableHelper,
};
use diesel_async::{AsyncConnection, RunQueryDsl};
use qualifier_domain::EventType;
use qualifier_domain::timefmt::now_millis;
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::schema::{secret_format, webhooks};
use crate::secrets::{OpenError, new_webhook_secret};
use crate::{Store, StoreError};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhooks)]
pub(crate) struct WebhookRow {
    org_id: Uuid,
    url: String,
    event_types: Vec<EventType>,
    enabled: bool,
    secret_sealed: Vec<u8>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    previous_secret_sealed: Option<Vec<u8>>,
    previous_expires_at: Option<OffsetDateTime>,
    /// Whether the deployment may still hold secrets in the unbound format (`secret_format`),
    /// read with the row so that no process can act on a stale answer. A subselect diesel
    /// builds (not SQL text), so the statements that read webhooks stay prepared and cached.
    #[diesel(select_expression = secret_format::table.select(secret_format::unbound_allowed).single_value())]
    #[diesel(select_expression_type = diesel::dsl::SingleValue<diesel::dsl::Select<secret_format::table, secret_format::unbound_allowed>>)]
    unbound_allowed: Option<bool>,
}

const UNBOUND_ALLOWED: &str =
    "COALESCE((SELECT unbound_allowed FROM secret_format WHERE id), false)";

/// The settings as the settings screen sees them: never the secret.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Webhook {
    pub url: String,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub created_at: OffsetDateTime,
    #[serde(with = "qualifier_domain::timefmt::millis")]
    pub updated_at: OffsetDateTime,
}

/// Test events one org may send per minute, API and console together (docs/reliability.md, "Strangers, quotas and pages").
pub const TEST_EVENTS_PER_MINUTE: i64 = 10;

/// The webhook as the internal API shows it: the settings and the endpoint's health.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookStatus {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub health: qualifier_domain::health::EndpointHealth,
}

/// What a delivery attempt needs: the settings plus the opened secret, and the previous secret
/// while a rotation's overlap window lasts.
#[derive(Clone, PartialEq)]
pub struct WebhookForDelivery {
    pub webhook: Webhook,
    pub signing_secret: String,
    pub previous_secret: Option<String>,
}

/// Never prints the secret (logs and panics show the settings only).
impl std::fmt::Debug for WebhookForDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookForDelivery")
            .field("webhook", &self.webhook)
            .field("signing_secret", &"..")
            .field(
                "previous_secret",
                &self.previous_secret.as_ref().map(|_| ".."),
            )
            .finish()
    }
}

impl WebhookRow {
    fn public(&self) -> Webhook {
        Webhook {
            url: self.url.clone(),
            event_types: self.event_types.clone(),
            enabled: self.enabled,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl Store {
    /// Creates or replaces the org's webhook. The secret is generated on creation only and
    /// returned then (`Some`); an update keeps the existing secret.
    pub async fn put_webhook(
        &self,
        org_id: Uuid,
        url: String,
        event_types: Vec<EventType>,
        enabled: bool,
    ) -> Result<(Webhook, Option<String>), StoreError> {
        let key = self.secret_key.clone();
        let mut conn = self.conn().await?;
        conn.transaction::<(Webhook, Option<String>), StoreError, _>(async move |conn| {
            let now = now_millis();
            let existing = webhooks::table
                .filter(webhooks::org_id.eq(org_id))
                .select(WebhookRow::as_select())
                .for_update()
                .first(conn)
                .await
                .optional()?;
            // What saving does to a failing or disabled endpoint (docs/delivery.md, "Endpoint
            // health"): the rule is `qualifier_domain::health::on_save`.
            crate::health::on_save(conn, org_id, enabled).await?;
            if let Some(mut row) = existing {
                diesel::update(webhooks::table.filter(webhooks::org_id.eq(org_id)))
                    .set((
                        webhooks::url.eq(&url),
                        webhooks::event_types.eq(&event_types),
                        webhooks::enabled.eq(enabled),
                        webhooks::updated_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                row.url = url;
                row.event_types = event_types;
                row.enabled = enabled;
                row.updated_at = now;
                return Ok((row.public(), None));
            }
            let secret = new_webhook_secret();
            let row = WebhookRow {
                org_id,
                url,
                event_types,
                enabled,
                secret_sealed: key.seal(&secret, org_id),
                created_at: now,
                updated_at: now,
                previous_secret_sealed: None,
                previous_expires_at: None,
                unbound_allowed: Some(false),
            };
            // A concurrent first PUT for the same org loses on the primary key and is retried by
            // the caller as an update; the secret of the winner is the one that holds.
            diesel::insert_into(webhooks::table)
                .values((
                    webhooks::org_id.eq(row.org_id),
                    webhooks::url.eq(&row.url),
                    webhooks::event_types.eq(&row.event_types),
                    webhooks::enabled.eq(row.enabled),
                    webhooks::secret_sealed.eq(&row.secret_sealed),
                    webhooks::created_at.eq(row.created_at),
                    webhooks::updated_at.eq(row.updated_at),
                ))
                .execute(conn)
                .await
                .map_err(crate::orgs::org_missing)?;
            Ok((row.public(), Some(secret)))
        })
        .await
    }

    async fn webhook_row(&self, org_id: Uuid) -> Result<Option<WebhookRow>, StoreError> {
        let mut conn = self.conn().await?;
        Ok(webhooks::table
            .filter(webhooks::org_id.eq(org_id))
            .select(WebhookRow::as_select())
            .first(&mut conn)
            .await
            .optional()?)
    }

    pub async fn get_webhook(&self, org_id: Uuid) -> Result<Option<Webhook>, StoreError> {
        Ok(self.webhook_row(org_id).await?.map(|r| r.public()))
    }

    /// The webhook with its endpoint's health.
    pub async fn webhook_status(&self, org_id: Uuid) -> Result<Option<WebhookStatus>, StoreError> {
        let Some(webhook) = self.get_webhook(org_id).await? else {
            return Ok(None);
        };
        let health = self.endpoint_health(org_id).await?;
        Ok(Some(WebhookStatus { webhook, health }))
    }

    /// The settings with the opened secret, for a probe (`None` without a webhook).
    pub async fn webhook_for_delivery(
        &self,
        org_id: Uuid,
    ) -> Result<Option<Result<WebhookForDelivery, OpenError>>, StoreError> {
        Ok(self
            .webhook_row(org_id)
            .await?
            .map(|r| self.open_for_delivery(r)))
    }

    /// The settings with the opened secret, for a delivery attempt.
    pub(crate) fn open_for_delivery(&self, r: WebhookRow) -> Result<WebhookForDelivery, OpenError> {
        let open = |sealed: &[u8]| {
            if r.unbound_allowed == Some(true) {
                self.secret_key.open(sealed, r.org_id)
            } else {
                self.secret_key.open_bound(sealed, r.org_id)
            }
        };
        let signing_secret = open(&r.secret_sealed)?;
        // The previous secret only while its window lasts; an expired one is never used, even
        // before housekeeping removes it.
        let now = OffsetDateTime::now_utc();
        let previous_secret = match (&r.previous_secret_sealed, r.previous_expires_at) {
            (Some(sealed), Some(until)) if until > now => Some(open(sealed)?),
            _ => None,
        };
        Ok(WebhookForDelivery {
            webhook: r.public(),
            signing_secret,
            previous_secret,
        })
    }

    /// Replaces the signing secret; deliveries already queued sign with the new one. With a
    /// `grace` window, the secret being retired is kept until then (it replaces any previous
    /// one still in its window) and deliveries carry a Standard Webhooks signature under both.
    /// Returns the new secret and when the previous one stops being used.
    pub async fn rotate_webhook_secret(
        &self,
        org_id: Uuid,
        grace: std::time::Duration,
    ) -> Result<(String, Option<OffsetDateTime>), StoreError> {
        let secret = new_webhook_secret();
        let sealed = self.secret_key.seal(&secret, org_id);
        let now = now_millis();
        let expires = (!grace.is_zero()).then(|| now + grace);
        let mut conn = self.conn().await?;
        let row = webhooks::table.filter(webhooks::org_id.eq(org_id));
        let n = match expires {
            // `secret_sealed` on the right is the column's old value: the secret being retired.
            Some(until) => {
                diesel::update(row)
                    .set((
                        webhooks::previous_secret_sealed.eq(webhooks::secret_sealed.nullable()),
                        webhooks::previous_expires_at.eq(until),
                        webhooks::secret_sealed.eq(sealed),
                        webhooks::updated_at.eq(now),
                    ))
                    .execute(&mut conn)
                    .await?
            }
            None => {
                diesel::update(row)
                    .set((
                        webhooks::previous_secret_sealed.eq(None::<Vec<u8>>),
                        webhooks::previous_expires_at.eq(None::<OffsetDateTime>),
                        webhooks::secret_sealed.eq(sealed),
                        webhooks::updated_at.eq(now),
                    ))
                    .execute(&mut conn)
                    .await?
            }
        };
        if n == 0 {
            Err(StoreError::NotFound("Webhook not configured"))
        } else {
            Ok((secret, expires))
        }
    }

    /// Removes previous secrets whose overlap window is over (housekeeping; they are already
    /// unused). Returns how many.
    pub async fn drop_expired_previous_secrets(&self) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        Ok(diesel::update(
            webhooks::table.filter(webhooks::previous_expires_at.le(OffsetDateTime::now_utc())),
        )
        .set((
            webhooks::previous_secret_sealed.eq(None::<Vec<u8>>),
            webhooks::previous_expires_at.eq(None::<OffsetDateTime>),
        ))
        .execute(&mut conn)
        .await?)
    }

    /// Re-seals every secret still in the legacy format (not bound to its org), current and
    /// previous, so that each opens only for its own org; then, when none is left, records that
    /// no unbound secret may open any more (`secret_format`), so a blob copied between orgs
    /// never opens again (docs/reliability.md, "Strangers, quotas and pages"). Idempotent and cheap (one row per org);
    /// `lead-api` runs it at every start and `qualifierctl migrate` when it has the key. Once
    /// unbound secrets are refused it does nothing: re-sealing an unbound blob then would bind
    /// a copied secret to the org it was copied to. Each row is rewritten only if unchanged
    /// since it was read, so a concurrent rotation wins. A secret that does not open with this
    /// key is left as it is (its deliveries fail loudly until it is rotated) and keeps unbound
    /// secrets allowed.
    pub async fn reseal_legacy_secrets(&self) -> Result<usize, StoreError> {
        let mut conn = self.conn().await?;
        let allowed: bool =
            diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(UNBOUND_ALLOWED))
                .get_result(&mut conn)
                .await?;
        if !allowed {
            return Ok(0);
        }
        let rows: Vec<(Uuid, Vec<u8>, Option<Vec<u8>>)> = webhooks::table
            .select((
                webhooks::org_id,
                webhooks::secret_sealed,
                webhooks::previous_secret_sealed,
            ))
            .load(&mut conn)
            .await?;
        let key = &self.secret_key;
        let mut resealed = 0;
        let mut left = 0;
        for (org_id, sealed, previous) in rows {
            if key.is_legacy(&sealed, org_id) {
                match key.open(&sealed, org_id) {
                    Ok(secret) => {
                        resealed += diesel::update(
                            webhooks::table
                                .filter(webhooks::org_id.eq(org_id))
                                .filter(webhooks::secret_sealed.eq(&sealed)),
                        )
                        .set(webhooks::secret_sealed.eq(key.seal(&secret, org_id)))
                        .execute(&mut conn)
                        .await?;
                    }
                    Err(_) => left += 1,
                }
            }
            if let Some(prev) = previous.filter(|p| key.is_legacy(p, org_id)) {
                match key.open(&prev, org_id) {
                    Ok(secret) => {
                        resealed += diesel::update(
                            webhooks::table
                                .filter(webhooks::org_id.eq(org_id))
                                .filter(webhooks::previous_secret_sealed.eq(&prev)),
                        )
                        .set(webhooks::previous_secret_sealed.eq(key.seal(&secret, org_id)))
                        .execute(&mut conn)
                        .await?;
                    }
                    Err(_) => left += 1,
                }
            }
        }
        if left == 0 {
            // Rows written meanwhile are sealed bound already (every seal since secrets were bound to their org is).
            diesel::sql_query("UPDATE secret_format SET unbound_allowed = false WHERE id")
                .execute(&mut conn)
                .await?;
        }
        Ok(resealed)
    }

    /// A test event (`POST …/webhook/test`), at most [`TEST_EVENTS_PER_MINUTE`] a minute per org: an example event of `event_type` (default: the
    /// first type the webhook is subscribed to) through the normal pipeline, marked as a test.
    /// Returns the delivery's id.
    pub async fn send_test_event(
        &self,
        org_id: Uuid,
        event_type: Option<EventType>,
    ) -> Result<Uuid, StoreError> {
        let compress = self.compress_payloads;
        let base = self.app_base_url.clone();
        let mut conn = self.conn().await?;
        conn.transaction::<Uuid, StoreError, _>(async move |conn| {
            // The webhook's row lock makes the quota's count and the insert one step.
            let (enabled, subscribed): (bool, Vec<EventType>) = webhooks::table
                .filter(webhooks::org_id.eq(org_id))
                .select((webhooks::enabled, webhooks::event_types))
                .for_update()
                .first(conn)
                .await
                .optional()?
                .ok_or(StoreError::NotFound("Webhook not configured"))?;
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
            .get_result(conn)
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
            Ok(crate::outbox::insert(conn, &env, true, compress).await?)
        })
        .await
    }
}
