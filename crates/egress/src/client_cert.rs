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
    /// A PEM file holding the certificate and its key, pasted whole into the certificate field:
    /// refused, so that the key is never kept beside the certificate in clear.
    #[error(
        "certificate holds a private key: put only the certificate (and its chain) in certificate, and the key in private_key"
    )]
    KeyInCertificate,
    /// X.509 version 1 (what `openssl x509 -req` makes without extensions): TLS libraries
    /// refuse it as a client certificate.
    #[error(
        "certificate is X.509 version 1; a client certificate must be version 3 (issue it with extensions, for example openssl x509 -req -extfile with basicConstraints and extendedKeyUsage = clientAuth)"
    )]
    Version1,
}

/// A pair that passed [`check`]: what is shown of it, and the certificate chain to keep, made
/// again from the certificates alone (whatever else the pasted text held is not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub info: ClientCertInfo,
    pub certificate_pem: String,
}

/// Whether `pem` holds a private key block of any kind (PKCS#8, PKCS#1, SEC1, encrypted).
fn holds_private_key(pem: &str) -> bool {
    pem.lines()
        .any(|l| l.trim_start().starts_with("-----BEGIN") && l.contains("PRIVATE KEY"))
}

/// `certs` as PEM, one `CERTIFICATE` block each, in order.
fn to_pem(certs: &[CertificateDer<'_>]) -> String {
    use base64::Engine;
    let mut out = String::new();
    for c in certs {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(c.as_ref());
        for line in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).unwrap_or_default());
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
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

/// Every check a pair passes before it is stored: the certificate field holds certificates and
/// no key, both parse, the certificate is X.509 version 3, the key is the certificate's, and
/// the certificate is valid `now`. Returns what is shown of it and the chain to keep.
pub fn check(
    certificate: &str,
    private_key_pem: &str,
    now: OffsetDateTime,
) -> Result<Checked, CertError> {
    if holds_private_key(certificate) {
        return Err(CertError::KeyInCertificate);
    }
    let certs = certificates(certificate)?;
    let shown = info(certificate)?;
    {
        let (_, cert) = x509_parser::parse_x509_certificate(certs[0].as_ref())
            .map_err(|_| CertError::MalformedCertificate)?;
        if cert.version() == x509_parser::x509::X509Version::V1 {
            return Err(CertError::Version1);
        }
    }
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
    Ok(Checked {
        info: shown,
        certificate_pem: to_pem(&certs),
    })
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
        let checked = check(&cert, &key, OffsetDateTime::now_utc()).unwrap();
        let shown = checked.info;
        assert_eq!(checked.certificate_pem, cert.replace("\r\n", "\n"));
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

    #[test]
    fn a_key_pasted_with_the_certificate_is_refused_in_every_form() {
        let (cert, key) = pair(90);
        let now = OffsetDateTime::now_utc();
        let rsa_style = key.replace("PRIVATE KEY", "RSA PRIVATE KEY");
        let encrypted = key.replace("PRIVATE KEY", "ENCRYPTED PRIVATE KEY");
        for combined in [
            format!("{cert}{key}"),
            format!("{key}{cert}"),
            format!("{cert}\n{rsa_style}"),
            format!("{cert}{encrypted}"),
            format!("{cert}{}", key.replace('\n', "\r\n")),
        ] {
            assert_eq!(
                check(&combined, &key, now),
                Err(CertError::KeyInCertificate)
            );
        }
        // Anything else beside the certificates is dropped from what is kept.
        let noisy = format!(
            "Bag Attributes: x\n{cert}-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n"
        );
        let checked = check(&noisy, &key, now).unwrap();
        assert!(!checked.certificate_pem.contains("CRL"));
        assert!(!checked.certificate_pem.contains("Bag"));
    }

    /// A version-1 certificate, made as `openssl x509 -req` makes one without extensions, is
    /// refused for what it is, not as a key that does not match.
    #[test]
    fn a_version_1_certificate_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("qualifier-v1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl runs");
            assert!(
                ok.status.success(),
                "{}",
                String::from_utf8_lossy(&ok.stderr)
            );
        };
        run(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "k.pem",
        ]);
        run(&[
            "pkcs8", "-topk8", "-nocrypt", "-in", "k.pem", "-out", "k8.pem",
        ]);
        run(&[
            "req",
            "-new",
            "-key",
            "k8.pem",
            "-subj",
            "/CN=v1-client",
            "-out",
            "c.csr",
        ]);
        run(&[
            "x509", "-req", "-in", "c.csr", "-signkey", "k8.pem", "-days", "30", "-out", "c.pem",
        ]);
        let cert = std::fs::read_to_string(dir.join("c.pem")).unwrap();
        let key = std::fs::read_to_string(dir.join("k8.pem")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let e = check(&cert, &key, OffsetDateTime::now_utc()).unwrap_err();
        assert_eq!(e, CertError::Version1);
        assert!(e.to_string().contains("version 1"), "{e}");
    }
}
