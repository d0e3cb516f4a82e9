//! A receiver's own headers and credentials as an endpoint keeps them (the rules of their form:
//! `qualifier_domain::receiver`). Three columns of `webhooks`: `headers` (each header's name,
//! whether it is secret, and a plain one's value), `auth` (the kind and its parts that are not
//! secret) and `receiver_secrets_sealed`, every secret part in one JSON object sealed to the
//! endpoint as its signing secret is. A page or an answer reads the first two and shows each
//! secret as [`MASK`]; only a request's sender opens the third.

use qualifier_domain::destination::{Destination, DestinationInput, OpenDestination};
use qualifier_domain::receiver::{
    AuthInput, AuthKind, HeaderInput, MASK, ReceiverAuth, SecretInput, refused_name,
};
use qualifier_domain::validate::FieldError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StoreError;
use crate::secrets::OpenError;

/// One of the receiver's headers as the API shows it: a secret one's value is [`MASK`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderShown {
    pub name: String,
    pub value: String,
    pub secret: bool,
}

/// One header as `webhooks.headers` keeps it: a secret one without its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StoredHeader {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default)]
    secret: bool,
}

/// The sealed part: each secret header's value by its name, the auth's one secret, and the
/// destination's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Secrets {
    #[serde(default)]
    headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    destination: Option<String>,
}

/// What a save changes of the receiver's settings: `None` keeps what is saved (a client that
/// does not know the fields leaves them as they are), `Some` replaces it.
#[derive(Debug, Clone, Default)]
pub struct ReceiverSettings {
    pub headers: Option<Vec<HeaderInput>>,
    pub auth: Option<Option<AuthInput>>,
    /// The endpoint's filter as saved (it parsed as a `qualifier_domain::filter::Filter`),
    /// `Some(None)` none.
    pub filter: Option<Option<Value>>,
    /// Where the endpoint sends (`destination: None` in it: to its `url`).
    pub destination: Option<DestinationInput>,
}

/// An endpoint's receiver settings, read whole (its secrets opened) or only as shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Receiver {
    headers: Vec<StoredHeader>,
    auth: Option<AuthKind>,
    destination: Option<Destination>,
    secrets: Secrets,
}

/// The columns a [`Receiver`] is written to.
pub(crate) struct ReceiverColumns {
    pub(crate) headers: Value,
    pub(crate) auth: Option<Value>,
    pub(crate) destination: Option<Value>,
    pub(crate) sealed: Option<Vec<u8>>,
}

/// What a request needs of the receiver's settings, secrets opened: its headers in their order,
/// its credentials, and where it goes when not to the endpoint's url.
pub(crate) struct ForRequest {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) auth: Option<ReceiverAuth>,
    pub(crate) destination: Option<OpenDestination>,
}

fn invalid(m: impl Into<String>) -> StoreError {
    StoreError::Invalid(FieldError::new(m))
}

/// The headers as shown, from the `headers` column alone.
pub(crate) fn shown_headers(column: &Value) -> Vec<HeaderShown> {
    stored_headers(column)
        .into_iter()
        .map(|h| HeaderShown {
            value: if h.secret {
                MASK.to_owned()
            } else {
                h.value.unwrap_or_default()
            },
            name: h.name,
            secret: h.secret,
        })
        .collect()
}

/// The auth as shown (its secret masked), from the `auth` column alone.
pub(crate) fn shown_auth(column: Option<&Value>) -> Option<Value> {
    column.and_then(AuthKind::from_stored).map(|k| k.shown())
}

/// The destination as shown (its secret masked), from the `destination` column alone.
pub(crate) fn shown_destination(column: Option<&Value>) -> Value {
    column
        .and_then(Destination::from_stored)
        .map_or_else(qualifier_domain::destination::https_shown, |d| d.shown())
}

fn stored_headers(column: &Value) -> Vec<StoredHeader> {
    serde_json::from_value(column.clone()).unwrap_or_default()
}

impl Receiver {
    /// The settings of a row, its secrets opened with `open` (`sealed` absent: none).
    pub(crate) fn read(
        columns: Stored<'_>,
        open: impl Fn(&[u8]) -> Result<String, OpenError>,
    ) -> Result<Receiver, OpenError> {
        let secrets = match columns.sealed {
            Some(s) => serde_json::from_str(&open(s)?).map_err(|_| OpenError::WrongKey)?,
            None => Secrets::default(),
        };
        Ok(Receiver {
            headers: stored_headers(columns.headers),
            auth: columns.auth.and_then(AuthKind::from_stored),
            destination: columns.destination.and_then(Destination::from_stored),
            secrets,
        })
    }

    /// These settings changed by a save: each part given replaces the saved one, a secret
    /// given as [`MASK`] keeps the saved value of the same header (or of the same kind of
    /// auth), and none is there to keep is refused, naming the header or the field.
    pub(crate) fn merged(self, change: &ReceiverSettings) -> Result<Receiver, StoreError> {
        let mut secrets = Secrets::default();
        let headers = match &change.headers {
            None => {
                secrets.headers = self.secrets.headers.clone();
                self.headers.clone()
            }
            Some(given) => {
                let mut out = Vec::with_capacity(given.len());
                for h in given {
                    let value = match (&h.value, h.secret) {
                        (SecretInput::New(v), false) => Some(v.clone()),
                        (SecretInput::New(v), true) => {
                            secrets.headers.push((h.name.clone(), v.clone()));
                            None
                        }
                        (SecretInput::Keep, _) => {
                            let kept = self
                                .secrets
                                .headers
                                .iter()
                                .find(|(n, _)| n.eq_ignore_ascii_case(&h.name))
                                .ok_or_else(|| {
                                    invalid(format!(
                                        "Invalid header {}: {MASK} keeps a saved secret value, \
                                         and this header has none",
                                        h.name
                                    ))
                                })?;
                            secrets.headers.push((h.name.clone(), kept.1.clone()));
                            None
                        }
                    };
                    out.push(StoredHeader {
                        name: h.name.clone(),
                        value,
                        secret: h.secret,
                    });
                }
                out
            }
        };
        let auth = match &change.auth {
            None => {
                secrets.auth = self.secrets.auth.clone();
                self.auth.clone()
            }
            Some(None) => None,
            Some(Some(a)) => {
                secrets.auth = Some(match &a.secret {
                    SecretInput::New(s) => s.clone(),
                    SecretInput::Keep => {
                        let same_kind = self
                            .auth
                            .as_ref()
                            .is_some_and(|k| k.type_name() == a.kind.type_name());
                        match (&self.secrets.auth, same_kind) {
                            (Some(s), true) => s.clone(),
                            _ => {
                                return Err(invalid(format!(
                                    "auth.{}: {MASK} keeps a saved secret, and there is none",
                                    a.kind.secret_field()
                                )));
                            }
                        }
                    }
                });
                Some(a.kind.clone())
            }
        };
        // `Authorization` is the sender's once the endpoint has auth, whichever part changed.
        if auth.is_some()
            && let Some(why) = headers.iter().find_map(|h| refused_name(&h.name, true))
        {
            return Err(invalid(why));
        }
        let destination = match &change.destination {
            None => {
                secrets.destination = self.secrets.destination.clone();
                self.destination.clone()
            }
            Some(given) => {
                secrets.destination = match (&given.destination, &given.secret) {
                    (None, _) | (_, None) => None,
                    (Some(_), Some(SecretInput::New(s))) => Some(s.clone()),
                    (Some(d), Some(SecretInput::Keep)) => {
                        let same_kind = self
                            .destination
                            .as_ref()
                            .is_some_and(|saved| saved.type_name() == d.type_name());
                        match (&self.secrets.destination, same_kind) {
                            (Some(s), true) => Some(s.clone()),
                            _ => {
                                return Err(invalid(format!(
                                    "destination.url: {MASK} keeps a saved password, and there \
                                     is none"
                                )));
                            }
                        }
                    }
                };
                given.destination.clone()
            }
        };
        // Headers and credentials are a web server's: an endpoint that sends elsewhere has
        // none. Given with such a destination, they are refused; saved ones go with the switch.
        let (headers, auth) = if destination.is_some() {
            let given_headers = change.headers.as_ref().is_some_and(|h| !h.is_empty());
            let given_auth = matches!(change.auth, Some(Some(_)));
            if given_headers || given_auth {
                return Err(invalid(
                    "headers and auth apply only to an https destination",
                ));
            }
            secrets.headers.clear();
            secrets.auth = None;
            (Vec::new(), None)
        } else {
            (headers, auth)
        };
        Ok(Receiver {
            headers,
            auth,
            destination,
            secrets,
        })
    }

    /// Whether the endpoint sends somewhere other than its url.
    pub(crate) fn has_destination(&self) -> bool {
        self.destination.is_some()
    }

    /// The columns to write, the secrets sealed with `seal` (none: no sealed column).
    pub(crate) fn columns(&self, seal: impl Fn(&str) -> Vec<u8>) -> ReceiverColumns {
        let sealed = (self.secrets != Secrets::default())
            .then(|| seal(&serde_json::to_string(&self.secrets).expect("strings serialise")));
        ReceiverColumns {
            headers: serde_json::to_value(&self.headers).expect("strings serialise"),
            auth: self.auth.as_ref().map(AuthKind::stored),
            destination: self.destination.as_ref().map(Destination::stored),
            sealed,
        }
    }

    /// What a request adds: the receiver's headers in their order, secret values opened, its
    /// credentials, and its destination with its secret.
    pub(crate) fn for_request(self) -> ForRequest {
        let Receiver {
            headers,
            auth,
            destination,
            secrets,
        } = self;
        let headers = headers
            .into_iter()
            .filter_map(|h| {
                let value = match h.value {
                    Some(v) if !h.secret => Some(v),
                    _ => secrets
                        .headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(&h.name))
                        .map(|(_, v)| v.clone()),
                };
                value.map(|v| (h.name, v))
            })
            .collect();
        let auth = match (auth, secrets.auth) {
            (Some(kind), Some(secret)) => Some(ReceiverAuth { kind, secret }),
            _ => None,
        };
        ForRequest {
            headers,
            auth,
            destination: destination.map(|destination| OpenDestination {
                destination,
                secret: secrets.destination,
            }),
        }
    }
}

/// The columns of a row a [`Receiver`] is read from.
#[derive(Clone, Copy)]
pub(crate) struct Stored<'a> {
    pub(crate) headers: &'a Value,
    pub(crate) auth: Option<&'a Value>,
    pub(crate) destination: Option<&'a Value>,
    pub(crate) sealed: Option<&'a [u8]>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use qualifier_domain::receiver::{auth_of, headers_of};
    use serde_json::json;

    fn change(headers: Option<Value>, auth: Option<Value>) -> ReceiverSettings {
        ReceiverSettings {
            headers: headers.map(|h| headers_of(&h).unwrap()),
            auth: auth.map(|a| auth_of(&a).unwrap()),
            ..ReceiverSettings::default()
        }
    }

    fn to(destination: Value) -> ReceiverSettings {
        ReceiverSettings {
            destination: Some(DestinationInput::parse(&destination).unwrap()),
            ..ReceiverSettings::default()
        }
    }

    /// The columns as they would be stored and read back, sealing being the identity here
    /// (the store's key seals for real: tests/api/receivers.rs reads `pg_dump`).
    fn round_trip(r: &Receiver) -> Receiver {
        let c = r.columns(|s| s.as_bytes().to_vec());
        let stored = Stored {
            headers: &c.headers,
            auth: c.auth.as_ref(),
            destination: c.destination.as_ref(),
            sealed: c.sealed.as_deref(),
        };
        Receiver::read(stored, |b| Ok(String::from_utf8(b.to_vec()).unwrap())).unwrap()
    }

    #[test]
    fn a_destinations_password_is_sealed_shown_masked_and_kept_by_the_mask() {
        let amqp = |url: &str| {
            to(json!({"type": "amqp", "url": url, "exchange": "crm", "routing_key": "k"}))
        };
        let saved = round_trip(
            &Receiver::default()
                .merged(&amqp("amqps://sync:pw1@broker.example.com/v"))
                .unwrap(),
        );
        let c = saved.columns(|s| s.as_bytes().to_vec());
        assert!(!c.destination.as_ref().unwrap().to_string().contains("pw1"));
        let shown = shown_destination(c.destination.as_ref());
        assert_eq!(shown["url"], "amqps://sync:********@broker.example.com/v");
        // The mask back keeps the password; a save without `destination` keeps all of it.
        let kept = round_trip(
            &saved
                .clone()
                .merged(&amqp(shown["url"].as_str().unwrap()))
                .unwrap(),
        );
        assert_eq!(
            kept.for_request().destination.unwrap().secret.as_deref(),
            Some("pw1")
        );
        assert_eq!(
            round_trip(&saved.clone().merged(&change(None, None)).unwrap()),
            saved
        );
        // Back to https: the destination and its secret go.
        let https = round_trip(&saved.clone().merged(&to(json!({"type": "https"}))).unwrap());
        assert!(https.clone().for_request().destination.is_none());
        assert_eq!(
            shown_destination(
                https
                    .columns(|s| s.as_bytes().to_vec())
                    .destination
                    .as_ref()
            ),
            json!({"type": "https"})
        );
        // A mask with no password saved is refused, naming the field.
        let e = Receiver::default()
            .merged(&amqp("amqp://u:********@h"))
            .unwrap_err();
        assert!(e.to_string().contains("destination.url"), "{e}");
    }

    #[test]
    fn headers_and_auth_are_an_https_destinations_only() {
        let with_headers = Receiver::default()
            .merged(&change(
                Some(json!([{"name": "X-Team", "value": "crm"}])),
                Some(json!({"type": "bearer", "token": "t"})),
            ))
            .unwrap();
        let mut both = to(json!({"type": "amqp", "url": "amqp://h", "exchange": "x"}));
        both.headers = Some(headers_of(&json!([{"name": "X-Team", "value": "crm"}])).unwrap());
        let e = with_headers.clone().merged(&both).unwrap_err();
        assert!(e.to_string().contains("https destination"), "{e}");
        // Switched without them, the saved ones go.
        let switched = with_headers
            .merged(&to(
                json!({"type": "amqp", "url": "amqp://h", "exchange": "x"}),
            ))
            .unwrap();
        let r = round_trip(&switched).for_request();
        assert!(r.headers.is_empty() && r.auth.is_none() && r.destination.is_some());
    }

    #[test]
    fn secret_values_are_kept_apart_and_shown_masked() {
        let r = Receiver::default()
            .merged(&change(
                Some(json!([{"name": "X-Key", "value": "k1", "secret": true},
                            {"name": "X-Team", "value": "crm"}])),
                Some(json!({"type": "basic", "username": "u", "password": "p1"})),
            ))
            .unwrap();
        let c = r.columns(|s| s.as_bytes().to_vec());
        assert!(!c.headers.to_string().contains("k1"));
        assert!(!c.auth.as_ref().unwrap().to_string().contains("p1"));
        let shown = shown_headers(&c.headers);
        assert_eq!(shown[0].value, MASK);
        assert_eq!(shown[1].value, "crm");
        assert_eq!(shown_auth(c.auth.as_ref()).unwrap()["password"], MASK);
        let ForRequest { headers, auth, .. } = round_trip(&r).for_request();
        assert_eq!(
            headers,
            vec![
                ("X-Key".into(), "k1".into()),
                ("X-Team".into(), "crm".into())
            ]
        );
        assert_eq!(auth.unwrap().static_header().unwrap(), "Basic dTpwMQ==");
    }

    #[test]
    fn the_mask_sent_back_keeps_the_saved_secret_and_nothing_else() {
        let saved = round_trip(
            &Receiver::default()
                .merged(&change(
                    Some(json!([{"name": "X-Key", "value": "k1", "secret": true}])),
                    Some(json!({"type": "bearer", "token": "t1"})),
                ))
                .unwrap(),
        );
        // The mask back (the header's case changed) keeps both; a new value replaces.
        let kept = saved
            .clone()
            .merged(&change(
                Some(json!([{"name": "x-key", "value": MASK, "secret": true}])),
                Some(json!({"type": "bearer", "token": MASK})),
            ))
            .unwrap();
        let ForRequest {
            headers: h,
            auth: a,
            ..
        } = round_trip(&kept).for_request();
        assert_eq!(h, vec![("x-key".into(), "k1".into())]);
        assert_eq!(a.unwrap().secret, "t1");
        // Fields left out keep what is saved.
        assert_eq!(
            round_trip(&saved.clone().merged(&change(None, None)).unwrap()),
            saved
        );
        // A mask with nothing of that name or kind saved is refused, naming it.
        let e = saved
            .clone()
            .merged(&change(
                Some(json!([{"name": "X-Other", "value": MASK, "secret": true}])),
                None,
            ))
            .unwrap_err();
        assert!(e.to_string().contains("X-Other"), "{e}");
        let e = saved
            .clone()
            .merged(&change(
                None,
                Some(json!({"type": "basic", "username": "u", "password": MASK})),
            ))
            .unwrap_err();
        assert!(e.to_string().contains("auth.password"), "{e}");
        // `null` removes the auth and its secret.
        let none = round_trip(&saved.merged(&change(None, Some(Value::Null))).unwrap());
        assert!(none.for_request().auth.is_none());
    }

    #[test]
    fn authorization_is_the_senders_once_there_is_auth() {
        let with_header = Receiver::default()
            .merged(&change(
                Some(json!([{"name": "Authorization", "value": "Token x"}])),
                None,
            ))
            .unwrap();
        let e = with_header
            .merged(&change(None, Some(json!({"type": "bearer", "token": "t"}))))
            .unwrap_err();
        assert!(e.to_string().contains("Authorization"), "{e}");
    }
}
