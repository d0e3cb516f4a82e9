//! The console's refusals and failures, as pages. What a store or input error means is
//! [`crate::error`]'s to say (the one mapping, shared with the API); this only draws it.

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};
use qualifier_store::StoreError;

use super::{page, pages};
use crate::error::ApiError;

/// What a used, expired or signed-out link shows: how to get a new one, wherever the reader
/// came from (docs/console.md, "Signing in").
pub const SIGNED_OUT: &str = "This sign-in link was already used, has expired, or your session ended. \
A sign-in link works once, for 10 minutes. To get a new one, open the settings from the product again. \
On a development stack, run make console-link in the checkout (it prints a fresh link); \
an operator mints one with POST /internal/v1/orgs/{org}/console-sessions.";

/// A refusal or failure as a page: never a stack of details, as the API never gives one.
#[derive(Debug)]
pub enum ConsoleError {
    SignedOut,
    Csrf,
    NotFound(&'static str),
    BadRequest(String),
    Conflict(String),
    Refused(StatusCode, String),
    /// A quota (docs/reliability.md, "Strangers, quotas and pages"): 429 with `Retry-After`.
    RateLimited {
        retry_after_secs: u64,
    },
    Unavailable,
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl actix_web::ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignedOut => StatusCode::UNAUTHORIZED,
            ConsoleError::Csrf => StatusCode::FORBIDDEN,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Conflict(_) => StatusCode::CONFLICT,
            ConsoleError::Refused(status, _) => *status,
            ConsoleError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ConsoleError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let m = match self {
            ConsoleError::SignedOut => pages::plain("Sign in again", SIGNED_OUT),
            ConsoleError::Csrf => pages::plain(
                "Refused",
                "This form was not sent from your current settings page. Reload the page and try again.",
            ),
            ConsoleError::NotFound(what) => pages::plain("Not found", what),
            ConsoleError::BadRequest(m)
            | ConsoleError::Conflict(m)
            | ConsoleError::Refused(_, m) => pages::plain("Not accepted", m),
            ConsoleError::RateLimited { retry_after_secs } => pages::plain(
                "Rate limit exceeded",
                &format!(
                    "At most {} test events a minute. Try again in {retry_after_secs} seconds.",
                    qualifier_store::webhooks::TEST_EVENTS_PER_MINUTE
                ),
            ),
            ConsoleError::Unavailable => pages::plain(
                "Temporarily unavailable",
                "The settings could not be reached just now. Try again in a moment.",
            ),
        };
        let mut r = page(self.status_code(), m);
        // Nothing was changed, and the same form may be sent again: when, as the API says it.
        let retry_after = match self {
            ConsoleError::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            ConsoleError::Unavailable => Some(5),
            _ => None,
        };
        if let Some(secs) = retry_after
            && let Ok(v) = header::HeaderValue::from_str(&secs.to_string())
        {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        r
    }
}

/// Store errors mean what they mean for the API ([`crate::error`], the one mapping); the console
/// shows them as pages.
impl From<StoreError> for ConsoleError {
    fn from(e: StoreError) -> Self {
        ApiError::from(e).into()
    }
}

impl From<ApiError> for ConsoleError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::NotFound(what) => ConsoleError::NotFound(what),
            ApiError::Unprocessable(m) => ConsoleError::BadRequest(m),
            // The body rules of every request (docs/reliability.md, "Hostile input"), as pages.
            ApiError::PayloadTooLarge => {
                ConsoleError::Refused(StatusCode::PAYLOAD_TOO_LARGE, e.to_string())
            }
            ApiError::RequestTimeout => {
                ConsoleError::Refused(StatusCode::REQUEST_TIMEOUT, e.to_string())
            }
            ApiError::InvalidJson => ConsoleError::BadRequest("The form could not be read.".into()),
            ApiError::Conflict { message, .. } => ConsoleError::Conflict(message),
            ApiError::RateLimited { retry_after_secs } => {
                ConsoleError::RateLimited { retry_after_secs }
            }
            other => {
                if let Some(cause) = other.cause() {
                    tracing::warn!(error = %cause, "console request failed");
                }
                ConsoleError::Unavailable
            }
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, ConsoleError>;
