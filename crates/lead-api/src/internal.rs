//! The internal API, `/internal/v1`, authenticated with `QUALIFIER_INTERNAL_TOKEN`: what the
//! settings screen, the AI agent and the inbound channels call.

use actix_web::{HttpRequest, HttpResponse, web};
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::validate::{Channel, Email, Name, Phone, RouteTarget, body, parse_profile};
use qualifier_domain::{DeliveryStatus, EventType, Stage};
use qualifier_store::deliveries::DeliveryFilter;
use qualifier_store::leads::{InboundContact, InternalPatch};
use serde_json::{Map, Value, json};
use strum::VariantArray;
use uuid::Uuid;

use crate::error::{ApiError, method_not_allowed};
use crate::state::{AppState, path_id};

pub fn routes(cfg: &mut web::ServiceConfig) {
    let r = |path: &str| web::resource(path).default_service(web::to(method_not_allowed));
    cfg.service(r("/internal/v1/orgs").route(web::post().to(create_org)))
        .service(r("/internal/v1/orgs/{org}/tokens").route(web::post().to(create_token)))
        .service(r("/internal/v1/orgs/{org}/tokens/{id}").route(web::delete().to(revoke_token)))
        .service(
            r("/internal/v1/orgs/{org}/console-sessions")
                .route(web::post().to(create_console_session)),
        )
        .service(
            r("/internal/v1/orgs/{org}/webhook")
                .route(web::put().to(put_webhook))
                .route(web::get().to(get_webhook)),
        )
        .service(
            r("/internal/v1/orgs/{org}/webhook/rotate-secret").route(web::post().to(rotate_secret)),
        )
        .service(r("/internal/v1/orgs/{org}/webhook/test").route(web::post().to(send_test_event)))
        .service(r("/internal/v1/orgs/{org}/inbound").route(web::post().to(inbound)))
        .service(r("/internal/v1/orgs/{org}/leads/{id}").route(web::patch().to(patch_lead)))
        .service(
            r("/internal/v1/orgs/{org}/leads/{id}/handoffs").route(web::post().to(create_handoff)),
        )
        .service(
            r("/internal/v1/orgs/{org}/leads/{id}/handoffs/{hid}/accept")
                .route(web::post().to(accept_handoff)),
        )
        .service(
            r("/internal/v1/orgs/{org}/leads/{id}/handoffs/{hid}/release")
                .route(web::post().to(release_handoff)),
        )
        .service(r("/internal/v1/orgs/{org}/deliveries").route(web::get().to(list_deliveries)))
        .service(
            r("/internal/v1/orgs/{org}/deliveries/replay").route(web::post().to(replay_deliveries)),
        )
        .service(r("/internal/v1/orgs/{org}/deliveries/{id}").route(web::get().to(get_delivery)))
        .service(
            r("/internal/v1/orgs/{org}/deliveries/{id}/replay")
                .route(web::post().to(replay_delivery)),
        );
}

const ORG_NOT_FOUND: &str = "Org not found";

/// `/orgs/{org}/<thing>/{id}`: the org, then the thing; each not-a-UUID is its own 404.
fn org_and(path: &(String, String), not_found: &'static str) -> Result<(Uuid, Uuid), ApiError> {
    Ok((
        path_id(&path.0, ORG_NOT_FOUND)?,
        path_id(&path.1, not_found)?,
    ))
}

/// `/orgs/{org}/leads/{id}/handoffs/{hid}`.
fn handoff_path(path: &(String, String, String)) -> Result<(Uuid, Uuid, Uuid), ApiError> {
    Ok((
        path_id(&path.0, ORG_NOT_FOUND)?,
        path_id(&path.1, "Lead not found")?,
        path_id(&path.2, "Handoff not found")?,
    ))
}

async fn create_org(
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::object(&req, payload, "Request body must be a JSON object").await?;
    let name = Name::parse("name", body::required_string(&obj, "name")?)?;
    let org = st.store.create_org(name.as_str()).await?;
    Ok(HttpResponse::Created().json(json!({ "org": org })))
}

async fn create_token(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::optional_object(&req, payload).await?;
    let name = body::string(&obj, "name")?
        .map(|n| Name::parse("name", n))
        .transpose()?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (token, secret) = issue_token(&st, org_id, name.map(Name::into_inner)).await?;
    Ok(HttpResponse::Created().json(json!({ "token": token, "secret": secret })))
}

/// Creates a token (the internal API and the console): its secret is returned once.
async fn issue_token(
    st: &AppState,
    org_id: Uuid,
    name: Option<String>,
) -> Result<(qualifier_store::tokens::TokenInfo, String), ApiError> {
    let (token, secret) = st.store.create_token(org_id, name).await?;
    // Known here at once; other replicas learn it from the notification.
    st.tokens
        .add(qualifier_store::tokens::token_fingerprint(&secret));
    Ok((token, secret))
}

/// [`issue_token`] for the console, which shows only the secret.
pub async fn create_token_for(
    st: &AppState,
    org_id: Uuid,
    name: Option<String>,
) -> Result<String, ApiError> {
    Ok(issue_token(st, org_id, name).await?.1)
}

/// A one-time sign-in link to the settings console for the org (contract section 7).
async fn create_console_session(
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (ticket, expires_at) = st.store.mint_console_ticket(org_id).await?;
    Ok(HttpResponse::Created().json(json!({
        "url": format!("{}/console/login?ticket={ticket}", st.console_base_url()),
        "expires_at": qualifier_domain::timefmt::format(expires_at),
    })))
}

async fn revoke_token(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let (org_id, token_id) = org_and(&path, "Token not found")?;
    st.store.revoke_token(org_id, token_id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// `event_types`: a non-empty list of known types; duplicates collapse, order is the catalogue's.
pub fn parse_event_types(obj: &Map<String, Value>) -> Result<Vec<EventType>, ApiError> {
    let bad =
        || ApiError::Unprocessable("event_types must be a non-empty list of event types".into());
    let list = body::get(obj, "event_types")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if list.is_empty() {
        return Err(bad());
    }
    let mut chosen = Vec::new();
    for item in list {
        let s = item.as_str().ok_or_else(bad)?;
        qualifier_domain::validate::check_text("event_types", s)?;
        let t: EventType = s.parse().map_err(|_| {
            ApiError::Unprocessable(format!("event_types has an unknown event type: {s}"))
        })?;
        chosen.push(t);
    }
    Ok(EventType::VARIANTS
        .iter()
        .copied()
        .filter(|t| chosen.contains(t))
        .collect())
}

async fn put_webhook(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::object(&req, payload, "Request body must be a JSON object").await?;
    let url = WebhookUrl::parse(body::required_string(&obj, "url")?)?;
    let event_types = parse_event_types(&obj)?;
    let enabled = body::boolean(&obj, "enabled")?.unwrap_or(true);
    // The endpoint must be public now; delivery checks again before every connection.
    st.egress
        .resolve(&url)
        .await
        .map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (webhook, secret) = st
        .store
        .put_webhook(org_id, url.as_str().to_owned(), event_types, enabled)
        .await?;
    let mut out = json!({ "webhook": webhook });
    if let Some(s) = secret {
        let standard = qualifier_signing::standard::secret(&s);
        out["signing_secret"] = Value::String(s);
        out["standard_webhooks_secret"] = Value::String(standard);
    }
    Ok(HttpResponse::Ok().json(out))
}

async fn get_webhook(
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let webhook = st
        .store
        .get_webhook(org_id)
        .await?
        .ok_or(ApiError::NotFound("Webhook not configured"))?;
    Ok(HttpResponse::Ok().json(json!({ "webhook": webhook })))
}

/// The overlap window of a rotation when the caller does not say: a day, long enough to deploy
/// the new secret to every receiver (contract section 5).
const DEFAULT_GRACE_SECONDS: u64 = 86_400;
const MAX_GRACE_SECONDS: u64 = 604_800;

/// `grace_seconds`: an integer from 0 to 604800, default 86400.
pub fn parse_grace(obj: &Map<String, Value>) -> Result<std::time::Duration, ApiError> {
    let secs = match body::get(obj, "grace_seconds") {
        None => DEFAULT_GRACE_SECONDS,
        Some(v) => v
            .as_u64()
            .filter(|n| *n <= MAX_GRACE_SECONDS)
            .ok_or_else(|| {
                ApiError::Unprocessable("grace_seconds must be an integer from 0 to 604800".into())
            })?,
    };
    Ok(std::time::Duration::from_secs(secs))
}

async fn rotate_secret(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::optional_object(&req, payload).await?;
    let grace = parse_grace(&obj)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (secret, previous_expires) = st.store.rotate_webhook_secret(org_id, grace).await?;
    Ok(HttpResponse::Ok().json(json!({
        "signing_secret": secret,
        "standard_webhooks_secret": qualifier_signing::standard::secret(&secret),
        "previous_secret_expires_at": previous_expires.map(qualifier_domain::timefmt::format),
    })))
}

/// Sends a signed example event through the normal pipeline (contract section 5).
async fn send_test_event(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::optional_object(&req, payload).await?;
    let event_type = body::string(&obj, "event_type")?
        .map(|s| event_type_in("event_type", s))
        .transpose()?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let delivery_id = st.store.send_test_event(org_id, event_type).await?;
    let delivery = st.store.get_delivery(org_id, delivery_id).await?.delivery;
    Ok(HttpResponse::Accepted().json(json!({ "delivery": delivery })))
}

async fn inbound(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::object(&req, payload, "Request body must be a JSON object").await?;
    let profile = body::get(&obj, "profile").cloned();
    if let Some(p) = &profile {
        parse_profile(p)?;
    }
    let contact = InboundContact {
        name: Name::parse("name", body::required_string(&obj, "name")?)?,
        phone: Phone::parse(body::required_string(&obj, "phone")?)?,
        email: body::string(&obj, "email")?.map(Email::parse).transpose()?,
        channel: Channel::parse(body::required_string(&obj, "channel")?)?,
        profile,
    };
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (lead, created) = st.store.inbound_contact(org_id, contact).await?;
    let mut res = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(res.json(json!({ "lead": lead })))
}

const INTERNAL_FIELDS: [&str; 6] = [
    "name",
    "email",
    "phone",
    "profile",
    "route_target",
    "qualification_stage",
];

pub fn parse_internal_patch(obj: &Map<String, Value>) -> Result<InternalPatch, ApiError> {
    if INTERNAL_FIELDS.iter().all(|f| body::get(obj, f).is_none()) {
        return Err(ApiError::Unprocessable(
            "Provide at least one of name, email, phone, profile, route_target, qualification_stage.".into(),
        ));
    }
    let profile = body::get(obj, "profile").cloned();
    if let Some(p) = &profile
        && !p.is_object()
    {
        return Err(ApiError::Unprocessable("profile must be an object".into()));
    }
    Ok(InternalPatch {
        name: body::string(obj, "name")?
            .map(|n| Name::parse("name", n))
            .transpose()?,
        email: body::string(obj, "email")?.map(Email::parse).transpose()?,
        phone: body::string(obj, "phone")?.map(Phone::parse).transpose()?,
        profile,
        route_target: body::string(obj, "route_target")?
            .map(RouteTarget::parse)
            .transpose()?,
        stage: body::string(obj, "qualification_stage")?
            .map(Stage::parse)
            .transpose()?,
    })
}

async fn patch_lead(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::object(&req, payload, "Request body must be a JSON object").await?;
    let patch = parse_internal_patch(&obj)?;
    let (org_id, lead_id) = org_and(&path, "Lead not found")?;
    let lead = st.store.patch_lead_internal(org_id, lead_id, patch).await?;
    Ok(HttpResponse::Ok().json(json!({ "lead": lead })))
}

async fn create_handoff(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::optional_object(&req, payload).await?;
    let reason = body::string(&obj, "reason")?
        .map(|r| {
            if r.chars().count() > 1000 {
                Err(ApiError::Unprocessable(
                    "reason must be at most 1000 characters".into(),
                ))
            } else {
                Ok(r.to_owned())
            }
        })
        .transpose()?;
    let (org_id, lead_id) = org_and(&path, "Lead not found")?;
    let handoff = st.store.create_handoff(org_id, lead_id, reason).await?;
    Ok(HttpResponse::Created().json(json!({ "handoff": handoff })))
}

async fn accept_handoff(
    req: HttpRequest,
    path: web::Path<(String, String, String)>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::object(&req, payload, "Request body must be a JSON object").await?;
    let operator = Name::parse("operator", body::required_string(&obj, "operator")?)?;
    let (org_id, lead_id, hid) = handoff_path(&path)?;
    let handoff = st
        .store
        .accept_handoff(org_id, lead_id, hid, operator.into_inner())
        .await?;
    Ok(HttpResponse::Ok().json(json!({ "handoff": handoff })))
}

async fn release_handoff(
    req: HttpRequest,
    path: web::Path<(String, String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let (org_id, lead_id, hid) = handoff_path(&path)?;
    let handoff = st.store.release_handoff(org_id, lead_id, hid).await?;
    Ok(HttpResponse::Ok().json(json!({ "handoff": handoff })))
}

#[derive(serde::Deserialize)]
struct DeliveryQuery {
    status: Option<String>,
    limit: Option<String>,
    event_type: Option<String>,
    lead_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<String>,
}

const STATUS_NAMES: &str = "status must be one of pending, succeeded, failed, dead, skipped";

fn event_types_message(field: &str) -> String {
    let names: Vec<&str> = EventType::VARIANTS.iter().map(|t| t.as_str()).collect();
    format!("{field} must be one of {}", names.join(", "))
}

/// One event type named by the client in `field`, or the contract's 422 listing the types.
pub(crate) fn event_type_in(field: &str, raw: &str) -> Result<EventType, ApiError> {
    raw.parse::<EventType>()
        .map_err(|_| ApiError::Unprocessable(event_types_message(field)))
}

async fn list_deliveries(
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    // Parsed by hand so a bad query string gets the contract's 422, not actix's own error.
    let q = web::Query::<DeliveryQuery>::from_query(req.query_string())
        .map_err(|_| ApiError::Unprocessable("Invalid query string".into()))?;
    let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let mut f = DeliveryFilter::default();
    if let Some(s) = nonempty(&q.status) {
        f.statuses = vec![
            s.parse::<DeliveryStatus>()
                .map_err(|_| ApiError::Unprocessable(STATUS_NAMES.into()))?,
        ];
    }
    if let Some(t) = nonempty(&q.event_type) {
        f.event_types = vec![
            t.parse::<EventType>()
                .map_err(|_| ApiError::Unprocessable(event_types_message("event_type")))?,
        ];
    }
    if let Some(l) = nonempty(&q.lead_id) {
        f.lead_id = Some(
            Uuid::parse_str(&l)
                .map_err(|_| ApiError::Unprocessable("lead_id must be a UUID".into()))?,
        );
    }
    f.since = crate::cursor::timestamp("since", q.since.as_deref())?;
    f.until = crate::cursor::timestamp("until", q.until.as_deref())?;
    let before = match nonempty(&q.cursor) {
        None => None,
        Some(raw) => Some(crate::cursor::parse_delivery(&raw).ok_or_else(|| {
            ApiError::Unprocessable("cursor is not a cursor this list returned".into())
        })?),
    };
    let limit = crate::cursor::limit(q.limit.as_deref(), 50)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (deliveries, next) = st.store.list_deliveries(org_id, &f, before, limit).await?;
    let next_cursor = next.map(crate::cursor::delivery);
    Ok(HttpResponse::Ok().json(json!({ "deliveries": deliveries, "next_cursor": next_cursor })))
}

/// `POST .../deliveries/replay` (contract section 6). Every field is optional.
async fn replay_deliveries(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let obj = crate::body::optional_object(&req, payload).await?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (filter, dry_run) = parse_replay_filter(&obj)?;
    let matched = st
        .store
        .replay_matching(org_id, &filter, dry_run, st.replay_rate_per_second)
        .await?;
    let replayed = if dry_run { 0 } else { matched };
    Ok(HttpResponse::Accepted().json(json!({ "matched": matched, "replayed": replayed })))
}

/// The bulk replay body: `status` (default `["dead"]`; `dead`, `failed` or `skipped`), `since`,
/// `until`, `event_types`, `lead_id`, `dry_run`.
pub fn parse_replay_filter(obj: &Map<String, Value>) -> Result<(DeliveryFilter, bool), ApiError> {
    let mut f = DeliveryFilter {
        statuses: vec![DeliveryStatus::Dead],
        ..Default::default()
    };
    if let Some(list) = body::get(obj, "status") {
        const MSG: &str = "status must be a non-empty list of dead, failed, skipped";
        let items = list
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| ApiError::Unprocessable(MSG.into()))?;
        f.statuses = items
            .iter()
            .map(|i| match i.as_str().and_then(|s| s.parse().ok()) {
                Some(
                    s @ (DeliveryStatus::Dead | DeliveryStatus::Failed | DeliveryStatus::Skipped),
                ) => Ok(s),
                _ => Err(ApiError::Unprocessable(MSG.into())),
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(list) = body::get(obj, "event_types") {
        let msg = || ApiError::Unprocessable(event_types_message("event_types"));
        f.event_types = list
            .as_array()
            .ok_or_else(msg)?
            .iter()
            .map(|i| i.as_str().and_then(|s| s.parse().ok()).ok_or_else(msg))
            .collect::<Result<_, _>>()?;
    }
    if let Some(l) = body::string(obj, "lead_id")? {
        f.lead_id = Some(
            Uuid::parse_str(l)
                .map_err(|_| ApiError::Unprocessable("lead_id must be a UUID".into()))?,
        );
    }
    for (name, slot) in [("since", &mut f.since), ("until", &mut f.until)] {
        *slot = crate::cursor::timestamp(name, body::string(obj, name)?)?;
    }
    let dry_run = body::boolean(obj, "dry_run")?.unwrap_or(false);
    Ok((f, dry_run))
}

async fn get_delivery(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let (org_id, id) = org_and(&path, "Delivery not found")?;
    let delivery = st.store.get_delivery(org_id, id).await?;
    Ok(HttpResponse::Ok().json(json!({ "delivery": delivery })))
}

async fn replay_delivery(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.authenticate_internal(&req)?;
    let (org_id, id) = org_and(&path, "Delivery not found")?;
    st.store
        .replay_delivery(org_id, id, st.replay_rate_per_second)
        .await?;
    Ok(HttpResponse::Accepted().json(json!({ "status": "pending" })))
}
