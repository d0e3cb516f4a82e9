//! The public API, `/api/v1`, authenticated with org tokens.

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use qualifier_domain::validate::{
    Channel, Email, Name, Phone, RouteTarget, body, parse_external_ref, parse_profile,
};
use qualifier_store::leads::{NewLead, PublicPatch};
use qualifier_store::outbox::FeedError;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, method_not_allowed};
use crate::idempotency::{self, Begin};
use crate::state::{AppState, OrgAuth, path_id};

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
            .default_service(web::to(method_not_allowed)),
    );
}

async fn get_lead(
    auth: OrgAuth,
    path: web::Path<String>,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let lead_id = path_id(&path, "Lead not found")?;
    let lead = st.lead_reader.call((auth.org_id, lead_id)).await??;
    Ok(HttpResponse::Ok().json(json!({ "lead": lead })))
}

/// Query parameters, read by hand so a malformed query string gets the contract's 422, not
/// actix's own error page.
fn query<T: serde::de::DeserializeOwned>(req: &HttpRequest) -> Result<T, ApiError> {
    web::Query::<T>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|_| ApiError::Unprocessable("Invalid query string".into()))
}

#[derive(serde::Deserialize)]
struct FeedQuery {
    after: Option<String>,
    limit: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
}

/// `GET /api/v1/events`: the org's events in feed order (contract section 6). Each envelope is
/// the stored payload, the very bytes every delivery attempt sent, spliced in unparsed.
async fn events_feed(
    auth: OrgAuth,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: FeedQuery = query(&req)?;
    let after = q
        .after
        .as_deref()
        .map(|raw| {
            st.cursors
                .parse_feed(auth.org_id, raw)
                .ok_or_else(|| ApiError::Unprocessable("Invalid cursor".into()))
        })
        .transpose()?;
    let limit = crate::cursor::limit(q.limit.as_deref(), 100)?;
    let event_type = q
        .event_type
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(|s| crate::inputs::event_type_in("type", s))
        .transpose()?;
    let page = st
        .store
        .events_feed(auth.org_id, after, event_type, limit)
        .await
        .map_err(|e| match e {
            FeedError::Expired => ApiError::Gone("Cursor expired"),
            FeedError::Store(e) => e.into(),
        })?;
    // Within the byte budget; a page cut short continues after its last event.
    let n = crate::page::fitting(&page.payloads, st.max_page_bytes);
    let last = match n < page.payloads.len() {
        true => page.positions[n - 1],
        false => page.last,
    };
    let cursor = st.cursors.feed(auth.org_id, last);
    Ok(crate::page::json_page(
        "events",
        &page.payloads[..n],
        Some(&cursor),
    ))
}

#[derive(serde::Deserialize)]
struct LeadListQuery {
    updated_since: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /api/v1/leads`: the org's leads by `(updated_at, id)` (contract section 6).
async fn list_leads(
    auth: OrgAuth,
    req: HttpRequest,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let q: LeadListQuery = query(&req)?;
    let updated_since = crate::cursor::timestamp("updated_since", q.updated_since.as_deref())?;
    let limit = crate::cursor::limit(q.limit.as_deref(), 100)?;
    let after = match q.cursor.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => Some(st.cursors.parse_lead(auth.org_id, raw).ok_or_else(|| {
            ApiError::Unprocessable("cursor is not a cursor this list returned".into())
        })?),
    };
    let (leads, next) = st
        .store
        .list_leads(auth.org_id, updated_since, after, limit)
        .await?;
    let items = crate::page::serialize(&leads)?;
    let n = crate::page::fitting(&items, st.max_page_bytes);
    let next = match n < leads.len() {
        true => Some((leads[n - 1].updated_at, leads[n - 1].id)),
        false => next,
    };
    let next_cursor = next.map(|(t, id)| st.cursors.lead(auth.org_id, t, id));
    Ok(crate::page::json_page(
        "leads",
        &items[..n],
        next_cursor.as_deref(),
    ))
}

const PROVIDE_ONE: &str = "Provide at least one of external_ref, ai_paused, status.";

/// Checks the PATCH body in the order the contract lists its 422s: nothing provided, then the
/// status value, then the other fields.
pub fn parse_public_patch(v: &Value) -> Result<PublicPatch, ApiError> {
    let empty = Map::new();
    let obj = v.as_object().unwrap_or(&empty);
    let external_ref = body::get(obj, "external_ref");
    let ai_paused = body::get(obj, "ai_paused");
    let status = body::get(obj, "status");
    if external_ref.is_none() && ai_paused.is_none() && status.is_none() {
        return Err(ApiError::Unprocessable(PROVIDE_ONE.into()));
    }
    if let Some(s) = status
        && s.as_str() != Some("closed")
    {
        return Err(ApiError::Unprocessable(
            "Invalid status: only \"closed\" can be set.".into(),
        ));
    }
    Ok(PublicPatch {
        external_ref: external_ref.map(parse_external_ref).transpose()?,
        ai_paused: body::boolean(obj, "ai_paused")?,
        close: status.is_some(),
    })
}

async fn patch_lead(
    auth: OrgAuth,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (bytes, v) = crate::body::json_with_bytes(&req, payload).await?;
    let held = match idempotency::begin(&st, &req, auth.org_id, &bytes).await? {
        Begin::Replay(res) => return Ok(res),
        Begin::Run(held) => held,
    };
    let result = async {
        let patch = parse_public_patch(&v)?;
        let lead_id = path_id(&path, "Lead not found")?;
        let lead = st
            .store
            .patch_lead_public(auth.org_id, lead_id, patch)
            .await?;
        Ok(HttpResponse::Ok().json(json!({ "lead": lead })))
    }
    .await;
    idempotency::finish(&st, held, result).await
}

pub fn parse_new_lead(obj: &Map<String, Value>) -> Result<NewLead, ApiError> {
    Ok(NewLead {
        name: Name::parse("name", body::required_string(obj, "name")?)?,
        phone: Phone::parse(body::required_string(obj, "phone")?)?,
        email: body::string(obj, "email")?.map(Email::parse).transpose()?,
        channel: body::string(obj, "channel")?
            .map(Channel::parse)
            .transpose()?
            .unwrap_or_else(Channel::api_default),
        profile: body::get(obj, "profile")
            .map(parse_profile)
            .transpose()?
            .unwrap_or_default(),
        external_ref: body::get(obj, "external_ref")
            .map(parse_external_ref)
            .transpose()?,
        route_target: body::string(obj, "route_target")?
            .map(RouteTarget::parse)
            .transpose()?,
    })
}

async fn create_lead(
    auth: OrgAuth,
    req: HttpRequest,
    payload: web::Payload,
    st: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (bytes, v) = crate::body::json_with_bytes(&req, payload).await?;
    let held = match idempotency::begin(&st, &req, auth.org_id, &bytes).await? {
        Begin::Replay(res) => return Ok(res),
        Begin::Run(held) => held,
    };
    let result = async {
        let Value::Object(obj) = v else {
            return Err(ApiError::Unprocessable(
                "Request body must be a JSON object".into(),
            ));
        };
        let new = parse_new_lead(&obj)?;
        let lead = st.store.create_lead(auth.org_id, new).await?;
        Ok(HttpResponse::Created()
            .insert_header((header::LOCATION, format!("/api/v1/leads/{}", lead.id)))
            .json(json!({ "lead": lead })))
    }
    .await;
    idempotency::finish(&st, held, result).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(v: Value) -> String {
        match parse_public_patch(&v) {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    #[test]
    fn nothing_provided_wins_over_other_problems() {
        assert_eq!(msg(json!({})), PROVIDE_ONE);
        assert_eq!(
            msg(json!({"external_ref": null, "ai_paused": null, "status": null})),
            PROVIDE_ONE
        );
        assert_eq!(msg(json!([1, 2])), PROVIDE_ONE);
        assert_eq!(msg(json!("closed")), PROVIDE_ONE);
        assert_eq!(msg(json!({"name": "x"})), PROVIDE_ONE);
    }

    #[test]
    fn status_is_checked_before_other_fields() {
        assert_eq!(
            msg(json!({"status": "qualified", "ai_paused": "x"})),
            "Invalid status: only \"closed\" can be set."
        );
        assert_eq!(
            msg(json!({"status": 5})),
            "Invalid status: only \"closed\" can be set."
        );
        assert_eq!(
            msg(json!({"ai_paused": "yes"})),
            "ai_paused must be a boolean"
        );
    }

    #[test]
    fn a_valid_patch_parses() {
        let p = parse_public_patch(&json!({"status": "closed", "ai_paused": true, "extra": 1}))
            .unwrap();
        assert!(p.close && p.ai_paused == Some(true) && p.external_ref.is_none());
    }
}
