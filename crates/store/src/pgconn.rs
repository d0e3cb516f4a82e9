//! How every PostgreSQL connection is opened (docs/operations.md, "TLS to PostgreSQL"): the pools, the LISTEN
//! connection, migrations and `qualifierctl` all go through [`Database`], so they all follow the
//! same `DATABASE_URL`, TLS included.
//!
//! `sslmode` and `sslrootcert` mean what they mean for libpq:
//!
//! | sslmode | TLS | chain checked | host name checked |
//! |---|---|---|---|
//! | `disable` | never | | |
//! | `prefer` (the default) | if the server offers it | | |
//! | `require` | always | only if `sslrootcert` is given (as libpq) | |
//! | `verify-ca` | always | yes | |
//! | `verify-full` | always | yes | yes |
//!
//! `sslrootcert` is a PEM file of the CA certificates to trust, or `system` for the system's
//! roots; without it, `verify-ca` and `verify-full` read `~/.postgresql/root.crt` as libpq does.
//! tokio-postgres knows only `disable`, `prefer` and `require`, so both options are taken out of
//! the URL here and carried by the rustls configuration instead. Several hosts and
//! `target_session_attrs=read-write` are tokio-postgres' own: a new connection skips a host that
//! is down or read-only, which is how the services find a promoted standby after a failover.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use diesel_async::AsyncPgConnection;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Why a `DATABASE_URL` cannot be used. Each message follows the variable's name in a
/// configuration error (`DATABASE_URL has sslmode=allow; ...`) and never repeats the URL, which
/// may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("must be a postgres:// URL")]
    NotPostgres,
    #[error("has sslmode={0}; use disable, prefer, require, verify-ca or verify-full")]
    SslMode(String),
    /// tokio-postgres refused the rest of the URL (its cause chain, which never holds the URL).
    #[error("is not a valid PostgreSQL URL: {0}")]
    Invalid(String),
    #[error(
        "has sslmode={0} but no sslrootcert (a PEM file of the CA to trust, or \
         sslrootcert=system), and ~/.postgresql/root.crt does not exist"
    )]
    NoRootCert(&'static str),
    #[error("has sslrootcert=system but no system root certificate was found")]
    NoSystemRoots,
    #[error("sslrootcert {path}: {problem}")]
    RootFile { path: String, problem: String },
    #[error("sslrootcert {0} holds no PEM certificate")]
    EmptyRootFile(String),
    #[error("cannot use sslrootcert: {0}")]
    Verifier(String),
    #[error("TLS setup: {0}")]
    TlsSetup(String),
}

/// Why a service must not start with this database: a TLS failure will not heal by waiting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("DATABASE_URL: TLS to {hosts} failed (sslmode={mode}): {cause}")]
    Tls {
        hosts: String,
        mode: &'static str,
        cause: String,
    },
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self, UrlError> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's `allow` tries plaintext first: nothing here should prefer that.
            other => return Err(UrlError::SslMode(other.to_owned())),
        })
    }
}

/// Where the certificates to trust come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    File(PathBuf),
    System,
}

/// What a URL asks of TLS, before any file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TlsAsk {
    mode: SslMode,
    roots: Option<Roots>,
}

impl TlsAsk {
    /// libpq: `require` with a root certificate given behaves as `verify-ca`.
    fn effective_mode(&self) -> SslMode {
        match (self.mode, &self.roots) {
            (SslMode::Require, Some(_)) => SslMode::VerifyCa,
            (m, _) => m,
        }
    }
}

/// A parsed `DATABASE_URL`. Cheap to clone; prints without credentials.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    mode: SslMode,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("hosts", &self.hosts())
            .field("sslmode", &self.inner.mode)
            .finish()
    }
}

/// The raw connection task of a tokio-postgres client opened through [`Database`].
pub type PgConnection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// How long one host may take to accept a connection when the URL does not say
/// (`connect_timeout`): a host that is gone without refusing (a failed-over primary behind a
/// dead route) must not hold every new connection for the kernel's two minutes before the next
/// host is tried. It stays under the pools' 5 s create timeout.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Without `keepalives_idle` in the URL: how soon an idle connection to a vanished server is
/// noticed (the LISTEN connection is idle for long stretches).
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_secs(30);

impl Database {
    /// Parses `url` (a `postgres://` URL as libpq takes it). `application_name` names the
    /// connections in `pg_stat_activity` unless the URL names them itself. The error is the
    /// problem, to follow `DATABASE_URL` in a configuration error; it never repeats the URL,
    /// which may hold a password.
    pub fn from_url(url: &str, application_name: &str) -> Result<Database, UrlError> {
        let (rest, ask) = split_tls_options(url)?;
        let mut config = tokio_postgres::Config::from_str(&rest)
            .map_err(|e| UrlError::Invalid(crate::cause_chain(&e)))?;
        if config.get_application_name().is_none() {
            config.application_name(application_name);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if !rest.contains("keepalives_idle=") {
            config.keepalives_idle(DEFAULT_KEEPALIVES_IDLE);
        }
        let mode = ask.effective_mode();
        config.ssl_mode(match mode {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
        });
        let tls = MakeRustlsConnect::new(client_config(&ask)?);
        Ok(Database {
            inner: Arc::new(Inner { config, tls, mode }),
        })
    }

    /// The same database, each of its sessions starting with the setting `name = value` (given
    /// in the connection's startup packet, as libpq's `options=-c name=value`, so setting it
    /// costs no statement and no transaction).
    pub fn with_setting(&self, name: &str, value: &str) -> Database {
        let mut config = self.inner.config.clone();
        let options = match config.get_options() {
            Some(o) if !o.is_empty() => format!("{o} -c {name}={value}"),
            _ => format!("-c {name}={value}"),
        };
        config.options(&options);
        Database {
            inner: Arc::new(Inner {
                config,
                tls: self.inner.tls.clone(),
                mode: self.inner.mode,
            }),
        }
    }

    /// The effective `sslmode`.
    pub fn ssl_mode(&self) -> SslMode {
        self.inner.mode
    }

    /// Whether every host is on this machine (a loopback address, `localhost` or a Unix
    /// socket): a connection to it crosses no network, whatever its `sslmode`.
    pub fn on_this_machine(&self) -> bool {
        self.inner.config.get_hosts().iter().all(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => {
                h.eq_ignore_ascii_case("localhost")
                    || h.trim_start_matches('[')
                        .trim_end_matches(']')
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
            tokio_postgres::config::Host::Unix(_) => true,
        })
    }

    /// `host:port, …` for messages (never the user or password).
    pub fn hosts(&self) -> String {
        let c = &self.inner.config;
        let ports = c.get_ports();
        c.get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let host = match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                };
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                format!("{host}:{port}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A tokio-postgres client and the task that drives it (the caller spawns or polls it).
    pub async fn connect_raw(
        &self,
    ) -> Result<(tokio_postgres::Client, PgConnection), tokio_postgres::Error> {
        self.inner.config.connect(self.inner.tls.clone()).await
    }

    /// A diesel connection over the same transport.
    pub async fn connect_diesel(&self) -> diesel::ConnectionResult<AsyncPgConnection> {
        let (client, conn) = self
            .connect_raw()
            .await
            .map_err(|e| diesel::ConnectionError::BadConnection(describe(&e)))?;
        AsyncPgConnection::try_from_client_and_connection(client, conn).await
    }

    /// One connection at start. A TLS failure (a certificate not trusted, a name that does not
    /// match, a server without TLS under `require`) will not heal by waiting, so it is the
    /// service's start error, one line naming `DATABASE_URL`. A server that is unreachable may
    /// come up later: that is only logged, and the service starts and waits for it as before.
    pub async fn check_at_start(&self) -> Result<(), StartError> {
        match tokio::time::timeout(Duration::from_secs(15), self.connect_raw()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if is_tls_failure(&e) => Err(StartError::Tls {
                hosts: self.hosts(),
                mode: mode_name(self.inner.mode),
                cause: cause_text(&e),
            }),
            Ok(Err(e)) => {
                tracing::warn!(hosts = %self.hosts(), error = %describe(&e),
                    "database not reachable at start; waiting for it");
                Ok(())
            }
            Err(_) => {
                tracing::warn!(hosts = %self.hosts(), "database did not answer at start within 15 s; waiting for it");
                Ok(())
            }
        }
    }
}

fn mode_name(m: SslMode) -> &'static str {
    match m {
        SslMode::Disable => "disable",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

/// tokio-postgres prints a TLS failure as "error performing TLS handshake" and keeps the reason
/// (rustls' "invalid peer certificate: UnknownIssuer", "server does not support TLS") in its
/// source chain: one line with all of it.
pub fn describe(e: &tokio_postgres::Error) -> String {
    crate::cause_chain(e)
}

fn cause_text(e: &tokio_postgres::Error) -> String {
    let mut parts = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cur {
        parts.push(c.to_string());
        cur = c.source();
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

fn is_tls_failure(e: &tokio_postgres::Error) -> bool {
    // The kind is private; its text is the stable part of the API we can test against.
    e.to_string().starts_with("error performing TLS handshake")
}

/// Takes `sslmode` and `sslrootcert` out of the URL's query (tokio-postgres refuses the
/// verify modes and does not know `sslrootcert`); everything else stays for tokio-postgres.
fn split_tls_options(url: &str) -> Result<(String, TlsAsk), UrlError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(UrlError::NotPostgres);
    }
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut ask = TlsAsk {
        mode: SslMode::Prefer,
        roots: None,
    };
    let mut kept = url::form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "sslmode" => ask.mode = v.parse()?,
            "sslrootcert" if v == "system" => ask.roots = Some(Roots::System),
            "sslrootcert" => ask.roots = Some(Roots::File(PathBuf::from(&*v))),
            _ => {
                kept.append_pair(&k, &v);
                any = true;
            }
        }
    }
    let rest = if any {
        format!("{base}?{}", kept.finish())
    } else {
        base.to_owned()
    };
    Ok((rest, ask))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(ask: &TlsAsk) -> Result<rustls::ClientConfig, UrlError> {
    client_config_with(ask, default_root_file())
}

/// `fallback_root`: libpq's `~/.postgresql/root.crt`, if it exists.
fn client_config_with(
    ask: &TlsAsk,
    fallback_root: Option<PathBuf>,
) -> Result<rustls::ClientConfig, UrlError> {
    let mode = ask.effective_mode();
    let roots = match (&ask.roots, mode) {
        (_, SslMode::Disable | SslMode::Prefer | SslMode::Require) => None,
        (Some(r), _) => Some(r.clone()),
        (None, _) => match fallback_root {
            Some(p) => Some(Roots::File(p)),
            None => return Err(UrlError::NoRootCert(mode_name(mode))),
        },
    };
    let provider = provider();
    let checked = match roots {
        None => None,
        Some(r) => {
            let store = Arc::new(root_store(&r)?);
            Some(
                WebPkiServerVerifier::builder_with_provider(store, provider.clone())
                    .build()
                    .map_err(|e| UrlError::Verifier(e.to_string()))?,
            )
        }
    };
    let verifier = Verifier {
        checked,
        check_name: mode == SslMode::VerifyFull,
        provider: provider.clone(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| UrlError::TlsSetup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

fn default_root_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".postgresql/root.crt");
    p.exists().then_some(p)
}

fn root_store(roots: &Roots) -> Result<RootCertStore, UrlError> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(UrlError::NoSystemRoots);
            }
        }
        Roots::File(path) => {
            let file = |e: &dyn std::fmt::Display| UrlError::RootFile {
                path: path.display().to_string(),
                problem: e.to_string(),
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| file(&e))?
                .collect::<Result<_, _>>()
                .map_err(|e| file(&e))?;
            if certs.is_empty() {
                return Err(UrlError::EmptyRootFile(path.display().to_string()));
            }
            for c in certs {
                store.add(c).map_err(|e| file(&e))?;
            }
        }
    }
    Ok(store)
}

/// libpq's checks as a rustls verifier: nothing (`prefer`, `require`), the chain (`verify-ca`),
/// the chain and the name (`verify-full`). The handshake's signatures are always checked, so
/// even unverified TLS is not open to a passive reader.
#[derive(Debug)]
struct Verifier {
    checked: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.checked else {
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // webpki checks the chain before the name: a name error means the chain held.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
