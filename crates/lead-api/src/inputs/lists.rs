//! The parameters of the lists and the feed: page sizes, timestamps, cursors and the query
//! string itself (docs/api.md, "Lists and the feed").

use qualifier_domain::EventType;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::{event_type_in, unprocessable};
use crate::cursor::Cursors;
use crate::error::ApiError;

/// The largest page any list or the feed returns.
pub const MAX_LIMIT: i64 = 500;

/// A query string read into `T`, by hand, so a malformed one gets the API's 422, not actix's own
/// error page.
pub fn query<T: serde::de::DeserializeOwned>(query_string: &str) -> Result<T, ApiError> {
    actix_web::web::Query::<T>::from_query(query_string)
        .map(actix_web::web::Query::into_inner)
        .map_err(|_| unprocessable("Invalid query string"))
}

/// `limit`: 1..=500, `default` when absent or empty.
pub fn limit(raw: Option<&str>, default: i64) -> Result<i64, ApiError> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(default),
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| unprocessable("limit must be an integer from 1 to 500")),
    }
}

/// A timestamp parameter: RFC 3339 (`Z` or an offset), the lead object's format included.
pub fn timestamp(name: &str, raw: Option<&str>) -> Result<Option<OffsetDateTime>, ApiError> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => OffsetDateTime::parse(s, &Rfc3339).map(Some).map_err(|_| {
            unprocessable(format!(
                "{name} must be a timestamp such as 2026-01-31T12:00:00.000Z"
            ))
        }),
    }
}

/// Feed entries and leads per page when the query does not say.
const PAGE_SIZE: i64 = 100;

#[derive(serde::Deserialize)]
struct FeedParams {
    after: Option<String>,
    limit: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
}

/// `GET /api/v1/events`: where to continue (a cursor the feed gave this org), how many, which
/// type.
#[derive(Debug, Clone)]
pub struct FeedQuery {
    pub after: Option<i64>,
    /// `after` as sent (an unsealed one is checked against what existed before sealing).
    pub after_raw: Option<String>,
    pub limit: i64,
    pub event_type: Option<EventType>,
}

impl FeedQuery {
    pub fn parse(query_string: &str, cursors: &Cursors, org: Uuid) -> Result<Self, ApiError> {
        let q: FeedParams = query(query_string)?;
        let after = q
            .after
            .as_deref()
            .map(|raw| {
                cursors
                    .parse_feed(org, raw)
                    .ok_or_else(|| unprocessable("Invalid cursor"))
            })
            .transpose()?;
        let limit = limit(q.limit.as_deref(), PAGE_SIZE)?;
        let event_type = q
            .event_type
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| event_type_in("type", s))
            .transpose()?;
        Ok(FeedQuery {
            after,
            after_raw: q.after,
            limit,
            event_type,
        })
    }
}

#[derive(serde::Deserialize)]
struct LeadListParams {
    updated_since: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /api/v1/leads`: from when, where to continue, how many.
#[derive(Debug, Clone)]
pub struct LeadListQuery {
    pub updated_since: Option<OffsetDateTime>,
    pub after: Option<(OffsetDateTime, Uuid)>,
    pub limit: i64,
}

impl LeadListQuery {
    pub fn parse(query_string: &str, cursors: &Cursors, org: Uuid) -> Result<Self, ApiError> {
        let q: LeadListParams = query(query_string)?;
        let updated_since = timestamp("updated_since", q.updated_since.as_deref())?;
        let limit = limit(q.limit.as_deref(), PAGE_SIZE)?;
        let after = match q.cursor.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(raw) => Some(
                cursors
                    .parse_lead(org, raw)
                    .ok_or_else(|| unprocessable("cursor is not a cursor this list returned"))?,
            ),
        };
        Ok(LeadListQuery {
            updated_since,
            after,
            limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_timestamps() {
        assert_eq!(limit(None, 100).unwrap(), 100);
        assert_eq!(limit(Some("500"), 100).unwrap(), 500);
        for bad in ["0", "501", "-1", "x", "1.5"] {
            assert!(limit(Some(bad), 100).is_err(), "{bad}");
        }
        assert!(
            timestamp("since", Some("2026-01-31T12:00:00.000Z"))
                .unwrap()
                .is_some()
        );
        assert!(
            timestamp("since", Some("2026-01-31T14:00:00+02:00"))
                .unwrap()
                .is_some()
        );
        match timestamp("updated_since", Some("yesterday")) {
            Err(ApiError::Unprocessable(m)) => assert!(m.starts_with("updated_since ")),
            other => panic!("{other:?}"),
        }
    }
}
