//! A real HTTPS webhook receiver for tests: rustls with a certificate generated per receiver,
//! every request recorded, every signature checked with RustCrypto's HMAC (independent of the
//! project's signing code), and a behaviour the test can change (answer, fail, hang).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    /// Index into the secrets set with [`Receiver::set_secrets`] of the one that verified the
    /// signature, if any did.
    pub verified_with: Option<usize>,
    pub at: Instant,
    /// Receipt time minus the envelope's `occurred_at` (commit to receipt), in ms.
    pub age_ms: Option<f64>,
    /// The receiver answered 2xx at once (not an error status, not a hang past the timeout):
    /// from the receiver's side, this request delivered the event.
    pub accepted: bool,
    /// The receiver answered with `Retry-After`: the seconds it asked for.
    pub asked_to_wait: Option<u64>,
}

impl Received {
    fn now(
        headers: HashMap<String, String>,
        body: &[u8],
        verified_with: Option<usize>,
        accepted: bool,
        asked_to_wait: Option<u64>,
    ) -> Received {
        Received {
            headers,
            age_ms: event_age_ms(body),
            body: body.to_vec(),
            verified_with,
            at: Instant::now(),
            accepted,
            asked_to_wait,
        }
    }

    pub fn header(&self, name: &str) -> &str {
        header_in(&self.headers, name)
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("receiver got JSON")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// 200 at once.
    Ok,
    /// This status at once.
    Status(u16),
    /// Answer 200 only after this long (past the sender's timeout, to simulate a hang).
    Hang(Duration),
    /// This status (429 or 503, say) with `Retry-After: <seconds>`.
    RetryAfter(u16, u64),
    /// Every `n`th request (counted from the first) 429 with `Retry-After: <seconds>`, the
    /// others 200 at once: a receiver that asks for a pause now and then. A delivery it paused
    /// once is not the one it pauses again (the pause passes to the next request): a rate
    /// limiter answers the load, not one delivery, and five pauses of the same delivery would
    /// spend its whole attempt budget by the counter's arithmetic alone.
    RetryAfterEvery(u32, u64),
}

/// What a receiver in counting mode keeps ([`Receiver::count_only`]): totals, and each
/// delivery's event-to-receipt latency since the last [`Receiver::take_tally`].
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub verified: u64,
    pub invalid: u64,
    /// Receipt time minus the envelope's `occurred_at`, in ms.
    pub latencies_ms: Vec<f64>,
}

/// Receipt time minus the envelope's `occurred_at`, when the body has one.
fn event_age_ms(body: &[u8]) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let at = time::OffsetDateTime::parse(
        v.get("occurred_at")?.as_str()?,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()?;
    Some((time::OffsetDateTime::now_utc() - at).as_seconds_f64() * 1000.0)
}

#[derive(Default)]
struct State {
    /// Counting instead of recording: long runs keep no request.
    tally: Option<Tally>,
    secrets: Vec<String>,
    received: Vec<Received>,
    behaviour: Option<Behaviour>,
    /// Answers for the next requests, before `behaviour` applies.
    script: Vec<Behaviour>,
    /// Requests whose body contains the bytes get the status, this many more times (before
    /// the script and the behaviour): one event failing while others pass.
    failing: Vec<(Vec<u8>, u16, usize)>,
    /// The body of every answer, when set (else a short word per behaviour).
    answer_body: Option<(Vec<u8>, &'static str)>,
    /// Requests answered so far (what [`Behaviour::RetryAfterEvery`] counts).
    served: u64,
    /// [`Behaviour::RetryAfterEvery`]: a pause is due and goes to the next request of a
    /// delivery not paused before.
    pause_owed: bool,
    /// The deliveries [`Behaviour::RetryAfterEvery`] has paused.
    paused: std::collections::HashSet<String>,
    /// While set and false, each request is recorded and then waits to be answered
    /// ([`Receiver::hold`]).
    gate: Option<tokio::sync::watch::Sender<bool>>,
    /// When set, the hook wants a bearer token its token server issued
    /// ([`Receiver::require_oauth`]).
    oauth: Option<OAuthState>,
}

/// The receiver's own OAuth 2 token server (client credentials, RFC 6749 section 4.4).
#[derive(Default)]
struct OAuthState {
    client_id: String,
    client_secret: String,
    /// The token the hook accepts now.
    current: Option<String>,
    issued: usize,
    in_flight: usize,
    most_at_once: usize,
    /// Each token request answered with this status and `error` instead.
    refuse: Option<(u16, String)>,
    /// How long each token request takes.
    delay: Duration,
    /// The form fields of the last token request, and its `Authorization`.
    last_form: Vec<(String, String)>,
    last_authorization: String,
}

/// What the token server saw ([`Receiver::oauth_seen`]).
#[derive(Debug, Clone, Default)]
pub struct OAuthSeen {
    pub token_requests: usize,
    pub most_at_once: usize,
    pub last_form: Vec<(String, String)>,
    pub last_authorization: String,
}

pub struct Receiver {
    /// `https://127.0.0.1:<port>/hooks/qualifier`
    pub url: String,
    /// The receiver's certificate, as the CA file webhook-delivery must trust.
    pub ca_file: PathBuf,
    state: Arc<Mutex<State>>,
    handle: actix_web::dev::ServerHandle,
}

fn expected_signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

async fn hook(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<State>>>,
) -> HttpResponse {
    let behaviour = {
        let mut st = state.lock().unwrap();
        let sig = header_of(&req, "x-qualifier-signature");
        let verified_with = st
            .secrets
            .iter()
            .position(|s| expected_signature(s, &body) == sig);
        if let Some(t) = st.tally.as_mut() {
            if verified_with.is_some() {
                t.verified += 1;
            } else {
                t.invalid += 1;
            }
            if let Some(ms) = event_age_ms(&body) {
                t.latencies_ms.push(ms);
            }
            return HttpResponse::Ok().body("ok");
        }
        let headers: HashMap<String, String> = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        // A token it did not issue (or no longer accepts) is refused before anything else.
        if let Some(o) = &st.oauth {
            let want = o.current.as_ref().map(|t| format!("Bearer {t}"));
            if headers.get("authorization") != want.as_ref() {
                let refused = Received::now(headers, &body, verified_with, false, None);
                st.received.push(refused);
                return HttpResponse::Unauthorized().body("token refused");
            }
        }
        let targeted = st
            .failing
            .iter_mut()
            .find(|(needle, _, left)| {
                *left > 0 && body.windows(needle.len()).any(|w| w == needle.as_slice())
            })
            .map(|(_, code, left)| {
                *left -= 1;
                Behaviour::Status(*code)
            });
        let behaviour = match targeted {
            Some(b) => b,
            None if st.script.is_empty() => st.behaviour.unwrap_or(Behaviour::Ok),
            None => st.script.remove(0),
        };
        st.served += 1;
        let behaviour = match behaviour {
            Behaviour::RetryAfterEvery(n, secs) => {
                if st.served.is_multiple_of(u64::from(n.max(1))) {
                    st.pause_owed = true;
                }
                let delivery = headers
                    .get("x-qualifier-delivery")
                    .cloned()
                    .unwrap_or_default();
                if st.pause_owed && !st.paused.contains(&delivery) {
                    st.pause_owed = false;
                    st.paused.insert(delivery);
                    Behaviour::RetryAfter(429, secs)
                } else {
                    Behaviour::Ok
                }
            }
            b => b,
        };
        let asked_to_wait = match behaviour {
            Behaviour::RetryAfter(_, secs) => Some(secs),
            _ => None,
        };
        let accepted = behaviour == Behaviour::Ok;
        let got = Received::now(headers, &body, verified_with, accepted, asked_to_wait);
        st.received.push(got);
        (
            behaviour,
            st.answer_body.clone(),
            st.gate.as_ref().map(|g| g.subscribe()),
        )
    };
    let (behaviour, answer_body, gate) = behaviour;
    if let Some(mut gate) = gate {
        let _ = gate.wait_for(|open| *open).await;
    }
    let answer = |mut b: actix_web::HttpResponseBuilder, default: &'static str| match &answer_body {
        Some((body, content_type)) => b.content_type(*content_type).body(body.clone()),
        None => b.body(default),
    };
    match behaviour {
        // Resolved above into one of the others.
        Behaviour::Ok | Behaviour::RetryAfterEvery(..) => answer(HttpResponse::Ok(), "ok"),
        Behaviour::Status(code) => {
            let mut b = HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap());
            b.insert_header(("Location", "https://127.0.0.1:1/elsewhere"));
            answer(b, "no")
        }
        Behaviour::Hang(d) => {
            tokio::time::sleep(d).await;
            answer(HttpResponse::Ok(), "late")
        }
        Behaviour::RetryAfter(code, secs) => {
            let mut b = HttpResponse::build(actix_web::http::StatusCode::from_u16(code).unwrap());
            b.insert_header(("Retry-After", secs.to_string()));
            answer(b, "slow down")
        }
    }
}

/// The token server: client credentials in the form's body (or as basic authentication,
/// which the test reads from [`OAuthSeen::last_authorization`]), a new token per request.
async fn token(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<State>>>,
) -> HttpResponse {
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let authorization = header_of(&req, "authorization");
    let delay = {
        let mut st = state.lock().unwrap();
        let Some(o) = st.oauth.as_mut() else {
            return HttpResponse::NotFound().finish();
        };
        o.in_flight += 1;
        o.most_at_once = o.most_at_once.max(o.in_flight);
        o.delay
    };
    tokio::time::sleep(delay).await;
    let mut st = state.lock().unwrap();
    let o = st.oauth.as_mut().expect("set above");
    o.in_flight -= 1;
    o.issued += 1;
    o.last_form = form.clone();
    o.last_authorization = authorization.clone();
    if let Some((code, error)) = &o.refuse {
        return HttpResponse::build(actix_web::http::StatusCode::from_u16(*code).unwrap())
            .json(serde_json::json!({"error": error}));
    }
    let in_body = field("client_id").as_deref() == Some(o.client_id.as_str())
        && field("client_secret").as_deref() == Some(o.client_secret.as_str());
    if field("grant_type").as_deref() != Some("client_credentials")
        || !(in_body || authorization.starts_with("Basic "))
    {
        return HttpResponse::BadRequest().json(serde_json::json!({"error": "invalid_client"}));
    }
    let t = format!("tok-{}-{}", o.issued, uuid::Uuid::new_v4().simple());
    o.current = Some(t.clone());
    HttpResponse::Ok().json(serde_json::json!({
        "access_token": t, "token_type": "Bearer", "expires_in": 3600
    }))
}

/// One certificate per test binary for `localhost` and `127.0.0.1`: every receiver can then be
/// trusted through any receiver's CA file (a test with two orgs has two receivers and one
/// worker), and so can any other server of the test's that presents it (moto's, for the AWS
/// destinations). Its DER, its key's DER, and both as PEM.
fn server_certificate_parts() -> &'static (Vec<u8>, Vec<u8>, String, String) {
    static CERT: std::sync::OnceLock<(Vec<u8>, Vec<u8>, String, String)> =
        std::sync::OnceLock::new();
    CERT.get_or_init(|| {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("cert");
        (
            ck.cert.der().to_vec(),
            ck.signing_key.serialize_der(),
            ck.cert.pem(),
            ck.signing_key.serialize_pem(),
        )
    })
}

/// The receivers' certificate and its key, PEM (see [`server_certificate_parts`]).
/// The header `name` (any case) of headers kept by lowercased name; empty when absent.
pub(crate) fn header_in<'a>(headers: &'a HashMap<String, String>, name: &str) -> &'a str {
    let value = headers.get(&name.to_ascii_lowercase());
    value.map_or("", String::as_str)
}

/// A request header's value as text (empty when absent or not text).
fn header_of(req: &HttpRequest, name: &str) -> String {
    let value = req.headers().get(name).and_then(|v| v.to_str().ok());
    value.unwrap_or("").to_owned()
}

pub fn server_certificate() -> (&'static str, &'static str) {
    let (_, _, cert, key) = server_certificate_parts();
    (cert, key)
}

/// A certificate authority of the test's own, for client certificates (mutual TLS).
pub struct TestCa {
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
    /// The CA certificate, PEM: what a receiver requiring client certificates trusts.
    pub pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = rcgen::KeyPair::generate().expect("ca key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let pem = params.self_signed(&key).expect("ca cert").pem();
        TestCa { params, key, pem }
    }

    /// A client certificate for `common_name` valid from a day ago for `days` more days (a
    /// negative number: expired), and its key, both PEM.
    pub fn issue(&self, common_name: &str, days: i64) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("client key");
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).expect("client params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(2);
        params.not_after = now + time::Duration::days(days);
        let issuer = rcgen::Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).expect("client cert");
        (cert.pem(), key.serialize_pem())
    }
}

impl Receiver {
    /// The port it listens on (its `url` is `https://127.0.0.1:{port}/…`).
    pub fn port(&self) -> u16 {
        let after_host = self.url.rsplit(':').next().unwrap_or_default();
        after_host
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a receiver's url names its port")
    }

    pub async fn start() -> Receiver {
        Self::start_with_client_ca(None).await
    }

    /// A receiver that completes a TLS handshake only with a client certificate issued by
    /// `client_ca` (PEM), as an enterprise receiver behind mutual TLS does; any receiver when
    /// `None`.
    pub async fn start_with_client_ca(client_ca: Option<&str>) -> Receiver {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (cert, key, pem, _) = server_certificate_parts();
        let cert_der = rustls::pki_types::CertificateDer::from(cert.clone());
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.clone().into());
        let builder = rustls::ServerConfig::builder();
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                use rustls::pki_types::pem::PemObject;
                let mut roots = rustls::RootCertStore::empty();
                for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
                    roots.add(c.expect("ca pem")).expect("ca cert");
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder(roots.into())
                    .build()
                    .expect("client verifier");
                builder.with_client_cert_verifier(verifier)
            }
        };
        let tls = builder
            .with_single_cert(vec![cert_der], key_der)
            .expect("tls config");
        let ca_file = std::env::temp_dir().join(format!(
            "qualifier-test-ca-{}.pem",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&ca_file, pem).expect("write ca file");

        let state = Arc::new(Mutex::new(State::default()));
        let data = web::Data::new(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/hooks/qualifier", web::post().to(hook))
                .route("/oauth/token", web::post().to(token))
        })
        .workers(2)
        .disable_signals()
        .shutdown_timeout(1)
        .bind_rustls_0_23("127.0.0.1:0", tls)
        .expect("bind receiver");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        tokio::spawn(server);
        Receiver {
            url: format!("https://127.0.0.1:{port}/hooks/qualifier"),
            ca_file,
            state,
            handle,
        }
    }

    /// From now on, count deliveries and their latency instead of recording each request (a run
    /// of hours would otherwise hold every body); every answer is 200.
    pub fn count_only(&self) {
        self.state.lock().unwrap().tally = Some(Tally::default());
    }

    /// The counts so far, and the latencies since the last call (which it clears).
    pub fn take_tally(&self) -> Tally {
        let mut st = self.state.lock().unwrap();
        let t = st.tally.get_or_insert_with(Tally::default);
        let out = t.clone();
        t.latencies_ms.clear();
        out
    }

    pub fn set_secrets(&self, secrets: Vec<String>) {
        self.state.lock().unwrap().secrets = secrets;
    }

    /// Every answer from now on carries this body and content type (`None`: the defaults).
    pub fn set_answer_body(&self, body: Option<(Vec<u8>, &'static str)>) {
        self.state.lock().unwrap().answer_body = body;
    }

    pub fn set_behaviour(&self, b: Behaviour) {
        self.state.lock().unwrap().behaviour = Some(b);
    }

    /// From now on each request is recorded and then held unanswered until [`Receiver::let_go`]:
    /// a test knows the attempt is out (it was received) and can act while it is.
    pub fn hold(&self) {
        self.state.lock().unwrap().gate = Some(tokio::sync::watch::channel(false).0);
    }

    /// Answers every held request, and the next ones at once.
    pub fn let_go(&self) {
        if let Some(g) = self.state.lock().unwrap().gate.take() {
            let _ = g.send(true);
        }
    }

    /// Requests whose body contains `needle` are answered `status`, `times` times over (the
    /// others as usual).
    pub fn fail_when(&self, needle: &str, status: u16, times: usize) {
        self.state
            .lock()
            .unwrap()
            .failing
            .push((needle.as_bytes().to_vec(), status, times));
    }

    /// The next answers, in order, before the standing behaviour applies again.
    pub fn script(&self, answers: Vec<Behaviour>) {
        self.state.lock().unwrap().script = answers;
    }

    /// From now on the hook wants a bearer token from this receiver's token server
    /// ([`Self::token_url`]), which issues one to `client_id` and `client_secret`.
    pub fn require_oauth(&self, client_id: &str, client_secret: &str) {
        self.state.lock().unwrap().oauth = Some(OAuthState {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            ..OAuthState::default()
        });
    }

    /// The token server's url.
    pub fn token_url(&self) -> String {
        self.url.replace("/hooks/qualifier", "/oauth/token")
    }

    /// The hook stops accepting the token it accepts now (a revoked token): the next request
    /// with it is answered 401.
    pub fn revoke_token(&self) {
        if let Some(o) = self.state.lock().unwrap().oauth.as_mut() {
            o.current = Some(format!("revoked-{}", uuid::Uuid::new_v4().simple()));
        }
    }

    /// Every token request answered `status` with `{"error": error}` (`None`: tokens again).
    pub fn refuse_tokens(&self, answer: Option<(u16, &str)>) {
        if let Some(o) = self.state.lock().unwrap().oauth.as_mut() {
            o.refuse = answer.map(|(c, e)| (c, e.to_owned()));
        }
    }

    /// Each token request takes this long.
    pub fn slow_tokens(&self, delay: Duration) {
        if let Some(o) = self.state.lock().unwrap().oauth.as_mut() {
            o.delay = delay;
        }
    }

    /// What the token server saw so far.
    pub fn oauth_seen(&self) -> OAuthSeen {
        let st = self.state.lock().unwrap();
        st.oauth
            .as_ref()
            .map(|o| OAuthSeen {
                token_requests: o.issued,
                most_at_once: o.most_at_once,
                last_form: o.last_form.clone(),
                last_authorization: o.last_authorization.clone(),
            })
            .unwrap_or_default()
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// The requests that carried delivery `id` (`X-Qualifier-Delivery`): one per attempt.
    pub fn attempts_of(&self, id: &str) -> usize {
        let st = self.state.lock().unwrap();
        let of = |r: &&Received| r.header("x-qualifier-delivery") == id;
        st.received.iter().filter(of).count()
    }

    /// Waits until at least `n` requests arrived (or the timeout passed) and returns them all.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.received();
            if got.len() >= n || Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        stop_in_background(&self.ca_file, &self.handle);
    }
}

/// What a test server leaves when it is dropped: its CA file goes, and the server stops without
/// the dropping thread waiting for it (a `Drop` cannot await).
pub fn stop_in_background(ca_file: &std::path::Path, handle: &actix_web::dev::ServerHandle) {
    let _ = std::fs::remove_file(ca_file);
    let h = handle.clone();
    tokio::spawn(async move { h.stop(false).await });
}

#[cfg(test)]
mod tests {
    #[test]
    fn expected_signature_matches_rfc4231_case_2() {
        assert_eq!(
            super::expected_signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
