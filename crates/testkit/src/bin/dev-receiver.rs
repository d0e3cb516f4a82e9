//! A local HTTPS webhook receiver for development (`make run` starts it): prints every event it
//! gets and whether its signature verifies, using the receiver kit (`qualifier-signing`).
//!
//! Usage: dev-receiver [--port 9443] [--dir .dev]
//!   <dir>/receiver-cert.pem, receiver-key.pem  generated once, reused (trust the cert with
//!                                              QUALIFIER_WEBHOOK_CA_FILE)
//!   <dir>/receiver-secret                      the signing secret, re-read on every request

use std::path::PathBuf;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_owned())
}

async fn hook(req: HttpRequest, body: web::Bytes, dir: web::Data<PathBuf>) -> HttpResponse {
    let secret = std::fs::read_to_string(dir.join("receiver-secret")).unwrap_or_default();
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    let valid = qualifier_signing::verify(secret.trim(), &body, &header("x-qualifier-signature"));
    println!(
        "{} {} delivery={} at={} signature={}",
        if valid { "✔" } else { "✘" },
        header("x-qualifier-event"),
        header("x-qualifier-delivery"),
        header("x-qualifier-timestamp"),
        if valid { "valid" } else { "INVALID" }
    );
    println!("  {}", String::from_utf8_lossy(&body));
    if valid {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::Unauthorized().finish()
    }
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    if std::env::args().any(|a| a == "--version" || a == "-V") {
        println!("dev-receiver {}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port: u16 = arg("--port", "9443").parse().expect("--port is a number");
    let dir = PathBuf::from(arg("--dir", ".dev"));
    std::fs::create_dir_all(&dir)?;
    let (cert_path, key_path) = (dir.join("receiver-cert.pem"), dir.join("receiver-key.pem"));
    if !cert_path.exists() || !key_path.exists() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("cert");
        std::fs::write(&cert_path, ck.cert.pem())?;
        std::fs::write(&key_path, ck.signing_key.serialize_pem())?;
    }
    use rustls::pki_types::pem::PemObject;
    let cert = rustls::pki_types::CertificateDer::from_pem_file(&cert_path).expect("cert pem");
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&key_path).expect("key pem");
    let tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("tls");
    println!("dev-receiver listening on https://127.0.0.1:{port}/hooks/qualifier");
    let data = web::Data::new(dir);
    HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/hooks/qualifier", web::post().to(hook))
    })
    .workers(1)
    .bind_rustls_0_23(("127.0.0.1", port), tls)?
    .run()
    .await
}
