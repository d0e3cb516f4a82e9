//! Shared application state and the two authentication schemes.

use actix_web::{HttpMessage, HttpRequest, http::header};
use qualifier_egress::EgressPolicy;
use qualifier_store::batch::Batcher;
use qualifier_store::leads::VersionedLead;
use qualifier_store::secrets::{hash_token, looks_like_org_token};
use qualifier_store::tokens::{Admission, token_fingerprint};
use qualifier_store::{Store, StoreError};
use qualifier_telemetry::metrics::metrics;
use uuid::Uuid;

use crate::error::ApiError;

pub struct AppState {
    pub store: Store,
    pub rate_limit_per_minute: u32,
    /// `QUALIFIER_REPLAY_RATE_PER_SECOND`: how fast one org's replays are sent.
    pub replay_rate_per_second: u32,
    /// SHA-256 of `QUALIFIER_INTERNAL_TOKEN`: compared digest to digest, so the comparison time
    /// says nothing about the token.
    pub internal_token_digest: Vec<u8>,
    pub egress: EgressPolicy,
    pub relay: std::sync::Arc<crate::relay::RelayStatus>,
    /// Which tokens exist, to refuse unknown ones without a round trip.
    pub tokens: std::sync::Arc<crate::token_filter::TokenFilter>,
    /// `QUALIFIER_CONSOLE_BASE_URL`, or the public listener's address once bound.
    pub console_base_url: std::sync::OnceLock<String>,
    /// Admissions of concurrent requests, gathered into one statement per round trip.
    pub admitter: Batcher<Vec<u8>, Admission>,
    /// The lead reads of concurrent requests (`GET /api/v1/leads/{id}` and the read a PATCH
    /// writes against), one statement per round trip.
    pub lead_reader: Batcher<(Uuid, Uuid), Result<VersionedLead, StoreError>>,
    /// Issues and opens console tickets and session cookies ([`crate::console::credentials`]).
    pub credentials: crate::console::credentials::Credentials,
    /// Seals and opens list cursors (docs/reliability.md, "Strangers, quotas and pages").
    pub cursors: crate::cursor::Cursors,
    /// `QUALIFIER_MAX_PAGE_BYTES` ([`crate::page`]).
    pub max_page_bytes: usize,
    /// The one narrow lane for unauthenticated work that touches the database (unknown tokens,
    /// console cookies and sign-in tickets), shared with [`AppState::tokens`].
    pub strangers: crate::token_filter::StrangerLane,
    /// PostgreSQL and RabbitMQ both answered at the last check: what the public listener's
    /// `/readyz` reports, so strangers polling it cost the database nothing.
    pub ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Set when the process was told to stop: both `/readyz` answer 503 from then on, so a
    /// balancer stops sending new requests while the ones in flight finish.
    pub stopping: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Which position an unsealed cursor names.
#[derive(Debug, Clone, Copy)]
pub enum LegacyCursor {
    /// A feed position (`after`).
    Feed(i64),
    /// An outbox sequence to continue below (the deliveries list's `cursor`).
    Deliveries(i64),
}

impl AppState {
    /// An unsealed cursor (the form issued before cursors were sealed) is accepted only for a
    /// position that existed then: one made up today would read the feed counter or outbox
    /// sequence every org shares (docs/api.md, "Lists and the feed"). `raw` is the cursor as
    /// sent; sealed ones pass without a query.
    pub async fn check_legacy_cursor(
        &self,
        raw: Option<&str>,
        at: LegacyCursor,
        refused: &'static str,
    ) -> Result<(), ApiError> {
        let Some(raw) = raw.filter(|r| self.cursors.is_legacy(r)) else {
            return Ok(());
        };
        let (pos_limit, seq_limit) = self.store.leads().legacy_cursor_limits().await?;
        let existed = match at {
            LegacyCursor::Feed(p) => p <= pos_limit,
            LegacyCursor::Deliveries(s) => s <= seq_limit.saturating_add(1),
        };
        if existed {
            Ok(())
        } else {
            tracing::debug!(
                cursor_len = raw.len(),
                "unsealed cursor past the horizon refused"
            );
            Err(ApiError::Unprocessable(refused.into()))
        }
    }
}

impl AppState {
    /// The position a deliveries-list query continues below: its cursor opened for `org`, an
    /// unsealed one only within what existed before sealing.
    pub async fn deliveries_cursor(
        &self,
        q: &crate::inputs::DeliveryQuery,
        org: Uuid,
    ) -> Result<Option<i64>, ApiError> {
        let before = q.before(&self.cursors, org)?;
        if let Some(b) = before {
            self.check_legacy_cursor(
                q.cursor.as_deref(),
                LegacyCursor::Deliveries(b),
                crate::inputs::NOT_OURS,
            )
            .await?;
        }
        Ok(before)
    }
}

/// How many admission (or lead-read) round trips may be in flight at once: one answering while
/// the next gathers, as in the delivery worker.
const ADMIT_FLUSHERS: usize = 2;
/// At most this many requests per statement.
const ADMIT_MAX_BATCH: usize = 256;

impl AppState {
    /// The admission batcher over `store` (inside a Tokio runtime).
    pub fn admitter(store: &Store, per_minute: u32) -> Batcher<Vec<u8>, Admission> {
        let store = store.clone();
        Batcher::spawn(ADMIT_MAX_BATCH, ADMIT_FLUSHERS, move |hashes| {
            let store = store.clone();
            async move { store.admit_batch(hashes, per_minute).await }
        })
    }

    /// The lead-read batcher over `store`: `(org_id, lead_id)` in, the lead (or not found) out.
    pub fn lead_reader(store: &Store) -> Batcher<(Uuid, Uuid), Result<VersionedLead, StoreError>> {
        let store = store.clone();
        Batcher::spawn(
            ADMIT_MAX_BATCH,
            ADMIT_FLUSHERS,
            move |wanted: Vec<(Uuid, Uuid)>| {
                let store = store.clone();
                async move { store.leads().get_leads_isolated(&wanted).await }
            },
        )
    }
}

/// The actions the internal API and the console share, each written once over its typed
/// command ([`crate::inputs`]).
impl AppState {
    /// Creates a token: its secret is returned once.
    pub async fn issue_token(
        &self,
        org_id: Uuid,
        new: crate::inputs::NewToken,
    ) -> Result<(qualifier_store::tokens::TokenInfo, String), StoreError> {
        let name = new.name.map(qualifier_domain::validate::Name::into_inner);
        let (token, secret) = self.store.create_token(org_id, name).await?;
        // Known here at once; other replicas learn it from the notification.
        self.tokens.add(token_fingerprint(&secret));
        Ok((token, secret))
    }

    /// Creates or replaces the org's webhook (its primary endpoint); the signing secret comes
    /// back when it was created.
    pub async fn put_webhook(
        &self,
        org_id: Uuid,
        s: crate::inputs::WebhookSettings,
    ) -> Result<(qualifier_store::webhooks::Webhook, Option<String>), StoreError> {
        self.store
            .endpoints()
            .put_webhook(org_id, s.into_endpoint())
            .await
    }
}

impl crate::inputs::WebhookSettings {
    /// What the store saves an endpoint with.
    pub fn into_endpoint(self) -> qualifier_store::webhooks::EndpointSettings {
        qualifier_store::webhooks::EndpointSettings {
            url: self.url.map(|u| u.as_str().to_owned()).unwrap_or_default(),
            event_types: self.event_types,
            enabled: self.enabled,
            pace: self.pace,
            description: self.description,
            receiver: self.receiver,
        }
    }
}

impl AppState {
    /// Bulk replay at the configured pace; how many matched, and how many of those were past
    /// retention and left as they were.
    pub async fn replay_matching(
        &self,
        org_id: Uuid,
        r: &crate::inputs::ReplayFilter,
    ) -> Result<qualifier_store::deliveries::ReplayCount, StoreError> {
        self.store
            .deliveries()
            .replay_matching(org_id, &r.filter, r.dry_run, self.replay_rate_per_second)
            .await
    }
}

impl AppState {
    /// Where sign-in links point (no trailing slash).
    pub fn console_base_url(&self) -> &str {
        self.console_base_url.get().map_or("", String::as_str)
    }

    /// The session cookie is `Secure` unless the console is served over plain http (a
    /// developer's machine), where a browser would refuse to send it back.
    pub fn console_secure_cookie(&self) -> bool {
        !self.console_base_url().starts_with("http://")
    }
}

/// What the rate-limit headers of an authenticated response say; stored in the request's
/// extensions so the middleware adds them to every response after authentication, errors too.
#[derive(Clone, Copy, Debug)]
pub struct RateHeaders {
    pub limit: u32,
    pub remaining: u32,
}

/// The org a public request acts for (authenticated, and admitted by its rate limit).
#[derive(Clone, Copy, Debug)]
pub struct OrgAuth {
    pub org_id: Uuid,
}

fn bearer(req: &HttpRequest) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn sha256(b: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, b)
        .as_ref()
        .to_vec()
}

impl AppState {
    /// Public API: the org token, then one unit of its rate-limit bucket (401, then 429).
    pub async fn authenticate_org(&self, req: &HttpRequest) -> Result<OrgAuth, ApiError> {
        let token = bearer(req).ok_or(ApiError::Unauthorized)?;
        if !looks_like_org_token(token) {
            return Err(ApiError::Unauthorized);
        }
        let fingerprint = token_fingerprint(token);
        // An unknown token looks itself up in the narrow lane (or is refused when it is full).
        let _lane = match self.tokens.check(&fingerprint).await {
            None => None,
            Some(Ok(permit)) => Some(permit),
            Some(Err(())) => return Err(ApiError::Unauthorized),
        };
        let admission = self.admitter.call(hash_token(token)).await?;
        match admission {
            Admission::Unauthorized => Err(ApiError::Unauthorized),
            Admission::Allowed {
                org_id, remaining, ..
            } => {
                req.extensions_mut().insert(RateHeaders {
                    limit: self.rate_limit_per_minute,
                    remaining,
                });
                tracing::Span::current().record("org_id", tracing::field::display(org_id));
                Ok(OrgAuth { org_id })
            }
            Admission::Limited {
                retry_after_secs,
                org_id,
                ..
            } => {
                req.extensions_mut().insert(RateHeaders {
                    limit: self.rate_limit_per_minute,
                    remaining: 0,
                });
                metrics::counter!(qualifier_telemetry::metrics::RATE_LIMITED).increment(1);
                tracing::info!(%org_id, retry_after_secs, "rate limit refused a request");
                Err(ApiError::RateLimited { retry_after_secs })
            }
        }
    }

    /// Internal API: the shared internal token.
    pub fn authenticate_internal(&self, req: &HttpRequest) -> Result<(), ApiError> {
        let token = bearer(req).ok_or(ApiError::Unauthorized)?;
        if sha256(token.as_bytes()) == self.internal_token_digest {
            Ok(())
        } else {
            Err(ApiError::Unauthorized)
        }
    }

    pub fn new_internal_digest(token: &str) -> Vec<u8> {
        sha256(token.as_bytes())
    }
}

/// A path id that is not a UUID is simply not found (docs/api.md: `Lead not found` for a bad id).
/// The id also goes on the request's span, so every log line of the request names it.
pub fn path_id(raw: &str, not_found: &'static str) -> Result<Uuid, ApiError> {
    let id = Uuid::parse_str(raw).map_err(|_| ApiError::NotFound(not_found))?;
    let field = match not_found {
        "Org not found" => "org_id",
        "Lead not found" => "lead_id",
        "Delivery not found" => "delivery_id",
        _ => return Ok(id),
    };
    tracing::Span::current().record(field, tracing::field::display(id));
    Ok(id)
}
