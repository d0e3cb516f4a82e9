//! `Database` against the local PostgreSQL, which runs with TLS on and Debian's snakeoil
//! certificate (issued to `localhost`): what libpq would do, this does.

use qualifier_store::Database;

const SNAKEOIL: &str = "/etc/ssl/certs/ssl-cert-snakeoil.pem";
/// A self-signed CA made for these tests; it signed nothing.
const UNRELATED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/unrelated-ca.pem"
);

fn url(host: &str, query: &str) -> String {
    format!("postgres://postgres@{host}:5432/postgres?{query}")
}

/// A connection refused, described with its whole cause chain: what the cases match on.
#[derive(Debug)]
struct Refused(String);

impl Refused {
    fn contains(&self, w: &str) -> bool {
        self.0.contains(w)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

async fn encrypted(db: &Database) -> Result<bool, Refused> {
    let (client, conn) = db
        .connect_raw()
        .await
        .map_err(|e| Refused(qualifier_store::pgconn::describe(&e)))?;
    tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .map_err(|e| Refused(e.to_string()))?;
    Ok(row.get(0))
}

#[tokio::test]
async fn sslmodes_mean_what_they_mean_for_libpq() {
    let cases = [
        (url("127.0.0.1", "sslmode=disable"), Ok(false)),
        (url("127.0.0.1", "sslmode=prefer"), Ok(true)),
        (url("127.0.0.1", "sslmode=require"), Ok(true)),
        // The chain holds whatever the name: verify-ca accepts the address.
        (
            url(
                "127.0.0.1",
                &format!("sslmode=verify-ca&sslrootcert={SNAKEOIL}"),
            ),
            Ok(true),
        ),
        (
            url(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={SNAKEOIL}"),
            ),
            Ok(true),
        ),
        // The certificate names localhost, not 127.0.0.1.
        (
            url(
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={SNAKEOIL}"),
            ),
            Err("not valid for name"),
        ),
        // A CA that did not sign the server's certificate; and require with a root certificate
        // checks the chain, as libpq does.
        (
            url(
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={UNRELATED}"),
            ),
            Err("UnknownIssuer"),
        ),
        (
            url(
                "localhost",
                &format!("sslmode=require&sslrootcert={UNRELATED}"),
            ),
            Err("UnknownIssuer"),
        ),
    ];
    for (u, want) in cases {
        let db = Database::from_url(&u, "qualifier test").unwrap();
        let got = encrypted(&db).await;
        match (&got, want) {
            (Ok(g), Ok(w)) => assert_eq!(*g, w, "{u}"),
            (Err(e), Err(w)) => assert!(e.contains(w), "{u}: {e}"),
            _ => panic!("{u}: got {got:?}, want {want:?}"),
        }
    }
}

#[tokio::test]
async fn a_tls_failure_stops_the_start_and_an_absent_server_does_not() {
    let wrong = Database::from_url(
        &url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={SNAKEOIL}"),
        ),
        "qualifier test",
    )
    .unwrap();
    let e = wrong.check_at_start().await.unwrap_err().to_string();
    assert!(
        e.starts_with("DATABASE_URL: TLS to 127.0.0.1:5432 failed (sslmode=verify-full)"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let absent = Database::from_url(
        &format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=require"),
        "qualifier test",
    )
    .unwrap();
    assert_eq!(
        absent.check_at_start().await,
        Ok(()),
        "a server that is down is waited for"
    );
}
