//! The delivery log's inputs: a page's filter and cursor, a search by id, and a bulk replay's
//! selection.

use qualifier_domain::DeliveryStatus;
use qualifier_domain::validate::body;
use qualifier_store::deliveries::DeliveryFilter;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{event_type_in, event_types_message, limit, query, timestamp, unprocessable};
use crate::error::ApiError;

/// A page of the delivery log: the filter, where to continue, how many.
#[derive(Debug, Clone, Default)]
pub struct DeliveryQuery {
    pub filter: DeliveryFilter,
    /// The previous page's cursor, as sent: it opens only for its org ([`DeliveryQuery::before`]).
    pub cursor: Option<String>,
    pub limit: i64,
}

#[derive(serde::Deserialize)]
struct DeliveryParams {
    status: Option<String>,
    limit: Option<String>,
    event_type: Option<String>,
    lead_id: Option<String>,
    endpoint_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cursor: Option<String>,
}

pub const NOT_OURS: &str = "cursor is not a cursor this list returned";
const STATUS_NAMES: &str = "status must be one of pending, succeeded, failed, dead, skipped";
/// Deliveries per page when the query does not say.
const PAGE_SIZE: i64 = 50;

fn lead_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| unprocessable("lead_id must be a UUID"))
}

/// `endpoint_id`: whose deliveries (absent: the org's primary endpoint's).
fn endpoint_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| unprocessable("endpoint_id must be a UUID"))
}

/// The console's one search field (`q`): a delivery id (what the receiver saw as `webhook-id`
/// and `X-Qualifier-Delivery`), an event id or a lead id. `None` when the field is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliverySearch {
    /// As typed (trimmed), to show back in the field.
    pub text: String,
    /// The id, or why the text is not one.
    pub id: Result<Uuid, &'static str>,
}

pub const SEARCH_HINT: &str =
    "Search takes a delivery id (the webhook-id your receiver logged), an event id or a lead id";

impl DeliverySearch {
    pub fn parse(query_string: &str) -> Option<DeliverySearch> {
        let text = url::form_urlencoded::parse(query_string.as_bytes())
            .find(|(k, _)| k == "q")
            // Shown back in the field: without control characters, and no longer than any
            // spelling of an id needs.
            .map(|(_, v)| {
                v.chars()
                    .filter(|c| !c.is_control())
                    .take(100)
                    .collect::<String>()
                    .trim()
                    .to_owned()
            })
            .filter(|v| !v.is_empty())?;
        // Any spelling a log may hold: upper case, braces, a urn:uuid: prefix, no hyphens.
        let id = Uuid::parse_str(&text).map_err(|_| SEARCH_HINT);
        Some(DeliverySearch { text, id })
    }
}

impl DeliveryQuery {
    /// The list's query string (unknown parameters are ignored; empty ones are absent).
    pub fn parse(query_string: &str) -> Result<DeliveryQuery, ApiError> {
        // Parsed by hand so a bad query string gets the API's 422, not actix's own error.
        let q: DeliveryParams = query(query_string)?;
        let given = |v: Option<String>| v.filter(|s| !s.is_empty());
        let mut f = DeliveryFilter::default();
        if let Some(s) = given(q.status) {
            f.statuses = vec![
                s.parse::<DeliveryStatus>()
                    .map_err(|_| unprocessable(STATUS_NAMES))?,
            ];
        }
        if let Some(t) = given(q.event_type) {
            f.event_types = vec![event_type_in("event_type", &t)?];
        }
        f.lead_id = given(q.lead_id).as_deref().map(lead_id).transpose()?;
        f.endpoint_id = given(q.endpoint_id)
            .as_deref()
            .map(endpoint_id)
            .transpose()?;
        f.since = timestamp("since", q.since.as_deref())?;
        f.until = timestamp("until", q.until.as_deref())?;
        // A cursor that cannot be a cursor at all is refused here, with the other parameters;
        // whether it opens is known once the org is (`before`).
        let cursor = given(q.cursor);
        if cursor.as_ref().is_some_and(|c| c.len() > 160) {
            return Err(unprocessable(NOT_OURS));
        }
        let limit = limit(q.limit.as_deref(), PAGE_SIZE)?;
        Ok(DeliveryQuery {
            filter: f,
            cursor,
            limit,
        })
    }

    /// The outbox position to continue below, from the cursor this list gave `org`.
    pub fn before(
        &self,
        cursors: &crate::cursor::Cursors,
        org: Uuid,
    ) -> Result<Option<i64>, ApiError> {
        self.cursor
            .as_deref()
            .map(|raw| {
                cursors
                    .parse_delivery(org, raw)
                    .ok_or_else(|| unprocessable(NOT_OURS))
            })
            .transpose()
    }
}

/// Which deliveries a bulk replay sends again, and whether it only counts them.
#[derive(Debug, Clone)]
pub struct ReplayFilter {
    pub filter: DeliveryFilter,
    pub dry_run: bool,
}

impl ReplayFilter {
    /// Every dead delivery of the org's primary endpoint.
    pub fn all_dead(dry_run: bool) -> ReplayFilter {
        Self::all_dead_of(None, dry_run)
    }

    /// Every dead delivery of one endpoint of the org (`None`: the primary's), the console's
    /// "Replay all dead" under that endpoint's list.
    pub fn all_dead_of(endpoint_id: Option<uuid::Uuid>, dry_run: bool) -> ReplayFilter {
        ReplayFilter {
            filter: DeliveryFilter {
                statuses: vec![DeliveryStatus::Dead],
                endpoint_id,
                ..Default::default()
            },
            dry_run,
        }
    }

    /// The bulk replay body: `status` (default `["dead"]`; `dead`, `failed` or `skipped`),
    /// `since`, `until`, `event_types`, `lead_id`, `endpoint_id` (default: the primary
    /// endpoint's), `dry_run`. Every field is optional.
    pub fn from_json(obj: &Map<String, Value>) -> Result<ReplayFilter, ApiError> {
        let mut f = Self::all_dead(false).filter;
        if let Some(list) = body::get(obj, "status") {
            const MSG: &str = "status must be a non-empty list of dead, failed, skipped";
            let items = list
                .as_array()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| unprocessable(MSG))?;
            f.statuses = items
                .iter()
                .map(|i| match i.as_str().and_then(|s| s.parse().ok()) {
                    Some(
                        s @ (DeliveryStatus::Dead
                        | DeliveryStatus::Failed
                        | DeliveryStatus::Skipped),
                    ) => Ok(s),
                    _ => Err(unprocessable(MSG)),
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(list) = body::get(obj, "event_types") {
            let msg = || unprocessable(event_types_message("event_types"));
            f.event_types = list
                .as_array()
                .ok_or_else(msg)?
                .iter()
                .map(|i| i.as_str().and_then(|s| s.parse().ok()).ok_or_else(msg))
                .collect::<Result<_, _>>()?;
        }
        f.lead_id = body::string(obj, "lead_id")?.map(lead_id).transpose()?;
        f.endpoint_id = body::string(obj, "endpoint_id")?
            .map(endpoint_id)
            .transpose()?;
        for (name, slot) in [("since", &mut f.since), ("until", &mut f.until)] {
            *slot = timestamp(name, body::string(obj, name)?)?;
        }
        Ok(ReplayFilter {
            filter: f,
            dry_run: body::boolean(obj, "dry_run")?.unwrap_or(false),
        })
    }
}
