//! The one timestamp shape of the API and the webhook envelope: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
//!
//! Times are truncated to the millisecond *before* they are stored, so what the database holds,
//! what the API returns and what an event snapshot carries are the same value.

use time::{OffsetDateTime, UtcOffset, format_description::FormatItem, macros::format_description};

const MILLIS_Z: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// The current UTC time truncated to whole milliseconds.
pub fn now_millis() -> OffsetDateTime {
    truncate_millis(OffsetDateTime::now_utc())
}

/// Unix milliseconds (the form timestamps take in message headers).
pub fn unix_millis(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn truncate_millis(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    let ms = t.millisecond();
    t.replace_millisecond(ms).unwrap_or(t)
}

pub fn format(t: OffsetDateTime) -> String {
    t.to_offset(UtcOffset::UTC)
        .format(MILLIS_Z)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00.000Z"))
}

/// serde adapter: `#[serde(with = "qualifier_domain::timefmt::millis")]`.
pub mod millis {
    use serde::Serializer;
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*t))
    }

    /// Any RFC 3339 time (what [`serialize`] writes is one).
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
        let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        OffsetDateTime::parse(&s, &time::format_description::well_known::Rfc3339)
            .map_err(serde::de::Error::custom)
    }
}

/// serde adapter for optional timestamps (serialized as `null` when absent).
pub mod millis_opt {
    use serde::Serializer;
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(t: &Option<OffsetDateTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format(*t)),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_with_exactly_three_fraction_digits_and_z() {
        assert_eq!(
            format(datetime!(2026-11-21 10:15:02.402_999 UTC)),
            "2026-11-21T10:15:02.402Z"
        );
        assert_eq!(
            format(datetime!(2026-01-02 03:04:05 UTC)),
            "2026-01-02T03:04:05.000Z"
        );
    }

    #[test]
    fn converts_other_offsets_to_utc() {
        assert_eq!(
            format(datetime!(2026-11-21 12:00:00.5 +02:00)),
            "2026-11-21T10:00:00.500Z"
        );
    }

    #[test]
    fn truncation_drops_sub_millisecond_digits() {
        let t = truncate_millis(datetime!(2026-11-21 10:15:02.402_999_999 UTC));
        assert_eq!(t, datetime!(2026-11-21 10:15:02.402 UTC));
    }
}
