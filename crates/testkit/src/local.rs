//! A receiver on a laptop, as `qualifier listen` forwards to: plain HTTP on loopback, that
//! records each request and can be taken down and brought back on the same port.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

/// One request as it arrived: its headers (names lowercase) and its raw body.
#[derive(Debug, Clone)]
pub struct LocalRequest {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl LocalRequest {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }
}

pub struct LocalReceiver {
    pub port: u16,
    got: Arc<Mutex<Vec<LocalRequest>>>,
    server: Option<actix_web::dev::ServerHandle>,
}

impl LocalReceiver {
    pub async fn start() -> LocalReceiver {
        let mut r = LocalReceiver {
            port: crate::free_port(),
            got: Arc::default(),
            server: None,
        };
        r.up();
        r
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// Listens (again) on its port.
    pub fn up(&mut self) {
        let got = self.got.clone();
        let server = HttpServer::new(move || {
            let got = got.clone();
            App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                let got = got.clone();
                async move {
                    let headers = req
                        .headers()
                        .iter()
                        .map(|(k, v)| {
                            (
                                k.as_str().to_owned(),
                                v.to_str().unwrap_or_default().to_owned(),
                            )
                        })
                        .collect();
                    got.lock().unwrap().push(LocalRequest {
                        headers,
                        body: body.to_vec(),
                    });
                    HttpResponse::Ok().body("ok")
                }
            }))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", self.port))
        .expect("bind the local receiver's port")
        .run();
        self.server = Some(server.handle());
        tokio::spawn(server);
    }

    /// Stops listening: connections are refused until [`LocalReceiver::up`].
    pub async fn down(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop(false).await;
        }
    }

    pub fn received(&self) -> Vec<LocalRequest> {
        self.got.lock().unwrap().clone()
    }

    /// The first `n` requests, once there are that many (panics after `within`).
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<LocalRequest> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} requests after {within:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Whether the PyPI `standardwebhooks` library's `Webhook(secret).verify(body, headers)`
/// accepts a request: verification with no code of ours (`make test` installs the library).
pub fn standard_webhooks_verifies(
    standard_secret: &str,
    header: impl Fn(&str) -> String,
    body: &[u8],
) -> bool {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let headers: serde_json::Map<String, serde_json::Value> =
        ["webhook-id", "webhook-timestamp", "webhook-signature"]
            .iter()
            .map(|h| (h.to_string(), serde_json::Value::String(header(h))))
            .collect();
    let script = "import json, sys\n\
                  from standardwebhooks import Webhook\n\
                  secret, headers = sys.argv[1], json.loads(sys.argv[2])\n\
                  body = sys.stdin.buffer.read()\n\
                  try:\n    Webhook(secret).verify(body, headers)\nexcept Exception:\n    sys.exit(1)\n";
    let mut child = Command::new("python3")
        .args([
            "-c",
            script,
            standard_secret,
            &serde_json::Value::Object(headers).to_string(),
        ])
        .stdin(Stdio::piped())
        // The library's reason for a refusal is the answer `false`; a test that expects one
        // (a forged signature) must not leave it in `make test`'s output.
        .stdout(Stdio::null())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(body).unwrap();
    child.wait().expect("python3 ends").success()
}
