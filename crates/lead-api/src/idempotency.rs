//! `Idempotency-Key` on the public POST and PATCH (docs/api.md, after the IETF draft
//! `draft-ietf-httpapi-idempotency-key-header`): the first response to a key is kept 24 hours
//! and replayed to a repeat of the same request; nothing is changed or emitted twice.
//!
//! Authentication, the rate limit and the body's size, type and JSON are checked before the key
//! is looked at, as for any request; the key is then claimed in one statement, so of two
//! concurrent requests with one key exactly one runs and the other gets 409.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use qualifier_store::idempotency::{Claim, Kept};
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::AppState;

const HEADER: &str = "idempotency-key";
const REPLAYED: &str = "idempotency-replayed";

/// A key this request holds: its response is kept (or the key given up) when it is done.
pub struct Held {
    org_id: Uuid,
    key: String,
    /// The lead the request's path names, if any.
    lead: Option<Uuid>,
}

/// What to do with a request that may carry a key.
enum Begin {
    /// Run it; with `Some`, keep its response afterwards with [`finish`].
    Run(Option<Held>),
    /// Answer with the first response, changing nothing.
    Replay(HttpResponse),
}

/// The key, if any: 1..255 visible ASCII characters.
fn key_of(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(v) = req.headers().get(HEADER) else {
        return Ok(None);
    };
    let bad = || ApiError::Unprocessable("Invalid Idempotency-Key".into());
    let s = v.to_str().map_err(|_| bad())?;
    if s.is_empty() || s.len() > 255 || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad());
    }
    Ok(Some(s.to_owned()))
}

/// SHA-256 over the method, the path and the body bytes.
fn fingerprint(req: &HttpRequest, body: &[u8]) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(req.method().as_str().as_bytes());
    ctx.update(b"\n");
    ctx.update(req.path().as_bytes());
    ctx.update(b"\n");
    ctx.update(body);
    ctx.finish().as_ref().to_vec()
}

async fn begin(
    st: &AppState,
    req: &HttpRequest,
    org_id: Uuid,
    lead: Option<Uuid>,
    body: &[u8],
) -> Result<Begin, ApiError> {
    let Some(key) = key_of(req)? else {
        return Ok(Begin::Run(None));
    };
    match st
        .store
        .idempotency_claim(org_id, &key, &fingerprint(req, body), lead)
        .await?
    {
        Claim::Claimed => Ok(Begin::Run(Some(Held { org_id, key, lead }))),
        Claim::Mismatch => Err(ApiError::Unprocessable(
            "Idempotency-Key was used with a different request".into(),
        )),
        Claim::InProgress => Err(ApiError::Conflict {
            message: "A request with this Idempotency-Key is in progress".into(),
            location: None,
        }),
        Claim::Replay(kept) => {
            let status = StatusCode::from_u16(kept.status).unwrap_or(StatusCode::OK);
            let mut res = HttpResponse::build(status);
            res.insert_header((REPLAYED, "true"))
                .content_type("application/json");
            if let Some(loc) = kept.location {
                res.insert_header((header::LOCATION, loc));
            }
            // The lead's entity tag is its revision, which the kept body holds: the replay
            // answers the same tag as the original without keeping a column for it.
            if let Some(revision) = status
                .is_success()
                .then(|| kept_revision(&kept.body))
                .flatten()
            {
                res.insert_header((header::ETAG, qualifier_domain::lead::entity_tag(revision)));
            }
            Ok(Begin::Replay(res.body(kept.body)))
        }
    }
}

/// The lead a Location names (`/api/v1/leads/{id}`: a created lead, or the one a 409 points to).
fn lead_of_location(location: Option<&str>) -> Option<Uuid> {
    location?
        .strip_prefix("/api/v1/leads/")
        .and_then(|id| Uuid::parse_str(id).ok())
}

/// `lead.revision` of a kept lead answer.
fn kept_revision(body: &[u8]) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Answer {
        lead: Revisioned,
    }
    #[derive(serde::Deserialize)]
    struct Revisioned {
        revision: i64,
    }
    serde_json::from_slice::<Answer>(body)
        .ok()
        .map(|a| a.lead.revision)
}

/// The response's status, body and Location, as they are kept.
async fn kept_of(res: HttpResponse) -> (HttpResponse, Option<Kept>) {
    let status = res.status();
    let location = res
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (head, body) = res.into_parts();
    let Ok(bytes) = actix_web::body::to_bytes(body).await else {
        return (HttpResponse::InternalServerError().finish(), None);
    };
    let kept = Kept {
        status: status.as_u16(),
        body: bytes.to_vec(),
        location,
    };
    (head.set_body(bytes).map_into_boxed_body(), Some(kept))
}

/// Keeps the response to a held key (any status but 5xx: a 5xx is not kept, so a repeat runs
/// afresh) and answers it. An error is kept as its documented response.
/// `work` run at most once per Idempotency-Key: a key seen before answers with its first
/// response and `work` is never polled; otherwise `work` runs and its response is kept for
/// the key ([`begin`], then [`finish`]). Every write of the public API goes through it.
///
/// `lead`: the lead the request's path names (a PATCH), so that the key is found when that
/// lead is erased, even before its answer is kept; a created lead is known from the answer's
/// Location.
pub async fn once(
    st: &AppState,
    req: &HttpRequest,
    org_id: Uuid,
    lead: Option<Uuid>,
    body: &[u8],
    work: impl Future<Output = Result<HttpResponse, ApiError>>,
) -> Result<HttpResponse, ApiError> {
    let held = match begin(st, req, org_id, lead, body).await? {
        Begin::Replay(res) => return Ok(res),
        Begin::Run(held) => held,
    };
    let result = work.await;
    finish(st, held, result).await
}

async fn finish(
    st: &AppState,
    held: Option<Held>,
    result: Result<HttpResponse, ApiError>,
) -> Result<HttpResponse, ApiError> {
    let Some(held) = held else {
        return result;
    };
    let res = match result {
        Ok(res) => res,
        Err(e) if e.status_code().is_server_error() => {
            if let Err(release) = st.store.idempotency_release(held.org_id, &held.key).await {
                tracing::warn!(error = %qualifier_store::cause_chain(&release), "idempotency key not released; it frees itself after a minute");
            }
            return Err(e);
        }
        Err(e) => e.error_response(),
    };
    let (res, kept) = kept_of(res).await;
    if let Some(kept) = kept
        && let Err(e) = st
            .store
            .idempotency_keep(
                held.org_id,
                &held.key,
                &kept,
                held.lead
                    .or_else(|| lead_of_location(kept.location.as_deref())),
            )
            .await
    {
        // The change is done; only the replay is lost. The key frees itself after a minute.
        tracing::warn!(error = %qualifier_store::cause_chain(&e), "idempotent response not kept");
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::lead_of_location;

    #[test]
    fn a_location_names_its_lead_only_in_the_leads_path() {
        let id = "0192f3a4-5b6c-7d8e-9fa0-b1c2d3e4f506";
        assert_eq!(
            lead_of_location(Some(&format!("/api/v1/leads/{id}"))).map(|u| u.to_string()),
            Some(id.to_owned())
        );
        assert_eq!(lead_of_location(Some(&format!("/api/v1/other/{id}"))), None);
        assert_eq!(lead_of_location(Some("/api/v1/leads/not-a-uuid")), None);
        assert_eq!(lead_of_location(None), None);
    }
}
