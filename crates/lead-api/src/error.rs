//! The one place errors become HTTP responses.
//!
//! Policy: every error body is `{"error": "<message>"}` with the exact
//! message and status. Client errors say what was wrong; a database that cannot be reached is 503
//! with `Retry-After`; anything else is an opaque 500 whose cause goes to the log (with the
//! request id, by the request-id middleware), never to the client.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use qualifier_store::batch::BatchError;
use qualifier_store::{BoxError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("Unauthorized")]
    Unauthorized,
    #[error("Rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    #[error("Request body too large")]
    PayloadTooLarge,
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Invalid JSON body")]
    InvalidJson,
    /// The body had not fully arrived [`crate::body::BODY_DEADLINE`] after the head.
    #[error("Request timeout")]
    RequestTimeout,
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("Method not allowed")]
    MethodNotAllowed,
    /// A cursor older than what retention keeps (docs/api.md).
    #[error("{0}")]
    Gone(&'static str),
    #[error("{message}")]
    Conflict {
        message: String,
        location: Option<String>,
    },
    /// `If-Match` named another revision than the lead's (docs/api.md): the current one's tag.
    #[error("Lead has changed")]
    PreconditionFailed { etag: String },
    /// The cause is kept as `source()`, for the log only.
    #[error("Service unavailable")]
    Unavailable(#[source] BoxError),
    #[error("Internal server error")]
    Internal(#[source] BoxError),
}

impl ApiError {
    /// The whole cause chain behind an opaque 500/503 (`outer: inner: ...`), for the log only.
    pub fn cause(&self) -> Option<String> {
        match self {
            ApiError::Unavailable(c) | ApiError::Internal(c) => {
                Some(qualifier_store::cause_chain(c.as_ref()))
            }
            _ => None,
        }
    }
}

impl From<qualifier_domain::FieldError> for ApiError {
    fn from(e: qualifier_domain::FieldError) -> Self {
        ApiError::Unprocessable(e.message().to_owned())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => ApiError::NotFound(m),
            StoreError::LeadExists(id) => ApiError::Conflict {
                message: "Lead already exists".into(),
                location: Some(format!("/api/v1/leads/{id}")),
            },
            StoreError::Conflict(message) => ApiError::Conflict {
                message,
                location: None,
            },
            StoreError::Invalid(f) => f.into(),
            StoreError::LimitReached(m) => ApiError::Unprocessable(m.to_owned()),
            StoreError::Changed { revision } => ApiError::PreconditionFailed {
                etag: qualifier_domain::lead::entity_tag(revision),
            },
            StoreError::RateLimited { retry_after_secs } => {
                ApiError::RateLimited { retry_after_secs }
            }
            e @ StoreError::Unavailable(_) => ApiError::Unavailable(Box::new(e)),
            e @ (StoreError::Db(_)
            | StoreError::Corrupt { .. }
            | StoreError::Publish(_)
            | StoreError::Payload(_)) => ApiError::Internal(Box::new(e)),
        }
    }
}

/// A store error shared by every request of a batched round trip that failed: it reads (and
/// chains its causes) exactly as the store error itself, so the log says the same as before.
#[derive(Debug)]
struct Shared(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Shared {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// A batched round trip's failure is classified as its store error would be: an unreachable
/// database is 503, anything else an opaque 500.
impl From<BatchError> for ApiError {
    fn from(e: BatchError) -> Self {
        match e {
            BatchError::RoundTrip(cause) => {
                let unreachable = cause
                    .downcast_ref::<StoreError>()
                    .is_some_and(|s| matches!(s, StoreError::Unavailable(_)));
                if unreachable {
                    ApiError::Unavailable(Box::new(Shared(cause)))
                } else {
                    ApiError::Internal(Box::new(Shared(cause)))
                }
            }
            // The batcher's tasks are gone: the process is shutting down.
            e @ BatchError::Stopped => ApiError::Unavailable(Box::new(e)),
            e @ BatchError::WrongCount { .. } => ApiError::Internal(Box::new(e)),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::InvalidJson => StatusCode::BAD_REQUEST,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PreconditionFailed { .. } => StatusCode::PRECONDITION_FAILED,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code());
        match self {
            ApiError::Unauthorized => {
                res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            ApiError::RateLimited { retry_after_secs } => {
                res.insert_header((header::RETRY_AFTER, retry_after_secs.to_string()));
            }
            ApiError::Unavailable(_) => {
                res.insert_header((header::RETRY_AFTER, "5"));
            }
            // The rest of a stalled body may still arrive; the connection is not reusable.
            ApiError::RequestTimeout => {
                res.insert_header((header::CONNECTION, "close"));
            }
            ApiError::Conflict {
                location: Some(loc),
                ..
            } => {
                res.insert_header((header::LOCATION, loc.as_str()));
            }
            ApiError::PreconditionFailed { etag } => {
                res.insert_header((header::ETAG, etag.as_str()));
            }
            _ => {}
        }
        res.json(serde_json::json!({ "error": self.to_string() }))
    }
}

pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound("Not found"))
}

pub async fn method_not_allowed() -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed)
}
