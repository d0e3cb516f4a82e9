//! An endpoint's destination on its settings page (docs/destinations.md): the choice of type
//! and every type's fields, as the form shows and sends them.

use maud::{Markup, html};

use super::WebhookForm;

/// The fields of the destinations other than `https`, as the form shows and sends them (secrets
/// as `********` when saved, which keeps them).
#[derive(Default, Clone)]
pub struct DestinationFields {
    /// `https`, `amqp`, `sqs`, `eventbridge` or `s3` (the form's `destination_type`).
    pub kind: String,
    pub values: std::collections::BTreeMap<&'static str, String>,
}

/// Each form field of [`DestinationFields`]: its name in the form and in the API's JSON.
const DESTINATION_FIELDS: [(&str, &str); 12] = [
    ("amqp_url", "url"),
    ("amqp_exchange", "exchange"),
    ("amqp_routing_key", "routing_key"),
    ("sqs_queue_url", "queue_url"),
    ("eventbridge_event_bus", "event_bus"),
    ("eventbridge_source", "source"),
    ("s3_bucket", "bucket"),
    ("s3_prefix", "prefix"),
    ("aws_region", "region"),
    ("aws_endpoint_url", "endpoint_url"),
    ("aws_access_key_id", "access_key_id"),
    ("aws_secret_access_key", "secret_access_key"),
];

/// The JSON fields each type takes from the form.
fn fields_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "amqp" => &["url", "exchange", "routing_key"],
        "sqs" => &["queue_url", "region", "endpoint_url"],
        "eventbridge" => &["event_bus", "source", "region", "endpoint_url"],
        "s3" => &["bucket", "prefix", "region", "endpoint_url"],
        _ => &[],
    }
}

impl DestinationFields {
    /// From a form's fields.
    pub fn of_form<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Self {
        DestinationFields {
            kind: get("destination_type").unwrap_or("https").to_owned(),
            values: DESTINATION_FIELDS
                .iter()
                .map(|(form, _)| (*form, get(form).unwrap_or("").trim().to_owned()))
                .collect(),
        }
    }

    /// From a saved endpoint's `destination` as shown.
    pub(super) fn of_shown(d: &serde_json::Value) -> Self {
        let text = |k: &str| {
            d.get(k)
                .or_else(|| d.get("credentials").and_then(|c| c.get(k)))
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned()
        };
        DestinationFields {
            kind: d
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("https")
                .to_owned(),
            values: DESTINATION_FIELDS
                .iter()
                .map(|(form, json)| (*form, text(json)))
                .collect(),
        }
    }

    /// A field's value as shown.
    pub fn get(&self, form_name: &str) -> &str {
        self.values.get(form_name).map_or("", String::as_str)
    }

    /// The API's `destination` of type `kind` from these fields: empty ones left out, and
    /// `credentials` when both keys are given.
    pub fn as_json(&self, kind: &str) -> serde_json::Value {
        let mut d = serde_json::json!({"type": kind});
        for (form, json) in DESTINATION_FIELDS {
            let v = self.get(form);
            if fields_of(kind).contains(&json) && !v.is_empty() {
                d[json] = serde_json::Value::String(v.to_owned());
            }
        }
        // An amqp exchange may be empty (the broker's default): it is always sent.
        if kind == "amqp" {
            d["exchange"] = serde_json::Value::String(self.get("amqp_exchange").to_owned());
        }
        let (id, key) = (
            self.get("aws_access_key_id"),
            self.get("aws_secret_access_key"),
        );
        if kind != "amqp" && !(id.is_empty() && key.is_empty()) {
            d["credentials"] = serde_json::json!({"access_key_id": id, "secret_access_key": key});
        }
        d
    }
}

/// Where the endpoint sends: its URL (above), or a destination of another type with its fields
/// (docs/destinations.md). Every type's fields are on the page; the chosen type reads its own.
pub(super) fn destination_fields(form: &WebhookForm) -> Markup {
    let f = &form.destination;
    let kind = f.kind.as_str();
    let text = |name: &'static str, label: &'static str, placeholder: &'static str| {
        html! {
            div.field {
                label for=(name) { (label) }
                input type="text" id=(name) name=(name) value=(f.get(name)) placeholder=(placeholder) autocomplete="off";
            }
        }
    };
    let types = [
        ("https", "HTTPS: a signed request to the URL above"),
        (
            "amqp",
            "AMQP: a signed message on your RabbitMQ exchange (the URL above is not used)",
        ),
        ("sqs", "Amazon SQS"),
        ("eventbridge", "Amazon EventBridge"),
        ("s3", "Amazon S3"),
    ];
    html! {
        fieldset data-destination aria-describedby=[form.destination_error.as_ref().map(|_| "destination-error")] {
            legend { "Destination" }
            @for (value, label) in types {
                div.check {
                    input type="radio" id=(format!("destination-{value}")) name="destination_type" value=(value)
                        checked[kind == value || (value == "https" && !types.iter().any(|(v, _)| *v == kind))];
                    label for=(format!("destination-{value}")) { (label) }
                }
            }
            fieldset data-destination-type="amqp" {
                legend { "AMQP" }
                div.field {
                    label for="amqp_url" { "Broker URL" }
                    input type="text" id="amqp_url" name="amqp_url" value=(f.get("amqp_url"))
                        placeholder="amqps://user:password@broker.example.com/vhost" autocomplete="off";
                }
                (text("amqp_exchange", "Exchange", "crm.events"))
                (text("amqp_routing_key", "Routing key", "leads"))
            }
            fieldset data-destination-type="aws" {
                legend { "Amazon SQS, EventBridge or S3" }
                (text("sqs_queue_url", "Queue URL (SQS)", "https://sqs.eu-west-1.amazonaws.com/123456789012/crm-leads.fifo"))
                (text("eventbridge_event_bus", "Event bus (EventBridge)", "crm"))
                (text("eventbridge_source", "Source (EventBridge)", "qualifier"))
                (text("s3_bucket", "Bucket (S3)", "crm-events"))
                (text("s3_prefix", "Key prefix (S3)", "qualifier/"))
                (text("aws_region", "Region", "eu-west-1"))
                (text("aws_endpoint_url", "Service address (optional, an AWS-compatible service)", "https://sqs.example.com"))
                div.field {
                    label for="aws_access_key_id" { "Access key ID (optional: else the worker's own AWS credentials)" }
                    input type="password" id="aws_access_key_id" name="aws_access_key_id" value=(f.get("aws_access_key_id")) autocomplete="off";
                }
                div.field {
                    label for="aws_secret_access_key" { "Secret access key" }
                    input type="password" id="aws_secret_access_key" name="aws_secret_access_key" value=(f.get("aws_secret_access_key")) autocomplete="off";
                }
            }
            p.hint { "Passwords and keys are stored sealed and shown as ********; leave them so to keep them. What the broker or AWS answered shows in the deliveries as a response does." }
            @if let Some(e) = &form.destination_error { p.error id="destination-error" role="alert" { (e) } }
        }
    }
}
