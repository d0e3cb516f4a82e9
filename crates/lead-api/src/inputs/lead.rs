//! A lead's fields, each parsed one way wherever it is accepted: creating a lead
//! (`POST /api/v1/leads`), an inbound contact, and both patches (public and internal). The
//! commands below differ only in which fields they take, which are required, and the order of
//! their checks (docs/api.md states each).

use qualifier_domain::Stage;
use qualifier_domain::lead::ExternalRef;
use qualifier_domain::validate::{
    Channel, Email, Name, Phone, RouteTarget, body, parse_external_ref, parse_profile,
};
use qualifier_store::leads::{InboundContact, InternalPatch, NewLead, PublicPatch};
use serde_json::{Map, Value};

use super::unprocessable;
use crate::error::ApiError;

type Fields = Map<String, Value>;

// --- One parser per field ---------------------------------------------------------------------

fn name(obj: &Fields) -> Result<Option<Name>, ApiError> {
    Ok(body::string(obj, "name")?
        .map(|n| Name::parse("name", n))
        .transpose()?)
}

fn phone(obj: &Fields) -> Result<Option<Phone>, ApiError> {
    Ok(body::string(obj, "phone")?.map(Phone::parse).transpose()?)
}

fn email(obj: &Fields) -> Result<Option<Email>, ApiError> {
    Ok(body::string(obj, "email")?.map(Email::parse).transpose()?)
}

fn channel(obj: &Fields) -> Result<Option<Channel>, ApiError> {
    Ok(body::string(obj, "channel")?
        .map(Channel::parse)
        .transpose()?)
}

fn route_target(obj: &Fields) -> Result<Option<RouteTarget>, ApiError> {
    Ok(body::string(obj, "route_target")?
        .map(RouteTarget::parse)
        .transpose()?)
}

fn stage(obj: &Fields) -> Result<Option<Stage>, ApiError> {
    Ok(body::string(obj, "qualification_stage")?
        .map(Stage::parse)
        .transpose()?)
}

fn external_ref(obj: &Fields) -> Result<Option<ExternalRef>, ApiError> {
    Ok(body::get(obj, "external_ref")
        .map(parse_external_ref)
        .transpose()?)
}

fn ai_paused(obj: &Fields) -> Result<Option<bool>, ApiError> {
    Ok(body::boolean(obj, "ai_paused")?)
}

/// A whole profile: an object whose known keys are typed.
fn profile(obj: &Fields) -> Result<Option<Map<String, Value>>, ApiError> {
    Ok(body::get(obj, "profile").map(parse_profile).transpose()?)
}

/// A profile change: an object merged key by key (`null` removes a key), as sent.
fn profile_changes(obj: &Fields) -> Result<Option<Value>, ApiError> {
    let p = body::get(obj, "profile").cloned();
    if let Some(p) = &p
        && !p.is_object()
    {
        return Err(unprocessable("profile must be an object"));
    }
    Ok(p)
}

/// `field` must be given: the same message for a missing field wherever one is required.
fn required<T>(
    obj: &Fields,
    key: &str,
    parse: fn(&Fields) -> Result<Option<T>, ApiError>,
) -> Result<T, ApiError> {
    body::required_string(obj, key)?;
    parse(obj)?.ok_or_else(|| unprocessable(format!("{key} is required")))
}

// --- The commands -------------------------------------------------------------------------------

pub const PROVIDE_ONE: &str = "Provide at least one of external_ref, ai_paused, status.";
const PROVIDE_ONE_INTERNAL: &str =
    "Provide at least one of name, email, phone, profile, route_target, qualification_stage.";
const INTERNAL_FIELDS: [&str; 6] = [
    "name",
    "email",
    "phone",
    "profile",
    "route_target",
    "qualification_stage",
];

/// `PATCH /api/v1/leads/{id}`, checked in the order the API documents its 422s: nothing
/// provided, then the status value, then the other fields. Any JSON value is accepted as the
/// body; one that is not an object provides nothing.
pub fn parse_public_patch(v: &Value) -> Result<PublicPatch, ApiError> {
    let empty = Map::new();
    let obj = v.as_object().unwrap_or(&empty);
    let status = body::get(obj, "status");
    if ["external_ref", "ai_paused", "status"]
        .iter()
        .all(|f| body::get(obj, f).is_none())
    {
        return Err(unprocessable(PROVIDE_ONE));
    }
    if let Some(s) = status
        && s.as_str() != Some("closed")
    {
        return Err(unprocessable("Invalid status: only \"closed\" can be set."));
    }
    Ok(PublicPatch {
        external_ref: external_ref(obj)?,
        ai_paused: ai_paused(obj)?,
        close: status.is_some(),
    })
}

/// `POST /api/v1/leads`: `name` and `phone` required; `channel` defaults to `api`.
pub fn parse_new_lead(obj: &Fields) -> Result<NewLead, ApiError> {
    Ok(NewLead {
        name: required(obj, "name", name)?,
        phone: required(obj, "phone", phone)?,
        email: email(obj)?,
        channel: channel(obj)?.unwrap_or_else(Channel::api_default),
        profile: profile(obj)?.unwrap_or_default(),
        external_ref: external_ref(obj)?,
        route_target: route_target(obj)?,
    })
}

/// An inbound contact (internal API): `name`, `phone` and `channel` required; the profile is
/// checked as a whole profile and kept as sent.
pub fn parse_inbound(obj: &Fields) -> Result<InboundContact, ApiError> {
    profile(obj)?;
    Ok(InboundContact {
        name: required(obj, "name", name)?,
        phone: required(obj, "phone", phone)?,
        email: email(obj)?,
        channel: required(obj, "channel", channel)?,
        profile: body::get(obj, "profile").cloned(),
    })
}

/// `PATCH /internal/v1/orgs/{org}/leads/{id}`: at least one field; the profile is a change.
pub fn parse_internal_patch(obj: &Fields) -> Result<InternalPatch, ApiError> {
    if INTERNAL_FIELDS.iter().all(|f| body::get(obj, f).is_none()) {
        return Err(unprocessable(PROVIDE_ONE_INTERNAL));
    }
    let profile = profile_changes(obj)?;
    Ok(InternalPatch {
        name: name(obj)?,
        email: email(obj)?,
        phone: phone(obj)?,
        profile,
        route_target: route_target(obj)?,
        stage: stage(obj)?,
    })
}

/// The most characters a handoff's `reason` holds.
pub const HANDOFF_REASON_MAX: usize = 1000;

/// A handoff's optional `reason`.
pub fn handoff_reason(obj: &Fields) -> Result<Option<String>, ApiError> {
    body::string(obj, "reason")?
        .map(|r| {
            if r.chars().count() > HANDOFF_REASON_MAX {
                Err(unprocessable(format!(
                    "reason must be at most {HANDOFF_REASON_MAX} characters"
                )))
            } else {
                Ok(r.to_owned())
            }
        })
        .transpose()
}

/// The operator accepting a handoff: a name, required.
pub fn handoff_operator(obj: &Fields) -> Result<String, ApiError> {
    Ok(Name::parse("operator", body::required_string(obj, "operator")?)?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(v: Value) -> String {
        match parse_public_patch(&v) {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    #[test]
    fn nothing_provided_wins_over_other_problems() {
        assert_eq!(msg(json!({})), PROVIDE_ONE);
        assert_eq!(
            msg(json!({"external_ref": null, "ai_paused": null, "status": null})),
            PROVIDE_ONE
        );
        assert_eq!(msg(json!([1, 2])), PROVIDE_ONE);
        assert_eq!(msg(json!("closed")), PROVIDE_ONE);
        assert_eq!(msg(json!({"name": "x"})), PROVIDE_ONE);
    }

    #[test]
    fn status_is_checked_before_other_fields() {
        assert_eq!(
            msg(json!({"status": "qualified", "ai_paused": "x"})),
            "Invalid status: only \"closed\" can be set."
        );
        assert_eq!(
            msg(json!({"status": 5})),
            "Invalid status: only \"closed\" can be set."
        );
        assert_eq!(
            msg(json!({"ai_paused": "yes"})),
            "ai_paused must be a boolean"
        );
    }

    #[test]
    fn a_valid_patch_parses() {
        let p = parse_public_patch(&json!({"status": "closed", "ai_paused": true, "extra": 1}))
            .unwrap();
        assert!(p.close && p.ai_paused == Some(true) && p.external_ref.is_none());
    }

    fn err(r: Result<impl std::fmt::Debug, ApiError>) -> String {
        match r {
            Err(ApiError::Unprocessable(m)) => m,
            other => panic!("expected 422, got {other:?}"),
        }
    }

    fn obj(v: Value) -> Fields {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_field_reads_the_same_in_every_command() {
        // The same bad phone gets the same message from create, inbound and the patch.
        let bad = obj(json!({"name": "Ada", "phone": "12", "channel": "web"}));
        let create = err(parse_new_lead(&bad));
        assert_eq!(create, err(parse_inbound(&bad)));
        assert_eq!(create, err(parse_internal_patch(&bad)));
        // Required where the command needs it, with one wording.
        assert_eq!(
            err(parse_new_lead(&obj(json!({"phone": "+447700900123"})))),
            "name is required"
        );
        assert_eq!(
            err(parse_inbound(&obj(
                json!({"name": "Ada", "phone": "+447700900123"})
            ))),
            "channel is required"
        );
        // A control character in any text field is refused, naming the field.
        let nul = obj(json!({"name": "A\u{0}da", "phone": "+447700900123", "channel": "web"}));
        assert!(err(parse_inbound(&nul)).contains("name"));
        assert!(err(parse_internal_patch(&nul)).contains("name"));
    }

    #[test]
    fn a_handoff_reason_has_a_limit() {
        let long = obj(json!({"reason": "x".repeat(HANDOFF_REASON_MAX + 1)}));
        assert_eq!(
            err(handoff_reason(&long)),
            "reason must be at most 1000 characters"
        );
        let ok = obj(json!({"reason": "x".repeat(HANDOFF_REASON_MAX)}));
        assert!(handoff_reason(&ok).unwrap().is_some());
        assert_eq!(handoff_reason(&obj(json!({}))).unwrap(), None);
        assert_eq!(
            err(handoff_operator(&obj(json!({})))),
            "operator is required"
        );
    }
}
