//! Validated values. Each newtype has a private field and a `parse` constructor, so code that
//! holds one holds a valid value. Errors are the one-line 422 messages docs/api.md describes, naming
//! the field.

use serde_json::{Map, Value};
use std::fmt;

use crate::ExternalRef;

/// A 422 message naming the offending field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(String);

impl FieldError {
    pub fn new(msg: impl Into<String>) -> Self {
        FieldError(msg.into())
    }
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FieldError {}

/// The one text rule for everything a request body carries (docs/reliability.md, "Hostile input"): tab, CR and LF
/// are allowed, every other control character (C0, DEL, C1; NUL above all, which PostgreSQL
/// refuses in `text` and `jsonb`) is a 422 naming the field. Applied where body fields are read
/// ([`body::string`]) and to the nested texts (`external_ref.*`, profile keys and values).
pub fn check_text(field: &str, s: &str) -> Result<(), FieldError> {
    if s.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n'))
    {
        return Err(FieldError::new(format!(
            "{field} must not contain control characters"
        )));
    }
    Ok(())
}

fn char_len_between(s: &str, min: usize, max: usize) -> bool {
    let n = s.chars().count();
    n >= min && n <= max
}

macro_rules! newtype {
    ($name:ident) => {
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
            pub fn into_inner(self) -> String {
                self.0
            }
        }
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

newtype!(Name);
newtype!(Phone);
newtype!(Email);
newtype!(Channel);
newtype!(RouteTarget);

impl Name {
    /// 1..200 characters after trimming surrounding whitespace; no control characters.
    pub fn parse(field: &str, raw: &str) -> Result<Name, FieldError> {
        let s = raw.trim();
        if !char_len_between(s, 1, 200) || s.chars().any(char::is_control) {
            return Err(FieldError::new(format!(
                "{field} must be a string of 1 to 200 characters"
            )));
        }
        Ok(Name(s.to_owned()))
    }
}

impl Phone {
    /// `+` and 7..15 digits (E.164). Spaces, dots, hyphens and parentheses that people type are
    /// removed first, so `+44 7700 900123` and `+447700900123` are the same contact.
    pub fn parse(raw: &str) -> Result<Phone, FieldError> {
        let compact: String = raw
            .trim()
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')'))
            .collect();
        let ok = compact.strip_prefix('+').is_some_and(|digits| {
            (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
        });
        if ok {
            Ok(Phone(compact))
        } else {
            Err(FieldError::new(
                "phone must be + followed by 7 to 15 digits",
            ))
        }
    }
}

impl Email {
    /// A pragmatic address check: one `@`, a non-empty local part, a dotted domain, no spaces,
    /// at most 254 characters. The domain is lowercased (it is case-insensitive).
    pub fn parse(raw: &str) -> Result<Email, FieldError> {
        let err = || FieldError::new("email must be a valid email address");
        let s = raw.trim();
        if s.len() > 254 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err());
        }
        let (local, domain) = s.split_once('@').ok_or_else(err)?;
        let domain_ok = !domain.contains('@')
            && domain.contains('.')
            && domain.split('.').all(|label| !label.is_empty());
        if local.is_empty() || local.len() > 64 || !domain_ok {
            return Err(err());
        }
        Ok(Email(format!("{local}@{}", domain.to_ascii_lowercase())))
    }
}

impl Channel {
    /// `[a-z][a-z0-9_]{0,31}`.
    pub fn parse(raw: &str) -> Result<Channel, FieldError> {
        let b = raw.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 32
            && b[0].is_ascii_lowercase()
            && b[1..]
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_');
        if ok {
            Ok(Channel(raw.to_owned()))
        } else {
            Err(FieldError::new("channel must match [a-z][a-z0-9_]{0,31}"))
        }
    }

    pub fn api_default() -> Channel {
        Channel("api".to_owned())
    }
}

impl RouteTarget {
    pub fn parse(raw: &str) -> Result<RouteTarget, FieldError> {
        if char_len_between(raw, 1, 255) && !raw.chars().any(char::is_control) {
            Ok(RouteTarget(raw.to_owned()))
        } else {
            Err(FieldError::new(
                "route_target must be a string of 1 to 255 characters",
            ))
        }
    }
}

/// `external_ref`: `{system, id, url?}`, strings of 1..255 characters; `url`, when given, is an
/// absolute https URL.
pub fn parse_external_ref(v: &Value) -> Result<ExternalRef, FieldError> {
    let obj = v
        .as_object()
        .ok_or_else(|| FieldError::new("external_ref must be an object with system and id"))?;
    let text = |key: &str, required: bool| -> Result<Option<String>, FieldError> {
        let msg = || {
            FieldError::new(format!(
                "external_ref.{key} must be a string of 1 to 255 characters"
            ))
        };
        match obj.get(key) {
            None | Some(Value::Null) if !required => Ok(None),
            Some(Value::String(s)) if char_len_between(s, 1, 255) => {
                check_text(&format!("external_ref.{key}"), s)?;
                Ok(Some(s.clone()))
            }
            _ => Err(msg()),
        }
    };
    let system = text("system", true)?.unwrap_or_default();
    let id = text("id", true)?.unwrap_or_default();
    let url = text("url", false)?;
    if let Some(u) = &url {
        let parsed = url::Url::parse(u).ok();
        if !parsed.is_some_and(|p| p.scheme() == "https" && p.host().is_some()) {
            return Err(FieldError::new(
                "external_ref.url must be an absolute https URL",
            ));
        }
    }
    Ok(ExternalRef { system, id, url })
}

/// Profile limits: enough for qualification notes, small enough that a lead stays a small row.
const PROFILE_MAX_KEYS: usize = 50;
const PROFILE_MAX_KEY_CHARS: usize = 64;
const PROFILE_MAX_STRING_CHARS: usize = 1000;

/// Checks one profile entry: the known keys are typed (`budget` string, `bedrooms` integer >= 0,
/// `area` string), any other key holds a JSON scalar.
fn check_profile_entry(key: &str, value: &Value) -> Result<(), FieldError> {
    if !char_len_between(key, 1, PROFILE_MAX_KEY_CHARS) {
        return Err(FieldError::new(format!(
            "profile keys must be 1 to {PROFILE_MAX_KEY_CHARS} characters"
        )));
    }
    check_text("profile keys", key)?;
    if let Value::String(text) = value {
        check_text(&format!("profile.{key}"), text)?;
    }
    let ok = match (key, value) {
        // null means "no value" (creation drops it, a patch removes the key) for every key.
        (_, Value::Null) => true,
        ("budget" | "area", Value::String(s)) => s.chars().count() <= PROFILE_MAX_STRING_CHARS,
        ("budget" | "area", _) => false,
        ("bedrooms", Value::Number(n)) => n.as_u64().is_some(),
        ("bedrooms", _) => false,
        (_, Value::String(s)) => s.chars().count() <= PROFILE_MAX_STRING_CHARS,
        (_, Value::Number(_) | Value::Bool(_)) => true,
        (_, _) => false,
    };
    if ok {
        return Ok(());
    }
    Err(FieldError::new(match key {
        "budget" | "area" => format!("profile.{key} must be a string"),
        "bedrooms" => "profile.bedrooms must be a non-negative integer".to_owned(),
        _ => format!("profile.{key} must be a string, number, boolean or null"),
    }))
}

/// A whole profile (creation): an object whose null values are dropped.
pub fn parse_profile(v: &Value) -> Result<Map<String, Value>, FieldError> {
    let obj = v
        .as_object()
        .ok_or_else(|| FieldError::new("profile must be an object"))?;
    let mut out = Map::new();
    for (k, val) in obj {
        check_profile_entry(k, val)?;
        if !val.is_null() {
            out.insert(k.clone(), val.clone());
        }
    }
    if out.len() > PROFILE_MAX_KEYS {
        return Err(FieldError::new(format!(
            "profile must have at most {PROFILE_MAX_KEYS} keys"
        )));
    }
    Ok(out)
}

/// Merges a profile patch key by key into `current`; a null value removes the key.
pub fn merge_profile(
    current: &Map<String, Value>,
    patch: &Value,
) -> Result<Map<String, Value>, FieldError> {
    let obj = patch
        .as_object()
        .ok_or_else(|| FieldError::new("profile must be an object"))?;
    let mut out = current.clone();
    for (k, val) in obj {
        check_profile_entry(k, val)?;
        if val.is_null() {
            out.remove(k);
        } else {
            out.insert(k.clone(), val.clone());
        }
    }
    if out.len() > PROFILE_MAX_KEYS {
        return Err(FieldError::new(format!(
            "profile must have at most {PROFILE_MAX_KEYS} keys"
        )));
    }
    Ok(out)
}

/// Reading fields out of a JSON object body: absent and `null` are both "not provided".
pub mod body {
    use super::{FieldError, check_text};
    use serde_json::{Map, Value};

    pub fn get<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
        obj.get(key).filter(|v| !v.is_null())
    }

    pub fn string<'a>(
        obj: &'a Map<String, Value>,
        key: &str,
    ) -> Result<Option<&'a str>, FieldError> {
        match get(obj, key) {
            None => Ok(None),
            Some(Value::String(s)) => {
                check_text(key, s)?;
                Ok(Some(s))
            }
            Some(_) => Err(FieldError::new(format!("{key} must be a string"))),
        }
    }

    pub fn required_string<'a>(
        obj: &'a Map<String, Value>,
        key: &str,
    ) -> Result<&'a str, FieldError> {
        string(obj, key)?.ok_or_else(|| FieldError::new(format!("{key} is required")))
    }

    pub fn boolean(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, FieldError> {
        match get(obj, key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(FieldError::new(format!("{key} must be a boolean"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_characters_are_refused_but_tab_cr_lf_are_text() {
        assert!(check_text("reason", "line one\r\nline\ttwo").is_ok());
        for c in ['\0', '\u{1}', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}'] {
            let e = check_text("reason", &format!("a{c}b")).unwrap_err();
            assert_eq!(e.message(), "reason must not contain control characters");
        }
        let obj = json!({"system": "crm\u{0}", "id": "1"});
        assert_eq!(
            parse_external_ref(&obj).unwrap_err().message(),
            "external_ref.system must not contain control characters"
        );
        assert_eq!(
            parse_profile(&json!({"area": "So\u{0}ho"}))
                .unwrap_err()
                .message(),
            "profile.area must not contain control characters"
        );
        assert_eq!(
            parse_profile(&json!({"no\u{0}te": "x"}))
                .unwrap_err()
                .message(),
            "profile keys must not contain control characters"
        );
        let body = json!({"name": "Ada\u{0}"});
        assert_eq!(
            body::string(body.as_object().unwrap(), "name")
                .unwrap_err()
                .message(),
            "name must not contain control characters"
        );
    }

    #[test]
    fn phone_accepts_e164_and_strips_typing_separators() {
        assert_eq!(
            Phone::parse("+447700900123").unwrap().as_str(),
            "+447700900123"
        );
        assert_eq!(
            Phone::parse(" +44 (7700) 900-123 ").unwrap().as_str(),
            "+447700900123"
        );
        assert_eq!(Phone::parse("+1234567").unwrap().as_str(), "+1234567");
        assert_eq!(
            Phone::parse("+123456789012345").unwrap().as_str(),
            "+123456789012345"
        );
    }

    #[test]
    fn phone_rejects_missing_plus_wrong_length_and_letters() {
        for bad in [
            "447700900123",
            "+123456",
            "+1234567890123456",
            "+44770090012a",
            "+",
            "",
            "++4477009001",
        ] {
            let err = Phone::parse(bad).unwrap_err();
            assert!(err.message().starts_with("phone "), "{bad}: {err}");
        }
    }

    #[test]
    fn email_checks_shape_and_lowercases_domain() {
        assert_eq!(
            Email::parse("Ada@Example.COM").unwrap().as_str(),
            "Ada@example.com"
        );
        for bad in [
            "ada",
            "@example.com",
            "ada@",
            "ada@example",
            "a da@example.com",
            "a@b@c.com",
            "ada@example..com",
        ] {
            assert_eq!(
                Email::parse(bad).unwrap_err().message(),
                "email must be a valid email address",
                "{bad}"
            );
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(Email::parse(&long).is_err());
    }

    #[test]
    fn channel_follows_the_pattern() {
        for ok in ["whatsapp", "api", "sms_2", "a", &"a".repeat(32)] {
            assert!(Channel::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "WhatsApp",
            "2sms",
            "_x",
            "web-chat",
            &"a".repeat(33),
            "wa tsapp",
        ] {
            assert_eq!(
                Channel::parse(bad).unwrap_err().message(),
                "channel must match [a-z][a-z0-9_]{0,31}"
            );
        }
    }

    #[test]
    fn name_is_trimmed_and_bounded() {
        assert_eq!(Name::parse("name", "  Ada  ").unwrap().as_str(), "Ada");
        assert!(Name::parse("name", "   ").is_err());
        assert!(Name::parse("name", &"é".repeat(200)).is_ok());
        assert_eq!(
            Name::parse("name", &"x".repeat(201)).unwrap_err().message(),
            "name must be a string of 1 to 200 characters"
        );
        assert!(Name::parse("name", "a\u{0}b").is_err());
    }

    #[test]
    fn profile_types_known_keys_and_allows_scalars() {
        let p = parse_profile(
            &json!({"budget": "500k", "bedrooms": 2, "area": "Soho", "pets": true, "x": null}),
        )
        .unwrap();
        assert_eq!(
            Value::Object(p),
            json!({"budget": "500k", "bedrooms": 2, "area": "Soho", "pets": true})
        );
        assert_eq!(
            parse_profile(&json!({"bedrooms": -1}))
                .unwrap_err()
                .message(),
            "profile.bedrooms must be a non-negative integer"
        );
        assert_eq!(
            parse_profile(&json!({"bedrooms": 2.5}))
                .unwrap_err()
                .message(),
            "profile.bedrooms must be a non-negative integer"
        );
        assert_eq!(
            parse_profile(&json!({"budget": 5})).unwrap_err().message(),
            "profile.budget must be a string"
        );
        assert_eq!(
            parse_profile(&json!({"tags": ["a"]}))
                .unwrap_err()
                .message(),
            "profile.tags must be a string, number, boolean or null"
        );
        assert_eq!(
            parse_profile(&json!([1])).unwrap_err().message(),
            "profile must be an object"
        );
        let many: Map<String, Value> = (0..51).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(parse_profile(&Value::Object(many)).is_err());
    }

    #[test]
    fn profile_merge_sets_and_removes_keys() {
        let cur = parse_profile(&json!({"budget": "500k", "area": "Soho"})).unwrap();
        let merged = merge_profile(&cur, &json!({"area": null, "bedrooms": 3})).unwrap();
        assert_eq!(
            Value::Object(merged),
            json!({"budget": "500k", "bedrooms": 3})
        );
    }

    #[test]
    fn external_ref_requires_system_and_id_and_https_url() {
        let r = parse_external_ref(&json!({"system": "hubspot", "id": "9001"})).unwrap();
        assert_eq!(
            r,
            ExternalRef {
                system: "hubspot".into(),
                id: "9001".into(),
                url: None
            }
        );
        let r = parse_external_ref(
            &json!({"system": "hs", "id": "1", "url": "https://crm.example/r/1"}),
        )
        .unwrap();
        assert_eq!(r.url.as_deref(), Some("https://crm.example/r/1"));
        assert_eq!(
            parse_external_ref(&json!("x")).unwrap_err().message(),
            "external_ref must be an object with system and id"
        );
        assert_eq!(
            parse_external_ref(&json!({"id": "1"}))
                .unwrap_err()
                .message(),
            "external_ref.system must be a string of 1 to 255 characters"
        );
        assert!(parse_external_ref(&json!({"system": "hs", "id": ""})).is_err());
        assert!(parse_external_ref(&json!({"system": "hs", "id": 5})).is_err());
        assert!(parse_external_ref(&json!({"system": "hs", "id": "x".repeat(256)})).is_err());
        assert_eq!(
            parse_external_ref(&json!({"system": "hs", "id": "1", "url": "http://crm.example"}))
                .unwrap_err()
                .message(),
            "external_ref.url must be an absolute https URL"
        );
        assert!(
            parse_external_ref(&json!({"system": "hs", "id": "1", "url": "/relative"})).is_err()
        );
    }

    #[test]
    fn route_target_is_bounded() {
        assert!(RouteTarget::parse("hotLead").is_ok());
        assert!(RouteTarget::parse("").is_err());
        assert!(RouteTarget::parse(&"x".repeat(256)).is_err());
    }
}
