//! Opaque cursors and the query parameters of the list endpoints (docs/api.md).
//!
//! A cursor's content is a short tagged text: `f1:<feed position>` for the events feed,
//! `l1:<unix micros>:<uuid>` for the lead list, `d1:<outbox seq>` for the deliveries list. The
//! tag keeps one list's cursor from being taken for another's. Anything that does not decode is
//! a 422 naming the parameter.
//!
//! Cursors are issued sealed ([`Cursors`], docs/api.md, "Lists and the feed"): AES-256-GCM under a
//! key derived from `QUALIFIER_SECRET_KEY`. Feed positions and outbox sequences are counters
//! shared by every org, so a readable cursor let an org see how many events all tenants produced
//! between two of its pages; a sealed one says nothing (numbers are zero-padded, so not even its
//! length). A cursor is still just a position: presented by another org it reads that org's own
//! events from there, as an unsealed cursor always did. The nonce is derived from the org and the content, so the
//! same position gives the same cursor (an empty feed page returns the very cursor it was given)
//! and two orgs never share one. Cursors issued before sealing (plain base64url of the text,
//! the "legacy" form below) are still accepted.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;
use uuid::Uuid;

fn encode(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// The text of a cursor issued before sealing (plain base64url).
fn legacy_text(raw: &str) -> Option<String> {
    // A cursor is short; a long one is not ours (and is not worth decoding).
    if raw.len() > 128 {
        return None;
    }
    String::from_utf8(URL_SAFE_NO_PAD.decode(raw).ok()?).ok()
}

fn field<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    text.strip_prefix(tag)?.strip_prefix(':')
}

fn feed_text(text: &str) -> Option<i64> {
    field(text, "f1")?.parse::<i64>().ok().filter(|p| *p >= 0)
}

fn lead_text(text: &str) -> Option<(OffsetDateTime, Uuid)> {
    let (micros, id) = field(text, "l1")?.split_once(':')?;
    let micros: i128 = micros.parse().ok()?;
    let t = OffsetDateTime::from_unix_timestamp_nanos(micros.checked_mul(1000)?).ok()?;
    Some((t, Uuid::parse_str(id).ok()?))
}

fn delivery_text(text: &str) -> Option<i64> {
    field(text, "d1")?.parse().ok()
}

/// The events feed: the position of the last event seen (0 = the start). The legacy (unsealed) form.
pub fn feed(pos: i64) -> String {
    encode(&format!("f1:{pos}"))
}

pub fn parse_feed(raw: &str) -> Option<i64> {
    feed_text(&legacy_text(raw)?)
}

/// The lead list: the `(updated_at, id)` of the last lead seen. The legacy (unsealed) form.
pub fn lead(updated_at: OffsetDateTime, id: Uuid) -> String {
    let micros = updated_at.unix_timestamp_nanos() / 1000;
    encode(&format!("l1:{micros}:{id}"))
}

pub fn parse_lead(raw: &str) -> Option<(OffsetDateTime, Uuid)> {
    lead_text(&legacy_text(raw)?)
}

/// The deliveries list: the outbox sequence of the last delivery seen (the list is newest
/// first). The legacy (unsealed) form.
pub fn delivery(seq: i64) -> String {
    encode(&format!("d1:{seq}"))
}

pub fn parse_delivery(raw: &str) -> Option<i64> {
    delivery_text(&legacy_text(raw)?)
}

/// Issues and reads sealed cursors (see the module's documentation).
pub struct Cursors {
    aead: ring::aead::LessSafeKey,
    nonces: ring::hmac::Key,
}

/// The first byte of a sealed cursor's bytes; a legacy cursor's first byte is its tag's
/// ASCII letter, so the two never collide.
const SEALED: u8 = 0xC2;

impl Cursors {
    pub fn new(key: &qualifier_store::SecretKey) -> Cursors {
        let aead =
            ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &key.subkey("cursor aead v1"))
                .expect("a 32-byte key suits AES-256");
        Cursors {
            aead: ring::aead::LessSafeKey::new(aead),
            nonces: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key.subkey("cursor nonce v1")),
        }
    }

    fn seal(&self, org: Uuid, text: &str) -> String {
        use ring::aead::{Aad, NONCE_LEN, Nonce};
        let mut ctx = ring::hmac::Context::with_key(&self.nonces);
        ctx.update(org.as_bytes());
        ctx.update(text.as_bytes());
        let tag = ctx.sign();
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&tag.as_ref()[..NONCE_LEN]);
        let mut buf = text.as_bytes().to_vec();
        self.aead
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
            .expect("sealing a short cursor");
        let mut out = vec![SEALED];
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&buf);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The cursor's text: sealed, or (issued before sealing) plain. `org` is not needed to open one
    /// (a cursor is a position, whoever presents it); it is kept in the signature beside
    /// [`Cursors::seal`]'s for the day a list's positions become the org's own.
    fn open(&self, _org: Uuid, raw: &str) -> Option<String> {
        use ring::aead::{Aad, NONCE_LEN, Nonce};
        if raw.len() > 160 {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
        match bytes.split_first() {
            Some((&SEALED, rest)) if rest.len() > NONCE_LEN => {
                let (nonce, ct) = rest.split_at(NONCE_LEN);
                let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
                let mut buf = ct.to_vec();
                let plain = self
                    .aead
                    .open_in_place(nonce, Aad::empty(), &mut buf)
                    .ok()?;
                String::from_utf8(plain.to_vec()).ok()
            }
            _ if raw.len() <= 128 => String::from_utf8(bytes).ok(),
            _ => None,
        }
    }

    /// Whether `raw` is in the unsealed form issued before cursors were sealed (whether or not
    /// it parses).
    pub fn is_legacy(&self, raw: &str) -> bool {
        URL_SAFE_NO_PAD
            .decode(raw)
            .ok()
            .and_then(|b| b.first().copied())
            .is_some_and(|first| first != SEALED)
    }

    pub fn feed(&self, org: Uuid, pos: i64) -> String {
        self.seal(org, &format!("f1:{pos:020}"))
    }

    pub fn parse_feed(&self, org: Uuid, raw: &str) -> Option<i64> {
        feed_text(&self.open(org, raw)?)
    }

    pub fn lead(&self, org: Uuid, updated_at: OffsetDateTime, id: Uuid) -> String {
        let micros = updated_at.unix_timestamp_nanos() / 1000;
        self.seal(org, &format!("l1:{micros:020}:{id}"))
    }

    pub fn parse_lead(&self, org: Uuid, raw: &str) -> Option<(OffsetDateTime, Uuid)> {
        lead_text(&self.open(org, raw)?)
    }

    pub fn delivery(&self, org: Uuid, seq: i64) -> String {
        self.seal(org, &format!("d1:{seq:020}"))
    }

    pub fn parse_delivery(&self, org: Uuid, raw: &str) -> Option<i64> {
        delivery_text(&self.open(org, raw)?)
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

    fn cursors() -> Cursors {
        Cursors::new(
            &qualifier_store::SecretKey::from_base64(&qualifier_store::SecretKey::generate_base64())
                .unwrap(),
        )
    }

    #[test]
    fn sealed_cursors_round_trip_and_say_nothing() {
        let c = cursors();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(c.parse_feed(a, &c.feed(a, 7)), Some(7));
        assert_eq!(c.parse_delivery(a, &c.delivery(a, 42)), Some(42));
        let t = OffsetDateTime::from_unix_timestamp_nanos(1_767_225_600_123_000_000).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(c.parse_lead(a, &c.lead(a, t, id)), Some((t, id)));
        // A position is a position, whoever sends it; another list's cursor is not.
        assert_eq!(c.parse_feed(b, &c.feed(a, 7)), Some(7));
        assert_ne!(c.feed(a, 7), c.feed(b, 7), "two orgs never share a cursor");
        assert_eq!(c.parse_delivery(a, &c.feed(a, 7)), None);
        // Deterministic (an empty page returns the cursor it got), opaque, same length.
        assert_eq!(c.feed(a, 7), c.feed(a, 7));
        assert_eq!(c.feed(a, 7).len(), c.feed(a, 9_000_000_000).len());
        let raw = URL_SAFE_NO_PAD.decode(c.feed(a, 1234567)).unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("1234567"));
        // A cursor of another key (another deployment) does not open either.
        assert_eq!(cursors().parse_feed(a, &c.feed(a, 7)), None);
    }

    #[test]
    fn cursors_issued_before_v1_2_keep_working() {
        let c = cursors();
        let org = Uuid::new_v4();
        assert_eq!(c.parse_feed(org, &feed(99)), Some(99));
        assert_eq!(c.parse_delivery(org, &delivery(5)), Some(5));
        let t = OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(c.parse_lead(org, &lead(t, id)), Some((t, id)));
        assert_eq!(c.parse_feed(org, "%%%"), None);
    }
}
