//! Test infrastructure shared by every crate's integration tests.
//!
//! Each test gets its own PostgreSQL database, copied from a template that was migrated once
//! (`CREATE DATABASE ... TEMPLATE`, as crates.io's test-db does), and dropped when the test ends,
//! so tests run in parallel against the real server and leave nothing behind.

pub mod commit_fault;
pub mod local;
pub mod moto;
pub mod procs;
pub mod proxy;
pub mod receiver;
pub mod sql;
pub mod telemetry;
pub mod their_broker;

use std::path::Path;

use tokio_postgres::NoTls;

/// The server tests run against: `QUALIFIER_TEST_PG` (a base URL without a database), or the
/// local trust-auth server.
pub fn pg_base() -> String {
    std::env::var("QUALIFIER_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432".into())
}

fn url_for(db: &str) -> String {
    format!("{}/{db}", pg_base().trim_end_matches('/'))
}

async fn admin() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&url_for("postgres"), NoTls)
        .await
        .expect("connect to PostgreSQL as postgres (is it running on 127.0.0.1:5432?)");
    tokio::spawn(conn);
    client
}

/// The template's name: the digest of the migrations this build embeds
/// (`qualifier_store::MIGRATIONS_DIGEST`), so a template is never used by a build that embeds
/// other migrations. Named after the files as they are when the tests run, a template migrated
/// by a build whose crate had not been rebuilt since a migration was edited kept the old text
/// under the new name, and every later build used it.
fn template_name() -> String {
    format!("qualifier_tpl_{}", qualifier_store::MIGRATIONS_DIGEST)
}

/// The files under `dir`, or `dir` itself when it is a file.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p))
            } else {
                out.push(p)
            }
        }
    }
    out
}

/// Creates the migrated template once per migration set, under an advisory lock so parallel
/// test processes never race; built under a temporary name and renamed, so a crash half way
/// never leaves a half-migrated template behind.
async fn ensure_template(admin: &tokio_postgres::Client) -> String {
    let tpl = template_name();
    admin
        .execute("SELECT pg_advisory_lock(727274)", &[])
        .await
        .expect("advisory lock");
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&tpl])
        .await
        .expect("pg_database")
        .is_some();
    if !exists {
        let tmp = format!("qualifier_tplbuild_{}", uuid::Uuid::new_v4().simple());
        admin
            .batch_execute(&format!("CREATE DATABASE {tmp}"))
            .await
            .expect("create template db");
        let database = qualifier_store::Database::from_url(&url_for(&tmp), "qualifier test")
            .expect("test URL");
        qualifier_store::run_migrations(&database)
            .await
            .expect("migrate template");
        admin
            .batch_execute(&format!("ALTER DATABASE {tmp} RENAME TO {tpl}"))
            .await
            .expect("rename template");
    }
    admin
        .execute("SELECT pg_advisory_unlock(727274)", &[])
        .await
        .expect("advisory unlock");
    tpl
}

/// Runs cleanup from `Drop`, which may happen inside or outside a runtime: on a thread with a
/// small runtime of its own, waited for, so the resource is gone when the drop returns.
fn block_on_own_runtime(fut: impl std::future::Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(fut)
    })
    .join();
}

/// A database of this test's own, dropped (with any connections still open) on drop.
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// The database as `pg_dump --data-only` writes it: where a secret must never be in clear.
    pub fn data_dump(&self) -> String {
        let out = output_of(
            std::process::Command::new("pg_dump").args(["--data-only", "--no-owner", &self.url]),
            "pg_dump",
        );
        String::from_utf8(out).unwrap()
    }

    /// A database of a new installation, migrated to this release.
    pub async fn new() -> TestDb {
        let tpl = ensure_template(&admin().await).await;
        Self::created(&format!(" TEMPLATE {tpl}")).await
    }

    /// A database of this test's own with no schema at all, for a driver that migrates it with
    /// another build (the upgrade check starts from the previous version's schema).
    pub async fn empty() -> TestDb {
        Self::created("").await
    }

    /// A new database of this test's own, `CREATE DATABASE <name><how>`.
    async fn created(how: &str) -> TestDb {
        let name = format!("qualifier_test_{}", uuid::Uuid::new_v4().simple());
        admin()
            .await
            .batch_execute(&format!("CREATE DATABASE {name}{how}"))
            .await
            .expect("create a test database");
        TestDb {
            url: url_for(&name),
            name,
        }
    }

    /// The database as the services take it (`DATABASE_URL` parsed).
    pub fn database(&self) -> qualifier_store::Database {
        qualifier_store::Database::from_url(&self.url, "qualifier test").expect("a valid test URL")
    }

    /// A plain SQL client for assertions, independent of the code under test.
    /// The rows of a two-column query as pairs, on a connection of its own.
    pub async fn pairs<A, B, C>(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> C
    where
        A: for<'a> tokio_postgres::types::FromSql<'a>,
        B: for<'a> tokio_postgres::types::FromSql<'a>,
        C: FromIterator<(A, B)>,
    {
        let rows = self.client().await.query(sql, params).await.unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    }

    /// Waits until a one-value query answers `want`, asking every 20 ms; fails the test with
    /// `what` and the last answer once `within` has passed.
    pub async fn wait_for_value<T>(
        &self,
        what: &str,
        within: std::time::Duration,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        want: T,
    ) where
        T: for<'a> tokio_postgres::types::FromSql<'a> + PartialEq + std::fmt::Debug,
    {
        let c = self.client().await;
        let deadline = std::time::Instant::now() + within;
        loop {
            let got: T = sql::one(&c, sql, params).await;
            if got == want {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {got:?}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .expect("connect test db");
        tokio::spawn(conn);
        client
    }
}

impl Drop for TestDb {
    /// Drops the database, with any connections still open.
    fn drop(&mut self) {
        let name = self.name.clone();
        block_on_own_runtime(async move {
            let admin = admin().await;
            let _ = admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await;
        });
    }
}

/// A loopback port free right now, for a service started as a separate process.
/// Ends a tool's `main`: on an error, `"{tool}: FAILED: {cause}"` on stderr and exit status 1.
/// The cause on one line, last: CI shows the tail of the output, and anyhow's Debug form would
/// end in a backtrace of the runtime's frames when RUST_BACKTRACE is set.
pub fn exit_on_error<E: std::fmt::Display>(tool: &str, result: Result<(), E>) {
    if let Err(e) = result {
        eprintln!("{tool}: FAILED: {e:#}");
        std::process::exit(1);
    }
}

/// Runs `cmd` to its end: its standard output; a panic with its standard error, named `what`,
/// if it fails.
pub fn output_of(cmd: &mut std::process::Command, what: &str) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what} does not run: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` distinct free loopback ports. They are held together until all are chosen: ports taken
/// one at a time can repeat (a port released by the first call may be the next call's answer),
/// and two services told the same port fail in a way that looks like something else (seen:
/// lead-api's listener answering the worker's readiness probe).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
        .collect();
    std::array::from_fn(|i| held[i].local_addr().expect("a bound port").port())
}

/// The broker tests run against.
pub fn amqp_url() -> String {
    std::env::var("QUALIFIER_TEST_AMQP")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// The test broker as the services take it.
pub fn brokers() -> qualifier_bus::Brokers {
    qualifier_bus::Brokers::parse(&amqp_url(), None).expect("a valid test AMQP URL")
}

/// A topology prefix of this test's own; its exchanges and queues are deleted on drop.
pub struct TestTopology {
    pub prefix: String,
    pub retry_delays_ms: Vec<u64>,
}

impl TestTopology {
    pub fn new(retry_delays_ms: Vec<u64>) -> TestTopology {
        TestTopology {
            prefix: format!("qtest_{}", uuid::Uuid::new_v4().simple()),
            retry_delays_ms,
        }
    }

    pub fn topology(&self) -> qualifier_bus::Topology {
        qualifier_bus::Topology::new(self.prefix.clone(), self.retry_delays_ms.clone())
    }
}

impl Drop for TestTopology {
    fn drop(&mut self) {
        let topo = self.topology();
        block_on_own_runtime(async move {
            if let Ok(conn) = qualifier_bus::connect(&amqp_url(), "qualifier test").await
                && let Ok(ch) = conn.create_channel().await
            {
                let _ = topo.delete(&ch).await;
                let _ = conn.close(200, "test done".into()).await;
            }
        });
    }
}

/// The HTTP client tests call the services with: ring as the TLS provider (installed once) and no
/// redirects followed, so a test sees exactly what the service answered.
///
/// Idle connections are dropped after 2 s. The services' actix-web servers close a keep-alive
/// connection after 5 s without a request; a request sent on a pooled connection at the moment
/// the server closes it fails with `IncompleteMessage` before the server read it. A test that
/// waits on something else for about five seconds (a browser step) and then calls the API hit
/// that race now and then; a connection never idles that long here.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(std::time::Duration::from_secs(2))
        .build()
        .expect("client")
}

/// A request to one of the services' APIs as tests send them: `token` as its bearer, `body` (if
/// any) as JSON. The caller adds what else it needs (headers) and sends it.
pub fn authorized(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<serde_json::Value>,
) -> reqwest::RequestBuilder {
    let rb = http.request(method, url).bearer_auth(token);
    match body {
        Some(b) => rb.json(&b),
        None => rb,
    }
}

/// The status the request `rb` is answered with (a request sent from a task of its own, to be
/// answered while the test holds something).
pub async fn status_of(rb: reqwest::RequestBuilder) -> u16 {
    rb.send()
        .await
        .expect("the request is answered")
        .status()
        .as_u16()
}

/// The text of the answer to `rb`, which must be 200 (a page, a metrics listing).
pub async fn text_200(rb: reqwest::RequestBuilder) -> String {
    let r = rb.send().await.expect("the request is answered");
    assert_eq!(r.status(), 200, "{:?}", r.url().to_string());
    r.text().await.expect("the answer's text")
}

/// Service logs in test output, at `RUST_LOG` (default `warn`), plus the in-memory capture of
/// logs and spans ([`telemetry`]); once per test binary.
pub fn init_test_logging() {
    telemetry::init();
}

/// The environment variables a binary's `--help` names (`[env: NAME]`), sorted.
pub fn help_env_names(binary: &str) -> std::collections::BTreeSet<String> {
    let out = std::process::Command::new(binary)
        .arg("--help")
        .env_clear()
        .output()
        .expect("run the binary with --help");
    assert!(out.status.success(), "--help exits 0");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("[env: ")
        .skip(1)
        .map(|rest| rest.split([']', '=']).next().unwrap_or_default().to_owned())
        .collect()
}

/// Every environment variable name written as a string literal in the Rust sources under
/// `dirs` (relative to the workspace root): `"DATABASE_URL"`, `"AMQP_URL"`, `"RUST_LOG"`,
/// `"QUALIFIER_…"` and `"OTEL_…"`. A variable read anywhere by hand shows up here.
pub fn env_literals_in(dirs: &[&str]) -> std::collections::BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = std::collections::BTreeSet::new();
    for d in dirs {
        for f in walk(&root.join(d)) {
            if f.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            // `"NAME"`: a quote, capitals and underscores, a quote.
            for (i, _) in text.match_indices('"') {
                let rest = &text[i + 1..];
                let len = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_uppercase() || *b == b'_')
                    .count();
                let lit = &rest[..len];
                let named = ["DATABASE_URL", "AMQP_URL", "RUST_LOG"].contains(&lit)
                    || lit.starts_with("QUALIFIER_")
                    || lit.starts_with("OTEL_");
                if named && rest[len..].starts_with('"') {
                    found.insert(lit.to_owned());
                }
            }
        }
    }
    found
}

/// The sources every service reads variables in besides its own: the helpers that read by
/// hand (the shared declarations, `args.rs`, reach `--help` through the arguments each binary
/// flattens).
const SHARED_SOURCES: [&str; 4] = [
    "crates/config/src/lib.rs",
    "crates/telemetry/src",
    "crates/store/src",
    "crates/bus/src",
];

/// `binary --help` names exactly the variables its clap command declares (`declared`), and no
/// variable named in its own sources (`own`) or the ones every service shares is missing from
/// it. Returns what `--help` names.
pub fn assert_help_covers(
    binary: &str,
    declared: Vec<String>,
    own: &str,
) -> std::collections::BTreeSet<String> {
    let help = help_env_names(binary);
    let declared: std::collections::BTreeSet<String> = declared.into_iter().collect();
    assert_eq!(help, declared, "--help shows each declared variable");
    let dirs: Vec<&str> = std::iter::once(own).chain(SHARED_SOURCES).collect();
    let missing: Vec<_> = env_literals_in(&dirs)
        .into_iter()
        .filter(|v| !help.contains(v))
        .collect();
    assert!(missing.is_empty(), "read but not in --help: {missing:?}");
    help
}
