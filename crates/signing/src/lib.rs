//! Webhook signatures: `X-Qualifier-Signature: sha256=<lowercase hex HMAC-SHA256(raw body)>`,
//! keyed with the UTF-8 bytes of the whole signing secret (`qlf_whsec_...`).
//!
//! The same crate signs (in `webhook-delivery`) and verifies (in receivers written in Rust):
//! verification checks the prefix and the length before anything else and compares in constant
//! time (`ring::hmac::verify`).

use ring::hmac;

pub const PREFIX: &str = "sha256=";

/// How every signing secret starts: the delivery worker's (sealed per org) and the one
/// `qualifier listen` makes for a laptop are the same kind of string.
pub const SECRET_PREFIX: &str = "qlf_whsec_";

/// A new signing secret: `qlf_whsec_` + 40 base62 characters (~238 bits) from the OS's CSPRNG.
pub fn new_secret() -> String {
    use ring::rand::SecureRandom;
    const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let rng = ring::rand::SystemRandom::new();
    let mut out = String::with_capacity(SECRET_PREFIX.len() + 40);
    out.push_str(SECRET_PREFIX);
    let mut byte = [0u8; 1];
    while out.len() < SECRET_PREFIX.len() + 40 {
        rng.fill(&mut byte).expect("the OS random source works");
        // 248 = 4 x 62: bytes above it are dropped so every character is equally likely.
        if byte[0] < 248 {
            out.push(BASE62[(byte[0] % 62) as usize] as char);
        }
    }
    out
}

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
    // The signature is lowercase hex (docs/receivers.md); `hex` also takes uppercase, so the case is checked here first.
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

/// Standard Webhooks (standard-webhooks/standard-webhooks, `spec/standard-webhooks.md`): the
/// same key as `X-Qualifier-Signature`, so receivers can verify with an off-the-shelf library.
pub mod standard {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use ring::hmac;

    /// `whsec_` + standard base64 of the key bytes (the UTF-8 bytes of the whole
    /// `qlf_whsec_...` secret): the form Standard Webhooks libraries take.
    pub fn secret(signing_secret: &str) -> String {
        format!("whsec_{}", STANDARD.encode(signing_secret.as_bytes()))
    }

    /// One `v1,<base64 HMAC-SHA256>` entry over `{id}.{timestamp}.{body}`.
    pub fn sign(signing_secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
        sign_with_key(signing_secret.as_bytes(), id, timestamp, body)
    }

    /// The key bytes of a `whsec_<base64>` secret (a Standard Webhooks secret given to us, such
    /// as the operator's), or `None` when it is not one.
    pub fn whsec_key(whsec: &str) -> Option<Vec<u8>> {
        let key = STANDARD.decode(whsec.strip_prefix("whsec_")?).ok()?;
        (!key.is_empty()).then_some(key)
    }

    /// [`sign`] with raw key bytes.
    pub fn sign_with_key(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, key);
        let mut ctx = hmac::Context::with_key(&key);
        ctx.update(id.as_bytes());
        ctx.update(b".");
        ctx.update(timestamp.to_string().as_bytes());
        ctx.update(b".");
        ctx.update(body);
        format!("v1,{}", STANDARD.encode(ctx.sign().as_ref()))
    }

    /// The `webhook-signature` header: one entry per secret, space-separated, in the order given
    /// (during a rotation's overlap, the new secret's first).
    pub fn header(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> String {
        secrets
            .iter()
            .map(|s| sign(s, id, timestamp, body))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// True when one `v1` entry of `header` is the signature of `body` under `signing_secret`
    /// (constant-time comparison). The timestamp's freshness is the receiver's to check.
    pub fn verify(
        signing_secret: &str,
        id: &str,
        timestamp: i64,
        body: &[u8],
        header: &str,
    ) -> bool {
        let key = hmac::Key::new(hmac::HMAC_SHA256, signing_secret.as_bytes());
        let signed = [
            id.as_bytes(),
            b".",
            timestamp.to_string().as_bytes(),
            b".",
            body,
        ]
        .concat();
        header.split(' ').any(|entry| {
            entry
                .strip_prefix("v1,")
                .and_then(|b64| STANDARD.decode(b64).ok())
                .is_some_and(|tag| hmac::verify(&key, &signed, &tag).is_ok())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_secrets_have_the_documented_shape_and_differ() {
        let a = new_secret();
        let b = new_secret();
        assert_ne!(a, b);
        for s in [&a, &b] {
            let rest = s.strip_prefix(SECRET_PREFIX).expect("prefix");
            assert_eq!(rest.len(), 40);
            assert!(rest.bytes().all(|c| c.is_ascii_alphanumeric()), "{s}");
        }
    }

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

    // The Standard Webhooks specification's own example: secret
    // `whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`, id `msg_p5jXN8AQM9LWM0D4loKWxJek`, timestamp
    // 1614265330, body `{"test": 2432232314}`.
    #[test]
    fn standard_webhooks_matches_the_specifications_example() {
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        // Our secrets are text; the example's key bytes are not UTF-8, so sign with ring here
        // the way `standard::sign` does and compare with the published value.
        let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        let tag = ring::hmac::sign(
            &k,
            b"msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{\"test\": 2432232314}",
        );
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(tag.as_ref()),
            "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn standard_secret_is_the_base64_of_the_same_key() {
        use base64::Engine;
        let s = standard::secret("qlf_whsec_abc");
        let key = base64::engine::general_purpose::STANDARD
            .decode(s.strip_prefix("whsec_").unwrap())
            .unwrap();
        assert_eq!(key, b"qlf_whsec_abc");
        let h = standard::header(
            &["qlf_whsec_new", "qlf_whsec_old"],
            "id1",
            1_700_000_000,
            b"{}",
        );
        assert_eq!(h.split(' ').count(), 2);
        assert!(standard::verify(
            "qlf_whsec_old",
            "id1",
            1_700_000_000,
            b"{}",
            &h
        ));
        assert!(standard::verify(
            "qlf_whsec_new",
            "id1",
            1_700_000_000,
            b"{}",
            &h
        ));
        assert!(!standard::verify(
            "qlf_whsec_other",
            "id1",
            1_700_000_000,
            b"{}",
            &h
        ));
        assert!(!standard::verify(
            "qlf_whsec_new",
            "id1",
            1_700_000_001,
            b"{}",
            &h
        ));
        assert!(!standard::verify(
            "qlf_whsec_new",
            "id1",
            1_700_000_000,
            b"{ }",
            &h
        ));
    }
}
