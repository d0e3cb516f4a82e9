//! Webhook signatures: `X-Qualifier-Signature: sha256=<lowercase hex HMAC-SHA256(raw body)>`,
//! keyed with the UTF-8 bytes of the whole signing secret (`qlf_whsec_...`).
//!
//! The same crate signs (in `webhook-delivery`) and verifies (in receivers written in Rust):
//! verification checks the prefix and the length before anything else and compares in constant
//! time (`ring::hmac::verify`).

use ring::hmac;

pub const PREFIX: &str = "sha256=";

/// The header value for `body` under `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    format!("{PREFIX}{}", hex::encode(tag.as_ref()))
}

/// True when `header` is exactly `sha256=` + 64 lowercase hex digits of the HMAC of `body`.
pub fn verify(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(digits) = header.strip_prefix(PREFIX) else {
        return false;
    };
    // The seed says lowercase; `hex` also takes uppercase, so the case is checked here first.
    if digits.len() != 64
        || !digits
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return false;
    }
    let mut tag = [0u8; 32];
    if hex::decode_to_slice(digits, &mut tag).is_err() {
        return false;
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hmac::verify(&key, body, &tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
    const RFC4231_2: &str =
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

    #[test]
    fn matches_a_published_vector() {
        assert_eq!(sign("Jefe", b"what do ya want for nothing?"), RFC4231_2);
        assert!(verify("Jefe", b"what do ya want for nothing?", RFC4231_2));
    }

    #[test]
    fn refuses_tampering_and_malformed_headers() {
        let body = br#"{"id":"1"}"#;
        let good = sign("qlf_whsec_k", body);
        assert!(verify("qlf_whsec_k", body, &good));
        assert!(
            !verify("qlf_whsec_k", br#"{"id":"2"}"#, &good),
            "tampered body"
        );
        assert!(!verify("qlf_whsec_other", body, &good), "wrong secret");
        assert!(
            !verify("qlf_whsec_k", body, &good[..good.len() - 2]),
            "truncated hex"
        );
        assert!(!verify("qlf_whsec_k", body, "sha256="), "empty");
        assert!(
            !verify(
                "qlf_whsec_k",
                body,
                &good.to_uppercase().replace("SHA256=", "sha256=")
            ),
            "uppercase hex"
        );
        assert!(
            !verify("qlf_whsec_k", body, &good[PREFIX.len()..]),
            "missing prefix"
        );
        assert!(
            !verify("qlf_whsec_k", body, &format!("{good}00")),
            "too long"
        );
    }
}
