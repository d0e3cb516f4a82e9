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
    fn conversation_url_joins_without_double_slash() {
        let id = Uuid::nil();
        assert_eq!(
            conversation_url("https://app.example/", id),
            "https://app.example/conversations/00000000-0000-0000-0000-000000000000"
        );
    }
}
