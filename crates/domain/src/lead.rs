//! The lead snapshot: the object under `lead` in API responses and under `data.lead` in events.

use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::validate::{Channel, Email, FieldError, Name, Phone, RouteTarget};

named_enum! {
    /// `qualification_stage`. The public API may only ever set [`Stage::Closed`].
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum Stage {
        Qualifying,
        Qualified,
        Closed,
    }
}

impl Stage {
    /// A stage named in a request body, with the 422 message naming the field.
    pub fn parse(s: &str) -> Result<Stage, FieldError> {
        s.parse().map_err(|_| {
            FieldError::new("qualification_stage must be one of qualifying, qualified, closed")
        })
    }
}

/// A CRM reference stamped on the lead. `url` is null unless the client set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExternalRef {
    pub system: String,
    pub id: String,
    pub url: Option<String>,
}

/// The full lead object, in the field order receivers see in `events.md`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lead {
    pub id: Uuid,
    pub name: Name,
    pub email: Option<Email>,
    pub phone: Phone,
    pub channel: Channel,
    pub qualification_stage: Stage,
    pub route_target: Option<RouteTarget>,
    /// Always a JSON object (`{}` when empty).
    pub profile: serde_json::Map<String, serde_json::Value>,
    pub external_ref: Option<ExternalRef>,
    pub ai_paused: bool,
    pub conversation_url: String,
    #[serde(with = "crate::timefmt::millis")]
    pub created_at: OffsetDateTime,
    #[serde(with = "crate::timefmt::millis")]
    pub updated_at: OffsetDateTime,
    /// 1 at creation, plus 1 with every committed change of any field (kept by the database's
    /// `leads_revision` trigger); the lead's entity tag and the number a receiver compares to
    /// tell a newer snapshot from an older one.
    pub revision: i64,
}

/// A lead's entity tag (`ETag`): its revision, quoted. Strong: two snapshots with one revision
/// are the same bytes.
pub fn entity_tag(revision: i64) -> String {
    format!("\"{revision}\"")
}

/// What a write expects of the lead's revision when it is made (`If-Match`, docs/api.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Expected {
    /// No condition, or `If-Match: *`: any lead that exists.
    #[default]
    Any,
    /// One of these revisions. Empty when the header named no entity tag of ours, which then
    /// matches nothing: a write its client meant as conditional is never made unconditionally.
    OneOf(Vec<i64>),
}

impl Expected {
    pub fn admits(&self, revision: i64) -> bool {
        match self {
            Expected::Any => true,
            Expected::OneOf(revisions) => revisions.contains(&revision),
        }
    }
}

/// `conversation_url = {base}/conversations/{lead_id}`; a trailing slash on the base is ignored.
pub fn conversation_url(app_base_url: &str, lead_id: Uuid) -> String {
    format!(
        "{}/conversations/{}",
        app_base_url.trim_end_matches('/'),
        lead_id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_round_trips_and_rejects_unknown() {
        use strum::VariantArray;
        for &st in Stage::VARIANTS {
            assert_eq!(Stage::parse(st.as_str()).unwrap(), st);
        }
        assert!(Stage::parse("Closed").is_err());
        assert!(Stage::parse("new").is_err());
    }

    #[test]
    fn an_expectation_admits_only_the_revisions_it_names() {
        assert!(Expected::Any.admits(7));
        assert!(Expected::OneOf(vec![3, 7]).admits(7));
        assert!(!Expected::OneOf(vec![3]).admits(7));
        assert!(!Expected::OneOf(vec![]).admits(1));
        assert_eq!(entity_tag(12), "\"12\"");
    }

    #[test]
    fn conversation_url_joins_without_double_slash() {
        let id = Uuid::nil();
        assert_eq!(
            conversation_url("https://app.example/", id),
            "https://app.example/conversations/00000000-0000-0000-0000-000000000000"
        );
    }
}
