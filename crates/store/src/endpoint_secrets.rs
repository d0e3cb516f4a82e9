//! An endpoint's credentials after it is saved: rotating its signing secret (with a grace
//! window for the previous one), its client certificate and the warning before it expires,
//! and housekeeping of retired and legacy-sealed secrets. The endpoints' table and its rows
//! are `crate::webhooks`'.

use crate::answer::ReadToEnd;
use diesel::{ExpressionMethods, NullableExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use qualifier_domain::timefmt::now_millis;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::StoreError;
use crate::endpoints::EndpointRef;
use crate::endpoints::resolve;
use crate::schema::webhooks;
use crate::secrets::new_webhook_secret;
use qualifier_domain::client_cert::ClientCertInfo;

use crate::webhooks::{UNBOUND_ALLOWED, Webhook};

impl crate::facets::Endpoints<'_> {
    /// Replaces the signing secret; deliveries already queued sign with the new one. With a
    /// `grace` window, the secret being retired is kept until then (it replaces any previous
    /// one still in its window) and deliveries carry a Standard Webhooks signature under both.
    /// Returns the new secret and when the previous one stops being used.
    pub async fn rotate_webhook_secret(
        &self,
        at: impl Into<EndpointRef>,
        grace: std::time::Duration,
    ) -> Result<(String, Option<OffsetDateTime>), StoreError> {
        let at = at.into();
        let mut conn = self.conn().await?;
        let id = resolve(&mut conn, at).await?.ok_or(at.missing())?;
        let secret = new_webhook_secret();
        let sealed = self.secret_key.seal(&secret, id);
        let now = now_millis();
        let expires = (!grace.is_zero()).then(|| now + grace);
        let row = webhooks::table.filter(webhooks::id.eq(id));
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
            Err(at.missing())
        } else {
            Ok((secret, expires))
        }
    }

    /// Gives the org's endpoint a client certificate (checked by the caller:
    /// `qualifier_egress::client_cert::check`), replacing any other; the key is sealed like the
    /// signing secret. Deliveries already queued present it from their next request on (each
    /// attempt reads the webhook as it is then). A new certificate gets its own expiry notice.
    pub async fn set_client_certificate(
        &self,
        at: impl Into<EndpointRef>,
        certificate: &str,
        private_key: &str,
        info: &ClientCertInfo,
    ) -> Result<Webhook, StoreError> {
        self.write_client_certificate(at.into(), Some((certificate, private_key, info)))
            .await
    }

    /// The one write of an endpoint's client certificate: `Some` gives it one (the key sealed
    /// for this endpoint), `None` removes it; either way the expiry notice starts over.
    async fn write_client_certificate(
        &self,
        at: EndpointRef,
        cert: Option<(&str, &str, &ClientCertInfo)>,
    ) -> Result<Webhook, StoreError> {
        let mut conn = self.conn().await?;
        let id = resolve(&mut conn, at).await?.ok_or(at.missing())?;
        let sealed = cert.map(|(_, key, _)| self.secret_key.seal(key, id));
        let n = diesel::update(webhooks::table.filter(webhooks::id.eq(id)))
            .set((
                webhooks::client_cert_pem.eq(cert.map(|(pem, _, _)| pem)),
                webhooks::client_key_sealed.eq(sealed),
                webhooks::client_cert_subject.eq(cert.map(|(_, _, i)| &i.subject)),
                webhooks::client_cert_issuer.eq(cert.map(|(_, _, i)| &i.issuer)),
                webhooks::client_cert_not_after.eq(cert.map(|(_, _, i)| i.not_after)),
                webhooks::client_cert_warned_at.eq(None::<OffsetDateTime>),
                webhooks::updated_at.eq(now_millis()),
            ))
            .execute(&mut conn)
            .await?;
        drop(conn);
        self.webhook_after_update(EndpointRef::id(at.org_id, id), n, at)
            .await
    }

    /// The endpoint as an update of `n` rows left it: not found (in the words of `asked`) when
    /// there was none to update.
    async fn webhook_after_update(
        &self,
        at: EndpointRef,
        n: usize,
        asked: EndpointRef,
    ) -> Result<Webhook, StoreError> {
        if n == 0 {
            return Err(asked.missing());
        }
        self.get_webhook(at).await?.ok_or(asked.missing())
    }

    /// Removes the endpoint's client certificate; the next request goes without one.
    pub async fn remove_client_certificate(
        &self,
        at: impl Into<EndpointRef>,
    ) -> Result<Webhook, StoreError> {
        self.write_client_certificate(at.into(), None).await
    }

    /// Client certificates within [`qualifier_domain::client_cert::EXPIRY_WARNING`] of expiring
    /// that were not warned about yet, marked as warned in the same statement (so across
    /// replicas each is warned about once), with an `endpoint.certificate_expiring` notice for
    /// the operator service when `notify`. Returns how many.
    pub async fn warn_expiring_certificates(&self, notify: bool) -> Result<usize, StoreError> {
        #[derive(diesel::QueryableByName)]
        struct Expiring {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            org_id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            url: String,
            #[diesel(sql_type = diesel::sql_types::Bool)]
            enabled: bool,
            #[diesel(sql_type = diesel::sql_types::Text)]
            subject: String,
            #[diesel(sql_type = diesel::sql_types::Text)]
            issuer: String,
            #[diesel(sql_type = diesel::sql_types::Timestamptz)]
            not_after: OffsetDateTime,
        }
        let mut conn = self.conn().await?;
        let warn_within = qualifier_domain::client_cert::EXPIRY_WARNING.whole_seconds();
        crate::tx::transaction(&mut conn, async move |conn| {
            let due: Vec<Expiring> = diesel::sql_query(
                "UPDATE webhooks SET client_cert_warned_at = now()
                 WHERE client_cert_not_after IS NOT NULL AND client_cert_warned_at IS NULL
                   AND client_cert_not_after <= now() + make_interval(secs => $1)
                 RETURNING id, org_id, url, enabled, client_cert_subject AS subject,
                           client_cert_issuer AS issuer, client_cert_not_after AS not_after",
            )
            .bind::<diesel::sql_types::Double, _>(warn_within as f64)
            .load(conn)
            .await?;
            if notify {
                for e in &due {
                    let info = ClientCertInfo {
                        subject: e.subject.clone(),
                        issuer: e.issuer.clone(),
                        not_after: e.not_after,
                    };
                    let data = serde_json::json!({
                        "endpoint_id": e.id,
                        "url": e.url,
                        "webhook": { "url": e.url, "enabled": e.enabled, "client_certificate": info },
                    });
                    crate::health::queue_notice(conn, e.org_id, "endpoint.certificate_expiring", data)
                        .await?;
                }
            }
            Ok(due.len())
        })
        .await
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
                .one(&mut conn)
                .await?;
        if !allowed {
            return Ok(0);
        }
        let rows: Vec<(Uuid, Vec<u8>, Option<Vec<u8>>)> = webhooks::table
            .select((
                webhooks::id,
                webhooks::secret_sealed,
                webhooks::previous_secret_sealed,
            ))
            .load(&mut conn)
            .await?;
        let key = &self.secret_key;
        let mut resealed = 0;
        let mut left = 0;
        // One column's blob re-sealed bound, if it is still the one read.
        macro_rules! reseal {
            ($column:expr, $id:expr, $blob:expr) => {
                match key.open($blob, $id) {
                    Ok(secret) => {
                        resealed += diesel::update(
                            webhooks::table
                                .filter(webhooks::id.eq($id))
                                .filter($column.eq($blob)),
                        )
                        .set($column.eq(key.seal(&secret, $id)))
                        .execute(&mut conn)
                        .await?;
                    }
                    Err(_) => left += 1,
                }
            };
        }
        for (id, sealed, previous) in rows {
            if key.is_legacy(&sealed, id) {
                reseal!(webhooks::secret_sealed, id, &sealed);
            }
            if let Some(prev) = previous.filter(|p| key.is_legacy(p, id)) {
                reseal!(webhooks::previous_secret_sealed, id, &prev);
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
}
