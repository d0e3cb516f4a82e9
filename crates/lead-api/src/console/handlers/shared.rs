//! What the console's handlers share: a page's notice after an action, an id from a path.

use actix_web::web;
use uuid::Uuid;

use crate::console::errors::{ConsoleError, Result};

#[derive(serde::Deserialize)]
struct Notice {
    done: Option<String>,
}

pub(super) fn notice_text(q: &str) -> Option<&'static str> {
    let n = web::Query::<Notice>::from_query(q).ok()?;
    match n.done.as_deref()? {
        "saved" => Some("Saved."),
        "filter" => Some("Filter saved. It applies to the events that occur from now on."),
        "receiver" => {
            Some("Headers and credentials saved. Every request from now on carries them.")
        }
        "checking" => Some("Checking your endpoint now. Reload in a moment to see the result."),
        "revoked" => Some("Token revoked. Requests with it now get 401."),
        "replayed" => Some("Queued again: 5 fresh attempts under the same delivery id."),
        "replayed-all" => {
            Some("Dead deliveries queued again, paced so your endpoint is not flooded.")
        }
        "endpoint-deleted" => Some(
            "Endpoint deleted. Its pending deliveries ended skipped (Endpoint deleted); it gets nothing more.",
        ),
        _ => None,
    }
}

pub(super) fn parse_id(raw: &str, what: &'static str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ConsoleError::NotFound(what))
}
