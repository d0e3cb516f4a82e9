//! Secrets: org API tokens (stored as a SHA-256 hash) and webhook signing secrets (sealed with
//! AES-256-GCM under `QUALIFIER_SECRET_KEY`). Nothing here implements Debug with the secret in it.

use base64::Engine;
use rand::Rng;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use uuid::Uuid;

pub const ORG_TOKEN_PREFIX: &str = "qlf_org_";
pub const WEBHOOK_SECRET_PREFIX: &str = qualifier_signing::SECRET_PREFIX;
const RANDOM_CHARS: usize = 40;
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

pub fn random_base62(n: usize) -> String {
    // rand's thread RNG is a CSPRNG seeded from the OS; sampling by index avoids modulo bias.
    let mut rng = rand::rng();
    (0..n)
        .map(|_| BASE62[rng.random_range(0..BASE62.len())] as char)
        .collect()
}

/// A new org token: `qlf_org_` + 40 base62 characters (~238 bits).
pub fn new_org_token() -> String {
    format!("{ORG_TOKEN_PREFIX}{}", random_base62(RANDOM_CHARS))
}

/// A new signing secret: `qlf_whsec_` + 40 base62 characters, made where `qualifier listen`
/// makes its own (`qualifier-signing`), so both are the same kind of string.
pub fn new_webhook_secret() -> String {
    qualifier_signing::new_secret()
}

/// The stored form of a token. Tokens carry ~238 bits of randomness, so a fast unsalted hash is
/// enough (no password stretching needed) and lets the lookup use a unique index.
pub fn hash_token(token: &str) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
        .as_ref()
        .to_vec()
}

/// Cheap shape check done before any database work: wrong prefix or length is 401 at once.
pub fn looks_like_org_token(token: &str) -> bool {
    token.strip_prefix(ORG_TOKEN_PREFIX).is_some_and(|rest| {
        rest.len() >= 32 && rest.len() <= 128 && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Why `QUALIFIER_SECRET_KEY` was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretKeyError {
    #[error("must be base64")]
    NotBase64,
    #[error("must decode to 32 bytes, got {0}")]
    WrongLength(usize),
}

/// Why a sealed secret did not open.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    #[error("sealed secret too short")]
    TooShort,
    #[error("secret cannot be opened with QUALIFIER_SECRET_KEY")]
    WrongKey,
    #[error("sealed secret is not UTF-8")]
    NotUtf8,
}

/// The key that seals webhook secrets at rest.
#[derive(Clone)]
pub struct SecretKey {
    key: std::sync::Arc<LessSafeKey>,
    /// HMAC under the same bytes, for keys derived for other purposes ([`SecretKey::subkey`]).
    mac: std::sync::Arc<ring::hmac::Key>,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl SecretKey {
    /// From `QUALIFIER_SECRET_KEY`: 32 bytes, base64 (standard or URL-safe, padding optional).
    pub fn from_base64(b64: &str) -> Result<SecretKey, SecretKeyError> {
        let s = b64.trim();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(s))
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(s))
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s))
            .map_err(|_| SecretKeyError::NotBase64)?;
        // 32 bytes is exactly what AES-256 takes, so the key below cannot be refused.
        let unbound = UnboundKey::new(&AES_256_GCM, &bytes)
            .map_err(|_| SecretKeyError::WrongLength(bytes.len()))?;
        Ok(SecretKey {
            key: std::sync::Arc::new(LessSafeKey::new(unbound)),
            mac: std::sync::Arc::new(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &bytes)),
        })
    }

    /// A 32-byte key for another purpose (`HMAC(key, purpose)`), so one configured secret serves
    /// several uses without any two sharing a key (cursor sealing, say).
    pub fn subkey(&self, purpose: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(ring::hmac::sign(&self.mac, purpose.as_bytes()).as_ref());
        out
    }

    /// A fresh random key, base64: what `qualifierctl` and `make run` generate for development.
    pub fn generate_base64() -> String {
        let mut k = [0u8; 32];
        SystemRandom::new().fill(&mut k).expect("OS randomness");
        base64::engine::general_purpose::STANDARD.encode(k)
    }

    /// `BOUND || nonce || ciphertext || tag`, with a random 96-bit nonce per secret and the
    /// owning org's id as associated data: the sealed bytes open only for that org, so a row
    /// copied to another org (a bad restore, a manual edit, an injection) is useless there.
    pub fn seal(&self, plaintext: &str, org_id: Uuid) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).expect("OS randomness");
        let mut buf = plaintext.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(org_id.as_bytes()),
                &mut buf,
            )
            .expect("AES-GCM seal of a short secret");
        let mut out = BOUND.to_vec();
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&buf);
        out
    }

    /// Opens a secret sealed for `org_id`. A legacy secret (sealed before secrets were bound to
    /// their org, with no associated data) still opens, so deliveries keep working until
    /// [`crate::Endpoints::reseal_legacy_secrets`] has rewritten it; a bound one opens only for its
    /// org.
    pub fn open(&self, sealed: &[u8], org_id: Uuid) -> Result<String, OpenError> {
        if let Some(bound) = sealed.strip_prefix(BOUND)
            && let Ok(s) = self.open_with(bound, Aad::from(org_id.as_bytes()))
        {
            return Ok(s);
        }
        // Not bound (or bound to another org, which then also fails here: the tag covers the
        // marker bytes as part of what it reads as a nonce).
        self.open_with(sealed, Aad::from(&[][..]))
    }

    /// Opens a secret sealed for `org_id`, in the bound format only: what every read uses once
    /// unbound secrets are no longer allowed (docs/reliability.md, "Strangers, quotas and pages").
    pub fn open_bound(&self, sealed: &[u8], org_id: Uuid) -> Result<String, OpenError> {
        let bound = sealed.strip_prefix(BOUND).ok_or(OpenError::WrongKey)?;
        self.open_with(bound, Aad::from(org_id.as_bytes()))
    }

    /// True when `sealed` is in the legacy, unbound format (to be re-sealed).
    pub fn is_legacy(&self, sealed: &[u8], org_id: Uuid) -> bool {
        sealed
            .strip_prefix(BOUND)
            .is_none_or(|b| self.open_with(b, Aad::from(org_id.as_bytes())).is_err())
    }

    fn open_with(&self, sealed: &[u8], aad: Aad<&[u8]>) -> Result<String, OpenError> {
        if sealed.len() < NONCE_LEN {
            return Err(OpenError::TooShort);
        }
        let (nonce, ct) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::TooShort)?;
        let mut buf = ct.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, aad, &mut buf)
            .map_err(|_| OpenError::WrongKey)?;
        String::from_utf8(plain.to_vec()).map_err(|_| OpenError::NotUtf8)
    }

    /// The legacy format (no associated data): only for tests of the re-seal.
    #[doc(hidden)]
    pub fn seal_legacy(&self, plaintext: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).expect("OS randomness");
        let mut buf = plaintext.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
            .expect("AES-GCM seal of a short secret");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        out
    }
}

/// Marks a secret sealed with its org id as associated data (format 2).
const BOUND: &[u8] = b"q2";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_prefix_and_length_and_differ() {
        let a = new_org_token();
        let b = new_org_token();
        assert!(a.starts_with("qlf_org_") && a.len() == 8 + 40);
        assert!(looks_like_org_token(&a));
        assert_ne!(a, b);
        assert!(new_webhook_secret().starts_with("qlf_whsec_"));
    }

    #[test]
    fn token_shape_check_rejects_junk() {
        assert!(!looks_like_org_token("qlf_org_short"));
        assert!(!looks_like_org_token(&format!(
            "qlf_xxx_{}",
            "a".repeat(40)
        )));
        assert!(!looks_like_org_token(&format!(
            "qlf_org_{}!",
            "a".repeat(40)
        )));
    }

    #[test]
    fn sealed_secret_round_trips_and_hides_plaintext() {
        let key = SecretKey::from_base64(&SecretKey::generate_base64()).unwrap();
        let org = Uuid::new_v4();
        let sealed = key.seal("qlf_whsec_abc", org);
        assert!(!sealed.windows(8).any(|w| w == b"whsec_ab"));
        assert_eq!(key.open(&sealed, org).unwrap(), "qlf_whsec_abc");
        let other = SecretKey::from_base64(&SecretKey::generate_base64()).unwrap();
        assert!(other.open(&sealed, org).is_err());
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(key.open(&tampered, org).is_err());
    }

    #[test]
    fn a_sealed_secret_opens_only_for_its_org() {
        let key = SecretKey::from_base64(&SecretKey::generate_base64()).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let sealed = key.seal("qlf_whsec_abc", a);
        assert_eq!(key.open(&sealed, b), Err(OpenError::WrongKey));
        assert!(!key.is_legacy(&sealed, a));
        // The legacy format opens anywhere (that is the flaw), so it is re-sealed at start.
        let legacy = key.seal_legacy("qlf_whsec_abc");
        assert!(key.is_legacy(&legacy, a));
        assert_eq!(key.open(&legacy, b).unwrap(), "qlf_whsec_abc");
    }

    #[test]
    fn secret_key_must_be_32_bytes_of_base64() {
        assert!(SecretKey::from_base64("not base64!").is_err());
        assert!(
            SecretKey::from_base64("AAAA")
                .unwrap_err()
                .to_string()
                .contains("32 bytes")
        );
    }
}
