//! A receiver's own headers and credentials as an endpoint keeps them (the rules of their form:
//! `qualifier_domain::receiver`). Three columns of `webhooks`: `headers` (each header's name,
//! whether it is secret, and a plain one's value), `auth` (the kind and its parts that are not
//! secret) and `receiver_secrets_sealed`, every secret part in one JSON object sealed to the
//! endpoint as its signing secret is. A page or an answer reads the first two and shows each
//! secret as [`MASK`]; only a request's sender opens the third.

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

/// The sealed part: each secret header's value by its name, and the auth's one secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Secrets {
    #[serde(default)]
    headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
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
}

/// An endpoint's receiver settings, read whole (its secrets opened) or only as shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Receiver {
    headers: Vec<StoredHeader>,
    auth: Option<AuthKind>,
    secrets: Secrets,
}

/// The columns a [`Receiver`] is written to.
pub(crate) struct ReceiverColumns {
    pub(crate) headers: Value,
    pub(crate) auth: Option<Value>,
    pub(crate) sealed: Option<Vec<u8>>,
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

fn stored_headers(column: &Value) -> Vec<StoredHeader> {
    serde_json::from_value(column.clone()).unwrap_or_default()
}

impl Receiver {
    /// The settings of a row, its secrets opened with `open` (`sealed` absent: none).
    pub(crate) fn read(
        headers: &Value,
        auth: Option<&Value>,
        sealed: Option<&[u8]>,
        open: impl Fn(&[u8]) -> Result<String, OpenError>,
    ) -> Result<Receiver, OpenError> {
        let secrets = match sealed {
            Some(s) => serde_json::from_str(&open(s)?).map_err(|_| OpenError::WrongKey)?,
            None => Secrets::default(),
        };
        Ok(Receiver {
            headers: stored_headers(headers),
            auth: auth.and_then(AuthKind::from_stored),
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
        Ok(Receiver {
            headers,
            auth,
            secrets,
        })
    }

    /// The columns to write, the secrets sealed with `seal` (none: no sealed column).
    pub(crate) fn columns(&self, seal: impl Fn(&str) -> Vec<u8>) -> ReceiverColumns {
        let sealed = (self.secrets != Secrets::default())
            .then(|| seal(&serde_json::to_string(&self.secrets).expect("strings serialise")));
        ReceiverColumns {
            headers: serde_json::to_value(&self.headers).expect("strings serialise"),
            auth: self.auth.as_ref().map(AuthKind::stored),
            sealed,
        }
    }

    /// What a request adds: the receiver's headers in their order, secret values opened, and
    /// its credentials.
    pub(crate) fn for_request(self) -> (Vec<(String, String)>, Option<ReceiverAuth>) {
        let Receiver {
            headers,
            auth,
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
        (headers, auth)
    }
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
            filter: None,
        }
    }

    /// The columns as they would be stored and read back, sealing being the identity here
    /// (the store's key seals for real: tests/api/receivers.rs reads `pg_dump`).
    fn round_trip(r: &Receiver) -> Receiver {
        let c = r.columns(|s| s.as_bytes().to_vec());
        Receiver::read(&c.headers, c.auth.as_ref(), c.sealed.as_deref(), |b| {
            Ok(String::from_utf8(b.to_vec()).unwrap())
        })
        .unwrap()
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
        let (headers, auth) = round_trip(&r).for_request();
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
        let (h, a) = round_trip(&kept).for_request();
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
        assert!(none.for_request().1.is_none());
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
