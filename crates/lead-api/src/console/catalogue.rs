//! The event catalogue (`/console/events`): every event type with when it fires, its JSON
//! Schema and an example, each with `Send test event` for that type.
//!
//! The schemas are `docs/schemas/*.schema.json`, the files receivers are pointed to, compiled
//! in as they are: `scripts/event-schemas.py --check` (in `make test`) keeps them equal to
//! `docs/openapi.yaml`, so the page, the files and the API reference cannot disagree.

use maud::{Markup, html};
use qualifier_domain::EventType;
use strum::VariantArray;
use uuid::Uuid;

use super::pages::{Nav, Who, layout};

/// The JSON Schema (2020-12) of `t`'s body.
pub fn schema(t: EventType) -> &'static str {
    match t {
        EventType::LeadCreated => include_str!("../../../../docs/schemas/lead.created.schema.json"),
        EventType::LeadUpdated => include_str!("../../../../docs/schemas/lead.updated.schema.json"),
        EventType::LeadStageChanged => {
            include_str!("../../../../docs/schemas/lead.stage_changed.schema.json")
        }
        EventType::LeadQualified => {
            include_str!("../../../../docs/schemas/lead.qualified.schema.json")
        }
        EventType::HandoffCreated => {
            include_str!("../../../../docs/schemas/handoff.created.schema.json")
        }
        EventType::HandoffAccepted => {
            include_str!("../../../../docs/schemas/handoff.accepted.schema.json")
        }
        EventType::HandoffReleased => {
            include_str!("../../../../docs/schemas/handoff.released.schema.json")
        }
        EventType::LeadErased => include_str!("../../../../docs/schemas/lead.erased.schema.json"),
    }
}

/// An example body of `t`, indented: what `Send test event` sends (with a fresh id and time).
fn example(t: EventType, org: Uuid, app_base_url: &str) -> String {
    let e = qualifier_domain::event::example(
        t,
        org,
        qualifier_domain::timefmt::now_millis(),
        app_base_url,
    );
    serde_json::to_value(&e)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default()
}

pub fn catalogue_page(
    who: &Who,
    org: Uuid,
    app_base_url: &str,
    subscribed: &[EventType],
) -> Markup {
    let content = html! {
        p {
            "Every event a webhook can receive. Each request carries its type in "
            code { "X-Qualifier-Event" } " and the body's " code { "type" } "; the schemas are also at "
            code { "docs/schemas/" } " for validating in your own tests."
        }
        div.catalogue {
            @for t in EventType::VARIANTS {
                section id=(t.as_str()) data-event-type=(t.as_str()) {
                    h2 { code { (t.as_str()) } }
                    p { (t.description()) }
                    @if !subscribed.is_empty() && !subscribed.contains(t) {
                        p.hint { "Your webhook is not subscribed to this type; a test event is sent anyway." }
                    }
                    details {
                        summary { "Schema" }
                        pre.payload data-schema { (schema(*t)) }
                    }
                    details {
                        summary { "Example payload" }
                        pre.payload data-example { (example(*t, org, app_base_url)) }
                    }
                    form method="post" action="/console/events/test" {
                        input type="hidden" name="csrf" value=(who.csrf);
                        input type="hidden" name="event_type" value=(t.as_str());
                        button type="submit" { "Send test event" }
                    }
                }
            }
        }
    };
    layout("Event types", Nav::Events, who, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_has_its_own_schema_and_an_example_that_names_it() {
        for t in EventType::VARIANTS {
            let s: serde_json::Value = serde_json::from_str(schema(*t)).unwrap();
            assert_eq!(s["title"], t.as_str());
            let e: serde_json::Value =
                serde_json::from_str(&example(*t, Uuid::nil(), "https://app.example")).unwrap();
            assert_eq!(e["type"], t.as_str());
            assert_eq!(s["properties"]["type"]["const"], t.as_str());
        }
    }
}
