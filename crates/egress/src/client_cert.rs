//! An endpoint's client certificate (mutual TLS): the checks a pair must pass before it is
//! stored, and what is shown of it (subject, issuer, expiry; the key never).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use time::OffsetDateTime;

pub use qualifier_domain::client_cert::ClientCertInfo;

/// Why a pair is refused (422, the message naming the problem). No message repeats the key.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CertError {
    #[error("certificate is not a PEM X.509 certificate")]
    MalformedCertificate,
    #[error("private_key is not a PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    MalformedKey,
    #[error("private_key's type is not supported (RSA, ECDSA P-256/P-384 or Ed25519)")]
    UnsupportedKey,
    #[error("private_key does not match the certificate")]
    KeyMismatch,
    #[error("certificate expired at {0}")]
    Expired(String),
    #[error("certificate is not valid before {0}")]
    NotYetValid(String),
}

/// The certificates of a PEM bundle, the endpoint's own first (a chain may follow it).
pub fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|_| CertError::MalformedCertificate)?;
    if certs.is_empty() {
        return Err(CertError::MalformedCertificate);
    }
    Ok(certs)
}

/// The private key of a PEM block.
pub fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, CertError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| CertError::MalformedKey)
}

/// Subject, issuer and expiry of the first certificate of `pem`.
pub fn info(pem: &str) -> Result<ClientCertInfo, CertError> {
    let certs = certificates(pem)?;
    let (_, cert) = x509_parser::parse_x509_certificate(certs[0].as_ref())
        .map_err(|_| CertError::MalformedCertificate)?;
    Ok(ClientCertInfo {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        not_after: cert.validity().not_after.to_datetime(),
    })
}

/// Every check a pair passes before it is stored: both parse, the key is the certificate's, and
/// the certificate is valid `now`. Returns what is shown of it.
pub fn check(
    certificate: &str,
    private_key_pem: &str,
    now: OffsetDateTime,
) -> Result<ClientCertInfo, CertError> {
    let certs = certificates(certificate)?;
    let shown = info(certificate)?;
    let key = private_key(private_key_pem)?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|_| CertError::UnsupportedKey)?;
    rustls::sign::CertifiedKey::new(certs.clone(), signer)
        .keys_match()
        .map_err(|_| CertError::KeyMismatch)?;
    let (_, cert) = x509_parser::parse_x509_certificate(certs[0].as_ref())
        .map_err(|_| CertError::MalformedCertificate)?;
    let fmt = |t: OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    if shown.not_after <= now {
        return Err(CertError::Expired(fmt(shown.not_after)));
    }
    let not_before = cert.validity().not_before.to_datetime();
    if not_before > now {
        return Err(CertError::NotYetValid(fmt(not_before)));
    }
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(days: i64) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["qualifier-client".into()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "qualifier-client");
        let now = OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(30);
        params.not_after = now + time::Duration::days(days);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_matching_valid_pair_is_shown_without_its_key() {
        let (cert, key) = pair(90);
        let shown = check(&cert, &key, OffsetDateTime::now_utc()).unwrap();
        assert_eq!(shown.subject, "CN=qualifier-client");
        assert_eq!(shown.issuer, "CN=qualifier-client");
        let json = serde_json::to_string(&shown).unwrap();
        assert!(!json.contains("PRIVATE"), "{json}");
    }

    #[test]
    fn each_problem_is_named() {
        let (cert, key) = pair(90);
        let (_, other_key) = pair(90);
        let now = OffsetDateTime::now_utc();
        assert_eq!(check(&cert, &other_key, now), Err(CertError::KeyMismatch));
        assert_eq!(
            check("not a certificate", &key, now),
            Err(CertError::MalformedCertificate)
        );
        assert_eq!(check(&cert, &cert, now), Err(CertError::MalformedKey));
        let (old, old_key) = pair(-1);
        let e = check(&old, &old_key, now).unwrap_err();
        assert!(matches!(e, CertError::Expired(_)), "{e:?}");
        assert!(
            e.to_string().starts_with("certificate expired at 20"),
            "{e}"
        );
        let refused = check(&cert, &other_key, now).unwrap_err().to_string();
        assert!(!refused.contains("PRIVATE"), "{refused}");
    }
}
