//! Console credentials this deployment issued, told from forgeries without the database.
//!
//! A sign-in ticket and a session cookie each carry, after the random part the database knows
//! (by its hash), when they expire and a MAC over the kind, the random part and the expiry,
//! under a key derived from `QUALIFIER_SECRET_KEY`:
//!
//! ```text
//! qlf_ct_<40 base62>.<expiry, unix seconds>.<22 base64url: HMAC-SHA256, first 16 bytes>   ticket
//! <43 base62>.<expiry, unix seconds>.<22 base64url>                                       cookie
//! ```
//!
//! A credential whose MAC does not verify (made up, truncated, altered, or issued under another
//! deployment's key) or whose expiry has passed is refused in memory, whatever the database is
//! doing; only ours reach a query, and a signed-in administrator's lookup never waits in the
//! strangers' lane (docs/reliability.md, "Strangers, quotas and pages"). The MAC binds the kind,
//! so a ticket is never taken for a session or the other way round. Credentials issued before
//! they were signed are refused: the administrator signs in again once.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;

/// What a credential opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ticket,
    Session,
}

impl Kind {
    fn label(self) -> &'static [u8] {
        match self {
            Kind::Ticket => b"ticket",
            Kind::Session => b"session",
        }
    }
}

/// The MAC's length in the credential, base64url of 16 bytes.
const TAG_LEN: usize = 22;

pub struct Credentials {
    key: ring::hmac::Key,
}

impl Credentials {
    pub fn new(key: &qualifier_store::SecretKey) -> Credentials {
        Credentials {
            key: ring::hmac::Key::new(
                ring::hmac::HMAC_SHA256,
                &key.subkey("console credentials v1"),
            ),
        }
    }

    fn mac(&self, kind: Kind, id: &str, expires: i64) -> [u8; 16] {
        let mut ctx = ring::hmac::Context::with_key(&self.key);
        ctx.update(kind.label());
        ctx.update(&[0]);
        ctx.update(id.as_bytes());
        ctx.update(&[0]);
        ctx.update(expires.to_string().as_bytes());
        let mut out = [0u8; 16];
        out.copy_from_slice(&ctx.sign().as_ref()[..16]);
        out
    }

    /// The credential for `id` (the random part the database keeps), good until `expires`.
    pub fn issue(&self, kind: Kind, id: &str, expires: OffsetDateTime) -> String {
        let at = expires.unix_timestamp();
        let tag = URL_SAFE_NO_PAD.encode(self.mac(kind, id, at));
        format!("{id}.{at}.{tag}")
    }

    /// The random part of a credential this deployment issued for `kind` and that has not
    /// expired at `now`; `None` for anything else, decided without any IO.
    pub fn open<'a>(&self, kind: Kind, raw: &'a str, now: OffsetDateTime) -> Option<&'a str> {
        let mut parts = raw.rsplitn(3, '.');
        let (tag, at, id) = (parts.next()?, parts.next()?, parts.next()?);
        if tag.len() != TAG_LEN || id.is_empty() || at.len() > 12 {
            return None;
        }
        let at: i64 = at.parse().ok()?;
        let given = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let want = self.mac(kind, id, at);
        // Every byte is compared whatever the first difference: the time says nothing of how
        // much of a forged tag was right.
        let differs = given
            .iter()
            .zip(&want)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if given.len() != 16 || differs != 0 {
            return None;
        }
        (now.unix_timestamp() < at).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn creds(seed: u8) -> Credentials {
        use base64::engine::general_purpose::STANDARD;
        let key = qualifier_store::SecretKey::from_base64(&STANDARD.encode([seed; 32])).unwrap();
        Credentials::new(&key)
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    #[test]
    fn what_we_issue_opens_until_it_expires() {
        let c = creds(1);
        let t = c.issue(
            Kind::Ticket,
            "qlf_ct_abc",
            now() + time::Duration::minutes(10),
        );
        assert_eq!(c.open(Kind::Ticket, &t, now()), Some("qlf_ct_abc"));
        assert_eq!(
            c.open(Kind::Ticket, &t, now() + time::Duration::minutes(10)),
            None,
            "expired at its instant"
        );
    }

    #[test]
    fn a_ticket_is_not_a_session_and_another_deployments_key_opens_nothing() {
        let c = creds(1);
        let t = c.issue(Kind::Ticket, "qlf_ct_abc", now() + time::Duration::hours(1));
        assert_eq!(c.open(Kind::Session, &t, now()), None);
        assert_eq!(creds(2).open(Kind::Ticket, &t, now()), None);
    }

    #[test]
    fn altered_truncated_and_pre_signing_credentials_are_refused() {
        let c = creds(1);
        let s = c.issue(Kind::Session, "sessionid", now() + time::Duration::hours(8));
        // A later expiry with the same tag.
        let (id_at, tag) = s.rsplit_once('.').unwrap();
        let (id, _) = id_at.rsplit_once('.').unwrap();
        let later = format!("{id}.{}.{tag}", now().unix_timestamp() + 999_999);
        assert_eq!(c.open(Kind::Session, &later, now()), None);
        assert_eq!(c.open(Kind::Session, &s[..s.len() - 1], now()), None);
        assert_eq!(c.open(Kind::Session, "sessionid", now()), None, "unsigned");
        assert_eq!(c.open(Kind::Session, "", now()), None);
        assert_eq!(c.open(Kind::Session, "..", now()), None);
    }

    proptest! {
        /// A forged MAC of the right length never opens, whatever the id and expiry.
        #[test]
        fn forged_macs_never_open(id in "[A-Za-z0-9_]{1,60}", at in 1_800_000_001i64..4_000_000_000, tag in prop::array::uniform16(any::<u8>())) {
            let c = creds(1);
            let forged = format!("{id}.{at}.{}", URL_SAFE_NO_PAD.encode(tag));
            prop_assume!(forged != c.issue(Kind::Session, &id, OffsetDateTime::from_unix_timestamp(at).unwrap()));
            prop_assert_eq!(c.open(Kind::Session, &forged, now()), None);
            prop_assert_eq!(c.open(Kind::Ticket, &forged, now()), None);
        }

        /// Any text at all is refused or opened without a panic.
        #[test]
        fn any_text_is_safe(raw in ".{0,200}") {
            let _ = creds(1).open(Kind::Ticket, &raw, now());
        }
    }
}
