//! Where an endpoint's deliveries go when its receiver is not a web server (docs/destinations.md):
//! each destination type's fields and their rules, pure. An endpoint without a destination is an
//! `https` one (a webhook, everything in docs/delivery.md); one with a destination has no `url`
//! and is sent to by the worker's sender of that type.
//!
//! A destination is kept in two parts: [`Destination`], which names no secret and is what pages
//! and answers show (with [`MASK`] where the secret was), and its secret (an `amqp` url's
//! password), sealed to the endpoint beside the receiver's other secrets.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::FieldError;
use crate::receiver::{MASK, SecretInput};

/// The types an endpoint's `destination.type` may name, in the order messages list them.
pub const TYPES: [&str; 5] = ["https", "amqp", "sqs", "eventbridge", "s3"];

/// A destination other than `https`, as stored and shown: no secret in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Destination {
    Amqp(Amqp),
    Sqs(Sqs),
    #[serde(rename = "eventbridge")]
    EventBridge(EventBridge),
    S3(S3),
}

/// Where an AWS destination's requests go and as whom: the region, a compatible service's
/// address when not AWS's own (`endpoint_url`), and whether credentials of the endpoint's own
/// are sealed beside it (else the worker's own AWS environment signs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsAccount {
    pub region: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_url: Option<String>,
    #[serde(default)]
    pub has_credentials: bool,
}

/// An Amazon SQS queue (standard or FIFO: a FIFO queue's url ends in `.fifo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sqs {
    pub queue_url: String,
    #[serde(flatten)]
    pub account: AwsAccount,
}

/// An Amazon EventBridge bus: one `PutEvents` entry per delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventBridge {
    pub event_bus: String,
    /// The entries' `Source` (`qualifier` when not given).
    pub source: String,
    #[serde(flatten)]
    pub account: AwsAccount,
}

/// An Amazon S3 bucket: one object per delivery under `prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct S3 {
    pub bucket: String,
    #[serde(default)]
    pub prefix: String,
    #[serde(flatten)]
    pub account: AwsAccount,
}

/// An AWS destination's credentials, as sealed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// Never prints the secret.
impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AwsCredentials(..)")
    }
}

impl Sqs {
    /// A FIFO queue takes a group id and a deduplication id with each message.
    pub fn fifo(&self) -> bool {
        self.queue_url.ends_with(".fifo")
    }
}

/// A RabbitMQ (AMQP 0-9-1) broker of the receiver's: each delivery is one persistent message
/// published to `exchange` with `routing_key`, confirmed by the broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amqp {
    /// The broker's address without its password: `amqp[s]://user@host:port/vhost`.
    pub url: String,
    /// The exchange (empty: the broker's default exchange, which routes to the queue named by
    /// the routing key).
    pub exchange: String,
    pub routing_key: String,
    /// Whether the url had a password (sealed apart): what is shown masked.
    #[serde(default)]
    pub has_password: bool,
}

/// A destination with its secret opened, for the sender.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenDestination {
    pub destination: Destination,
    /// The password of an `amqp` url.
    pub secret: Option<String>,
}

/// Never prints the secret.
impl std::fmt::Debug for OpenDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenDestination")
            .field("destination", &self.destination)
            .field("secret", &self.secret.as_ref().map(|_| ".."))
            .finish()
    }
}

/// `destination` in a save: the destination (`None`: `https`) and its secret (the password in
/// an `amqp` url; [`MASK`] keeps the saved one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationInput {
    pub destination: Option<Destination>,
    pub secret: Option<SecretInput>,
}

/// An `amqp` url taken apart: scheme, user, host, port and virtual host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpAddress {
    pub tls: bool,
    /// Empty: the url names no user (the broker's default, `guest`).
    pub username: String,
    pub host: String,
    pub port: u16,
    pub vhost: String,
}

fn invalid(m: impl Into<String>) -> FieldError {
    FieldError::new(m)
}

fn type_message() -> FieldError {
    invalid(format!(
        "destination.type must be one of: {}",
        TYPES.join(", ")
    ))
}

/// A name field: a string of at most 255 bytes (an AMQP short string) of printable ASCII.
fn short_name(obj: &Map<String, Value>, field: &str, required: bool) -> Result<String, FieldError> {
    let message = || {
        invalid(format!(
            "destination.{field} must be a string of at most 255 printable ASCII characters"
        ))
    };
    match obj.get(field) {
        None if !required => Ok(String::new()),
        Some(Value::String(s))
            if s.len() <= 255 && s.bytes().all(|b| (0x20..0x7f).contains(&b)) =>
        {
            Ok(s.clone())
        }
        _ => Err(message()),
    }
}

impl DestinationInput {
    /// The body's `destination`: `{"type": "https"}`, or `{"type": "amqp", "url", "exchange",
    /// "routing_key"}`. Each refusal names the field; a field the type does not have is refused
    /// (a misspelt one would otherwise be silently ignored).
    pub fn parse(v: &Value) -> Result<DestinationInput, FieldError> {
        let obj = v
            .as_object()
            .ok_or_else(|| invalid("destination must be an object with a type"))?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(type_message)?;
        let fields: &[&str] = match kind {
            "https" => &["type"],
            "amqp" => &["type", "url", "exchange", "routing_key"],
            "sqs" => &["type", "queue_url", "region", "endpoint_url", "credentials"],
            "eventbridge" => &[
                "type",
                "event_bus",
                "source",
                "region",
                "endpoint_url",
                "credentials",
            ],
            "s3" => &[
                "type",
                "bucket",
                "prefix",
                "region",
                "endpoint_url",
                "credentials",
            ],
            _ => return Err(type_message()),
        };
        if let Some(extra) = obj.keys().find(|k| !fields.contains(&k.as_str())) {
            return Err(invalid(format!(
                "destination.{extra} is not a field of an {kind} destination"
            )));
        }
        match kind {
            "https" => Ok(DestinationInput {
                destination: None,
                secret: None,
            }),
            "sqs" | "eventbridge" | "s3" => aws(kind, obj),
            _ => {
                let raw = obj
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(AMQP_URL_MESSAGE))?;
                let (url, password) = amqp_url(raw)?;
                Ok(DestinationInput {
                    destination: Some(Destination::Amqp(Amqp {
                        url,
                        exchange: short_name(obj, "exchange", true)?,
                        routing_key: short_name(obj, "routing_key", false)?,
                        has_password: password.is_some(),
                    })),
                    secret: password,
                })
            }
        }
    }
}

/// An AWS destination's fields.
fn aws(kind: &str, obj: &Map<String, Value>) -> Result<DestinationInput, FieldError> {
    let (account, secret) = account(obj)?;
    let destination = match kind {
        "sqs" => {
            let q = obj.get("queue_url").and_then(Value::as_str).unwrap_or("");
            let u = crate::netguard::WebhookUrl::parse(q).map_err(|_| {
                invalid("destination.queue_url must be an absolute https URL of a queue")
            })?;
            if u.url().path().trim_matches('/').is_empty() {
                return Err(invalid(
                    "destination.queue_url must be an absolute https URL of a queue",
                ));
            }
            Destination::Sqs(Sqs {
                queue_url: u.as_str().to_owned(),
                account,
            })
        }
        "eventbridge" => {
            let bus = text_field(obj, "event_bus", 1600, true)?;
            let source = match text_field(obj, "source", 256, false)? {
                s if s.is_empty() => "qualifier".to_owned(),
                s if s.starts_with("aws.") => {
                    return Err(invalid("destination.source must not start with aws."));
                }
                s => s,
            };
            Destination::EventBridge(EventBridge {
                event_bus: bus,
                source,
                account,
            })
        }
        _ => {
            let bucket = obj.get("bucket").and_then(Value::as_str).unwrap_or("");
            let ok = (3..=63).contains(&bucket.len())
                && bucket.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-'
                })
                && !bucket.starts_with(['.', '-'])
                && !bucket.ends_with(['.', '-']);
            if !ok {
                return Err(invalid(
                    "destination.bucket must be a bucket name: 3 to 63 lowercase letters, digits, . or -",
                ));
            }
            let prefix = text_field(obj, "prefix", 512, false)?;
            if prefix.starts_with('/') {
                return Err(invalid("destination.prefix must not start with /"));
            }
            Destination::S3(S3 {
                bucket: bucket.to_owned(),
                prefix,
                account,
            })
        }
    };
    Ok(DestinationInput {
        destination: Some(destination),
        secret,
    })
}

/// A text field of at most `max` printable ASCII characters (empty when absent and not
/// `required`).
fn text_field(
    obj: &Map<String, Value>,
    field: &str,
    max: usize,
    required: bool,
) -> Result<String, FieldError> {
    let message = || {
        invalid(format!(
            "destination.{field} must be a{} string of at most {max} printable ASCII characters",
            if required { " non-empty" } else { "" }
        ))
    };
    match obj.get(field) {
        None | Some(Value::Null) if !required => Ok(String::new()),
        Some(Value::String(s))
            if s.len() <= max
                && !(required && s.is_empty())
                && s.bytes().all(|b| (0x20..0x7f).contains(&b)) =>
        {
            Ok(s.clone())
        }
        _ => Err(message()),
    }
}

/// `region`, `endpoint_url` and `credentials` of an AWS destination; the credentials as the
/// secret ([`MASK`] in both fields keeps the saved ones).
fn account(obj: &Map<String, Value>) -> Result<(AwsAccount, Option<SecretInput>), FieldError> {
    let region = obj.get("region").and_then(Value::as_str).unwrap_or("");
    let region_ok = (1..=32).contains(&region.len())
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && region.contains('-');
    if !region_ok {
        return Err(invalid(
            "destination.region must be an AWS region such as eu-west-1",
        ));
    }
    let endpoint_url = match obj.get("endpoint_url") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let raw = v.as_str().unwrap_or("");
            let u = crate::netguard::WebhookUrl::parse(raw)
                .map_err(|e| invalid(format!("destination.endpoint_{e}")))?;
            Some(u.as_str().trim_end_matches('/').to_owned())
        }
    };
    let secret = match obj.get("credentials") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => {
            let part = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .filter(|s| {
                        !s.is_empty()
                            && s.len() <= 256
                            && s.bytes().all(|b| (0x21..0x7f).contains(&b))
                    })
                    .ok_or_else(|| {
                        invalid(format!(
                            "destination.credentials.{k} must be a non-empty string"
                        ))
                    })
            };
            let (id, key) = (part("access_key_id")?, part("secret_access_key")?);
            if let Some(extra) = c
                .keys()
                .find(|k| !["access_key_id", "secret_access_key"].contains(&k.as_str()))
            {
                return Err(invalid(format!(
                    "destination.credentials.{extra} is not a field of credentials"
                )));
            }
            Some(match (id == MASK, key == MASK) {
                (true, true) => SecretInput::Keep,
                (false, false) => SecretInput::New(
                    serde_json::to_string(&AwsCredentials {
                        access_key_id: id.to_owned(),
                        secret_access_key: key.to_owned(),
                    })
                    .expect("strings serialise"),
                ),
                _ => {
                    return Err(invalid(
                        "destination.credentials: send both new, or both as ******** to keep them",
                    ));
                }
            })
        }
        Some(_) => {
            return Err(invalid(
                "destination.credentials must be an object with access_key_id and secret_access_key",
            ));
        }
    };
    Ok((
        AwsAccount {
            region: region.to_owned(),
            endpoint_url,
            has_credentials: secret.is_some(),
        },
        secret,
    ))
}

const AMQP_URL_MESSAGE: &str = "destination.url must be an amqp:// or amqps:// URL with a host";

/// An `amqp` url split into the url kept (no password) and its password: `None` when it has
/// none, [`SecretInput::Keep`] when it is [`MASK`].
fn amqp_url(raw: &str) -> Result<(String, Option<SecretInput>), FieldError> {
    if raw.len() > 2048 {
        return Err(invalid("destination.url must be at most 2048 characters"));
    }
    // As a webhook's url (`WebhookUrl::parse`): the parser would keep an encoded one.
    if raw.trim().chars().any(char::is_control) {
        return Err(invalid(
            "destination.url must not contain control characters",
        ));
    }
    let mut u = url::Url::parse(raw.trim()).map_err(|_| invalid(AMQP_URL_MESSAGE))?;
    if !matches!(u.scheme(), "amqp" | "amqps") || u.host_str().is_none_or(str::is_empty) {
        return Err(invalid(AMQP_URL_MESSAGE));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(invalid(
            "destination.url must not have a query or a fragment",
        ));
    }
    // The rule of a webhook's port: the low ports belong to other services.
    if u.port().is_some_and(|p| p < 1024) {
        return Err(invalid("destination.url port must be 1024 to 65535"));
    }
    let password = match u.password() {
        None => None,
        Some(p) => {
            let p = percent_decoded(p).ok_or_else(|| invalid(AMQP_URL_MESSAGE))?;
            Some(if p == MASK {
                SecretInput::Keep
            } else {
                SecretInput::New(p)
            })
        }
    };
    if password.is_some() && u.username().is_empty() {
        return Err(invalid("destination.url has a password without a user"));
    }
    // Removing the password of a url that has a host cannot fail.
    let _ = u.set_password(None);
    let kept = u.to_string();
    address(&kept)?;
    Ok((kept, password))
}

fn percent_decoded(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .ok()
        .filter(|s| !s.chars().any(char::is_control))
}

/// A stored `amqp` url (no password) taken apart for a connection.
pub fn address(url: &str) -> Result<AmqpAddress, FieldError> {
    let u = url::Url::parse(url).map_err(|_| invalid(AMQP_URL_MESSAGE))?;
    let tls = u.scheme() == "amqps";
    let host = match u.host() {
        Some(url::Host::Ipv6(v6)) => v6.to_string(),
        Some(h) => h.to_string(),
        None => return Err(invalid(AMQP_URL_MESSAGE)),
    };
    // The path is the virtual host: none or `/` is the broker's default `/`; `/%2f` is `/`.
    let path = u.path().strip_prefix('/').unwrap_or(u.path());
    let vhost = match percent_decoded(path).ok_or_else(|| invalid(AMQP_URL_MESSAGE))? {
        v if v.is_empty() => "/".to_owned(),
        _ if path.contains('/') => {
            return Err(invalid(
                "destination.url's path is one virtual host (write / inside it as %2f)",
            ));
        }
        v => v,
    };
    Ok(AmqpAddress {
        tls,
        username: percent_decoded(u.username()).ok_or_else(|| invalid(AMQP_URL_MESSAGE))?,
        host,
        port: u.port().unwrap_or(if tls { 5671 } else { 5672 }),
        vhost,
    })
}

impl Destination {
    /// The type's name, as `destination.type` spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Destination::Amqp(_) => "amqp",
            Destination::Sqs(_) => "sqs",
            Destination::EventBridge(_) => "eventbridge",
            Destination::S3(_) => "s3",
        }
    }

    /// An AWS destination's account, `None` for the others.
    pub fn aws_account(&self) -> Option<&AwsAccount> {
        match self {
            Destination::Amqp(_) => None,
            Destination::Sqs(d) => Some(&d.account),
            Destination::EventBridge(d) => Some(&d.account),
            Destination::S3(d) => Some(&d.account),
        }
    }

    /// The stored form (the column's JSON).
    pub fn stored(&self) -> Value {
        serde_json::to_value(self).expect("strings serialise")
    }

    /// From the stored form; a row that does not read is treated as having none.
    pub fn from_stored(v: &Value) -> Option<Destination> {
        serde_json::from_value(v.clone()).ok()
    }

    /// As pages and answers show it: an `amqp` url's password as [`MASK`] when it has one.
    pub fn shown(&self) -> Value {
        let mut v = self.stored();
        if let Some(o) = v.as_object_mut() {
            o.remove("has_password");
            o.remove("has_credentials");
        }
        match self {
            Destination::Amqp(a) => {
                if a.has_password
                    && let Ok(mut u) = url::Url::parse(&a.url)
                    && u.set_password(Some(MASK)).is_ok()
                {
                    v["url"] = Value::String(u.to_string());
                }
            }
            _ => {
                let shown = self
                    .aws_account()
                    .is_some_and(|a| a.has_credentials)
                    .then(|| serde_json::json!({"access_key_id": MASK, "secret_access_key": MASK}));
                v["credentials"] = shown.unwrap_or(Value::Null);
                if v.get("endpoint_url").is_none() {
                    v["endpoint_url"] = Value::Null;
                }
            }
        }
        v
    }
}

/// The `destination` of an endpoint without one.
pub fn https_shown() -> Value {
    serde_json::json!({"type": "https"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn amqp(url: &str) -> Result<DestinationInput, FieldError> {
        DestinationInput::parse(&json!({"type": "amqp", "url": url, "exchange": "crm",
                                        "routing_key": "leads"}))
    }

    #[test]
    fn an_amqp_url_keeps_everything_but_its_password() {
        let d = amqp("amqps://sync:s3cr%40t@broker.example.com/crm").unwrap();
        assert_eq!(d.secret, Some(SecretInput::New("s3cr@t".into())));
        let Some(Destination::Amqp(a)) = &d.destination else {
            panic!("amqp")
        };
        assert_eq!(a.url, "amqps://sync@broker.example.com/crm");
        assert!(!a.stored_text().contains("s3cr"));
        let addr = address(&a.url).unwrap();
        assert_eq!(
            addr,
            AmqpAddress {
                tls: true,
                username: "sync".into(),
                host: "broker.example.com".into(),
                port: 5671,
                vhost: "crm".into()
            }
        );
        // Shown with the mask where the password was, which a save sends back to keep it.
        let shown = d.destination.unwrap().shown();
        assert_eq!(shown["url"], "amqps://sync:********@broker.example.com/crm");
        assert_eq!(
            amqp(shown["url"].as_str().unwrap()).unwrap().secret,
            Some(SecretInput::Keep)
        );
    }

    #[test]
    fn the_virtual_host_is_the_path_and_defaults_to_slash() {
        for (url, vhost, port) in [
            ("amqp://h:5673", "/", 5673),
            ("amqp://h/", "/", 5672),
            ("amqp://h/%2f", "/", 5672),
            ("amqp://h/a%2fb", "a/b", 5672),
        ] {
            let a = address(url).unwrap();
            assert_eq!((a.vhost.as_str(), a.port), (vhost, port), "{url}");
        }
        assert!(address("amqp://h/a/b").is_err());
    }

    #[test]
    fn each_refusal_names_its_field() {
        let cases = [
            (json!("amqp"), "destination must be an object"),
            (
                json!({"type": "kafka"}),
                "destination.type must be one of: https, amqp, sqs, eventbridge, s3",
            ),
            (json!({"type": 1}), "destination.type"),
            (
                json!({"type": "https", "url": "x"}),
                "destination.url is not a field",
            ),
            (json!({"type": "amqp", "exchange": "x"}), "destination.url"),
            (
                json!({"type": "amqp", "url": "https://h", "exchange": "x"}),
                "destination.url must be an amqp",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h:25", "exchange": "x"}),
                "destination.url port",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h?heartbeat=5", "exchange": "x"}),
                "destination.url must not have a query",
            ),
            (
                json!({"type": "amqp", "url": "amqp://:p@h", "exchange": "x"}),
                "password without a user",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h"}),
                "destination.exchange",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h", "exchange": "a\nb"}),
                "destination.exchange",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h", "exchange": "x", "routing_key": 7}),
                "destination.routing_key",
            ),
            (
                json!({"type": "amqp", "url": "amqp://h", "exchange": "x", "queue": "q"}),
                "destination.queue is not a field of an amqp destination",
            ),
        ];
        for (v, expected) in cases {
            let e = DestinationInput::parse(&v).unwrap_err();
            assert!(e.message().contains(expected), "{v}: {e}");
        }
        let https = DestinationInput::parse(&json!({"type": "https"})).unwrap();
        assert_eq!(https.destination, None);
    }

    #[test]
    fn control_characters_in_the_password_are_refused() {
        assert!(amqp("amqp://u:a%0Ab@h").is_err());
        assert!(amqp("amqp://u:a%zz@h").is_err());
    }

    #[test]
    fn the_stored_form_reads_back() {
        let d = amqp("amqp://u:p@h:5673/v").unwrap().destination.unwrap();
        assert_eq!(Destination::from_stored(&d.stored()), Some(d.clone()));
        assert_eq!(d.stored()["type"], "amqp");
        assert_eq!(d.shown()["url"], "amqp://u:********@h:5673/v");
        assert!(d.shown().get("has_password").is_none());
        let no_password = amqp("amqp://u@h").unwrap().destination.unwrap();
        assert_eq!(no_password.shown()["url"], "amqp://u@h");
    }

    #[test]
    fn aws_destinations_keep_their_credentials_apart_and_show_them_masked() {
        let d = DestinationInput::parse(&json!({"type": "sqs", "region": "eu-west-1",
            "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/leads.fifo",
            "credentials": {"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s3cr3t"}}))
        .unwrap();
        let Some(SecretInput::New(secret)) = &d.secret else {
            panic!("credentials are the secret")
        };
        let creds: AwsCredentials = serde_json::from_str(secret).unwrap();
        assert_eq!(creds.access_key_id, "AKIDEXAMPLE");
        let dest = d.destination.unwrap();
        let Destination::Sqs(q) = &dest else {
            panic!("sqs")
        };
        assert!(q.fifo());
        let stored = dest.stored().to_string();
        assert!(!stored.contains("s3cr3t") && !stored.contains("AKIDEXAMPLE"));
        let shown = dest.shown();
        assert_eq!(shown["credentials"]["secret_access_key"], MASK);
        assert_eq!(shown["endpoint_url"], Value::Null);
        assert_eq!(shown["region"], "eu-west-1");
        assert!(shown.get("has_credentials").is_none());
        assert_eq!(Destination::from_stored(&dest.stored()), Some(dest.clone()));
        // The masks back keep them; no credentials: the worker's own environment.
        let mut again = shown.clone();
        again["endpoint_url"] = Value::Null;
        assert_eq!(
            DestinationInput::parse(&again).unwrap().secret,
            Some(SecretInput::Keep)
        );
        let bare = DestinationInput::parse(&json!({"type": "s3", "region": "us-east-1",
            "bucket": "crm-events", "prefix": "qualifier/"}))
        .unwrap();
        assert_eq!(bare.secret, None);
        assert_eq!(
            bare.destination.unwrap().shown()["credentials"],
            Value::Null
        );
        let eb = DestinationInput::parse(&json!({"type": "eventbridge", "region": "us-east-1",
            "event_bus": "crm", "endpoint_url": "https://events.example.com:4443/"}))
        .unwrap()
        .destination
        .unwrap();
        let Destination::EventBridge(e) = eb else {
            panic!("eventbridge")
        };
        assert_eq!(e.source, "qualifier");
        assert_eq!(
            e.account.endpoint_url.as_deref(),
            Some("https://events.example.com:4443")
        );
    }

    #[test]
    fn aws_refusals_name_their_field() {
        let cases = [
            (
                json!({"type": "sqs", "region": "eu-west-1", "queue_url": "http://q/1"}),
                "destination.queue_url",
            ),
            (
                json!({"type": "sqs", "region": "EU", "queue_url": "https://q.example.com/1/q"}),
                "destination.region",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "A_b"}),
                "destination.bucket",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "abc", "prefix": "/x"}),
                "destination.prefix",
            ),
            (
                json!({"type": "eventbridge", "region": "eu-west-1"}),
                "destination.event_bus",
            ),
            (
                json!({"type": "eventbridge", "region": "eu-west-1", "event_bus": "b", "source": "aws.s3"}),
                "destination.source",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "abc", "endpoint_url": "http://x"}),
                "destination.endpoint_url",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "abc", "credentials": {"access_key_id": "a"}}),
                "destination.credentials.secret_access_key",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "abc",
                    "credentials": {"access_key_id": MASK, "secret_access_key": "new"}}),
                "both",
            ),
            (
                json!({"type": "s3", "region": "eu-west-1", "bucket": "abc", "queue_url": "x"}),
                "destination.queue_url is not a field of an s3",
            ),
        ];
        for (v, expected) in cases {
            let e = DestinationInput::parse(&v).unwrap_err();
            assert!(e.message().contains(expected), "{v}: {e}");
        }
    }

    impl Amqp {
        fn stored_text(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}
