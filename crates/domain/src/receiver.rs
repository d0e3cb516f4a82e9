//! What a receiver asks of every request beyond the headers we set: headers of its own (some of
//! them secret) and its credentials (`basic`, `bearer`, OAuth 2 client credentials), as an
//! endpoint is saved with them (docs/receivers.md, "Your own headers and credentials"). The
//! rules of their form are here; the store seals the secret parts to the endpoint and the
//! worker adds them to each request.

use serde_json::{Map, Value};

use crate::validate::FieldError;

/// At most this many headers per endpoint.
pub const MAX_HEADERS: usize = 20;
/// A header name's longest form.
pub const MAX_NAME: usize = 64;
/// A header value's (and a credential's) longest form, in characters.
pub const MAX_VALUE: usize = 1024;
/// What a secret is shown as, and what a client sends back to keep the stored one.
pub const MASK: &str = "********";

/// A secret as a save gives it: a new value, or [`MASK`] sent back to keep the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretInput {
    New(String),
    Keep,
}

impl SecretInput {
    fn of(field: &str, s: &str) -> Result<SecretInput, FieldError> {
        if s == MASK {
            return Ok(SecretInput::Keep);
        }
        value_text(field, s)?;
        Ok(SecretInput::New(s.to_owned()))
    }
}

/// One of the receiver's headers as a save gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderInput {
    pub name: String,
    /// A secret value may be [`SecretInput::Keep`]; a plain one is always new.
    pub value: SecretInput,
    pub secret: bool,
}

/// How the client authenticates to the token server (RFC 6749 section 2.3.1): the credentials
/// in the form's body, or as HTTP basic authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    Body,
    Basic,
}

impl ClientAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::Body => "body",
            ClientAuth::Basic => "basic",
        }
    }
}

/// The parts of OAuth 2 client credentials that are not secret (shown back as they are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub token_url: String,
    pub client_id: String,
    pub scope: Option<String>,
    pub audience: Option<String>,
    pub client_auth: ClientAuth,
}

/// An endpoint's `auth` without its secret: what is stored in clear and shown back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKind {
    Basic { username: String },
    Bearer,
    OAuth2(OAuthClient),
}

impl AuthKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            AuthKind::Basic { .. } => "basic",
            AuthKind::Bearer => "bearer",
            AuthKind::OAuth2(_) => "oauth2_client_credentials",
        }
    }

    /// The field its one secret is given in.
    pub fn secret_field(&self) -> &'static str {
        match self {
            AuthKind::Basic { .. } => "password",
            AuthKind::Bearer => "token",
            AuthKind::OAuth2(_) => "client_secret",
        }
    }

    /// As the API shows it: the secret masked.
    pub fn shown(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), self.type_name().into());
        match self {
            AuthKind::Basic { username } => {
                m.insert("username".into(), username.clone().into());
            }
            AuthKind::Bearer => {}
            AuthKind::OAuth2(c) => {
                m.insert("token_url".into(), c.token_url.clone().into());
                m.insert("client_id".into(), c.client_id.clone().into());
                m.insert("scope".into(), c.scope.clone().into());
                m.insert("audience".into(), c.audience.clone().into());
                m.insert("client_auth".into(), c.client_auth.as_str().into());
            }
        }
        m.insert(self.secret_field().into(), MASK.into());
        Value::Object(m)
    }

    /// As it is stored (`webhooks.auth`): [`Self::shown`] without the mask.
    pub fn stored(&self) -> Value {
        let mut v = self.shown();
        if let Value::Object(m) = &mut v {
            m.remove(self.secret_field());
        }
        v
    }

    /// Read back from [`Self::stored`]; `None` for anything else.
    pub fn from_stored(v: &Value) -> Option<AuthKind> {
        let m = v.as_object()?;
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(match m.get("type")?.as_str()? {
            "basic" => AuthKind::Basic {
                username: text("username")?,
            },
            "bearer" => AuthKind::Bearer,
            "oauth2_client_credentials" => AuthKind::OAuth2(OAuthClient {
                token_url: text("token_url")?,
                client_id: text("client_id")?,
                scope: text("scope"),
                audience: text("audience"),
                client_auth: match text("client_auth").as_deref() {
                    Some("basic") => ClientAuth::Basic,
                    _ => ClientAuth::Body,
                },
            }),
            _ => return None,
        })
    }
}

/// An endpoint's `auth` as a save gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthInput {
    pub kind: AuthKind,
    pub secret: SecretInput,
}

/// An endpoint's `auth` opened for a request: the kind and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ReceiverAuth {
    pub kind: AuthKind,
    pub secret: String,
}

/// Never prints the secret.
impl std::fmt::Debug for ReceiverAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReceiverAuth({})", self.kind.type_name())
    }
}

impl ReceiverAuth {
    /// The `Authorization` header of a request, for the two kinds that need no token server.
    pub fn static_header(&self) -> Option<String> {
        match &self.kind {
            AuthKind::Basic { username } => Some(basic(username, &self.secret)),
            AuthKind::Bearer => Some(format!("Bearer {}", self.secret)),
            AuthKind::OAuth2(_) => None,
        }
    }
}

/// `Basic` credentials (RFC 7617): `user:password` in base64.
pub fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// Header names the sender sets itself, or that describe the connection: never the receiver's.
const RESERVED: [&str; 6] = [
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "user-agent",
];

/// Whether `name` is an HTTP token (RFC 9110 section 5.6.2).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn value_text(field: &str, s: &str) -> Result<(), FieldError> {
    if s.chars().count() > MAX_VALUE {
        return Err(FieldError::new(format!(
            "{field} must be at most {MAX_VALUE} characters"
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(FieldError::new(format!(
            "{field} must not contain control characters"
        )));
    }
    Ok(())
}

/// Why header `name` may not be one of the receiver's, if it may not. `Authorization` is the
/// sender's when the endpoint has `auth`.
pub fn refused_name(name: &str, has_auth: bool) -> Option<String> {
    let shown: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    if name.len() > MAX_NAME || !is_token(name) {
        return Some(format!(
            "Invalid header {shown:?}: a name is an HTTP token of at most {MAX_NAME} characters"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED.contains(&lower.as_str())
        || lower.starts_with("x-qualifier-")
        || lower.starts_with("webhook-")
    {
        return Some(format!("Invalid header {name}: it is set by the sender"));
    }
    if has_auth && lower == "authorization" {
        return Some(format!(
            "Invalid header {name}: it is set by the sender when the endpoint has auth"
        ));
    }
    None
}

/// The body's `headers`: a list of at most [`MAX_HEADERS`] `{name, value, secret?}`, names
/// unique whatever their case. Each refusal names the header.
pub fn headers_of(v: &Value) -> Result<Vec<HeaderInput>, FieldError> {
    let Some(items) = v.as_array() else {
        return Err(FieldError::new(
            "headers must be a list of {name, value, secret}",
        ));
    };
    if items.len() > MAX_HEADERS {
        return Err(FieldError::new(format!(
            "headers must hold at most {MAX_HEADERS} headers"
        )));
    }
    let mut out: Vec<HeaderInput> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |m: &str| FieldError::new(format!("Invalid header at headers[{i}]: {m}"));
        let obj = item.as_object().ok_or_else(|| at("not an object"))?;
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| at("name must be a string"))?;
        if let Some(why) = refused_name(name, false) {
            return Err(FieldError::new(why));
        }
        let secret = match obj.get("secret") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(FieldError::new(format!(
                    "Invalid header {name}: secret must be true or false"
                )));
            }
        };
        let raw = obj.get("value").and_then(Value::as_str).ok_or_else(|| {
            FieldError::new(format!("Invalid header {name}: value must be a string"))
        })?;
        let field = format!("Invalid header {name}: value");
        let value = if secret {
            SecretInput::of(&field, raw)?
        } else {
            value_text(&field, raw)?;
            SecretInput::New(raw.to_owned())
        };
        if out.iter().any(|h| h.name.eq_ignore_ascii_case(name)) {
            return Err(FieldError::new(format!(
                "Invalid header {name}: given twice"
            )));
        }
        out.push(HeaderInput {
            name: name.to_owned(),
            value,
            secret,
        });
    }
    Ok(out)
}

/// The body's `auth`: `null`, or one of the three kinds with every field it needs. The
/// OAuth 2 `token_url`'s form and address are the caller's to check (the endpoint rules).
pub fn auth_of(v: &Value) -> Result<Option<AuthInput>, FieldError> {
    let obj = match v {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        _ => return Err(FieldError::new("auth must be null or an object")),
    };
    let text = |k: &str, required: bool| -> Result<Option<String>, FieldError> {
        match obj.get(k) {
            None | Some(Value::Null) if !required => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => {
                value_text(&format!("auth.{k}"), s)?;
                Ok(Some(s.clone()))
            }
            _ => Err(FieldError::new(format!(
                "auth.{k} must be a non-empty string"
            ))),
        }
    };
    let secret = |k: &str| -> Result<SecretInput, FieldError> {
        let s = text(k, true)?.unwrap_or_default();
        SecretInput::of(&format!("auth.{k}"), &s)
    };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
    let (kind, secret) = match kind {
        "basic" => {
            let username = text("username", true)?.unwrap_or_default();
            if username.contains(':') {
                return Err(FieldError::new("auth.username must not contain ':'"));
            }
            (AuthKind::Basic { username }, secret("password")?)
        }
        "bearer" => {
            let token = secret("token")?;
            if let SecretInput::New(t) = &token
                && t.chars().any(char::is_whitespace)
            {
                return Err(FieldError::new("auth.token must not contain spaces"));
            }
            (AuthKind::Bearer, token)
        }
        "oauth2_client_credentials" => {
            let client_auth = match obj.get("client_auth").and_then(Value::as_str) {
                None | Some("body") => ClientAuth::Body,
                Some("basic") => ClientAuth::Basic,
                Some(_) => {
                    return Err(FieldError::new(
                        "auth.client_auth must be \"body\" or \"basic\"",
                    ));
                }
            };
            let client = OAuthClient {
                token_url: text("token_url", true)?.unwrap_or_default(),
                client_id: text("client_id", true)?.unwrap_or_default(),
                scope: text("scope", false)?,
                audience: text("audience", false)?,
                client_auth,
            };
            (AuthKind::OAuth2(client), secret("client_secret")?)
        }
        _ => {
            return Err(FieldError::new(
                "auth.type must be basic, bearer or oauth2_client_credentials",
            ));
        }
    };
    Ok(Some(AuthInput { kind, secret }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(r: Result<impl std::fmt::Debug, FieldError>) -> String {
        r.expect_err("refused").to_string()
    }

    #[test]
    fn basic_credentials_are_rfc_7617s_example() {
        // RFC 7617 section 2: Aladdin / open sesame.
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }

    #[test]
    fn headers_are_read_with_their_secrets_and_masks() {
        let got = headers_of(&json!([
            {"name": "X-Api-Key", "value": "k1", "secret": true},
            {"name": "X-Team", "value": "crm"},
            {"name": "X-Old", "value": MASK, "secret": true},
        ]))
        .unwrap();
        assert_eq!(got[0].value, SecretInput::New("k1".into()));
        assert!(got[0].secret && !got[1].secret);
        assert_eq!(got[2].value, SecretInput::Keep);
    }

    #[test]
    fn reserved_bad_and_repeated_names_are_refused_by_name() {
        for name in [
            "Host",
            "content-type",
            "Content-Length",
            "Transfer-Encoding",
            "Connection",
            "User-Agent",
            "X-Qualifier-Signature",
            "x-qualifier-anything",
            "webhook-id",
            "Webhook-Signature",
        ] {
            let m = msg(headers_of(&json!([{"name": name, "value": "v"}])));
            assert!(m.contains(name) && m.contains("set by the sender"), "{m}");
        }
        for name in ["", "Bad Name", "X:Y", "Ünï", &"x".repeat(65), "X\r\nY"] {
            let m = msg(headers_of(&json!([{"name": name, "value": "v"}])));
            assert!(m.contains("HTTP token"), "{m}");
        }
        let m = msg(headers_of(&json!([
            {"name": "X-A", "value": "1"},
            {"name": "x-a", "value": "2"}
        ])));
        assert!(m.contains("x-a") && m.contains("twice"), "{m}");
        assert!(refused_name("Authorization", false).is_none());
        assert!(refused_name("authorization", true).is_some());
    }

    #[test]
    fn values_with_control_characters_or_too_long_are_refused_by_name() {
        for value in ["a\r\nInjected: 1", "a\nb", "nul\0", "tab\there"] {
            let m = msg(headers_of(&json!([{"name": "X-A", "value": value}])));
            assert!(m.contains("X-A") && m.contains("control"), "{m}");
        }
        let m = msg(headers_of(
            &json!([{"name": "X-A", "value": "v".repeat(1025)}]),
        ));
        assert!(m.contains("X-A") && m.contains("1024"), "{m}");
        let many: Vec<Value> = (0..21)
            .map(|i| json!({"name": format!("X-{i}"), "value": "v"}))
            .collect();
        assert!(msg(headers_of(&Value::Array(many))).contains("at most 20"));
        // A plain header's value is a value, even when it looks like the mask.
        let plain = headers_of(&json!([{"name": "X-A", "value": MASK}])).unwrap();
        assert_eq!(plain[0].value, SecretInput::New(MASK.into()));
    }

    #[test]
    fn auth_of_each_kind_and_its_refusals() {
        assert_eq!(auth_of(&Value::Null).unwrap(), None);
        let b = auth_of(&json!({"type": "basic", "username": "u", "password": "p"}))
            .unwrap()
            .unwrap();
        assert_eq!(
            b.kind,
            AuthKind::Basic {
                username: "u".into()
            }
        );
        assert_eq!(b.secret, SecretInput::New("p".into()));
        let t = auth_of(&json!({"type": "bearer", "token": MASK}))
            .unwrap()
            .unwrap();
        assert_eq!(t.secret, SecretInput::Keep);
        let o = auth_of(&json!({"type": "oauth2_client_credentials",
            "token_url": "https://auth.example.com/token", "client_id": "c",
            "client_secret": "s", "scope": "a b", "client_auth": "basic"}))
        .unwrap()
        .unwrap();
        assert_eq!(
            AuthKind::from_stored(&o.kind.stored()),
            Some(o.kind.clone())
        );
        assert_eq!(o.kind.shown()["client_secret"], MASK);
        assert!(o.kind.stored().get("client_secret").is_none());
        for (bad, field) in [
            (json!({"type": "digest"}), "auth.type"),
            (json!({"type": "basic", "password": "p"}), "auth.username"),
            (
                json!({"type": "basic", "username": "a:b", "password": "p"}),
                "auth.username",
            ),
            (json!({"type": "basic", "username": "u"}), "auth.password"),
            (json!({"type": "bearer", "token": "a b"}), "auth.token"),
            (json!({"type": "bearer", "token": "a\r\nb"}), "auth.token"),
            (
                json!({"type": "oauth2_client_credentials", "client_id": "c", "client_secret": "s"}),
                "auth.token_url",
            ),
            (
                json!({"type": "oauth2_client_credentials", "token_url": "https://a/t", "client_id": "c", "client_secret": "s", "client_auth": "jwt"}),
                "auth.client_auth",
            ),
            (json!("basic"), "auth must be"),
        ] {
            let m = msg(auth_of(&bad));
            assert!(m.contains(field), "{bad}: {m}");
        }
    }

    #[test]
    fn the_opened_auth_never_prints_its_secret() {
        let a = ReceiverAuth {
            kind: AuthKind::Bearer,
            secret: "tok-123".into(),
        };
        assert!(!format!("{a:?}").contains("tok-123"));
        assert_eq!(a.static_header().unwrap(), "Bearer tok-123");
    }
}
