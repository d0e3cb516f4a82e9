//! Opaque cursors and the query parameters of the list endpoints (contract section 6).
//!
//! A cursor is base64url (no padding) of a short tagged text, so a client can store it but has
//! no reason to build one: `f1:<feed position>` for the events feed, `l1:<unix micros>:<uuid>` for
//! the lead list, `d1:<outbox seq>` for the deliveries list. The tag keeps one list's cursor from
//! being taken for another's. Anything that does not decode is a 422 naming the parameter.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::error::ApiError;

fn encode(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

fn decode<'a>(raw: &str, tag: &str, buf: &'a mut String) -> Option<&'a str> {
    // A cursor is short; a long one is not ours (and is not worth decoding).
    if raw.len() > 128 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
    *buf = String::from_utf8(bytes).ok()?;
    buf.strip_prefix(tag)?.strip_prefix(':')
}

/// The events feed: the position of the last event seen (0 = the start).
pub fn feed(pos: i64) -> String {
    encode(&format!("f1:{pos}"))
}

pub fn parse_feed(raw: &str) -> Option<i64> {
    let mut buf = String::new();
    decode(raw, "f1", &mut buf)?
        .parse::<i64>()
        .ok()
        .filter(|p| *p >= 0)
}

/// The lead list: the `(updated_at, id)` of the last lead seen.
pub fn lead(updated_at: OffsetDateTime, id: Uuid) -> String {
    let micros = updated_at.unix_timestamp_nanos() / 1000;
    encode(&format!("l1:{micros}:{id}"))
}

pub fn parse_lead(raw: &str) -> Option<(OffsetDateTime, Uuid)> {
    let mut buf = String::new();
    let (micros, id) = decode(raw, "l1", &mut buf)?.split_once(':')?;
    let micros: i128 = micros.parse().ok()?;
    let t = OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1000)?).ok()?;
    Some((t, Uuid::parse_str(id).ok()?))
}

/// The deliveries list: the outbox sequence of the last delivery seen (the list is newest first).
pub fn delivery(seq: i64) -> String {
    encode(&format!("d1:{seq}"))
}

pub fn parse_delivery(raw: &str) -> Option<i64> {
    let mut buf = String::new();
    decode(raw, "d1", &mut buf)?.parse().ok()
}

/// `limit`: 1..=500, `default` when absent or empty.
pub fn limit(raw: Option<&str>, default: i64) -> Result<i64, ApiError> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(default),
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=500).contains(n))
            .ok_or_else(|| {
                ApiError::Unprocessable("limit must be an integer from 1 to 500".into())
            }),
    }
}

/// A timestamp parameter: RFC 3339 (`Z` or an offset), the lead object's format included.
pub fn timestamp(name: &str, raw: Option<&str>) -> Result<Option<OffsetDateTime>, ApiError> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => OffsetDateTime::parse(s, &Rfc3339).map(Some).map_err(|_| {
            ApiError::Unprocessable(format!(
                "{name} must be a timestamp such as 2026-01-31T12:00:00.000Z"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        assert_eq!(parse_feed(&feed(0)), Some(0));
        assert_eq!(parse_feed(&feed(987_654_321)), Some(987_654_321));
        assert_eq!(parse_delivery(&delivery(42)), Some(42));
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_767_225_600_123_000_000).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(parse_lead(&lead(t, id)), Some((t, id)));
    }

    #[test]
    fn a_cursor_of_another_list_or_garbage_does_not_parse() {
        assert_eq!(parse_feed(&delivery(5)), None);
        assert_eq!(parse_delivery(&feed(5)), None);
        assert_eq!(parse_lead(&feed(5)), None);
        for raw in [
            "",
            "abc",
            "%%%",
            "f1:5",
            &encode("f1:-1"),
            &encode("f1:x"),
            &"A".repeat(200),
        ] {
            assert_eq!(parse_feed(raw), None, "{raw}");
        }
        assert_eq!(parse_lead(&encode("l1:99999999999999999999999:x")), None);
    }

    #[test]
    fn limits_and_timestamps() {
        assert_eq!(limit(None, 100).unwrap(), 100);
        assert_eq!(limit(Some("500"), 100).unwrap(), 500);
        for bad in ["0", "501", "-1", "x", "1.5"] {
            assert!(limit(Some(bad), 100).is_err(), "{bad}");
        }
        assert!(
            timestamp("since", Some("2026-01-31T12:00:00.000Z"))
                .unwrap()
                .is_some()
        );
        assert!(
            timestamp("since", Some("2026-01-31T14:00:00+02:00"))
                .unwrap()
                .is_some()
        );
        match timestamp("updated_since", Some("yesterday")) {
            Err(ApiError::Unprocessable(m)) => assert!(m.starts_with("updated_since ")),
            other => panic!("{other:?}"),
        }
    }
}
