//! Webhook events: the catalogue, the envelope, and which events a change emits.
//!
//! The envelope is serialized once, in the transaction that makes the change, and those bytes are
//! what every attempt sends and signs (docs/delivery.md).

use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{Handoff, Lead, Stage};

named_enum! {
    /// The event catalogue (docs/events.md). Its names are the strings receivers see in `type` and
    /// `X-Qualifier-Event`, stored in the outbox and in a webhook's subscription list; strum derives
    /// the name table (`as_str`, `FromStr`, `VARIANTS`) from the attributes below, so a new type is
    /// one variant here.
    pub enum EventType {
        #[serde(rename = "lead.created")]
        #[strum(serialize = "lead.created")]
        LeadCreated,
        #[serde(rename = "lead.updated")]
        #[strum(serialize = "lead.updated")]
        LeadUpdated,
        #[serde(rename = "lead.stage_changed")]
        #[strum(serialize = "lead.stage_changed")]
        LeadStageChanged,
        #[serde(rename = "lead.qualified")]
        #[strum(serialize = "lead.qualified")]
        LeadQualified,
        #[serde(rename = "handoff.created")]
        #[strum(serialize = "handoff.created")]
        HandoffCreated,
        #[serde(rename = "handoff.accepted")]
        #[strum(serialize = "handoff.accepted")]
        HandoffAccepted,
        #[serde(rename = "handoff.released")]
        #[strum(serialize = "handoff.released")]
        HandoffReleased,
        #[serde(rename = "lead.erased")]
        #[strum(serialize = "lead.erased")]
        LeadErased,
    }
}

impl EventType {
    /// When it fires (docs/events.md); the console's event catalogue shows it.
    pub fn description(self) -> &'static str {
        match self {
            EventType::LeadCreated => {
                "A new inbound contact created a lead. Never fires for leads created through the API."
            }
            EventType::LeadUpdated => {
                "Contact info or profile fields changed; data.previous holds what they were."
            }
            EventType::LeadStageChanged => {
                "qualification_stage transitioned, in any direction; data.previous_stage is the stage before. Closing a lead (PATCH with status closed) sends it with stage closed."
            }
            EventType::LeadQualified => {
                "The stage moved into qualified; always together with a lead.stage_changed."
            }
            EventType::HandoffCreated => "The AI requested a human takeover.",
            EventType::HandoffAccepted => "An operator took the handoff.",
            EventType::HandoffReleased => "The operator handed the lead back to the AI.",
            EventType::LeadErased => {
                "The contact was forgotten: the lead and every snapshot of it are erased. data.lead.id is all that is left; erase your copy too."
            }
        }
    }
}

/// `data`: the lead snapshot plus the event's own fields. Field order matches `events.md`.
#[derive(Debug, Clone, Serialize)]
pub struct EventData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_stage: Option<Stage>,
    /// What the change altered, as it was before ([`previous_values`]): on `lead.updated`,
    /// `lead.stage_changed` and `lead.qualified`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<Map<String, Value>>,
    pub lead: Lead,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
}

/// A lead named by its id only: what `lead.erased` and an erased event keep of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeadRef {
    pub id: Uuid,
}

/// `data` of `lead.erased` (docs/events.md).
#[derive(Debug, Clone, Serialize)]
pub struct ErasedData {
    pub lead: LeadRef,
    #[serde(with = "crate::timefmt::millis")]
    pub erased_at: OffsetDateTime,
}

/// An envelope's `data`: about a lead as it was, or about a lead erased.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum EventBody {
    Lead(Box<EventData>),
    Erased(ErasedData),
}

impl EventBody {
    /// The lead the event is about.
    pub fn lead_id(&self) -> Uuid {
        match self {
            EventBody::Lead(d) => d.lead.id,
            EventBody::Erased(d) => d.lead.id,
        }
    }
}

impl From<EventData> for EventBody {
    fn from(d: EventData) -> Self {
        EventBody::Lead(Box::new(d))
    }
}

impl From<ErasedData> for EventBody {
    fn from(d: ErasedData) -> Self {
        EventBody::Erased(d)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Envelope {
    pub id: Uuid,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub version: &'static str,
    #[serde(with = "crate::timefmt::millis")]
    pub occurred_at: OffsetDateTime,
    pub org_id: Uuid,
    pub data: EventBody,
}

/// What an erased event keeps (docs/events.md, "Erased events"): the envelope's own fields, the
/// lead's id, and `"erased": true`. Field order as in every envelope.
#[derive(Debug, Clone, Serialize)]
pub struct ReducedEnvelope<'a> {
    pub id: Uuid,
    #[serde(rename = "type")]
    pub event_type: &'a str,
    pub version: &'a str,
    /// As the original envelope had it, text for text.
    pub occurred_at: &'a str,
    pub org_id: Uuid,
    pub data: ReducedData,
    pub erased: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReducedData {
    pub lead: LeadRef,
}

impl ReducedEnvelope<'_> {
    /// The bytes that replace the original envelope.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a reduced envelope serializes")
    }
}

impl Envelope {
    pub fn new(
        event_type: EventType,
        org_id: Uuid,
        occurred_at: OffsetDateTime,
        data: impl Into<EventBody>,
    ) -> Self {
        Envelope {
            id: Uuid::now_v7(),
            event_type,
            version: "1",
            occurred_at,
            org_id,
            data: data.into(),
        }
    }

    /// The exact bytes that are stored, signed and sent.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain structs of strings, numbers and maps cannot fail.
        serde_json::to_vec(self).expect("envelope serializes")
    }
}

/// An example event of `event_type`, as `POST …/webhook/test` sends it: a made-up lead whose id
/// is the nil UUID (so no receiver mistakes it for a real one), with the type's own fields
/// (`previous_stage`, an example `handoff`).
pub fn example(
    event_type: EventType,
    org_id: Uuid,
    now: OffsetDateTime,
    app_base_url: &str,
) -> Envelope {
    use crate::validate::{Channel, Email, Name, Phone, RouteTarget};
    use crate::{ExternalRef, HandoffState};
    let id = Uuid::nil();
    let (stage, previous_stage) = match event_type {
        EventType::LeadStageChanged => (Stage::Closed, Some(Stage::Qualified)),
        EventType::LeadQualified => (Stage::Qualified, Some(Stage::Qualifying)),
        _ => (Stage::Qualifying, None),
    };
    let previous = match (event_type, previous_stage) {
        (EventType::LeadUpdated, _) => Some(serde_json::json!({
            "email": "ada@old.example",
            "profile": {"budget": "400k", "area": null}
        })),
        (_, Some(was)) => Some(serde_json::json!({ "qualification_stage": was })),
        _ => None,
    }
    .and_then(|v| v.as_object().cloned());
    fn text<T>(r: Result<T, crate::FieldError>) -> T {
        r.expect("example values are valid")
    }
    let mut profile = serde_json::Map::new();
    profile.insert("budget".into(), "500k".into());
    profile.insert("bedrooms".into(), 2.into());
    profile.insert("area".into(), "Soho".into());
    let lead = Lead {
        id,
        name: text(Name::parse("name", "Ada Lovelace")),
        email: Some(text(Email::parse("ada@example.com"))),
        phone: text(Phone::parse("+447700900123")),
        channel: text(Channel::parse("whatsapp")),
        qualification_stage: stage,
        route_target: Some(text(RouteTarget::parse("hotLead"))),
        profile,
        external_ref: Some(ExternalRef {
            system: "hubspot".into(),
            id: "9001".into(),
            url: None,
        }),
        ai_paused: false,
        conversation_url: crate::lead::conversation_url(app_base_url, id),
        created_at: now,
        updated_at: now,
        revision: 3,
    };
    if event_type == EventType::LeadErased {
        return Envelope::new(
            event_type,
            org_id,
            now,
            ErasedData {
                lead: LeadRef { id },
                erased_at: now,
            },
        );
    }
    let handoff_state = match event_type {
        EventType::HandoffCreated => Some(HandoffState::Requested),
        EventType::HandoffAccepted => Some(HandoffState::Accepted),
        EventType::HandoffReleased => Some(HandoffState::Released),
        _ => None,
    };
    let handoff = handoff_state.map(|state| Handoff {
        id: Uuid::nil(),
        lead_id: id,
        state,
        reason: Some("asks for a human".into()),
        operator: (state != HandoffState::Requested).then(|| "op-7".to_owned()),
        requested_at: now,
        accepted_at: (state != HandoffState::Requested).then_some(now),
        released_at: (state == HandoffState::Released).then_some(now),
    });
    Envelope::new(
        event_type,
        org_id,
        now,
        EventData {
            previous_stage,
            previous,
            lead,
            handoff,
        },
    )
}

/// One event a change emits: its type and its own fields besides the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEvent {
    pub event_type: EventType,
    pub previous_stage: Option<Stage>,
    pub previous: Option<Map<String, Value>>,
}

impl ChangeEvent {
    /// An event with no fields of its own (`lead.created`).
    pub fn plain(event_type: EventType) -> ChangeEvent {
        ChangeEvent {
            event_type,
            previous_stage: None,
            previous: None,
        }
    }

    /// `data` for this event about `lead` (the snapshot after the change).
    pub fn data(&self, lead: &Lead) -> EventData {
        EventData {
            previous_stage: self.previous_stage,
            previous: self.previous.clone(),
            lead: lead.clone(),
            handoff: None,
        }
    }
}

/// What a lead change emits, in order: `lead.updated` when contact or profile fields changed,
/// `lead.stage_changed` when the stage changed, and `lead.qualified` beside it when the new stage
/// is `qualified`. `external_ref`, `ai_paused` and `route_target` emit nothing (docs/api.md).
/// Each carries `previous`: the whole change's [`previous_values`], from the before/after pair
/// the caller already holds (never a second read of the lead).
pub fn lead_change_events(before: &Lead, after: &Lead) -> Vec<ChangeEvent> {
    let mut out = Vec::new();
    let contact_changed = before.name != after.name
        || before.email != after.email
        || before.phone != after.phone
        || before.profile != after.profile;
    let stage_changed = before.qualification_stage != after.qualification_stage;
    if !contact_changed && !stage_changed {
        return out;
    }
    let previous = Some(previous_values(before, after));
    let event = |event_type, previous_stage| ChangeEvent {
        event_type,
        previous_stage,
        previous: previous.clone(),
    };
    if contact_changed {
        out.push(event(EventType::LeadUpdated, None));
    }
    if stage_changed {
        let prev = Some(before.qualification_stage);
        out.push(event(EventType::LeadStageChanged, prev));
        if after.qualification_stage == Stage::Qualified {
            out.push(event(EventType::LeadQualified, prev));
        }
    }
    out
}

/// `data.previous`: the value before the change of every lead field the change altered. For
/// `profile`, only the keys that changed, each with its previous value (`null` for a key the
/// change added). `updated_at` and `revision` move with every change and are not listed.
pub fn previous_values(before: &Lead, after: &Lead) -> Map<String, Value> {
    fn json<T: Serialize>(v: &T) -> Value {
        // Plain strings, numbers, booleans and maps: serializing cannot fail.
        serde_json::to_value(v).expect("a lead field serializes")
    }
    let mut out = Map::new();
    let mut field = |name: &str, changed: bool, was: Value| {
        if changed {
            out.insert(name.to_owned(), was);
        }
    };
    // Each field by its own name in the envelope: the struct's field names are the API's.
    macro_rules! fields {
        ($($f:ident),*) => {
            $(field(stringify!($f), before.$f != after.$f, json(&before.$f));)*
        };
    }
    fields!(
        name,
        email,
        phone,
        channel,
        qualification_stage,
        route_target,
        external_ref,
        ai_paused
    );
    if before.profile != after.profile {
        let mut keys = Map::new();
        for (k, v) in &before.profile {
            if after.profile.get(k) != Some(v) {
                keys.insert(k.clone(), v.clone());
            }
        }
        for k in after.profile.keys() {
            if !before.profile.contains_key(k) {
                keys.insert(k.clone(), Value::Null);
            }
        }
        out.insert("profile".to_owned(), Value::Object(keys));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timefmt::now_millis;
    use crate::validate::{Channel, Name, Phone, RouteTarget};

    fn lead() -> Lead {
        let now = now_millis();
        Lead {
            id: Uuid::nil(),
            name: Name::parse("name", "Ada").unwrap(),
            email: None,
            phone: Phone::parse("+447700900123").unwrap(),
            channel: Channel::parse("whatsapp").unwrap(),
            qualification_stage: Stage::Qualifying,
            route_target: None,
            profile: serde_json::Map::new(),
            external_ref: None,
            ai_paused: false,
            conversation_url: "https://x/conversations/0".into(),
            created_at: now,
            updated_at: now,
            revision: 1,
        }
    }

    #[test]
    fn event_type_names_round_trip() {
        use strum::VariantArray;
        for &t in EventType::VARIANTS {
            assert_eq!(t.as_str().parse::<EventType>(), Ok(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
            assert_eq!(t.to_string(), t.as_str());
        }
        assert!("lead.deleted".parse::<EventType>().is_err());
    }

    #[test]
    fn moving_into_qualified_emits_stage_changed_then_qualified() {
        let a = lead();
        let mut b = a.clone();
        b.qualification_stage = Stage::Qualified;
        assert_eq!(
            kinds(&lead_change_events(&a, &b)),
            vec![
                (EventType::LeadStageChanged, Some(Stage::Qualifying)),
                (EventType::LeadQualified, Some(Stage::Qualifying))
            ]
        );
    }

    /// The events' types and previous stages, what most tests compare.
    fn kinds(events: &[ChangeEvent]) -> Vec<(EventType, Option<Stage>)> {
        events
            .iter()
            .map(|e| (e.event_type, e.previous_stage))
            .collect()
    }

    #[test]
    fn previous_names_each_altered_field_and_only_the_changed_profile_keys() {
        let mut a = lead();
        a.profile.insert("budget".into(), "400k".into());
        a.profile.insert("area".into(), "Soho".into());
        a.profile.insert("pets".into(), true.into());
        let mut b = a.clone();
        b.email = Some(crate::validate::Email::parse("ada@new.example").unwrap());
        b.qualification_stage = Stage::Qualified;
        b.profile.insert("budget".into(), "500k".into());
        b.profile.remove("pets");
        b.profile.insert("bedrooms".into(), 2.into());
        b.updated_at = a.updated_at + time::Duration::seconds(1);
        b.revision = a.revision + 1;
        let events = lead_change_events(&a, &b);
        assert_eq!(events.len(), 3);
        let want = serde_json::json!({
            "email": null,
            "qualification_stage": "qualifying",
            "profile": {"budget": "400k", "pets": true, "bedrooms": null}
        });
        for e in &events {
            assert_eq!(
                Value::Object(e.previous.clone().unwrap()),
                want,
                "{}",
                e.event_type
            );
        }
        // Serialized beside previous_stage, before the snapshot.
        let data = serde_json::to_value(events[1].data(&b)).unwrap();
        assert_eq!(data["previous"], want);
        assert_eq!(data["previous_stage"], "qualifying");
        assert_eq!(data["lead"]["revision"], 2);
    }

    #[test]
    fn closing_emits_only_stage_changed_and_no_change_emits_nothing() {
        let a = lead();
        let mut b = a.clone();
        b.qualification_stage = Stage::Closed;
        assert_eq!(
            kinds(&lead_change_events(&a, &b)),
            vec![(EventType::LeadStageChanged, Some(Stage::Qualifying))]
        );
        assert!(lead_change_events(&b, &b).is_empty());
    }

    #[test]
    fn write_back_fields_emit_nothing_but_profile_does() {
        let a = lead();
        let mut b = a.clone();
        b.ai_paused = true;
        b.route_target = Some(RouteTarget::parse("hotLead").unwrap());
        b.external_ref = Some(ExternalRefFixture::hubspot());
        assert!(lead_change_events(&a, &b).is_empty());
        b.profile.insert("bedrooms".into(), 2.into());
        let events = lead_change_events(&a, &b);
        assert_eq!(kinds(&events), vec![(EventType::LeadUpdated, None)]);
        // The write-back fields the same change altered are in `previous` too.
        let previous = Value::Object(events[0].previous.clone().unwrap());
        assert_eq!(
            previous,
            serde_json::json!({
                "route_target": null, "external_ref": null, "ai_paused": false,
                "profile": {"bedrooms": null}
            })
        );
    }

    struct ExternalRefFixture;
    impl ExternalRefFixture {
        fn hubspot() -> crate::ExternalRef {
            crate::ExternalRef {
                system: "hubspot".into(),
                id: "1".into(),
                url: None,
            }
        }
    }

    #[test]
    fn every_type_has_an_example_with_its_own_fields() {
        use strum::VariantArray;
        for &t in EventType::VARIANTS {
            let env = example(t, Uuid::nil(), now_millis(), "https://app.example");
            let v: serde_json::Value = serde_json::from_slice(&env.to_bytes()).unwrap();
            assert_eq!(v["type"], t.as_str());
            assert_eq!(v["data"]["lead"]["id"], Uuid::nil().to_string());
            if t == EventType::LeadErased {
                // The lead's id and when it was erased: nothing else is left of it.
                let keys: Vec<&String> = v["data"].as_object().unwrap().keys().collect();
                assert_eq!(keys, ["lead", "erased_at"]);
                assert_eq!(v["data"]["lead"].as_object().unwrap().len(), 1);
                continue;
            }
            let is_handoff = t.as_str().starts_with("handoff.");
            assert_eq!(v["data"].get("handoff").is_some(), is_handoff, "{t}");
            let has_previous = matches!(t, EventType::LeadStageChanged | EventType::LeadQualified);
            assert_eq!(
                v["data"].get("previous_stage").is_some(),
                has_previous,
                "{t}"
            );
            let has_changes = has_previous || t == EventType::LeadUpdated;
            assert_eq!(v["data"].get("previous").is_some(), has_changes, "{t}");
            assert!(v["data"]["lead"]["revision"].is_i64(), "{t}");
        }
    }

    #[test]
    fn a_reduced_envelope_keeps_the_envelope_fields_and_the_leads_id_only() {
        let lead = Uuid::now_v7();
        let bytes = ReducedEnvelope {
            id: Uuid::nil(),
            event_type: "lead.updated",
            version: "1",
            occurred_at: "2026-11-21T10:15:02.402Z",
            org_id: Uuid::nil(),
            data: ReducedData {
                lead: LeadRef { id: lead },
            },
            erased: true,
        }
        .to_bytes();
        assert!(bytes.starts_with(b"{\"id\":\""));
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "id": Uuid::nil(), "type": "lead.updated", "version": "1",
                "occurred_at": "2026-11-21T10:15:02.402Z", "org_id": Uuid::nil(),
                "data": {"lead": {"id": lead}}, "erased": true
            })
        );
    }

    #[test]
    fn envelope_has_the_documented_shape() {
        let l = lead();
        let env = Envelope::new(
            EventType::LeadStageChanged,
            Uuid::nil(),
            l.updated_at,
            EventData {
                previous_stage: Some(Stage::Qualified),
                previous: None,
                lead: l,
                handoff: None,
            },
        );
        let v: serde_json::Value = serde_json::from_slice(&env.to_bytes()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys.len(), 6);
        assert_eq!(v["version"], "1");
        assert_eq!(v["type"], "lead.stage_changed");
        assert_eq!(v["data"]["previous_stage"], "qualified");
        assert!(v["data"].get("handoff").is_none());
        assert_eq!(v["data"]["lead"]["profile"], serde_json::json!({}));
        assert!(v["data"]["lead"]["email"].is_null());
    }
}
