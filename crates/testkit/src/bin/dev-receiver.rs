//! A local HTTPS webhook receiver for development (`make run` starts it): prints every event it
//! gets and whether its signature verifies, using the receiver kit (`qualifier-signing`).
//!
//! One receiver serves every endpoint of the dev org, each at a path of its own with its own
//! secret (docs/receivers.md, "A second endpoint on your laptop"):
//!   /hooks/qualifier  the org's webhook; its secret in <dir>/receiver-secret
//!   /hooks/<name>     another endpoint (`make dev-endpoint NAME=<name>` adds it); its secret
//!                     in <dir>/receivers/<name>.secret
//! Secrets are re-read on every request, so a rotation or a new endpoint needs no restart.
//!
//! Usage: dev-receiver [--port 9443] [--dir .dev]
//!   <dir>/receiver-cert.pem, receiver-key.pem  generated once, reused (trust the cert with
//!                                              QUALIFIER_WEBHOOK_CA_FILE)

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

/// Where an endpoint's secret is kept: the webhook's where it always was, another endpoint's
/// by its name. `None` for a name that is not a plain word (never a path outside `dir`).
fn secret_file(dir: &std::path::Path, name: &str) -> Option<PathBuf> {
    let plain = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    match name {
        "qualifier" => Some(dir.join("receiver-secret")),
        _ if plain => Some(dir.join("receivers").join(format!("{name}.secret"))),
        _ => None,
    }
}

async fn hook(
    req: HttpRequest,
    name: web::Path<String>,
    body: web::Bytes,
    dir: web::Data<PathBuf>,
) -> HttpResponse {
    let Some(secret) = secret_file(&dir, &name).and_then(|f| std::fs::read_to_string(f).ok())
    else {
        println!(
            "✘ /hooks/{} has no endpoint here: make dev-endpoint NAME=<a-z0-9-> adds one",
            name.escape_debug()
        );
        return HttpResponse::NotFound().finish();
    };
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    let valid = qualifier_signing::verify(secret.trim(), &body, &header("x-qualifier-signature"));
    println!(
        "{} {} delivery={} at={} signature={} endpoint=/hooks/{}",
        if valid { "✔" } else { "✘" },
        header("x-qualifier-event"),
        header("x-qualifier-delivery"),
        header("x-qualifier-timestamp"),
        if valid { "valid" } else { "INVALID" },
        name
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
    println!("dev-receiver listening on https://127.0.0.1:{port}/hooks/…");
    let data = web::Data::new(dir);
    HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/hooks/{name}", web::post().to(hook))
    })
    .workers(1)
    .bind_rustls_0_23(("127.0.0.1", port), tls)?
    .run()
    .await
}

#[cfg(test)]
mod tests {
    use super::secret_file;
    use std::path::Path;

    #[test]
    fn each_endpoint_has_its_secret_and_no_name_reaches_outside_the_dir() {
        let dir = Path::new("/d");
        assert_eq!(
            secret_file(dir, "qualifier").unwrap(),
            Path::new("/d/receiver-secret")
        );
        assert_eq!(
            secret_file(dir, "crm-2").unwrap(),
            Path::new("/d/receivers/crm-2.secret")
        );
        for bad in ["", "..", "../x", "a/b", "CRM", "a b", &"x".repeat(41)] {
            assert_eq!(secret_file(dir, bad), None, "{bad}");
        }
    }
}
