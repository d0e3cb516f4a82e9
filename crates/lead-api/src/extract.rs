//! Preconditions in the signature: a handler that takes [`InternalAuth`] or [`OrgAuth`] cannot
//! run unless the request passed that check, and it cannot forget to ask (the console's own,
//! `ConsoleSession` and `CsrfForm`, are in [`crate::console`]).
//!
//! actix extracts a handler's arguments in order and stops at the first refusal, so the
//! credential argument comes first: authentication (401) and the rate limit (429) are answered
//! before a single body byte is read, as the documented order of checks requires (docs/api.md, "Errors").

use std::future::{Ready, ready};
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::state::{AppState, OrgAuth};

/// The shared state of the app serving `req` (registered by [`crate::app`] on every listener).
pub(crate) fn state(req: &HttpRequest) -> Result<web::Data<AppState>, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("AppState is not registered").into()))
}

/// A request to the internal API that carried `QUALIFIER_INTERNAL_TOKEN`.
#[derive(Debug, Clone, Copy)]
pub struct InternalAuth(());

impl FromRequest for InternalAuth {
    type Error = ApiError;
    type Future = Ready<Result<InternalAuth, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(state(req).and_then(|st| st.authenticate_internal(req).map(|()| InternalAuth(()))))
    }
}

impl FromRequest for OrgAuth {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<OrgAuth, ApiError>>>>;

    /// The org token, then one unit of its rate-limit bucket (401, then 429).
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { state(&req)?.authenticate_org(&req).await })
    }
}

/// A request body that must be a JSON object: 413, 415 and 400 as the body is read, then 422
/// `Request body must be a JSON object` (`crate::body`, in the documented order of checks).
/// Placed after the credential, so nothing is read for a request that is refused. With
/// `OPTIONAL`, every field of the call is optional: an empty body without a Content-Type is
/// `{}` ([`crate::body::optional_object`]).
#[derive(Debug)]
pub struct Object<const OPTIONAL: bool>(pub Map<String, Value>);

/// A body that must be a JSON object.
pub type JsonObject = Object<false>;

/// A body that must be a JSON object, or nothing at all.
pub type OptionalObject = Object<true>;

impl<const OPTIONAL: bool> FromRequest for Object<OPTIONAL> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let (req, payload) = (req.clone(), payload.take());
        Box::pin(async move {
            let obj = if OPTIONAL {
                crate::body::optional_object(&req, payload).await?
            } else {
                crate::body::object(&req, payload, "Request body must be a JSON object").await?
            };
            Ok(Object(obj))
        })
    }
}
