//! Request bodies, read by hand so the documented order of checks (docs/api.md, "Errors") holds: authentication and the
//! rate limit run before a single body byte is read, then size and type (413, 415), then JSON
//! (400); fields (422) and lookups (404) come after, in the handlers. This is the one place
//! bodies are read, so the body deadline (408) lives here too.

use actix_web::{HttpRequest, http::header, web};
use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::error::ApiError;

pub const BODY_LIMIT: usize = 64 * 1024;

/// A body must have fully arrived this long after the request's head (docs/reliability.md, "Hostile input"): a
/// client that announces 40 bytes and sends 5 does not hold a connection and a worker forever.
pub const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// When the request's head arrived (set by the middleware, the first thing that sees it).
#[derive(Clone, Copy, Debug)]
pub struct HeadReceived(pub tokio::time::Instant);

fn is_json_content_type(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

fn declared_length(req: &HttpRequest) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A request's body as it arrives: a handler's `web::Payload` or an extractor's `dev::Payload`.
pub trait Body<E>: futures_util::Stream<Item = Result<web::Bytes, E>> + Unpin {}
impl<E, S: futures_util::Stream<Item = Result<web::Bytes, E>> + Unpin> Body<E> for S {}

/// Reads the whole body of `req` (an extractor's `dev::Payload` or a handler's `web::Payload`).
pub(crate) async fn read_limited<S, E>(
    req: &HttpRequest,
    mut payload: S,
) -> Result<web::BytesMut, ApiError>
where
    S: futures_util::Stream<Item = Result<web::Bytes, E>> + Unpin,
{
    use actix_web::HttpMessage;
    let head = req
        .extensions()
        .get::<HeadReceived>()
        .map_or_else(tokio::time::Instant::now, |h| h.0);
    let read = async {
        let mut buf = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|_| ApiError::InvalidJson)?;
            if buf.len() + chunk.len() > BODY_LIMIT {
                return Err(ApiError::PayloadTooLarge);
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf)
    };
    tokio::time::timeout_at(head + BODY_DEADLINE, read)
        .await
        .map_err(|_| ApiError::RequestTimeout)?
}

/// A JSON body of any shape.
pub async fn json_value<E>(req: &HttpRequest, payload: impl Body<E>) -> Result<Value, ApiError> {
    Ok(json_with_bytes(req, payload).await?.1)
}

/// A JSON body of any shape, with the bytes it was parsed from (an Idempotency-Key's request
/// fingerprint covers the body exactly as sent).
pub async fn json_with_bytes<E>(
    req: &HttpRequest,
    payload: impl Body<E>,
) -> Result<(web::Bytes, Value), ApiError> {
    if declared_length(req).is_some_and(|n| n > BODY_LIMIT as u64) {
        return Err(ApiError::PayloadTooLarge);
    }
    if !is_json_content_type(req) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let bytes = read_limited(req, payload).await?.freeze();
    let v = serde_json::from_slice(&bytes).map_err(|_| ApiError::InvalidJson)?;
    Ok((bytes, v))
}

/// A body that must be a JSON object (every field of the call is optional, so an empty body with
/// no Content-Type is taken as `{}`).
pub async fn optional_object<E>(
    req: &HttpRequest,
    payload: impl Body<E>,
) -> Result<Map<String, Value>, ApiError> {
    if req.headers().get(header::CONTENT_TYPE).is_none() {
        if declared_length(req).is_some_and(|n| n > BODY_LIMIT as u64) {
            return Err(ApiError::PayloadTooLarge);
        }
        // No Content-Type: fine when there is no body at all, 415 when there is one.
        return if read_limited(req, payload).await?.is_empty() {
            Ok(Map::new())
        } else {
            Err(ApiError::UnsupportedMediaType)
        };
    }
    object(req, payload, "Request body must be a JSON object").await
}

/// A body that must be a JSON object; `not_object` is the 422 message otherwise.
pub async fn object<E>(
    req: &HttpRequest,
    payload: impl Body<E>,
    not_object: &str,
) -> Result<Map<String, Value>, ApiError> {
    match json_value(req, payload).await? {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::Unprocessable(not_object.to_owned())),
    }
}
