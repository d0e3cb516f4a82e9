//! The public API, `/api/v1`, authenticated with org tokens.

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use qualifier_store::feed::FeedError;
use serde_json::{Value, json};

use crate::error::{ApiError, method_not_allowed};
use crate::idempotency;
use crate::inputs::{
    FeedQuery, LeadListQuery, if_match, none_match, parse_new_lead, parse_public_patch,
};
use crate::state::{AppState, LegacyCursor, OrgAuth, path_id};
use qualifier_domain::lead::entity_tag;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/v1/leads")
            .route(web::get().to(list_leads))
            .route(web::post().to(create_lead))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/events")
            .route(web::get().to(events_feed))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/leads/{lead_id}")
            .route(web::get().to(get_lead))
            .route(web::patch().to(patch_lead))
            .route(web::delete().to(erase_lead))
            .default_service(web::to(method_not_allowed)),
    );
}

async fn get_lead(
    auth: OrgAuth,
    req: HttpRequest,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let lead_id = path_id(&path, "Lead not found")?;
    let lead = st.lead_reader.call((auth.org_id, lead_id)).await??.lead;
    let etag = (header::ETAG, entity_tag(lead.revision));
    if none_match(req.headers(), lead.revision) {
        return Ok(HttpResponse::NotModified().insert_header(etag).finish());
    }
    Ok(HttpResponse::Ok()
        .insert_header(etag)
        .json(json!({ "lead": lead })))
}

/// `GET /api/v1/events`: the org's events in feed order (docs/api.md, "Lists and the feed"). Each envelope is
/// the stored payload, the very bytes every delivery attempt sent, spliced in unparsed.
async fn events_feed(
    auth: OrgAuth,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = FeedQuery::parse(req.query_string(), &st.cursors, auth.org_id)?;
    if let Some(after) = q.after {
        st.check_legacy_cursor(
            q.after_raw.as_deref(),
            LegacyCursor::Feed(after),
            "Invalid cursor",
        )
        .await?;
    }
    let page = st
        .store
        .leads()
        .events_feed(
            auth.org_id,
            q.after,
            q.event_type,
            q.limit,
            crate::page::item_budget(st.max_page_bytes),
        )
        .await
        .map_err(|e| match e {
            FeedError::Expired => ApiError::Gone("Cursor expired"),
            FeedError::Store(e) => e.into(),
        })?;
    // Within the byte budget; a page cut short continues after its last event, and a whole
    // one from the feed's last position, so the feed always hands a cursor back.
    Ok(crate::page::within_budget(
        "events",
        &page.payloads,
        |i| page.positions[i],
        Some(page.last),
        st.max_page_bytes,
        |last| st.cursors.feed(auth.org_id, last),
    ))
}

/// `GET /api/v1/leads`: the org's leads by `(updated_at, id)` (docs/api.md, "Lists and the feed").
async fn list_leads(
    auth: OrgAuth,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q = LeadListQuery::parse(req.query_string(), &st.cursors, auth.org_id)?;
    let (leads, next) = st
        .store
        .leads()
        .list_leads(
            auth.org_id,
            q.updated_since,
            q.after,
            q.limit,
            crate::page::item_budget(st.max_page_bytes),
        )
        .await?;
    let items = crate::page::serialize(&leads)?;
    Ok(crate::page::within_budget(
        "leads",
        &items,
        |i| (leads[i].updated_at, leads[i].id),
        next,
        st.max_page_bytes,
        |(t, id)| st.cursors.lead(auth.org_id, t, id),
    ))
}

async fn patch_lead(
    auth: OrgAuth,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (bytes, v) = crate::body::json_with_bytes(&req, payload).await?;
    let work = async {
        let patch = parse_public_patch(&v)?;
        let lead_id = path_id(&path, "Lead not found")?;
        // Read with the concurrent requests' reads (one statement for all); the write then
        // applies only to the row as read.
        let read = st.lead_reader.call((auth.org_id, lead_id)).await??;
        let lead = st
            .store
            .leads()
            .patch_lead_public(
                auth.org_id,
                lead_id,
                &if_match(req.headers()),
                Some(read),
                patch,
            )
            .await?;
        Ok(HttpResponse::Ok()
            .insert_header((header::ETAG, entity_tag(lead.revision)))
            .json(json!({ "lead": lead })))
    };
    let lead = path_id(&path, "Lead not found").ok();
    idempotency::once(&st, &req, auth.org_id, lead, &bytes, work).await
}

/// `DELETE /api/v1/leads/{id}`: the contact is forgotten (docs/api.md, "Erasing a lead").
async fn erase_lead(
    auth: OrgAuth,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let lead_id = path_id(&path, "Lead not found")?;
    erase(&st, auth.org_id, lead_id).await
}

/// The erasure every entry point makes: 204 with no body, 404 for a lead that is not there.
pub(crate) async fn erase(
    st: &AppState,
    org_id: uuid::Uuid,
    lead_id: uuid::Uuid,
) -> Result<HttpResponse, ApiError> {
    let erased = st.store.leads().erase_lead(org_id, lead_id).await?;
    // Ids and counts only: the log is no place for what was just forgotten.
    tracing::info!(%org_id, %lead_id, events = erased.events, idempotency_answers = erased.idempotency_answers, "lead erased");
    Ok(HttpResponse::NoContent().finish())
}

async fn create_lead(
    auth: OrgAuth,
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (bytes, v) = crate::body::json_with_bytes(&req, payload).await?;
    let work = async {
        let Value::Object(obj) = v else {
            return Err(ApiError::Unprocessable(
                "Request body must be a JSON object".into(),
            ));
        };
        let new = parse_new_lead(&obj)?;
        let lead = st.store.leads().create_lead(auth.org_id, new).await?;
        Ok(HttpResponse::Created()
            .insert_header((header::LOCATION, format!("/api/v1/leads/{}", lead.id)))
            .insert_header((header::ETAG, entity_tag(lead.revision)))
            .json(json!({ "lead": lead })))
    };
    idempotency::once(&st, &req, auth.org_id, None, &bytes, work).await
}
