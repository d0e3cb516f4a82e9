//! Typed commands: what every entry point (the public API, the internal API and the console)
//! turns its input into before it acts. Each command is parsed here, once, with the messages
//! docs/api.md lists; a handler reads its body or form, calls one of these, and hands the typed value to
//! the store. A new input rule is a change here and a test here.
//!
//! JSON bodies come as the `Map` [`crate::body`] read; console forms as plain field values, so
//! this module knows nothing of either transport.

use std::time::Duration;

use qualifier_domain::EventType;
use qualifier_domain::destination::DestinationInput;
use qualifier_domain::netguard::WebhookUrl;
use qualifier_domain::pace::{
    DeliveryOrdering, MAX_PER_SECOND_MESSAGE, MaxPerSecond, ORDERING_MESSAGE, Pace,
};
use qualifier_domain::validate::{Name, body};
use qualifier_egress::EgressPolicy;
use qualifier_store::webhooks::ReceiverSettings;
use serde_json::{Map, Value};
use strum::VariantArray;

use crate::error::ApiError;

mod conditions;
mod deliveries;
mod lead;
mod lists;

pub use conditions::{if_match, none_match};
pub use deliveries::{DeliveryQuery, DeliverySearch, NOT_OURS, ReplayFilter, SEARCH_HINT};
pub use lead::{
    HANDOFF_REASON_MAX, PROVIDE_ONE, handoff_operator, handoff_reason, parse_inbound,
    parse_internal_patch, parse_new_lead, parse_public_patch,
};
pub use lists::{FeedQuery, LeadListQuery, MAX_LIMIT, limit, query, timestamp};

fn unprocessable(m: impl Into<String>) -> ApiError {
    ApiError::Unprocessable(m.into())
}

// --- Event types -----------------------------------------------------------------------------

fn event_types_message(field: &str) -> String {
    let names: Vec<&str> = EventType::VARIANTS.iter().map(|t| t.as_str()).collect();
    format!("{field} must be one of {}", names.join(", "))
}

/// One event type named by the client in `field`, or the 422 listing the types.
pub fn event_type_in(field: &str, raw: &str) -> Result<EventType, ApiError> {
    raw.parse::<EventType>()
        .map_err(|_| unprocessable(event_types_message(field)))
}

/// A webhook's `event_types`: a non-empty list of known types; duplicates collapse, order is the
/// catalogue's. `None` items are values that are not strings.
fn subscription<'a>(
    items: impl IntoIterator<Item = Option<&'a str>>,
) -> Result<Vec<EventType>, ApiError> {
    let bad = || unprocessable("event_types must be a non-empty list of event types");
    let mut chosen = Vec::new();
    for item in items {
        let s = item.ok_or_else(bad)?;
        qualifier_domain::validate::check_text("event_types", s)?;
        let t: EventType = s
            .parse()
            .map_err(|_| unprocessable(format!("event_types has an unknown event type: {s}")))?;
        chosen.push(t);
    }
    if chosen.is_empty() {
        return Err(bad());
    }
    Ok(EventType::VARIANTS
        .iter()
        .copied()
        .filter(|t| chosen.contains(t))
        .collect())
}

/// The JSON body's `event_types` as a subscription.
pub fn subscription_of(obj: &Map<String, Value>) -> Result<Vec<EventType>, ApiError> {
    let bad = || unprocessable("event_types must be a non-empty list of event types");
    let list = body::get(obj, "event_types")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    subscription(list.iter().map(Value::as_str))
}

// --- Webhook settings --------------------------------------------------------------------------

/// The org's webhook as an administrator sets it (internal API `PUT`, console form).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `None` for an endpoint with another destination (`receiver.destination` says where).
    pub url: Option<WebhookUrl>,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    /// The throttle and the ordering (absent: no throttle, `none`).
    pub pace: Pace,
    /// An endpoint's `description` (0-255 characters); `None`: absent, the saved one stays.
    pub description: Option<String>,
    /// The receiver's `headers` and `auth`; each absent keeps the saved one.
    pub receiver: ReceiverSettings,
}

/// `description`'s refusal.
pub const DESCRIPTION_MESSAGE: &str =
    "description must be a string of at most 255 characters, without control characters";

/// `description`: absent, or a string of at most 255 characters and no control characters.
fn description_of(v: Option<&Value>) -> Result<Option<String>, ApiError> {
    match v {
        None => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= 255 && !s.chars().any(char::is_control) => {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(unprocessable(DESCRIPTION_MESSAGE)),
    }
}

/// `max_per_second`: absent or `null` (no throttle), or an integer from 1 to 1000.
fn max_per_second_of(v: Option<&Value>) -> Result<Option<MaxPerSecond>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(MaxPerSecond::new)
            .map(Some)
            .ok_or_else(|| unprocessable(MAX_PER_SECOND_MESSAGE)),
    }
}

/// `ordering`: absent (`none`), `"none"` or `"per_lead"`.
fn ordering_of(v: Option<&Value>) -> Result<DeliveryOrdering, ApiError> {
    match v {
        None => Ok(DeliveryOrdering::None),
        Some(v) => v
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| unprocessable(ORDERING_MESSAGE)),
    }
}

/// The pace as a form sends it: an empty rate is no throttle. Each refusal is the API's message
/// for that field, shown beside it.
pub fn pace_from_form(
    max_per_second: Option<&str>,
    ordering: Option<&str>,
) -> (
    Result<Option<MaxPerSecond>, &'static str>,
    Result<DeliveryOrdering, &'static str>,
) {
    let rate = match max_per_second.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => r
            .parse::<u64>()
            .ok()
            .and_then(MaxPerSecond::new)
            .map(Some)
            .ok_or(MAX_PER_SECOND_MESSAGE),
    };
    let ordering = match ordering.map(str::trim).filter(|o| !o.is_empty()) {
        None => Ok(DeliveryOrdering::None),
        Some(o) => o.parse().map_err(|_| ORDERING_MESSAGE),
    };
    (rate, ordering)
}

/// A url that parses and whose host resolves only to addresses the egress policy permits, now
/// (delivery checks again before every connection).
pub async fn public_endpoint(raw: &str, egress: &EgressPolicy) -> Result<WebhookUrl, ApiError> {
    reachable(WebhookUrl::parse(raw)?, egress).await
}

/// `url` when its host resolves only to addresses the egress policy permits.
async fn reachable(url: WebhookUrl, egress: &EgressPolicy) -> Result<WebhookUrl, ApiError> {
    egress
        .resolve(&url)
        .await
        .map_err(|e| unprocessable(e.to_string()))?;
    Ok(url)
}

/// The body's `headers` and `auth` (docs/api.md, "Headers and authentication"):
/// each absent keeps what is saved. An OAuth 2 `token_url` is held to the endpoint url's
/// rules, where it resolves included: the worker sends the client secret there.
pub async fn receiver_of(
    obj: &Map<String, Value>,
    egress: &EgressPolicy,
) -> Result<ReceiverSettings, ApiError> {
    let headers = body::get(obj, "headers")
        .map(qualifier_domain::receiver::headers_of)
        .transpose()?;
    let auth = body::get(obj, "auth")
        .map(qualifier_domain::receiver::auth_of)
        .transpose()?;
    if let Some(Some(a)) = &auth
        && let qualifier_domain::receiver::AuthKind::OAuth2(c) = &a.kind
    {
        let url = WebhookUrl::parse(&c.token_url)
            .map_err(|e| unprocessable(format!("auth.token_url: {e}")))?;
        egress
            .resolve(&url)
            .await
            .map_err(|e| unprocessable(format!("auth.token_url: {e}")))?;
    }
    let filter = match body::get(obj, "filter") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(f) => {
            qualifier_domain::filter::Filter::parse(f)?;
            Some(Some(f.clone()))
        }
    };
    let destination = match body::get(obj, "destination") {
        None => None,
        Some(v) => Some(destination_of(v, egress).await?),
    };
    Ok(ReceiverSettings {
        headers,
        auth,
        filter,
        destination,
    })
}

/// Where a form's endpoint sends: its url field, or another destination as the API's JSON.
pub enum FormTarget<'a> {
    Url(&'a str),
    Elsewhere(&'a Value),
}

/// A `destination`, its address held to the endpoint url's rules where it resolves.
pub async fn destination_of(
    v: &Value,
    egress: &EgressPolicy,
) -> Result<DestinationInput, ApiError> {
    let d = DestinationInput::parse(v)?;
    if let Some(to) = &d.destination {
        egress.check_destination(to).await.map_err(unprocessable)?;
    }
    Ok(d)
}

/// What is wrong with each field of a webhook form, for the console to show beside the field.
#[derive(Debug, Default)]
pub struct WebhookFieldErrors {
    pub url: Option<String>,
    pub event_types: Option<String>,
    pub max_per_second: Option<String>,
    pub ordering: Option<String>,
    pub description: Option<String>,
    pub destination: Option<String>,
}

impl WebhookSettings {
    /// The JSON body: `url` and `event_types` required, `enabled` default true,
    /// `max_per_second` default null, `ordering` default `none`. Checked in the documented
    /// order: the url's form, the event types, `enabled`, the pace, then where the url
    /// resolves.
    pub async fn from_json(
        obj: &Map<String, Value>,
        egress: &EgressPolicy,
    ) -> Result<WebhookSettings, ApiError> {
        // With another destination there is no url; without, `url` is required.
        let elsewhere = match body::get(obj, "destination") {
            Some(v) => DestinationInput::parse(v)?.destination,
            None => None,
        };
        let url = match &elsewhere {
            None => Some(WebhookUrl::parse(body::required_string(obj, "url")?)?),
            Some(_) if body::get(obj, "url").is_none_or(Value::is_null) => None,
            Some(d) => {
                return Err(unprocessable(format!(
                    "url must be null for an {} destination",
                    d.type_name()
                )));
            }
        };
        let event_types = subscription_of(obj)?;
        let enabled = body::boolean(obj, "enabled")?.unwrap_or(true);
        let pace = Pace {
            max_per_second: max_per_second_of(body::get(obj, "max_per_second"))?,
            ordering: ordering_of(body::get(obj, "ordering"))?,
        };
        let description = description_of(body::get(obj, "description"))?;
        let mut receiver = receiver_of(obj, egress).await?;
        // A save through the API says where the endpoint sends: absent is `https`.
        receiver.destination.get_or_insert(DestinationInput {
            destination: None,
            secret: None,
        });
        let url = match url {
            Some(u) => Some(reachable(u, egress).await?),
            None => None,
        };
        Ok(WebhookSettings {
            url,
            event_types,
            enabled,
            pace,
            description,
            receiver,
        })
    }

    /// A form's fields (the url trimmed, every checked type, the box, the description where
    /// the page has one): every problem at once.
    pub async fn from_form(
        to: FormTarget<'_>,
        event_types: &[&str],
        enabled: bool,
        pace: (Option<&str>, Option<&str>),
        description: Option<&str>,
        egress: &EgressPolicy,
    ) -> Result<WebhookSettings, WebhookFieldErrors> {
        // With another destination the url field is not read.
        let (url, destination) = match to {
            FormTarget::Url(url) => (
                public_endpoint(url, egress).await.map(Some),
                Ok(DestinationInput {
                    destination: None,
                    secret: None,
                }),
            ),
            FormTarget::Elsewhere(d) => (Ok(None), destination_of(d, egress).await),
        };
        let types = subscription(event_types.iter().map(|t| Some(*t)));
        let (rate, ordering) = pace_from_form(pace.0, pace.1);
        let text = description.map(|d| Value::String(d.trim().to_owned()));
        let description = description_of(text.as_ref()).map_err(|_| DESCRIPTION_MESSAGE);
        match (url, types, rate, ordering, description, destination) {
            (
                Ok(url),
                Ok(event_types),
                Ok(max_per_second),
                Ok(ordering),
                Ok(description),
                Ok(destination),
            ) => Ok(WebhookSettings {
                url,
                event_types,
                enabled,
                pace: Pace {
                    max_per_second,
                    ordering,
                },
                description,
                receiver: ReceiverSettings {
                    destination: Some(destination),
                    ..ReceiverSettings::default()
                },
            }),
            (url, types, rate, ordering, description, destination) => Err(WebhookFieldErrors {
                url: url.err().map(|e| e.to_string()),
                event_types: types.err().map(|e| e.to_string()),
                max_per_second: rate.err().map(str::to_owned),
                ordering: ordering.err().map(str::to_owned),
                description: description.err().map(str::to_owned),
                destination: destination.err().map(|e| e.to_string()),
            }),
        }
    }
}

// --- Secret rotation ---------------------------------------------------------------------------

/// The overlap window of a rotation: the previous secret keeps signing this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraceWindow(pub Duration);

/// When the caller does not say: a day, long enough to deploy the new secret to every receiver
/// (docs/api.md).
const DEFAULT_GRACE_SECONDS: u64 = 86_400;
const MAX_GRACE_SECONDS: u64 = 604_800;
const GRACE_MESSAGE: &str = "grace_seconds must be an integer from 0 to 604800";

impl GraceWindow {
    fn seconds(secs: Option<u64>) -> Result<GraceWindow, ApiError> {
        match secs {
            None => Ok(GraceWindow(Duration::from_secs(DEFAULT_GRACE_SECONDS))),
            Some(n) if n <= MAX_GRACE_SECONDS => Ok(GraceWindow(Duration::from_secs(n))),
            Some(_) => Err(unprocessable(GRACE_MESSAGE)),
        }
    }

    /// `grace_seconds`: an integer from 0 to 604800, default 86400.
    pub fn from_json(obj: &Map<String, Value>) -> Result<GraceWindow, ApiError> {
        match body::get(obj, "grace_seconds") {
            None => Self::seconds(None),
            Some(v) => Self::seconds(Some(
                v.as_u64().ok_or_else(|| unprocessable(GRACE_MESSAGE))?,
            )),
        }
    }

    /// The form's `grace_seconds` field, when it has one.
    pub fn from_form(raw: Option<&str>) -> Result<GraceWindow, ApiError> {
        let secs = raw
            .map(|g| g.trim().parse::<u64>())
            .transpose()
            .map_err(|_| unprocessable(GRACE_MESSAGE))?;
        Self::seconds(secs)
    }
}

// --- Tokens ------------------------------------------------------------------------------------

/// A new API token: an optional name.
#[derive(Debug, Clone, Default)]
pub struct NewToken {
    pub name: Option<Name>,
}

impl NewToken {
    pub fn from_json(obj: &Map<String, Value>) -> Result<NewToken, ApiError> {
        Ok(NewToken {
            name: body::string(obj, "name")?
                .map(|n| Name::parse("name", n))
                .transpose()?,
        })
    }

    /// The form's `name` field: blank means no name.
    pub fn from_form(raw: Option<&str>) -> Result<NewToken, ApiError> {
        let name = raw.map(str::trim).filter(|n| !n.is_empty());
        Ok(NewToken {
            name: name.map(|n| Name::parse("name", n)).transpose()?,
        })
    }
}

// --- Orgs, test events and sign-in ---------------------------------------------------------------

/// `POST /internal/v1/orgs`: the org's name.
pub fn org_name(obj: &Map<String, Value>) -> Result<Name, ApiError> {
    Ok(Name::parse("name", body::required_string(obj, "name")?)?)
}

/// A test event's optional `event_type` (the API's JSON body).
pub fn test_event_type(obj: &Map<String, Value>) -> Result<Option<EventType>, ApiError> {
    body::string(obj, "event_type")?
        .map(|s| event_type_in("event_type", s))
        .transpose()
}

/// The console's `Send test event` names one type; any other value names nothing there is.
pub fn console_test_event_type(raw: Option<&str>) -> Result<EventType, ApiError> {
    raw.and_then(|t| t.parse::<EventType>().ok())
        .ok_or(ApiError::NotFound("Event type not found"))
}

/// The longest sign-in ticket there is (`qlf_ct_` and its random part), with room to spare.
const TICKET_MAX: usize = 100;

/// A console sign-in ticket, by its form only; `None` for anything that cannot be one (it is
/// refused as any unknown ticket is, without a database lookup).
pub fn ticket(raw: Option<&str>) -> Option<&str> {
    raw.filter(|t| t.starts_with("qlf_ct_") && t.len() <= TICKET_MAX)
}

// --- Deliveries --------------------------------------------------------------------------------

/// A client certificate and its key for the org's endpoint (`PUT …/webhook/client-certificate`,
/// the console's form): both PEM, checked as `qualifier_egress::client_cert::check` says (they
/// parse, the key is the certificate's, the certificate is valid now).
pub struct ClientCertificateInput {
    pub certificate: String,
    pub private_key: String,
    pub info: qualifier_domain::client_cert::ClientCertInfo,
}

/// The longest PEM accepted for either field: a chain of a few certificates.
const MAX_PEM_BYTES: usize = 32 * 1024;

impl ClientCertificateInput {
    pub fn from_json(obj: &Map<String, Value>) -> Result<ClientCertificateInput, ApiError> {
        let field = |name: &str| match body::get(obj, name) {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(unprocessable(format!("{name} is required (a PEM string)"))),
        };
        Self::checked(field("certificate")?, field("private_key")?)
    }

    /// The console's form: the same fields and rules.
    pub fn from_form(certificate: &str, private_key: &str) -> Result<Self, ApiError> {
        for (name, v) in [("certificate", certificate), ("private_key", private_key)] {
            if v.trim().is_empty() {
                return Err(unprocessable(format!("{name} is required (a PEM string)")));
            }
        }
        Self::checked(certificate.to_owned(), private_key.to_owned())
    }

    fn checked(certificate: String, private_key: String) -> Result<Self, ApiError> {
        for (name, v) in [("certificate", &certificate), ("private_key", &private_key)] {
            if v.len() > MAX_PEM_BYTES {
                return Err(unprocessable(format!(
                    "{name} must be at most {MAX_PEM_BYTES} bytes"
                )));
            }
        }
        let checked = qualifier_egress::client_cert::check(
            &certificate,
            &private_key,
            time::OffsetDateTime::now_utc(),
        )
        .map_err(|e| unprocessable(e.to_string()))?;
        // What is kept is the chain made again from its certificates, never the text as pasted.
        Ok(ClientCertificateInput {
            certificate: checked.certificate_pem,
            private_key,
            info: checked.info,
        })
    }
}

#[cfg(test)]
mod tests;
