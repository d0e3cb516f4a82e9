//! Conditional requests on a lead (docs/api.md, "Revisions and conditional requests"): the entity
//! tags of `If-Match` and `If-None-Match`. A lead's tag is its revision, quoted
//! ([`qualifier_domain::lead::entity_tag`]).

use actix_web::http::header::{self, HeaderMap};
use qualifier_domain::lead::Expected;

/// The entity tags of every line of `name`, split at commas: `(weak, opaque text)` each, or
/// `None` for `*`. A malformed tag (unquoted, an unclosed quote) is left out.
fn tags(headers: &HeaderMap, name: header::HeaderName) -> Option<Vec<(bool, String)>> {
    let mut out = Vec::new();
    let mut any = false;
    for line in headers.get_all(name) {
        // A value that is not visible ASCII names no tag of ours.
        let Ok(line) = line.to_str() else { continue };
        for item in line.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item == "*" {
                any = true;
                continue;
            }
            let (weak, rest) = match item.strip_prefix("W/") {
                Some(rest) => (true, rest),
                None => (false, item),
            };
            if let Some(opaque) = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                out.push((weak, opaque.to_owned()));
            }
        }
    }
    (!any).then_some(out)
}

/// A tag's revision, when it is one of ours (digits only, no sign, no leading zero).
fn revision(opaque: &str) -> Option<i64> {
    let digits = !opaque.is_empty() && opaque.bytes().all(|b| b.is_ascii_digit());
    (digits && !(opaque.len() > 1 && opaque.starts_with('0')))
        .then(|| opaque.parse().ok())
        .flatten()
}

/// `If-Match` of a `PATCH`: absent or `*` expects any existing lead; otherwise the revisions of
/// its strong tags (a weak tag never matches, RFC 9110 section 13.1.1). A header that names none
/// of ours expects a revision no lead has, so the write is refused with 412, never made
/// unconditionally.
pub fn if_match(headers: &HeaderMap) -> Expected {
    if !headers.contains_key(header::IF_MATCH) {
        return Expected::Any;
    }
    match tags(headers, header::IF_MATCH) {
        None => Expected::Any,
        Some(tags) => Expected::OneOf(
            tags.iter()
                .filter(|(weak, _)| !weak)
                .filter_map(|(_, t)| revision(t))
                .collect(),
        ),
    }
}

/// Whether a `GET`'s `If-None-Match` names the lead's current tag (`*` or the revision, weak
/// comparison), so the answer is 304 with no body.
pub fn none_match(headers: &HeaderMap, current: i64) -> bool {
    if !headers.contains_key(header::IF_NONE_MATCH) {
        return false;
    }
    match tags(headers, header::IF_NONE_MATCH) {
        None => true,
        Some(tags) => tags.iter().any(|(_, t)| revision(t) == Some(current)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(name: header::HeaderName, lines: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append(name.clone(), HeaderValue::from_bytes(l).unwrap());
        }
        h
    }

    #[test]
    fn if_match_reads_strong_tags_of_every_line_and_star() {
        let m = |lines: &[&[u8]]| if_match(&headers(header::IF_MATCH, lines));
        assert_eq!(if_match(&HeaderMap::new()), Expected::Any);
        assert_eq!(m(&[b"*"]), Expected::Any);
        assert_eq!(m(&[b"\"3\""]), Expected::OneOf(vec![3]));
        assert_eq!(
            m(&[b"\"3\", \"5\"", b"\"9\""]),
            Expected::OneOf(vec![3, 5, 9])
        );
        // Weak tags never match an If-Match.
        assert_eq!(m(&[b"W/\"3\""]), Expected::OneOf(vec![]));
    }

    #[test]
    fn an_if_match_naming_nothing_of_ours_matches_nothing() {
        let m = |line: &[u8]| if_match(&headers(header::IF_MATCH, &[line]));
        for bad in [
            &b""[..],
            b"3",
            b"\"3",
            b"\"abc\"",
            b"\"-3\"",
            b"\"03\"",
            b"\"99999999999999999999\"",
            b"\xff\xfe",
        ] {
            let e = m(bad);
            assert_eq!(e, Expected::OneOf(vec![]), "{bad:?}");
            assert!(!e.admits(3));
        }
    }

    #[test]
    fn if_none_match_compares_weakly_and_star_matches_any() {
        let n = |line: &[u8], rev| none_match(&headers(header::IF_NONE_MATCH, &[line]), rev);
        assert!(!none_match(&HeaderMap::new(), 3));
        assert!(n(b"\"3\"", 3));
        assert!(n(b"W/\"3\"", 3));
        assert!(n(b"\"1\", \"3\"", 3));
        assert!(n(b"*", 3));
        assert!(!n(b"\"2\"", 3));
        assert!(!n(b"garbage", 3));
    }
}
