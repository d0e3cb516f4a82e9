//! The internal API, `/internal/v1`, authenticated with `QUALIFIER_INTERNAL_TOKEN`: what the
//! settings screen, the AI agent and the inbound channels call.

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use qualifier_domain::lead::entity_tag;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::error::{ApiError, method_not_allowed};
use crate::extract::{InternalAuth, JsonObject, Object, OptionalObject};
use crate::inputs::{
    DeliveryQuery, GraceWindow, NewToken, ReplayFilter, WebhookSettings, handoff_operator,
    handoff_reason, org_name, parse_inbound, parse_internal_patch, test_event_type,
};
use crate::state::{AppState, path_id};
use qualifier_store::webhooks::EndpointRef;

/// A resource whose methods not routed answer 405.
fn r(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

/// What an endpoint is given below `base` (the primary's `…/webhook`, or `…/endpoints/{id}`),
/// one set of handlers for both ([`EndpointPath`]).
fn endpoint_actions<P: EndpointPath>(cfg: &mut web::ServiceConfig, base: &str) {
    cfg.service(r(&format!("{base}/rotate-secret")).route(web::post().to(rotate_secret::<P>)))
        .service(r(&format!("{base}/test")).route(web::post().to(send_test_event::<P>)))
        .service(r(&format!("{base}/filter-test")).route(web::post().to(filter_test::<P>)))
        .service(
            r(&format!("{base}/client-certificate"))
                .route(web::put().to(put_client_certificate::<P>))
                .route(web::delete().to(delete_client_certificate::<P>)),
        );
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    // A request is matched against the resources in this order, each pattern with a `{…}`
    // segment by a regular expression, so the routes every lead change takes come first: an
    // inbound contact tried nine patterns before its own, a visible share of `lead-api`'s CPU
    // per request (docs/performance.md). No pattern here matches another's paths except where
    // a literal segment stands where another has `{id}` (`deliveries/replay`), and those keep
    // their order.
    cfg.service(r("/internal/v1/orgs/{org}/inbound").route(web::post().to(inbound)))
        .service(
            r("/internal/v1/orgs/{org}/leads/{id}")
                .route(web::patch().to(patch_lead))
                .route(web::delete().to(erase_lead)),
        )
        .service(r("/internal/v1/orgs").route(web::post().to(create_org)))
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
        .configure(|c| endpoint_actions::<Primary>(c, "/internal/v1/orgs/{org}/webhook"))
        .service(
            r("/internal/v1/orgs/{org}/endpoints")
                .route(web::post().to(create_endpoint))
                .route(web::get().to(list_endpoints)),
        )
        .service(
            r("/internal/v1/orgs/{org}/endpoints/{id}")
                .route(web::get().to(get_endpoint))
                .route(web::put().to(put_endpoint))
                .route(web::delete().to(delete_endpoint)),
        )
        .configure(|c| endpoint_actions::<ById>(c, "/internal/v1/orgs/{org}/endpoints/{id}"))
        .service(
            r("/internal/v1/orgs/{org}/endpoints/{id}/probe").route(web::post().to(probe_endpoint)),
        )
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
const ENDPOINT_NOT_FOUND: &str = "Endpoint not found";

/// The endpoint a route acts on, from its path: the org's primary (`/orgs/{org}/webhook…`, the
/// routes of contract v1.0-v1.4) or one of its endpoints (`/orgs/{org}/endpoints/{id}…`).
/// The handlers both route to are written once over it.
trait EndpointPath: actix_web::FromRequest + 'static {
    fn at(&self) -> Result<EndpointRef, ApiError>;
}

type Primary = web::Path<String>;
type ById = web::Path<(String, String)>;

impl EndpointPath for Primary {
    fn at(&self) -> Result<EndpointRef, ApiError> {
        Ok(EndpointRef::primary(path_id(self, ORG_NOT_FOUND)?))
    }
}

impl EndpointPath for ById {
    fn at(&self) -> Result<EndpointRef, ApiError> {
        let (org_id, id) = org_and(self, ENDPOINT_NOT_FOUND)?;
        Ok(EndpointRef::id(org_id, id))
    }
}

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
    _: InternalAuth,
    Object(obj): JsonObject,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let name = org_name(&obj)?;
    let org = st.store.create_org(name.as_str()).await?;
    Ok(HttpResponse::Created().json(json!({ "org": org })))
}

async fn create_token(
    _: InternalAuth,
    Object(obj): OptionalObject,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let new = NewToken::from_json(&obj)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (token, secret) = st.issue_token(org_id, new).await?;
    Ok(HttpResponse::Created().json(json!({ "token": token, "secret": secret })))
}

/// A one-time sign-in link to the settings console for the org (docs/console.md).
async fn create_console_session(
    _: InternalAuth,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (ticket, expires_at) = st.store.console().mint_console_ticket(org_id).await?;
    let ticket = st.credentials.issue(
        crate::console::credentials::Kind::Ticket,
        &ticket,
        expires_at,
    );
    Ok(HttpResponse::Created().json(json!({
        "url": format!("{}/console/login?ticket={ticket}", st.console_base_url()),
        "expires_at": qualifier_domain::timefmt::format(expires_at),
    })))
}

async fn revoke_token(
    _: InternalAuth,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (org_id, token_id) = org_and(&path, "Token not found")?;
    st.store.revoke_token(org_id, token_id).await?;
    Ok(HttpResponse::NoContent().finish())
}

async fn put_webhook(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let settings = WebhookSettings::from_json(&obj, &st.egress).await?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (webhook, secret) = st.put_webhook(org_id, settings).await?;
    let webhook = st.store.endpoints().with_status(org_id, webhook).await?;
    let mut out = json!({ "webhook": webhook });
    if let Some(s) = secret {
        let standard = qualifier_signing::standard::secret(&s);
        out["signing_secret"] = Value::String(s);
        out["standard_webhooks_secret"] = Value::String(standard);
    }
    Ok(HttpResponse::Ok().json(out))
}

async fn get_webhook(
    _: InternalAuth,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let webhook = st
        .store
        .endpoints()
        .webhook_status(org_id)
        .await?
        .ok_or(ApiError::NotFound("Webhook not configured"))?;
    Ok(HttpResponse::Ok().json(json!({ "webhook": webhook })))
}

/// Gives the endpoint a client certificate (docs/api.md, "Client certificates"): 200 with what
/// is shown of it, never the key.
async fn put_client_certificate<P: EndpointPath>(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: P,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let at = path.at()?;
    let input = crate::inputs::ClientCertificateInput::from_json(&obj)?;
    let webhook = st
        .store
        .endpoints()
        .set_client_certificate(at, &input.certificate, &input.private_key, &input.info)
        .await?;
    Ok(HttpResponse::Ok().json(json!({ "client_certificate": webhook.client_certificate })))
}

async fn delete_client_certificate<P: EndpointPath>(
    _: InternalAuth,
    path: P,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.store
        .endpoints()
        .remove_client_certificate(path.at()?)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

async fn rotate_secret<P: EndpointPath>(
    _: InternalAuth,
    Object(obj): OptionalObject,
    path: P,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let GraceWindow(grace) = GraceWindow::from_json(&obj)?;
    let at = path.at()?;
    let (secret, previous_expires) = st
        .store
        .endpoints()
        .rotate_webhook_secret(at, grace)
        .await?;
    Ok(HttpResponse::Ok().json(json!({
        "signing_secret": secret,
        "standard_webhooks_secret": qualifier_signing::standard::secret(&secret),
        "previous_secret_expires_at": previous_expires.map(qualifier_domain::timefmt::format),
    })))
}

/// Sends a signed example event through the normal pipeline (docs/api.md, "Test events").
async fn send_test_event<P: EndpointPath>(
    _: InternalAuth,
    Object(obj): OptionalObject,
    path: P,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let event_type = test_event_type(&obj)?;
    let at = path.at()?;
    let delivery_id = st.store.endpoints().send_test_event(at, event_type).await?;
    let delivery = st
        .store
        .deliveries()
        .get_delivery(at.org_id, delivery_id)
        .await?
        .delivery;
    Ok(HttpResponse::Accepted().json(json!({ "delivery": delivery })))
}

/// Whether the endpoint's filter matches the envelope `event` (docs/api.md, "Filters"): what
/// an administrator checks before saving it, against one of the org's recent events. An
/// endpoint without a filter matches every event.
async fn filter_test<P: EndpointPath>(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: P,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let at = path.at()?;
    let event = match obj.get("event") {
        Some(e @ serde_json::Value::Object(_)) => e,
        _ => {
            return Err(ApiError::Unprocessable(
                "event must be an event's envelope (a JSON object)".into(),
            ));
        }
    };
    let Some(hook) = st.store.endpoints().get_webhook(at).await? else {
        return Err(at.missing().into());
    };
    let matches = match &hook.filter {
        None => true,
        Some(f) => qualifier_domain::filter::Filter::parse(f)?.matches(event),
    };
    Ok(HttpResponse::Ok().json(json!({ "matches": matches })))
}

/// A new endpoint: 201 with its secrets, shown this once (docs/api.md, "Endpoints").
async fn create_endpoint(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let settings = WebhookSettings::from_json(&obj, &st.egress).await?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (endpoint, secret) = st
        .store
        .endpoints()
        .create_endpoint(org_id, settings.into_endpoint())
        .await?;
    let endpoint = st.store.endpoints().with_status(org_id, endpoint).await?;
    Ok(HttpResponse::Created().json(json!({
        "endpoint": endpoint,
        "standard_webhooks_secret": qualifier_signing::standard::secret(&secret),
        "signing_secret": secret,
    })))
}

/// The org's endpoints, oldest first, with their health; never a secret.
async fn list_endpoints(
    _: InternalAuth,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let endpoints = st.store.endpoints().list_endpoints(org_id).await?;
    Ok(HttpResponse::Ok().json(json!({ "endpoints": endpoints })))
}

async fn get_endpoint(
    _: InternalAuth,
    path: ById,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let at = path.at()?;
    let endpoint = st
        .store
        .endpoints()
        .webhook_status(at)
        .await?
        .ok_or(ApiError::NotFound(ENDPOINT_NOT_FOUND))?;
    Ok(HttpResponse::Ok().json(json!({ "endpoint": endpoint })))
}

/// Replaces an endpoint's settings (the fields of its creation); its secret stays.
async fn put_endpoint(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: ById,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let at = path.at()?;
    let settings = WebhookSettings::from_json(&obj, &st.egress).await?;
    let endpoint = st
        .store
        .endpoints()
        .update_endpoint(at, settings.into_endpoint())
        .await?;
    let endpoint = st
        .store
        .endpoints()
        .with_status(at.org_id, endpoint)
        .await?;
    Ok(HttpResponse::Ok().json(json!({ "endpoint": endpoint })))
}

/// Deletes an endpoint: its pending deliveries end `skipped` (`Endpoint deleted`).
async fn delete_endpoint(
    _: InternalAuth,
    path: ById,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    st.store.endpoints().delete_endpoint(path.at()?).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// "Check now": a failing endpoint's next probe is due at once. 202 `{"probing": bool}`:
/// false when the endpoint is not failing (there is nothing to probe).
async fn probe_endpoint(
    _: InternalAuth,
    path: ById,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let at = path.at()?;
    if st.store.endpoints().endpoint_key(at).await?.is_none() {
        return Err(ApiError::NotFound(ENDPOINT_NOT_FOUND));
    }
    let probing = st.store.endpoints().probe_now(at).await?;
    Ok(HttpResponse::Accepted().json(json!({ "probing": probing })))
}

async fn inbound(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let contact = parse_inbound(&obj)?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let (lead, created) = st.store.leads().inbound_contact(org_id, contact).await?;
    let mut res = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(res
        .insert_header((header::ETAG, entity_tag(lead.revision)))
        .json(json!({ "lead": lead })))
}

async fn patch_lead(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let patch = parse_internal_patch(&obj)?;
    let (org_id, lead_id) = org_and(&path, "Lead not found")?;
    let read = st.lead_reader.call((org_id, lead_id)).await??;
    let lead = st
        .store
        .leads()
        .patch_lead_internal(org_id, lead_id, Some(read), patch)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::ETAG, entity_tag(lead.revision)))
        .json(json!({ "lead": lead })))
}

/// `DELETE …/leads/{id}`: erases the contact (docs/api.md, "Erasing a lead"), as the public call.
async fn erase_lead(
    _: InternalAuth,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (org_id, lead_id) = org_and(&path, "Lead not found")?;
    crate::public::erase(&st, org_id, lead_id).await
}

async fn create_handoff(
    _: InternalAuth,
    Object(obj): OptionalObject,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let reason = handoff_reason(&obj)?;
    let (org_id, lead_id) = org_and(&path, "Lead not found")?;
    let handoff = st
        .store
        .leads()
        .create_handoff(org_id, lead_id, reason)
        .await?;
    Ok(HttpResponse::Created().json(json!({ "handoff": handoff })))
}

async fn accept_handoff(
    _: InternalAuth,
    Object(obj): JsonObject,
    path: web::Path<(String, String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let operator = handoff_operator(&obj)?;
    let (org_id, lead_id, hid) = handoff_path(&path)?;
    let handoff = st
        .store
        .leads()
        .accept_handoff(org_id, lead_id, hid, operator)
        .await?;
    Ok(HttpResponse::Ok().json(json!({ "handoff": handoff })))
}

async fn release_handoff(
    _: InternalAuth,
    path: web::Path<(String, String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (org_id, lead_id, hid) = handoff_path(&path)?;
    let handoff = st
        .store
        .leads()
        .release_handoff(org_id, lead_id, hid)
        .await?;
    Ok(HttpResponse::Ok().json(json!({ "handoff": handoff })))
}

async fn list_deliveries(
    _: InternalAuth,
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = DeliveryQuery::parse(req.query_string())?;
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let before = st.deliveries_cursor(&q, org_id).await?;
    let (rows, next) = st
        .store
        .deliveries()
        .list_deliveries_at(org_id, &q.filter, before, q.limit)
        .await?;
    let deliveries: Vec<_> = rows.iter().map(|(_, d)| d).collect();
    let items = crate::page::serialize(&deliveries)?;
    Ok(crate::page::within_budget(
        "deliveries",
        &items,
        |i| rows[i].0,
        next,
        st.max_page_bytes,
        |seq| st.cursors.delivery(org_id, seq),
    ))
}

/// `POST .../deliveries/replay` (docs/api.md). Every field is optional.
async fn replay_deliveries(
    _: InternalAuth,
    Object(obj): OptionalObject,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let org_id = path_id(&path, ORG_NOT_FOUND)?;
    let r = ReplayFilter::from_json(&obj)?;
    let count = st.replay_matching(org_id, &r).await?;
    Ok(HttpResponse::Accepted().json(qualifier_store::deliveries::replay_answer(count, r.dry_run)))
}

async fn get_delivery(
    _: InternalAuth,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (org_id, id) = org_and(&path, "Delivery not found")?;
    let delivery = st.store.deliveries().get_delivery(org_id, id).await?;
    Ok(HttpResponse::Ok().json(json!({ "delivery": delivery })))
}

async fn replay_delivery(
    _: InternalAuth,
    path: web::Path<(String, String)>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (org_id, id) = org_and(&path, "Delivery not found")?;
    st.store
        .deliveries()
        .replay_delivery(org_id, id, st.replay_rate_per_second)
        .await?;
    Ok(HttpResponse::Accepted().json(json!({ "status": "pending" })))
}
