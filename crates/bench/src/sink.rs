//! The benchmark's webhook sink: HTTPS (rustls, a certificate of its own), every signature
//! verified with `ring` against the endpoint's secret, and every receipt recorded as compactly
//! as possible (delivery id, time, valid) so the sink itself stays cheap at thousands per second.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

/// How one endpoint answers.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    /// 200 at once.
    Ok,
    /// 200 after this long (a receiver with real work to do, still healthy).
    After(Duration),
    /// This status at once (an endpoint that is down).
    Fail(u16),
}

struct Endpoint {
    key: Option<ring::hmac::Key>,
    answer: Answer,
    /// Validly signed receipts, counted as they arrive: the harness polls this while the sink
    /// is under load, so it must not scan the receipts under the lock the handler takes.
    valid: AtomicUsize,
}

#[derive(Clone, Copy, Debug)]
pub struct Receipt {
    pub endpoint: usize,
    pub delivery: u128,
    /// Unix microseconds when the request was read (before the answer's delay).
    pub at_us: i64,
    pub valid: bool,
}

#[derive(Default)]
struct State {
    endpoints: RwLock<Vec<Endpoint>>,
    receipts: Mutex<Vec<Receipt>>,
}

pub struct Sink {
    pub base: String,
    pub ca_file: PathBuf,
    pub ca_pem: Vec<u8>,
    state: Arc<State>,
    handle: actix_web::dev::ServerHandle,
}

pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

async fn hook(
    req: HttpRequest,
    path: web::Path<usize>,
    body: web::Bytes,
    state: web::Data<Arc<State>>,
) -> HttpResponse {
    let at_us = now_us();
    let idx = path.into_inner();
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let delivery = uuid::Uuid::parse_str(header("x-qualifier-delivery"))
        .map(|u| u.as_u128())
        .unwrap_or(0);
    let tag = header("x-qualifier-signature")
        .strip_prefix("sha256=")
        .and_then(unhex);
    let answer = {
        let eps = state.endpoints.read().unwrap();
        let Some(ep) = eps.get(idx) else {
            return HttpResponse::NotFound().finish();
        };
        let valid = match (&ep.key, &tag) {
            (Some(k), Some(t)) => ring::hmac::verify(k, &body, t).is_ok(),
            _ => false,
        };
        if valid {
            ep.valid.fetch_add(1, Ordering::Relaxed);
        }
        state.receipts.lock().unwrap().push(Receipt {
            endpoint: idx,
            delivery,
            at_us,
            valid,
        });
        ep.answer
    };
    match answer {
        Answer::Ok => {}
        Answer::After(d) => tokio::time::sleep(d).await,
        Answer::Fail(code) => {
            return HttpResponse::build(
                actix_web::http::StatusCode::from_u16(code)
                    .unwrap_or(actix_web::http::StatusCode::SERVICE_UNAVAILABLE),
            )
            .body("down");
        }
    }
    HttpResponse::Ok().body("ok")
}

impl Sink {
    pub async fn start(workers: usize) -> anyhow::Result<Sink> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])?;
        let cert = rustls::pki_types::CertificateDer::from(ck.cert.der().to_vec());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
        let tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)?;
        let ca_pem = ck.cert.pem().into_bytes();
        let ca_file = std::env::temp_dir().join(format!(
            "qualifier-bench-ca-{}.pem",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&ca_file, &ca_pem)?;
        let state = Arc::new(State::default());
        let data = web::Data::new(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/hook/{endpoint}", web::post().to(hook))
        })
        .workers(workers)
        // Hanging endpoints hold many connections at once.
        .max_connections(100_000)
        // A receiver that answers in two writes without it holds its answer for the client's
        // delayed ACK (40 ms on Linux): an attempt's duration the sink made, not the worker.
        .tcp_nodelay(true)
        .backlog(4096)
        .disable_signals()
        .shutdown_timeout(1)
        .bind_rustls_0_23("127.0.0.1:0", tls)?;
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        tokio::spawn(server);
        Ok(Sink {
            base: format!("https://127.0.0.1:{port}/hook"),
            ca_file,
            ca_pem,
            state,
            handle,
        })
    }

    /// A new endpoint; its URL is `{base}/{index}`.
    pub fn endpoint(&self, answer: Answer) -> (usize, String) {
        let mut eps = self.state.endpoints.write().unwrap();
        eps.push(Endpoint {
            key: None,
            answer,
            valid: AtomicUsize::new(0),
        });
        let i = eps.len() - 1;
        (i, format!("{}/{i}", self.base))
    }

    /// Changes how `endpoint` answers from now on.
    pub fn set_answer(&self, endpoint: usize, answer: Answer) {
        self.state.endpoints.write().unwrap()[endpoint].answer = answer;
    }

    pub fn set_secret(&self, endpoint: usize, secret: &str) {
        self.state.endpoints.write().unwrap()[endpoint].key = Some(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            secret.as_bytes(),
        ));
    }

    pub fn receipts(&self) -> Vec<Receipt> {
        self.state.receipts.lock().unwrap().clone()
    }

    /// Validly signed receipts on `endpoint` so far.
    pub fn count_valid(&self, endpoint: usize) -> usize {
        self.state
            .endpoints
            .read()
            .unwrap()
            .get(endpoint)
            .map_or(0, |e| e.valid.load(Ordering::Relaxed))
    }

    pub fn clear(&self) {
        for e in self.state.endpoints.read().unwrap().iter() {
            e.valid.store(0, Ordering::Relaxed);
        }
        self.state.receipts.lock().unwrap().clear();
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        qualifier_testkit::receiver::stop_in_background(&self.ca_file, &self.handle);
    }
}

#[cfg(test)]
mod tests {
    use super::unhex;

    #[test]
    fn unhex_reads_lowercase_pairs_and_refuses_odd_or_bad_input() {
        assert_eq!(unhex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }
}
